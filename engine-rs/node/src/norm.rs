//! NORM multicast exports (docs/replication-norm.md): a sender handle the SCC writes its
//! replication stream into, and a receiver handle whose bytes reach JS through a Neon `Channel`.
//!
//! Each handle owns a NORM instance and one thread that waits on `NormGetNextEvent` (off the event
//! loop); writes are non-blocking `NormStreamWrite` calls on the JS thread, which waits for the
//! `vacancy` event when the stream buffer is full. The library is loaded on first use, so without
//! libnorm only these calls fail, with the message saying what to install.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hd_engine_core::norm::{
    self, Event, Instance, Read, RxStream, SenderConfig, Session, SessionConfig, TxStream,
};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::{opt_num as num, throw_coded};

/// Received bytes handed to JS and not yet taken, above which the reader waits (NORM keeps
/// buffering; a receiver that stays behind loses data beyond repair and catches up over TCP).
const MAX_UNTAKEN: usize = 64 << 20;

/// One sender or receiver: its instance, session, stream (sender) and event thread.
pub struct NormBox {
    inst: Arc<Instance>,
    session: Mutex<Option<Arc<Session>>>,
    stream: Mutex<Option<TxStream>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set by `close`: the event thread stops waiting for JS to take bytes (JS cannot while it joins).
    stopping: Arc<AtomicBool>,
}

impl NormBox {
    fn close(&self) {
        self.stopping.store(true, Ordering::Release);
        self.inst.stop();
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
        if let Ok(mut s) = self.stream.lock() {
            s.take();
        }
        if let Ok(mut s) = self.session.lock() {
            s.take();
        }
    }
}

impl Finalize for NormBox {
    fn finalize<'a, C: Context<'a>>(self, _: &mut C) {
        self.close();
    }
}

type Boxed = JsBox<Arc<NormBox>>;

fn norm_err<'cx, T>(cx: &mut FunctionContext<'cx>, e: norm::NormError) -> NeonResult<T> {
    throw_coded(cx, "ERR_NORM", &e.0)
}

fn session_config(cx: &mut FunctionContext, o: Handle<JsObject>) -> NeonResult<SessionConfig> {
    let address = o.get::<JsString, _, _>(cx, "address")?.value(cx);
    let iface: Handle<JsValue> = o.get_value(cx, "interface")?;
    let interface = match iface.downcast::<JsString, _>(cx) {
        Ok(s) if !s.value(cx).is_empty() => Some(s.value(cx)),
        _ => None,
    };
    let loopback = o
        .get_value(cx, "loopback")?
        .downcast::<JsBoolean, _>(cx)
        .map(|b| b.value(cx))
        .unwrap_or(true);
    Ok(SessionConfig {
        address,
        port: num(cx, o, "port", 6988.0)? as u16,
        node_id: num(cx, o, "nodeId", 1.0)? as u32,
        interface,
        loopback,
        rx_socket_buffer: num(cx, o, "rxSocketBuffer", 0.0)? as u32,
    })
}

/// Tells JS `(kind, data?)` on its thread.
#[derive(Clone)]
struct Notify {
    channel: Channel,
    callback: Arc<Root<JsFunction>>,
    untaken: Arc<AtomicUsize>,
    stopping: Arc<AtomicBool>,
}

impl Notify {
    fn new(cx: &mut FunctionContext, callback: Handle<JsFunction>) -> Self {
        let mut channel = cx.channel();
        channel.unref(cx);
        Self {
            channel,
            callback: Arc::new(callback.root(cx)),
            untaken: Arc::new(AtomicUsize::new(0)),
            stopping: Arc::new(AtomicBool::new(false)),
        }
    }

    fn send(&self, kind: &'static str, data: Option<Vec<u8>>) {
        let cb = self.callback.clone();
        let len = data.as_ref().map_or(0, Vec::len);
        self.untaken.fetch_add(len, Ordering::AcqRel);
        let untaken = self.untaken.clone();
        self.channel.send(move |mut cx| {
            untaken.fetch_sub(len, Ordering::AcqRel);
            let f = cb.to_inner(&mut cx);
            let k = cx.string(kind);
            let this = cx.undefined();
            let mut call = f.call_with(&cx);
            call.this(this).arg(k);
            if let Some(d) = data {
                let b = JsBuffer::from_slice(&mut cx, &d)?;
                call.arg(b);
            }
            call.exec(&mut cx)
        });
    }
}

/// The loaded library's version, e.g. `"1.5.9"`; throws `ERR_NORM` (saying what to install) without it.
#[neon::export(name = "normVersion")]
fn norm_version<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsString> {
    match norm::version() {
        Ok((a, b, c)) => Ok(cx.string(format!("{a}.{b}.{c}"))),
        Err(e) => norm_err(cx, e),
    }
}

/// Opens a sender: `{ address, port, nodeId, interface?, loopback?, segmentSize, bufferBytes,
/// streamBytes, txRateBps, blockSize?, parity? }`; `onEvent('vacancy' | 'send-error')`.
#[neon::export(name = "normSenderOpen")]
fn norm_sender_open<'cx>(
    cx: &mut FunctionContext<'cx>,
    opts: Handle<'cx, JsObject>,
    on_event: Handle<'cx, JsFunction>,
) -> JsResult<'cx, Boxed> {
    let cfg = session_config(cx, opts)?;
    let sc = SenderConfig {
        segment_size: num(cx, opts, "segmentSize", 1200.0)? as u16,
        buffer_bytes: num(cx, opts, "bufferBytes", (64 << 20) as f64)? as u32,
        stream_bytes: num(cx, opts, "streamBytes", (32 << 20) as f64)? as u32,
        tx_rate_bps: num(cx, opts, "txRateBps", 0.0)?,
        block_size: num(cx, opts, "blockSize", 64.0)? as u16,
        parity: num(cx, opts, "parity", 0.0)? as u16,
        grtt_estimate: num(cx, opts, "grttEstimate", 0.01)?,
    };
    let opened = Instance::new().and_then(|inst| {
        let s = Session::new(&inst, &cfg)?;
        let stream = s.start_sender(&sc)?;
        Ok((inst, s, stream))
    });
    let (inst, session, stream) = match opened {
        Ok(x) => x,
        Err(e) => return norm_err(cx, e),
    };
    let notify = Notify::new(cx, on_event);
    boxed(
        cx,
        "norm-tx",
        inst,
        session,
        Some(stream),
        notify,
        |events, notify| {
            while let Some(ev) = events.next_event() {
                match ev {
                    Event::TxQueueVacancy => notify.send("vacancy", None),
                    Event::SendError => notify.send("send-error", None),
                    _ => {}
                }
            }
        },
    )
}

/// Starts the handle's event thread (`name`, running `events` over its instance) and boxes the
/// handle for JS; a thread that cannot start is an `ERR_NORM`.
fn boxed<'cx>(
    cx: &mut FunctionContext<'cx>,
    name: &str,
    inst: Arc<Instance>,
    session: Arc<Session>,
    stream: Option<TxStream>,
    notify: Notify,
    events: impl FnOnce(Arc<Instance>, Notify) + Send + 'static,
) -> JsResult<'cx, Boxed> {
    let stopping = notify.stopping.clone();
    let on = inst.clone();
    let thread = match std::thread::Builder::new()
        .name(name.into())
        .spawn(move || events(on, notify))
    {
        Ok(t) => t,
        Err(e) => {
            return throw_coded(
                cx,
                "ERR_NORM",
                &format!("cannot start the NORM event thread: {e}"),
            )
        }
    };
    Ok(cx.boxed(Arc::new(NormBox {
        inst,
        session: Mutex::new(Some(session)),
        stream: Mutex::new(stream),
        thread: Mutex::new(Some(thread)),
        stopping,
    })))
}

/// Opens a receiver: `{ address, port, nodeId, interface?, loopback?, bufferBytes, rxSocketBuffer? }`;
/// `onEvent('data', bytes)` with the stream's bytes in order from a message start, `'break'` when
/// data was lost beyond repair (reading resumes at the next message), `'sender'` when a sender is
/// heard, `'aborted'` / `'completed'` when its stream ends.
#[neon::export(name = "normReceiverOpen")]
fn norm_receiver_open<'cx>(
    cx: &mut FunctionContext<'cx>,
    opts: Handle<'cx, JsObject>,
    on_event: Handle<'cx, JsFunction>,
) -> JsResult<'cx, Boxed> {
    let cfg = session_config(cx, opts)?;
    let buffer = num(cx, opts, "bufferBytes", (64 << 20) as f64)? as u32;
    let opened = Instance::new().and_then(|inst| {
        let s = Session::new(&inst, &cfg)?;
        s.start_receiver(buffer)?;
        Ok((inst, s))
    });
    let (inst, session) = match opened {
        Ok(x) => x,
        Err(e) => return norm_err(cx, e),
    };
    let notify = Notify::new(cx, on_event);
    boxed(
        cx,
        "norm-rx",
        inst,
        session,
        None,
        notify,
        |events, notify| receive(&events, &notify),
    )
}

/// The receiver's event loop: reads every stream update and hands the bytes to JS.
fn receive(inst: &Instance, notify: &Notify) {
    let mut buf = vec![0u8; 256 << 10];
    // Streams being read from a message start (a new stream seeks one first: a late joiner may
    // start mid-message).
    let mut synced: Vec<RxStream> = Vec::new();
    while let Some(ev) = inst.next_event() {
        let s = match ev {
            Event::RxStreamNew(s) => {
                synced.retain(|x| x != &s);
                s
            }
            Event::RxStreamUpdated(s) => s,
            Event::RemoteSenderNew => {
                notify.send("sender", None);
                continue;
            }
            Event::RxObjectAborted => {
                synced.clear();
                notify.send("aborted", None);
                continue;
            }
            Event::RxObjectCompleted => {
                notify.send("completed", None);
                continue;
            }
            _ => continue,
        };
        let mut out = Vec::new();
        loop {
            if !synced.contains(&s) {
                if !s.seek_message_start() {
                    break;
                }
                synced.push(s);
            }
            match s.read(&mut buf) {
                Read::Bytes(0) => break,
                Read::Bytes(n) => out.extend_from_slice(&buf[..n]),
                Read::Break => {
                    if !out.is_empty() {
                        notify.send("data", Some(std::mem::take(&mut out)));
                    }
                    notify.send("break", None);
                    synced.retain(|x| x != &s);
                }
            }
        }
        if !out.is_empty() {
            notify.send("data", Some(out));
        }
        while notify.untaken.load(Ordering::Acquire) > MAX_UNTAKEN
            && !notify.stopping.load(Ordering::Acquire)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn unbox(cx: &mut FunctionContext, h: Handle<JsValue>) -> NeonResult<Arc<NormBox>> {
    match h.downcast::<Boxed, _>(cx) {
        Ok(b) => Ok((**b).clone()),
        Err(_) => throw_coded(cx, "ERR_NORM_HANDLE", "not a NORM handle"),
    }
}

/// Writes what fits of `bytes` into the sender's stream now; returns the count taken (fewer:
/// wait for `vacancy`). Throws on a receiver or closed handle.
#[neon::export(name = "normWrite")]
fn norm_write<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    bytes: Handle<'cx, JsUint8Array>,
) -> JsResult<'cx, JsNumber> {
    let b = unbox(cx, h)?;
    let n = match b.stream.lock().ok().as_deref().and_then(Option::as_ref) {
        Some(s) => s.write(bytes.as_slice(cx)),
        None => {
            return throw_coded(
                cx,
                "ERR_NORM_CLOSED",
                "the NORM sender is closed (or this is a receiver)",
            )
        }
    };
    Ok(cx.number(n as f64))
}

/// Ends a message (receivers that join late or lose data resume at the next) and flushes it out
/// without waiting for a full segment; `active`: the sender also repeats flush commands, so a
/// receiver that lost the message's tail asks for it now rather than when more data comes.
#[neon::export(name = "normEndMessage")]
fn norm_end_message<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    active: bool,
) -> JsResult<'cx, JsUndefined> {
    let b = unbox(cx, h)?;
    if let Some(s) = b.stream.lock().ok().as_deref().and_then(Option::as_ref) {
        s.mark_eom();
        s.flush(active);
    }
    Ok(cx.undefined())
}

/// Stops the handle: its thread ends, the session leaves the group. Idempotent.
#[neon::export(name = "normClose")]
fn norm_close<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsUndefined> {
    let b = unbox(cx, h)?;
    b.close();
    Ok(cx.undefined())
}
