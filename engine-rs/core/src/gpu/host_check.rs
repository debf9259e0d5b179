//! Checks the generated kernel source without a GPU: the scan tests hand every filter they build
//! (with the records it ran over) to a [`HostCheck`]; `run` emits one program holding all of them,
//! compiles it as C with the host's compiler (`cc`, warnings as errors), runs each filter's entry
//! over its records and requires the same matches as the CPU kernel. Where a GPU is present the
//! same cases then run on it (the GPU differential test); where none is, that half says loudly
//! that it skipped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use libloading::Library;

use super::{codegen, FlagBackend, FlagKernel, GpuDevice, GpuUnavailable};
use crate::scan::ScanFilter;

type Entry = unsafe extern "C" fn(*const u8, u64, *mut u8);

/// Filters and the records to run them over, checked together.
#[derive(Default)]
pub(crate) struct HostCheck {
    cases: Vec<(ScanFilter, Vec<u8>)>,
}

fn matches_of(flags: &[u8], data: &[u8], rs: usize) -> Vec<u8> {
    if let Some(i) = flags.iter().position(|&f| f > 1) {
        panic!("flag {} at record {i}", flags[i]);
    }
    let mut out = Vec::new();
    super::append_flagged(flags, data, rs, &mut out);
    out
}

impl HostCheck {
    /// Adds a filter and the records (whole, back to back) it is to be checked over.
    pub(crate) fn add(&mut self, filter: &ScanFilter, data: &[u8]) {
        self.cases.push((filter.clone(), data.to_vec()));
    }

    /// Compiles and runs every case; panics on the first disagreement. Returns the cases checked.
    pub(crate) fn run(self) -> usize {
        let names: Vec<String> = (0..self.cases.len()).map(|i| format!("f{i}")).collect();
        let program: Vec<(&str, &ScanFilter)> = names
            .iter()
            .map(|n| n.as_str())
            .zip(self.cases.iter().map(|(f, _)| f))
            .collect();
        let dir = scratch_dir();
        let (lib, c) = compile_c(&codegen::program(&program), &dir);
        for (name, (filter, data)) in names.iter().zip(&self.cases) {
            let rs = filter.record_size();
            let n = data.len() / rs;
            let mut flags = vec![7u8; n];
            // SAFETY: the symbol is `void hd_filter_<name>(const u8 *, u64, u8 *)`, reading n
            // records of rs bytes and writing n flags.
            unsafe {
                let entry = lib
                    .get::<Entry>(format!("hd_filter_{name}\0").as_bytes())
                    .expect("entry");
                entry(data.as_ptr(), n as u64, flags.as_mut_ptr());
            }
            let want = filter.filter(data);
            assert!(
                matches_of(&flags, data, rs) == want,
                "generated {name} disagrees with the CPU kernel on {filter:?} ({})",
                c.display()
            );
        }
        drop(lib);
        let _ = std::fs::remove_dir_all(&dir);
        self.run_on_gpu();
        self.cases.len()
    }

    fn run_on_gpu(&self) {
        let dev = match GpuDevice::open(0) {
            Ok(d) => d,
            Err(why) => {
                eprintln!(
                    "SKIPPED GPU differential test ({} filters): {why}",
                    self.cases.len()
                );
                return;
            }
        };
        for (filter, data) in &self.cases {
            let k = dev
                .compile(filter)
                .unwrap_or_else(|e| panic!("{e} compiling {filter:?}"));
            let mut got = Vec::new();
            k.filter_into(data, &mut got)
                .unwrap_or_else(|e| panic!("{e} running {filter:?}"));
            assert!(
                got == filter.filter(data),
                "the GPU disagrees with the CPU kernel on {filter:?}"
            );
        }
        eprintln!(
            "GPU differential test: {} filters agree on {}",
            self.cases.len(),
            dev.name()
        );
    }
}

fn scratch_dir() -> PathBuf {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "hd-gpu-check-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Compiles `source` as C into a library in `dir` (warnings are errors) and loads it; also
/// returns the source file's path, for messages.
fn compile_c(source: &str, dir: &Path) -> (Library, PathBuf) {
    let (c, so) = (dir.join("filters.c"), dir.join("libfilters.so"));
    std::fs::write(&c, source).expect("writes the source");
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-std=c99",
            "-O0",
            "-fPIC",
            "-shared",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-unused-function",
            "-o",
        ])
        .arg(&so)
        .arg(&c)
        .output()
        .expect("a C compiler (cc)");
    assert!(
        out.status.success(),
        "the generated source does not compile ({}):\n{}",
        c.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: the library is the program just compiled; its initialisers are the C runtime's.
    (
        unsafe { Library::new(&so) }.expect("loads the compiled filters"),
        c,
    )
}

/// An offload backend for tests on machines without a GPU: the same generated program, compiled
/// as C on the host, behind the same traits the GPU implements.
#[derive(Default)]
pub(crate) struct HostBackend {
    kernels: Mutex<HashMap<String, Arc<HostKernel>>>,
}

pub(crate) struct HostKernel {
    lib: Library,
    record_size: usize,
    _dir: PathBuf,
}

impl FlagKernel for HostKernel {
    fn flags(&self, data: &[u8]) -> Result<Vec<u8>, GpuUnavailable> {
        let n = data.len() / self.record_size;
        let mut flags = vec![0u8; n];
        // SAFETY: `hd_filter_q(const u8 *, u64, u8 *)` reads n records and writes n flags.
        unsafe {
            let entry = self
                .lib
                .get::<Entry>(b"hd_filter_q\0")
                .map_err(|e| GpuUnavailable::Driver(e.to_string()))?;
            entry(data.as_ptr(), n as u64, flags.as_mut_ptr());
        }
        Ok(flags)
    }
}

impl FlagBackend for HostBackend {
    fn device(&self) -> String {
        "host C compiler (tests)".into()
    }
    fn compile(&self, filter: &ScanFilter) -> Result<Arc<dyn FlagKernel>, GpuUnavailable> {
        let source = codegen::program(&[("q", filter)]);
        let mut kernels = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = kernels.get(&source) {
            return Ok(k.clone());
        }
        let dir = scratch_dir();
        let (lib, _) = compile_c(&source, &dir);
        let k = Arc::new(HostKernel {
            lib,
            record_size: filter.record_size(),
            _dir: dir,
        });
        kernels.insert(source, k.clone());
        Ok(k)
    }
}

/// A backend whose every compile fails, as a broken driver would.
pub(crate) struct BrokenBackend;

impl FlagBackend for BrokenBackend {
    fn device(&self) -> String {
        "broken (tests)".into()
    }
    fn compile(&self, _: &ScanFilter) -> Result<Arc<dyn FlagKernel>, GpuUnavailable> {
        Err(GpuUnavailable::Driver(
            "CUDA_ERROR_ILLEGAL_ADDRESS (test)".into(),
        ))
    }
}
