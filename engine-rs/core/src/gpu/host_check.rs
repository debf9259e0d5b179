//! Checks the generated kernel source without a GPU: the scan tests hand every filter they build
//! (with the records it ran over) to a [`HostCheck`]; `run` emits one program holding all of them,
//! compiles it as C with the host's compiler (`cc`, warnings as errors), runs each filter's entry
//! over its records and requires the same matches as the CPU kernel. Where a GPU is present the
//! same cases then run on it (the GPU differential test); where none is, that half says loudly
//! that it skipped.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use libloading::Library;

use super::{codegen, GpuDevice};
use crate::scan::ScanFilter;

type Entry = unsafe extern "C" fn(*const u8, u64, *mut u8);

/// Filters and the records to run them over, checked together.
#[derive(Default)]
pub(crate) struct HostCheck {
    cases: Vec<(ScanFilter, Vec<u8>)>,
}

fn matches_of(flags: &[u8], data: &[u8], rs: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, &f) in flags.iter().enumerate() {
        assert!(f <= 1, "flag {f} at record {i}");
        if f == 1 {
            out.extend_from_slice(&data[i * rs..(i + 1) * rs]);
        }
    }
    out
}

impl HostCheck {
    /// Adds a filter and the records (whole, back to back) it is to be checked over.
    pub(crate) fn add(&mut self, filter: &ScanFilter, data: &[u8]) {
        self.cases.push((filter.clone(), data.to_vec()));
    }

    /// Compiles and runs every case; panics on the first disagreement. Returns the cases checked.
    pub(crate) fn run(self) -> usize {
        static RUN: AtomicUsize = AtomicUsize::new(0);
        let names: Vec<String> = (0..self.cases.len()).map(|i| format!("f{i}")).collect();
        let program: Vec<(&str, &ScanFilter)> = names
            .iter()
            .map(|n| n.as_str())
            .zip(self.cases.iter().map(|(f, _)| f))
            .collect();
        let source = codegen::program(&program);
        let dir = std::env::temp_dir().join(format!(
            "hd-gpu-check-{}-{}",
            std::process::id(),
            RUN.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (c, so) = (dir.join("filters.c"), dir.join("libfilters.so"));
        std::fs::write(&c, &source).expect("writes the source");
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
        let lib = unsafe { Library::new(&so) }.expect("loads the compiled filters");
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
