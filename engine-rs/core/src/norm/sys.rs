//! `-sys` style declarations of the NORM library's C API (NRL's libnorm, `normApi.h` of 1.5.9),
//! resolved at run time from `libnorm.so.1` with `libloading`, so the addon builds and runs on a
//! machine without libnorm and only `replication: norm` needs it (docs/replication-norm.md).
//!
//! Only the calls the safe layer (`super`) uses are declared. Handles are opaque pointers; enums
//! are C `int`s. Nothing here is safe to call directly: use [`super::Instance`] and friends.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use libloading::Library;

/// `NormInstanceHandle`, `NormSessionHandle`, `NormObjectHandle`, `NormNodeHandle`: opaque, null when invalid.
pub type Handle = *const c_void;

/// `NormEvent` (normApi.h): the event type and the handles it concerns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NormEvent {
    pub kind: c_int,
    pub session: Handle,
    pub sender: Handle,
    pub object: Handle,
}

/// `NormEventType` values used here.
pub mod event {
    pub const TX_QUEUE_VACANCY: i32 = 1;
    pub const TX_QUEUE_EMPTY: i32 = 2;
    pub const TX_FLUSH_COMPLETED: i32 = 3;
    pub const REMOTE_SENDER_NEW: i32 = 10;
    pub const REMOTE_SENDER_RESET: i32 = 11;
    pub const REMOTE_SENDER_INACTIVE: i32 = 14;
    pub const RX_OBJECT_NEW: i32 = 17;
    pub const RX_OBJECT_UPDATED: i32 = 19;
    pub const RX_OBJECT_COMPLETED: i32 = 20;
    pub const RX_OBJECT_ABORTED: i32 = 21;
    pub const SEND_ERROR: i32 = 27;
}

/// `NormObjectType::NORM_OBJECT_STREAM`.
pub const OBJECT_STREAM: c_int = 3;
/// `NormFlushMode::NORM_FLUSH_ACTIVE`.
pub const FLUSH_ACTIVE: c_int = 2;
/// `NormFlushMode::NORM_FLUSH_PASSIVE`.
pub const FLUSH_PASSIVE: c_int = 1;
/// `NormSyncPolicy::NORM_SYNC_STREAM`: a receiver that joins asks for the sender's stream from its
/// beginning (what the sender still buffers), not from the first message it happens to hear.
pub const SYNC_STREAM: c_int = 1;

/// The library's entry points (a table of function pointers kept alive with the library).
pub struct Api {
    _lib: Library,
    pub get_version: unsafe extern "C" fn(*mut c_int, *mut c_int, *mut c_int) -> c_int,
    pub create_instance: unsafe extern "C" fn(bool) -> Handle,
    pub destroy_instance: unsafe extern "C" fn(Handle),
    pub stop_instance: unsafe extern "C" fn(Handle),
    pub get_next_event: unsafe extern "C" fn(Handle, *mut NormEvent, bool) -> bool,
    pub create_session: unsafe extern "C" fn(Handle, *const c_char, u16, u32) -> Handle,
    pub destroy_session: unsafe extern "C" fn(Handle),
    pub set_multicast_interface: unsafe extern "C" fn(Handle, *const c_char) -> bool,
    pub set_multicast_loopback: unsafe extern "C" fn(Handle, bool) -> bool,
    pub set_rx_port_reuse: unsafe extern "C" fn(Handle, bool, *const c_char, *const c_char, u16),
    pub set_tx_rate: unsafe extern "C" fn(Handle, f64),
    pub set_grtt_estimate: unsafe extern "C" fn(Handle, f64),
    pub set_congestion_control: unsafe extern "C" fn(Handle, bool, bool),
    pub set_rx_socket_buffer: unsafe extern "C" fn(Handle, c_uint) -> bool,
    pub set_tx_socket_buffer: unsafe extern "C" fn(Handle, c_uint) -> bool,
    pub get_random_session_id: unsafe extern "C" fn() -> u16,
    pub start_sender: unsafe extern "C" fn(Handle, u16, u32, u16, u16, u16, u8) -> bool,
    pub stop_sender: unsafe extern "C" fn(Handle),
    pub stream_open: unsafe extern "C" fn(Handle, u32, *const c_char, c_uint) -> Handle,
    pub stream_close: unsafe extern "C" fn(Handle, bool),
    pub stream_write: unsafe extern "C" fn(Handle, *const c_char, c_uint) -> c_uint,
    pub stream_flush: unsafe extern "C" fn(Handle, bool, c_int),
    pub stream_mark_eom: unsafe extern "C" fn(Handle),
    pub set_default_sync_policy: unsafe extern "C" fn(Handle, c_int),
    pub start_receiver: unsafe extern "C" fn(Handle, u32) -> bool,
    pub stop_receiver: unsafe extern "C" fn(Handle),
    pub stream_read: unsafe extern "C" fn(Handle, *mut c_char, *mut c_uint) -> bool,
    pub stream_seek_msg_start: unsafe extern "C" fn(Handle) -> bool,
    pub object_get_type: unsafe extern "C" fn(Handle) -> c_int,
}

/// The environment variable naming another library file to load instead of `libnorm.so.1`.
pub const LIBRARY_ENV: &str = "HD_LIBNORM_PATH";

static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// The loaded library, loaded on first use (`HD_LIBNORM_PATH`, else `libnorm.so.1`, else
/// `libnorm.so`); an error message saying what to install when it cannot be loaded.
pub fn api() -> Result<&'static Api, String> {
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, String> {
    let names: Vec<String> = match std::env::var(LIBRARY_ENV) {
        Ok(p) if !p.is_empty() => vec![p],
        _ => vec!["libnorm.so.1".into(), "libnorm.so".into()],
    };
    load_from(&names)
}

/// Loads the first of `names` that opens (a file name the dynamic loader searches for, or a path).
pub fn load_from(names: &[String]) -> Result<Api, String> {
    let mut last = String::new();
    for name in names {
        // SAFETY: loading libnorm runs no initialisers with preconditions of ours.
        match unsafe { Library::new(name) } {
            Ok(lib) => return resolve(lib).map_err(|e| format!("{name} lacks a NORM entry point ({e}); install NRL's NORM 1.5.9 or later (Debian: apt-get install libnorm1)")),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!(
        "replication: norm needs NRL's NORM library, which could not be loaded ({last}); install it (Debian/Ubuntu: apt-get install libnorm1) or set replication: tcp"
    ))
}

fn resolve(lib: Library) -> Result<Api, libloading::Error> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the declared type is normApi.h's prototype of this symbol.
            unsafe { *lib.get(concat!($name, "\0").as_bytes())? }
        };
    }
    Ok(Api {
        get_version: sym!("NormGetVersion"),
        create_instance: sym!("NormCreateInstance"),
        destroy_instance: sym!("NormDestroyInstance"),
        stop_instance: sym!("NormStopInstance"),
        get_next_event: sym!("NormGetNextEvent"),
        create_session: sym!("NormCreateSession"),
        destroy_session: sym!("NormDestroySession"),
        set_multicast_interface: sym!("NormSetMulticastInterface"),
        set_multicast_loopback: sym!("NormSetMulticastLoopback"),
        set_rx_port_reuse: sym!("NormSetRxPortReuse"),
        set_tx_rate: sym!("NormSetTxRate"),
        set_grtt_estimate: sym!("NormSetGrttEstimate"),
        set_congestion_control: sym!("NormSetCongestionControl"),
        set_rx_socket_buffer: sym!("NormSetRxSocketBuffer"),
        set_tx_socket_buffer: sym!("NormSetTxSocketBuffer"),
        get_random_session_id: sym!("NormGetRandomSessionId"),
        start_sender: sym!("NormStartSender"),
        stop_sender: sym!("NormStopSender"),
        stream_open: sym!("NormStreamOpen"),
        stream_close: sym!("NormStreamClose"),
        stream_write: sym!("NormStreamWrite"),
        stream_flush: sym!("NormStreamFlush"),
        stream_mark_eom: sym!("NormStreamMarkEom"),
        set_default_sync_policy: sym!("NormSetDefaultSyncPolicy"),
        start_receiver: sym!("NormStartReceiver"),
        stop_receiver: sym!("NormStopReceiver"),
        stream_read: sym!("NormStreamRead"),
        stream_seek_msg_start: sym!("NormStreamSeekMsgStart"),
        object_get_type: sym!("NormObjectGetType"),
        _lib: lib,
    })
}
