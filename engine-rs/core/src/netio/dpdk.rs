//! DPDK behind [`PacketPort`]: a NIC bound to vfio-pci (named by its PCIe address) or a DPDK
//! virtual device (`net_tap0`, `net_null0`, ...) driven from user space by DPDK's poll-mode
//! drivers.
//!
//! DPDK's burst calls are static inline functions, so engine-rs calls them through a small C shim,
//! `dpdk/hd_dpdk.c`, which build.rs compiles against Debian's libdpdk-dev when pkg-config finds
//! it (the `dpdk` cargo feature makes that a requirement). The shim is loaded at run time, as NORM
//! is: the addon builds and runs without DPDK, and only a process that opens a DPDK port loads
//! it. `HD_DPDK_SHIM` names another shim file.
//!
//! DPDK's environment (EAL) starts once per process and cannot start again with other options;
//! [`init`] enforces that.

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use libloading::Library;

use super::wire::{Mac, ETH_HEADER_LEN};
use super::{NetError, PacketPort, RxFrames, TxFrames};

type EalInit = unsafe extern "C" fn(c_int, *mut *mut c_char) -> c_int;
type StrError = unsafe extern "C" fn(c_int) -> *const c_char;
type PortCount = unsafe extern "C" fn() -> u16;
type PortByName = unsafe extern "C" fn(*const c_char, *mut u16) -> c_int;
type PortStart = unsafe extern "C" fn(u16, u32, u16, u16, *mut u8) -> c_int;
type Rx = unsafe extern "C" fn(u16, *mut u8, u32, *mut u32, u16, *mut u32) -> u16;
type Tx = unsafe extern "C" fn(u16, *const u8, *const u32, *const u32, u16) -> u16;
type PortClose = unsafe extern "C" fn(u16) -> c_int;

/// The shim's entry points, kept alive with the library.
struct Api {
    _lib: Library,
    eal_init: EalInit,
    strerror: StrError,
    port_count: PortCount,
    port_by_name: PortByName,
    port_start: PortStart,
    rx: Rx,
    tx: Tx,
    port_close: PortClose,
}

impl Api {
    fn error(&self, what: &str, code: c_int) -> NetError {
        // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated string.
        let text = unsafe { CStr::from_ptr((self.strerror)(code.abs())) }
            .to_string_lossy()
            .into_owned();
        NetError::Dpdk(format!("{what}: {text} ({code})"))
    }
}

/// True when this build compiled the DPDK shim (libdpdk-dev was found at build time).
pub fn built_in() -> bool {
    option_env!("HD_DPDK_SHIM_BUILT").is_some()
}

/// The shim file: `HD_DPDK_SHIM` when set, else the one build.rs made, else none.
pub fn shim_path() -> Option<PathBuf> {
    std::env::var_os("HD_DPDK_SHIM")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| option_env!("HD_DPDK_SHIM_BUILT").map(PathBuf::from))
}

fn api() -> Result<&'static Api, NetError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|e| NetError::Dpdk(e.clone()))
}

fn load() -> Result<Api, String> {
    let path = shim_path().ok_or_else(|| {
        "this build has no DPDK: install Debian's libdpdk-dev and pkg-config, then rebuild engine-rs (npm run build:native)"
            .to_string()
    })?;
    // SAFETY: loading runs the shim's and DPDK's initialisers, which only register drivers.
    let lib = unsafe { Library::new(&path) }
        .map_err(|e| format!("cannot load the DPDK shim {}: {e}", path.display()))?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol's type is the C declaration in dpdk/hd_dpdk.c.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("the DPDK shim {} lacks {}: {e}", path.display(), $name))?
        };
    }
    Ok(Api {
        eal_init: sym!("hd_dpdk_eal_init"),
        strerror: sym!("hd_dpdk_strerror"),
        port_count: sym!("hd_dpdk_port_count"),
        port_by_name: sym!("hd_dpdk_port_by_name"),
        port_start: sym!("hd_dpdk_port_start"),
        rx: sym!("hd_dpdk_rx"),
        tx: sym!("hd_dpdk_tx"),
        port_close: sym!("hd_dpdk_port_close"),
        _lib: lib,
    })
}

/// How DPDK's environment starts: which cores it may use, which devices it probes, and memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EalOptions {
    /// Cores for DPDK's threads as an EAL core list (`1-3`, the reference's MASTER_CPUSET form);
    /// empty: the first core this process may run on.
    pub cores: String,
    /// PCIe addresses of NICs bound to vfio-pci to probe (an allow list); empty probes none.
    pub pci: Vec<String>,
    /// Virtual devices, as `--vdev` takes them (`net_tap0,iface=hd0`).
    pub vdevs: Vec<String>,
    /// Plain memory instead of hugepages (hosts and CI without a hugepage pool).
    pub no_huge: bool,
    /// Megabytes of memory to reserve; 0 lets DPDK decide (with `no_huge` it reserves 64).
    pub memory_mb: u32,
}

impl EalOptions {
    /// The EAL's argument vector, program name first.
    pub fn args(&self) -> Vec<String> {
        let cores = if self.cores.is_empty() {
            crate::affinity::thread_cpus(0)
                .ok()
                .and_then(|c| c.first().copied())
                .unwrap_or(0)
                .to_string()
        } else {
            self.cores.clone()
        };
        // No shared configuration files: nothing else attaches to an HD process's DPDK.
        let mut a: Vec<String> = [
            "hd",
            "--no-shconf",
            "--no-telemetry",
            "--log-level=lib.eal:error",
            "-l",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.push(cores);
        if self.pci.is_empty() {
            a.push("--no-pci".into());
        }
        for p in &self.pci {
            a.push("-a".into());
            a.push(p.clone());
        }
        for v in &self.vdevs {
            a.push(format!("--vdev={v}"));
        }
        if self.no_huge {
            a.push("--no-huge".into());
        }
        if self.memory_mb > 0 {
            a.push("-m".into());
            a.push(self.memory_mb.to_string());
        }
        a
    }
}

/// Starts DPDK's environment once for this process. A second call with the same options does
/// nothing; with other options it is refused (the EAL cannot restart).
pub fn init(opts: &EalOptions) -> Result<(), NetError> {
    static STARTED: Mutex<Option<Result<EalOptions, String>>> = Mutex::new(None);
    let api = api()?;
    let mut started = STARTED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = started.as_ref() {
        return match done {
            Ok(o) if o == opts => Ok(()),
            Ok(o) => Err(NetError::Dpdk(format!(
                "DPDK's environment starts once per process and already runs with {}",
                o.args().join(" ")
            ))),
            Err(e) => Err(NetError::Dpdk(e.clone())),
        };
    }
    let args = opts.args();
    let c: Vec<CString> = args
        .iter()
        .map(|a| {
            CString::new(a.as_str())
                .map_err(|_| NetError::Dpdk(format!("EAL argument {a:?} holds a NUL byte")))
        })
        .collect::<Result<_, _>>()?;
    // rte_eal_init may permute argv; it gets its own pointer array and the strings outlive the call.
    let mut argv: Vec<*mut c_char> = c.iter().map(|s| s.as_ptr() as *mut c_char).collect();
    // SAFETY: argv holds argc valid NUL-terminated strings that live across the call.
    let r = unsafe { (api.eal_init)(argv.len() as c_int, argv.as_mut_ptr()) };
    let outcome = if r < 0 {
        Err(format!(
            "{} (EAL arguments: {})",
            api.error("DPDK's environment did not start", r),
            args.join(" ")
        ))
    } else {
        Ok(opts.clone())
    };
    let result = outcome
        .as_ref()
        .map(|_| ())
        .map_err(|e| NetError::Dpdk(e.clone()));
    *started = Some(outcome);
    result
}

/// Number of ports DPDK probed.
pub fn port_count() -> Result<u16, NetError> {
    let api = api()?;
    // SAFETY: a plain query of the EAL's device list.
    Ok(unsafe { (api.port_count)() })
}

/// One started DPDK port with one receive and one transmit queue.
pub struct DpdkPort {
    api: &'static Api,
    id: u16,
    name: String,
    mac: Mac,
    max_frame: usize,
    rx_dropped: u32,
}

impl DpdkPort {
    /// Starts the port DPDK knows as `name` (a PCIe address on the allow list, or a vdev name) with
    /// an IP MTU of `ip_mtu` bytes and a pool of `mbufs` packet buffers. [`init`] comes first.
    pub fn open(name: &str, ip_mtu: u16, mbufs: u32) -> Result<Self, NetError> {
        let api = api()?;
        let cname = CString::new(name)
            .map_err(|_| NetError::Dpdk(format!("port name {name:?} holds a NUL byte")))?;
        let mut id = 0u16;
        // SAFETY: cname is NUL-terminated, id a valid out pointer.
        let r = unsafe { (api.port_by_name)(cname.as_ptr(), &mut id) };
        if r < 0 {
            return Err(api.error(
                &format!("DPDK has no port {name} (is it on the allow list, or a --vdev?)"),
                r,
            ));
        }
        let max_frame = usize::from(ip_mtu) + ETH_HEADER_LEN;
        let frame = u16::try_from(max_frame)
            .map_err(|_| NetError::Dpdk(format!("IP MTU {ip_mtu} is too large")))?;
        let mut mac = [0u8; 6];
        // SAFETY: mac has room for the 6 bytes the shim writes.
        let r = unsafe { (api.port_start)(id, mbufs, frame, ip_mtu, mac.as_mut_ptr()) };
        if r < 0 {
            return Err(api.error(&format!("DPDK port {name} did not start"), r));
        }
        Ok(DpdkPort {
            api,
            id,
            name: name.to_string(),
            mac,
            max_frame,
            rx_dropped: 0,
        })
    }

    /// The device name the port was opened by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Frames dropped on receive because they were longer than the MTU or in several segments.
    pub fn rx_dropped(&self) -> u32 {
        self.rx_dropped
    }
}

impl PacketPort for DpdkPort {
    fn mac(&self) -> Mac {
        self.mac
    }

    fn max_frame(&self) -> usize {
        self.max_frame
    }

    fn transmit(&mut self, frames: &TxFrames) -> Result<usize, NetError> {
        let (buf, offs, lens) = frames.parts();
        let mut sent = 0usize;
        // The shim takes at most u16::MAX frames a call.
        while sent < lens.len() {
            let n = (lens.len() - sent).min(usize::from(u16::MAX)) as u16;
            // SAFETY: offs/lens describe frames inside buf; the shim reads n entries from `sent`.
            let took = unsafe {
                (self.api.tx)(
                    self.id,
                    buf.as_ptr(),
                    offs[sent..].as_ptr(),
                    lens[sent..].as_ptr(),
                    n,
                )
            };
            sent += usize::from(took);
            if took < n {
                break;
            }
        }
        Ok(sent)
    }

    fn receive(&mut self, into: &mut RxFrames) -> Result<usize, NetError> {
        let cap = into.capacity().min(usize::from(u16::MAX)) as u16;
        let stride = into.stride() as u32;
        let (buf, lens) = into.parts();
        lens.resize(usize::from(cap), 0);
        // SAFETY: buf holds cap * stride bytes and lens cap entries, as the shim requires.
        let n = unsafe {
            (self.api.rx)(
                self.id,
                buf.as_mut_ptr(),
                stride,
                lens.as_mut_ptr(),
                cap,
                &mut self.rx_dropped,
            )
        };
        lens.truncate(usize::from(n));
        Ok(usize::from(n))
    }
}

impl Drop for DpdkPort {
    fn drop(&mut self) {
        // SAFETY: the port was started by open and is closed once.
        unsafe { (self.api.port_close)(self.id) };
    }
}
