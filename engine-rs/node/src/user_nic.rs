//! User-space NIC exports (docs/kernel-bypass.md): a [`TcpHost`] over a DPDK port whose
//! connections JS sees as byte streams (`transport/`). Commands are plain calls; the host's
//! events reach JS through a Neon `Channel`, one hop per batch.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hd_engine_core::netio::dpdk::{self, DpdkPort, EalOptions};
use hd_engine_core::netio::{HostEvent, HostOptions, TcpHost};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::{opt_flag, opt_num as num, opt_text, throw_coded};

/// A running host (taken out by `userNicClose`).
pub struct NicBox {
    host: Mutex<Option<TcpHost>>,
}

impl Finalize for NicBox {
    fn finalize<'a, C: Context<'a>>(self, _: &mut C) {
        if let Ok(mut h) = self.host.lock() {
            h.take();
        }
    }
}

type Boxed = JsBox<Arc<NicBox>>;

fn strings(cx: &mut FunctionContext, o: Handle<JsObject>, key: &str) -> NeonResult<Vec<String>> {
    let v: Handle<JsValue> = o.get_value(cx, key)?;
    if v.is_a::<JsUndefined, _>(cx) {
        return Ok(Vec::new());
    }
    let a = v.downcast_or_throw::<JsArray, _>(cx)?.to_vec(cx)?;
    a.into_iter()
        .map(|s| Ok(s.downcast_or_throw::<JsString, _>(cx)?.value(cx)))
        .collect()
}

fn ipv4(cx: &mut FunctionContext, text: &str) -> NeonResult<Ipv4Addr> {
    match text.parse() {
        Ok(ip) => Ok(ip),
        Err(_) => throw_coded(
            cx,
            "ERR_USER_NIC",
            &format!("{text:?} is not an IPv4 address"),
        ),
    }
}

/// Calls JS's `onEvent(kind, id, a?, b?)` for each event of a batch, on the JS thread.
fn deliver(
    channel: &Channel,
    callback: &Arc<Root<JsFunction>>,
    undelivered: &Arc<AtomicUsize>,
    batch: Vec<HostEvent>,
) {
    let cb = callback.clone();
    let undelivered = undelivered.clone();
    channel.send(move |mut cx| {
        let f = cb.to_inner(&mut cx);
        for e in batch {
            let this = cx.undefined();
            let mut call = f.call_with(&cx);
            call.this(this);
            match e {
                HostEvent::Ready { mac } => {
                    let text = mac.map(|b| format!("{b:02x}")).join(":");
                    call.arg(cx.string("ready"))
                        .arg(cx.number(0))
                        .arg(cx.string(text));
                }
                HostEvent::Accepted { id, port, peer } => {
                    call.arg(cx.string("accepted"))
                        .arg(cx.number(id))
                        .arg(cx.string(peer.to_string()))
                        .arg(cx.number(port));
                }
                HostEvent::Connected { id } => {
                    call.arg(cx.string("connected")).arg(cx.number(id));
                }
                HostEvent::Data { id, bytes } => {
                    undelivered.fetch_sub(bytes.len(), Ordering::AcqRel);
                    // The host's buffer becomes the JS Buffer's memory: no copy.
                    let b = JsBuffer::external(&mut cx, bytes);
                    call.arg(cx.string("data")).arg(cx.number(id)).arg(b);
                }
                HostEvent::Sent { id, bytes } => {
                    call.arg(cx.string("sent"))
                        .arg(cx.number(id))
                        .arg(cx.number(bytes as f64));
                }
                HostEvent::Ended { id } => {
                    call.arg(cx.string("ended")).arg(cx.number(id));
                }
                HostEvent::Closed { id, error } => {
                    call.arg(cx.string("closed")).arg(cx.number(id));
                    if let Some(e) = error {
                        call.arg(cx.string(e));
                    }
                }
                HostEvent::Stopped { error } => {
                    call.arg(cx.string("stopped")).arg(cx.number(0));
                    if let Some(e) = error {
                        call.arg(cx.string(e));
                    }
                }
            }
            call.exec(&mut cx)?;
        }
        Ok(())
    });
}

/// True when this build can drive a user-space NIC (the DPDK shim was built, or `HD_DPDK_SHIM` names one).
#[neon::export(name = "userNicBuiltIn")]
fn user_nic_built_in<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsBoolean> {
    Ok(cx.boolean(dpdk::shim_path().is_some()))
}

/// Starts a user-space NIC: `{ device, pci?, vdevs?, cores?, noHuge?, memoryMb?, ip, prefix,
/// ipMtu, mbufs?, buffer?, busyPoll?, maxUndelivered? }`. DPDK's environment starts on the host's
/// thread with `cores`, `pci`, `vdevs`, `noHuge` and `memoryMb`, then `device` (a PCIe address or
/// a vdev name) opens. `onEvent` hears `ready` (with the MAC) or `stopped` (with the reason), then
/// the connections' events. Throws `ERR_USER_NIC` when this build has no DPDK.
#[neon::export(name = "userNicOpen")]
fn user_nic_open<'cx>(
    cx: &mut FunctionContext<'cx>,
    opts: Handle<'cx, JsObject>,
    on_event: Handle<'cx, JsFunction>,
) -> JsResult<'cx, Boxed> {
    if dpdk::shim_path().is_none() {
        return throw_coded(
            cx,
            "ERR_USER_NIC",
            "this build has no DPDK: install Debian's libdpdk-dev and pkg-config, then rebuild engine-rs (npm run build:native)",
        );
    }
    let device = opts.get::<JsString, _, _>(cx, "device")?.value(cx);
    let eal = EalOptions {
        cores: opt_text(cx, opts, "cores")?,
        pci: strings(cx, opts, "pci")?,
        vdevs: strings(cx, opts, "vdevs")?,
        no_huge: opt_flag(cx, opts, "noHuge")?,
        memory_mb: num(cx, opts, "memoryMb", 0.0)? as u32,
    };
    let ip_text = opts.get::<JsString, _, _>(cx, "ip")?.value(cx);
    let ip = ipv4(cx, &ip_text)?;
    let host_opts = HostOptions {
        ip,
        prefix: num(cx, opts, "prefix", 24.0)? as u8,
        buffer: num(cx, opts, "buffer", (1u32 << 20) as f64)? as usize,
        busy_poll: opt_flag(cx, opts, "busyPoll")?,
        max_undelivered: num(cx, opts, "maxUndelivered", (16u32 << 20) as f64)? as usize,
    };
    let ip_mtu = num(cx, opts, "ipMtu", 1500.0)? as u16;
    let mbufs = num(cx, opts, "mbufs", 8192.0)? as u32;
    let undelivered = Arc::new(AtomicUsize::new(0));
    let channel = cx.channel();
    let callback = Arc::new(on_event.root(cx));
    let started = TcpHost::start(
        "hd-transport",
        move || {
            dpdk::init(&eal)?;
            DpdkPort::open(&device, ip_mtu, mbufs)
        },
        host_opts,
        undelivered.clone(),
        move |batch| deliver(&channel, &callback, &undelivered, batch),
    );
    match started {
        Ok(host) => Ok(cx.boxed(Arc::new(NicBox {
            host: Mutex::new(Some(host)),
        }))),
        Err(e) => throw_coded(cx, "ERR_USER_NIC", &e.to_string()),
    }
}

fn unbox(cx: &mut FunctionContext, h: Handle<JsValue>) -> NeonResult<Arc<NicBox>> {
    match h.downcast::<Boxed, _>(cx) {
        Ok(b) => Ok((**b).clone()),
        Err(_) => throw_coded(cx, "ERR_USER_NIC", "not a user-space NIC handle"),
    }
}

/// Runs `f` on the open host; a closed one is an `ERR_USER_NIC_CLOSED`.
fn with_host<'cx, T>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    f: impl FnOnce(&TcpHost) -> T,
) -> NeonResult<T> {
    let b = unbox(cx, h)?;
    let guard = b.host.lock();
    match guard.as_ref().ok().and_then(|g| g.as_ref()) {
        Some(host) => Ok(f(host)),
        None => throw_coded(cx, "ERR_USER_NIC_CLOSED", "the user-space NIC is closed"),
    }
}

/// Accepts connections on `port` (up to `backlog` handshakes at once); each is an `accepted` event.
#[neon::export(name = "userNicListen")]
fn user_nic_listen<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    port: f64,
    backlog: f64,
) -> JsResult<'cx, JsUndefined> {
    with_host(cx, h, |host| host.listen(port as u16, backlog as usize))?;
    Ok(cx.undefined())
}

/// Stops accepting on `port`.
#[neon::export(name = "userNicUnlisten")]
fn user_nic_unlisten<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    port: f64,
) -> JsResult<'cx, JsUndefined> {
    with_host(cx, h, |host| host.unlisten(port as u16))?;
    Ok(cx.undefined())
}

/// Connects to `ip:port`; returns the connection's id (`connected` or `closed` follows).
#[neon::export(name = "userNicConnect")]
fn user_nic_connect<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    ip: String,
    port: f64,
) -> JsResult<'cx, JsNumber> {
    let ip = ipv4(cx, &ip)?;
    let id = with_host(cx, h, |host| {
        host.connect(SocketAddrV4::new(ip, port as u16))
    })?;
    Ok(cx.number(id))
}

/// Queues `bytes` on connection `id` (`sent` events report them taken).
#[neon::export(name = "userNicWrite")]
fn user_nic_write<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    id: f64,
    bytes: Handle<'cx, JsUint8Array>,
) -> JsResult<'cx, JsUndefined> {
    let data = bytes.as_slice(cx).to_vec();
    with_host(cx, h, |host| host.write(id as u32, data))?;
    Ok(cx.undefined())
}

/// Closes the sending side of `id` after its queued bytes (`end`), resets it (`abort`), or stops
/// (`pause`) / resumes (`resume`) reading it.
#[neon::export(name = "userNicControl")]
fn user_nic_control<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
    id: f64,
    what: String,
) -> JsResult<'cx, JsUndefined> {
    let id = id as u32;
    let act: fn(&TcpHost, u32) = match what.as_str() {
        "end" => |h, id| h.end(id),
        "abort" => |h, id| h.abort(id),
        "pause" => |h, id| h.pause(id, true),
        "resume" => |h, id| h.pause(id, false),
        _ => {
            return throw_coded(
                cx,
                "ERR_USER_NIC",
                &format!("unknown control {what:?}: end, abort, pause or resume"),
            )
        }
    };
    with_host(cx, h, |host| act(host, id))?;
    Ok(cx.undefined())
}

/// Stops the host: its connections are reset, its thread ends (`stopped`). Idempotent.
#[neon::export(name = "userNicClose")]
fn user_nic_close<'cx>(
    cx: &mut FunctionContext<'cx>,
    h: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsUndefined> {
    let b = unbox(cx, h)?;
    let host = b.host.lock().ok().and_then(|mut g| g.take());
    drop(host);
    Ok(cx.undefined())
}
