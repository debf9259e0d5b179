//! A small safe layer over NRL's NORM library (NACK-Oriented Reliable Multicast, RFC 5740), loaded
//! at run time (`sys`): an [`Instance`] with its event queue, a [`Session`] on a multicast group,
//! a sender's [`TxStream`] and a receiver's stream reads. The SCC writes its replication byte
//! stream into one NORM stream object; Storage Nodes read it (docs/replication-norm.md).
//!
//! NORM's API is thread-safe: one thread may wait in [`Instance::next_event`] while another
//! writes to a stream. Handles are released in `Drop`, sessions before their instance.

pub mod sys;

use std::ffi::CString;
use std::sync::Arc;

use sys::{Api, Handle};

/// A NORM failure: the library is missing, or a call refused its arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NormError(pub String);

fn api() -> Result<&'static Api, NormError> {
    sys::api().map_err(NormError)
}

/// The library's version `(major, minor, patch)`, or why it cannot be loaded.
pub fn version() -> Result<(i32, i32, i32), NormError> {
    let api = api()?;
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: three valid out-pointers.
    unsafe { (api.get_version)(&mut a, &mut b, &mut c) };
    Ok((a, b, c))
}

/// A NORM instance: its protocol thread and event queue.
pub struct Instance {
    api: &'static Api,
    h: Handle,
}

// SAFETY: NORM's API serialises calls on an instance with its own lock.
unsafe impl Send for Instance {}
unsafe impl Sync for Instance {}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: created by NormCreateInstance, destroyed once; its sessions hold an Arc to it.
        unsafe { (self.api.destroy_instance)(self.h) }
    }
}

/// One event of an instance, with the object it concerns where that is a stream.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// The sender's stream has room again.
    TxQueueVacancy,
    /// Everything written was sent.
    TxQueueEmpty,
    /// A flush's repair window ended.
    TxFlushCompleted,
    /// A remote sender was heard (first time, or again after a reset).
    RemoteSenderNew,
    /// A remote sender went quiet.
    RemoteSenderInactive,
    /// A new stream object from a remote sender (`RxStream` to read it).
    RxStreamNew(RxStream),
    /// More bytes of a stream are ready.
    RxStreamUpdated(RxStream),
    /// The remote sender closed the stream.
    RxObjectCompleted,
    /// The object was given up (out of the repair window, or the sender reset).
    RxObjectAborted,
    /// Sending failed (e.g. no route to the group).
    SendError,
    /// Any other event type (its number, normApi.h's `NormEventType`).
    Other(i32),
}

impl Instance {
    /// Starts a NORM instance (its protocol thread).
    pub fn new() -> Result<Arc<Self>, NormError> {
        let api = api()?;
        // SAFETY: no preconditions.
        let h = unsafe { (api.create_instance)(false) };
        if h.is_null() {
            return Err(NormError("NormCreateInstance failed".into()));
        }
        Ok(Arc::new(Self { api, h }))
    }

    /// Waits for the next event; `None` once the instance is stopped ([`Instance::stop`]).
    pub fn next_event(&self) -> Option<Event> {
        let mut ev = sys::NormEvent {
            kind: 0,
            session: std::ptr::null(),
            sender: std::ptr::null(),
            object: std::ptr::null(),
        };
        // SAFETY: a valid instance and out-pointer.
        if !unsafe { (self.api.get_next_event)(self.h, &mut ev, true) } {
            return None;
        }
        let stream = || {
            // SAFETY: the event's object handle is valid while its event is handled.
            let is_stream = !ev.object.is_null()
                && unsafe { (self.api.object_get_type)(ev.object) } == sys::OBJECT_STREAM;
            is_stream.then_some(RxStream {
                api: self.api,
                h: ev.object,
            })
        };
        use sys::event as e;
        Some(match ev.kind {
            e::TX_QUEUE_VACANCY => Event::TxQueueVacancy,
            e::TX_QUEUE_EMPTY => Event::TxQueueEmpty,
            e::TX_FLUSH_COMPLETED => Event::TxFlushCompleted,
            e::REMOTE_SENDER_NEW | e::REMOTE_SENDER_RESET => Event::RemoteSenderNew,
            e::REMOTE_SENDER_INACTIVE => Event::RemoteSenderInactive,
            e::RX_OBJECT_NEW => stream().map_or(Event::Other(e::RX_OBJECT_NEW), Event::RxStreamNew),
            e::RX_OBJECT_UPDATED => {
                stream().map_or(Event::Other(e::RX_OBJECT_UPDATED), Event::RxStreamUpdated)
            }
            e::RX_OBJECT_COMPLETED => Event::RxObjectCompleted,
            e::RX_OBJECT_ABORTED => Event::RxObjectAborted,
            e::SEND_ERROR => Event::SendError,
            k => Event::Other(k),
        })
    }

    /// Stops the instance: a waiting [`Instance::next_event`] returns `None`.
    pub fn stop(&self) {
        // SAFETY: a valid instance.
        unsafe { (self.api.stop_instance)(self.h) }
    }
}

/// Where a session meets: group (or unicast) address, UDP port, and options.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub address: String,
    pub port: u16,
    /// This node's NORM id (unique in the session).
    pub node_id: u32,
    /// Interface to join the group on (e.g. `lo`); none: the default route's.
    pub interface: Option<String>,
    /// Receive multicast sent by this host (several nodes on one host, tests).
    pub loopback: bool,
    /// Socket receive buffer bytes (0: the system's default).
    pub rx_socket_buffer: u32,
}

/// A NORM session on one group and port.
pub struct Session {
    inst: Arc<Instance>,
    h: Handle,
}

// SAFETY: as for `Instance`.
unsafe impl Send for Session {}
unsafe impl Sync for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: created by NormCreateSession on `inst`, which outlives it.
        unsafe { (self.inst.api.destroy_session)(self.h) }
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, NormError> {
    CString::new(s).map_err(|_| NormError(format!("{what} '{s}' contains a NUL byte")))
}

/// How a sender sends.
#[derive(Debug, Clone, Copy)]
pub struct SenderConfig {
    /// Repair buffer bytes (how far back a receiver's NACK can still be answered).
    pub buffer_bytes: u32,
    /// NORM segment (payload) size: the HDWP MTU mode's datagram size (1200 Standard, 8500 Jumbo).
    pub segment_size: u16,
    /// Source symbols per FEC block, and parity symbols per block (0: repairs by retransmission only).
    pub block_size: u16,
    pub parity: u16,
    /// Fixed transmit rate in bits per second; 0: NORM's congestion control sets it.
    pub tx_rate_bps: f64,
    /// The stream's buffer bytes (what a write may queue ahead of the wire).
    pub stream_bytes: u32,
    /// Initial group round-trip estimate in seconds (NORM's default, 0.5 s, suits wide areas: on a
    /// LAN its repair timers would stall every lossy block for seconds before probing lowers it).
    pub grtt_estimate: f64,
}

impl Session {
    /// Creates a session on `cfg.address:cfg.port`.
    pub fn new(inst: &Arc<Instance>, cfg: &SessionConfig) -> Result<Arc<Self>, NormError> {
        let api = inst.api;
        let addr = cstring("address", &cfg.address)?;
        // SAFETY: a valid instance and NUL-terminated address.
        let h = unsafe { (api.create_session)(inst.h, addr.as_ptr(), cfg.port, cfg.node_id) };
        if h.is_null() {
            return Err(NormError(format!(
                "NORM cannot open a session on {}:{}",
                cfg.address, cfg.port
            )));
        }
        let s = Arc::new(Self {
            inst: inst.clone(),
            h,
        });
        if let Some(ifname) = &cfg.interface {
            let c = cstring("interface", ifname)?;
            // SAFETY: a valid session and NUL-terminated name.
            if !unsafe { (api.set_multicast_interface)(h, c.as_ptr()) } {
                return Err(NormError(format!(
                    "NORM cannot use interface '{ifname}' for multicast"
                )));
            }
        }
        // SAFETY: a valid session; null bind/sender addresses mean "any".
        unsafe {
            (api.set_multicast_loopback)(h, cfg.loopback);
            // Several receivers (nodes) on one host share the port.
            (api.set_rx_port_reuse)(h, true, std::ptr::null(), std::ptr::null(), 0);
            if cfg.rx_socket_buffer > 0 {
                (api.set_rx_socket_buffer)(h, cfg.rx_socket_buffer);
            }
        }
        Ok(s)
    }

    /// Starts sending and opens the one stream object written to.
    pub fn start_sender(self: &Arc<Self>, cfg: &SenderConfig) -> Result<TxStream, NormError> {
        let api = self.inst.api;
        if cfg.segment_size < 64 {
            return Err(NormError(format!(
                "NORM segment size {} is too small (at least 64 bytes)",
                cfg.segment_size
            )));
        }
        // SAFETY: a valid session throughout.
        unsafe {
            if cfg.tx_rate_bps > 0.0 {
                (api.set_congestion_control)(self.h, false, true);
                (api.set_tx_rate)(self.h, cfg.tx_rate_bps);
            } else {
                (api.set_congestion_control)(self.h, true, true);
            }
            (api.set_tx_socket_buffer)(self.h, 4 << 20);
            if cfg.grtt_estimate > 0.0 {
                (api.set_grtt_estimate)(self.h, cfg.grtt_estimate);
            }
            let id = (api.get_random_session_id)();
            if !(api.start_sender)(
                self.h,
                id,
                cfg.buffer_bytes,
                cfg.segment_size,
                cfg.block_size,
                cfg.parity,
                0,
            ) {
                return Err(NormError("NormStartSender failed (buffer, segment or block size refused, or the socket could not be opened)".into()));
            }
            let st = (api.stream_open)(self.h, cfg.stream_bytes, std::ptr::null(), 0);
            if st.is_null() {
                (api.stop_sender)(self.h);
                return Err(NormError(format!(
                    "NormStreamOpen refused a {} byte stream buffer",
                    cfg.stream_bytes
                )));
            }
            Ok(TxStream {
                session: self.clone(),
                h: st,
            })
        }
    }

    /// Starts receiving with `buffer_bytes` of repair buffer per remote sender. A sender is
    /// followed from the beginning of its stream (NORM_SYNC_STREAM): with NORM's default
    /// (NORM_SYNC_CURRENT) a receiver that lost the stream's first packets synced at a later
    /// message, and the batch it missed had to come over TCP.
    pub fn start_receiver(&self, buffer_bytes: u32) -> Result<(), NormError> {
        // SAFETY: a valid session; the policy is one of normApi.h's NormSyncPolicy values.
        unsafe { (self.inst.api.set_default_sync_policy)(self.h, sys::SYNC_STREAM) };
        // SAFETY: a valid session.
        if unsafe { (self.inst.api.start_receiver)(self.h, buffer_bytes) } {
            Ok(())
        } else {
            Err(NormError(
                "NormStartReceiver failed (the socket could not be opened or the group joined)"
                    .into(),
            ))
        }
    }

    /// Stops receiving (a receiver that starts again joins afresh).
    pub fn stop_receiver(&self) {
        // SAFETY: a valid session.
        unsafe { (self.inst.api.stop_receiver)(self.h) }
    }
}

/// The sender's stream object: bytes written go to every receiver of the session, in order.
pub struct TxStream {
    session: Arc<Session>,
    h: Handle,
}

// SAFETY: as for `Instance`.
unsafe impl Send for TxStream {}
unsafe impl Sync for TxStream {}

impl TxStream {
    /// Writes what fits now; returns the bytes taken (fewer than given: wait for
    /// [`Event::TxQueueVacancy`] and write the rest).
    pub fn write(&self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(u32::MAX as usize) as u32;
        // SAFETY: a valid stream and `n` readable bytes.
        unsafe { (self.session.inst.api.stream_write)(self.h, bytes.as_ptr().cast(), n) as usize }
    }

    /// Marks the end of a message: a receiver joining late, or one that lost data beyond repair,
    /// starts reading again at the next message.
    pub fn mark_eom(&self) {
        // SAFETY: a valid stream.
        unsafe { (self.session.inst.api.stream_mark_eom)(self.h) }
    }

    /// Sends what is buffered now, even a partial segment; `active`: ask receivers to confirm it.
    pub fn flush(&self, active: bool) {
        let mode = if active {
            sys::FLUSH_ACTIVE
        } else {
            sys::FLUSH_PASSIVE
        };
        // SAFETY: a valid stream.
        unsafe { (self.session.inst.api.stream_flush)(self.h, false, mode) }
    }
}

impl Drop for TxStream {
    fn drop(&mut self) {
        let api = self.session.inst.api;
        // SAFETY: opened by NormStreamOpen, closed once, then the sender stopped.
        unsafe {
            (api.stream_close)(self.h, false);
            (api.stop_sender)(self.session.h);
        }
    }
}

/// A remote sender's stream object, valid while the event that named it is handled (read it from
/// the thread that waits for events).
#[derive(Clone, Copy)]
pub struct RxStream {
    api: &'static Api,
    h: Handle,
}

// SAFETY: used only on the event thread; the handle is an opaque token.
unsafe impl Send for RxStream {}

impl PartialEq for RxStream {
    fn eq(&self, other: &Self) -> bool {
        self.h == other.h
    }
}

impl std::fmt::Debug for RxStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RxStream({:p})", self.h)
    }
}

/// What one [`RxStream::read`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// This many bytes (0: nothing more for now).
    Bytes(usize),
    /// Data was lost beyond repair before what comes next: seek to the next message.
    Break,
}

impl RxStream {
    /// Reads into `buf` what is in order now.
    pub fn read(&self, buf: &mut [u8]) -> Read {
        let mut n = buf.len().min(u32::MAX as usize) as u32;
        // SAFETY: a valid stream handle (during its event) and `n` writable bytes.
        if unsafe { (self.api.stream_read)(self.h, buf.as_mut_ptr().cast(), &mut n) } {
            Read::Bytes(n as usize)
        } else {
            Read::Break
        }
    }

    /// Skips to the start of the next message (after a break, or on joining mid-stream); false
    /// when no message start is buffered yet (NORM keeps looking as bytes arrive).
    pub fn seek_message_start(&self) -> bool {
        // SAFETY: a valid stream handle.
        unsafe { (self.api.stream_seek_msg_start)(self.h) }
    }
}

#[cfg(test)]
mod tests;
