//! [`TcpHost`] between two threads joined by an in-memory Ethernet segment: what a node's HDWP
//! server and client see of a user-space NIC, without one.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

type Queue = Arc<Mutex<VecDeque<Vec<u8>>>>;

/// One end of a segment two threads share.
struct SharedWire {
    mac: Mac,
    out: Queue,
    inbox: Queue,
}

impl PacketPort for SharedWire {
    fn mac(&self) -> Mac {
        self.mac
    }
    fn max_frame(&self) -> usize {
        1514
    }
    fn transmit(&mut self, frames: &TxFrames) -> Result<usize, NetError> {
        let mut out = self.out.lock().unwrap();
        for i in 0..frames.len() {
            out.push_back(frames.get(i).to_vec());
        }
        Ok(frames.len())
    }
    fn receive(&mut self, into: &mut RxFrames) -> Result<usize, NetError> {
        let (stride, cap) = (into.stride(), into.capacity());
        let (buf, lens) = into.parts();
        let mut inbox = self.inbox.lock().unwrap();
        while lens.len() < cap {
            let Some(f) = inbox.pop_front() else { break };
            buf[lens.len() * stride..][..f.len()].copy_from_slice(&f);
            lens.push(f.len() as u32);
        }
        Ok(lens.len())
    }
}

/// A host on one end of a fresh segment, with its events on a channel.
struct Side {
    host: TcpHost,
    events: Receiver<HostEvent>,
    undelivered: Arc<AtomicUsize>,
    ip: Ipv4Addr,
}

impl Side {
    /// The next event, or a panic after 10 s.
    fn next(&self) -> HostEvent {
        let e = self
            .events
            .recv_timeout(Duration::from_secs(10))
            .expect("an event within 10 s");
        if let HostEvent::Data { bytes, .. } = &e {
            self.undelivered.fetch_sub(bytes.len(), Ordering::AcqRel);
        }
        e
    }

    /// Events until `want` matches one (returned), collecting the bytes of `Data` for `id`.
    fn until(&self, id: ConnId, got: &mut Vec<u8>, want: impl Fn(&HostEvent) -> bool) -> HostEvent {
        loop {
            let e = self.next();
            if let HostEvent::Data { id: i, bytes } = &e {
                if *i == id {
                    got.extend_from_slice(bytes);
                }
            }
            if want(&e) {
                return e;
            }
        }
    }
}

fn side(mac: Mac, last: u8, out: Queue, inbox: Queue, buffer: usize) -> Side {
    let (tx, rx) = mpsc::channel();
    let undelivered = Arc::new(AtomicUsize::new(0));
    let ip = Ipv4Addr::new(198, 18, 9, last);
    let host = TcpHost::start(
        "hd-test-host",
        move || Ok(SharedWire { mac, out, inbox }),
        HostOptions {
            ip,
            prefix: 24,
            buffer,
            busy_poll: false,
            max_undelivered: 4 << 20,
        },
        undelivered.clone(),
        move |batch| {
            for e in batch {
                let _ = tx.send(e);
            }
        },
    )
    .expect("starts");
    let s = Side {
        host,
        events: rx,
        undelivered,
        ip,
    };
    assert!(matches!(s.next(), HostEvent::Ready { mac: m } if m == mac));
    s
}

fn pair(buffer: usize) -> (Side, Side) {
    let ab: Queue = Arc::default();
    let ba: Queue = Arc::default();
    (
        side([2, 0, 0, 0, 1, 1], 1, ab.clone(), ba.clone(), buffer),
        side([2, 0, 0, 0, 1, 2], 2, ba, ab, buffer),
    )
}

fn stream(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 253) as u8).collect()
}

#[test]
fn a_host_accepts_carries_bytes_both_ways_and_closes_in_order() {
    let (a, b) = pair(256 << 10);
    b.host.listen(6987, 2);
    let c = a.host.connect(SocketAddrV4::new(b.ip, 6987));
    assert_eq!(a.next(), HostEvent::Connected { id: c });
    let HostEvent::Accepted { id: s, port, peer } = b.next() else {
        panic!("accepted")
    };
    assert_eq!((port, *peer.ip()), (6987, a.ip));

    // 3 MiB in several writes, more than the buffers: it arrives whole and in order, and every
    // byte written is reported sent.
    let data = stream(3 << 20);
    for part in data.chunks(700 << 10) {
        a.host.write(c, part.to_vec());
    }
    let (mut got, mut sent) = (Vec::new(), 0);
    while got.len() < data.len() {
        match b.next() {
            HostEvent::Data { id, bytes } if id == s => got.extend_from_slice(&bytes),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(got, data);
    while sent < data.len() {
        match a.next() {
            HostEvent::Sent { id, bytes } if id == c => sent += bytes,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(sent, data.len());

    // The answer, then A ends: B sees the end after the answer's bytes, ends too, both close.
    b.host.write(s, b"credit".to_vec());
    let mut answer = Vec::new();
    a.until(c, &mut answer, |e| {
        *e == HostEvent::Data {
            id: c,
            bytes: b"credit".to_vec(),
        }
    });
    a.host.end(c);
    b.until(s, &mut Vec::new(), |e| *e == HostEvent::Ended { id: s });
    b.host.end(s);
    a.until(c, &mut Vec::new(), |e| *e == HostEvent::Ended { id: c });
    a.until(
        c,
        &mut Vec::new(),
        |e| matches!(e, HostEvent::Closed { id, .. } if *id == c),
    );
    let closed = b.until(s, &mut Vec::new(), |e| {
        matches!(e, HostEvent::Closed { .. })
    });
    assert_eq!(closed, HostEvent::Closed { id: s, error: None });
}

#[test]
fn a_paused_connection_holds_the_sender_back_until_resumed() {
    let (a, b) = pair(64 << 10);
    b.host.listen(7000, 1);
    let c = a.host.connect(SocketAddrV4::new(b.ip, 7000));
    assert_eq!(a.next(), HostEvent::Connected { id: c });
    let HostEvent::Accepted { id: s, .. } = b.next() else {
        panic!("accepted")
    };
    b.host.pause(s, true);
    let data = stream(1 << 20);
    a.host.write(c, data.clone());
    // B reads nothing, so A's stack can take no more than its buffer and B's window.
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut sent = 0;
    while Instant::now() < deadline {
        if let Ok(HostEvent::Sent { bytes, .. }) = a.events.recv_timeout(Duration::from_millis(50))
        {
            sent += bytes;
        }
    }
    let mut early = Vec::new();
    while let Ok(e) = b.events.try_recv() {
        if let HostEvent::Data { bytes, .. } = e {
            early.extend_from_slice(&bytes);
        }
    }
    assert!(
        sent <= 2 * (64 << 10) + early.len(),
        "sent {sent} with B paused"
    );
    b.host.pause(s, false);
    let mut got = early;
    while got.len() < data.len() {
        if let HostEvent::Data { bytes, .. } = b.next() {
            got.extend_from_slice(&bytes);
        }
    }
    assert_eq!(got, data);
}

#[test]
fn refused_and_reset_connections_say_so() {
    let (a, b) = pair(64 << 10);
    // Nobody listens on 7001: B's stack answers the SYN with a reset.
    let c = a.host.connect(SocketAddrV4::new(b.ip, 7001));
    match a.next() {
        HostEvent::Closed { id, error: Some(e) } => {
            assert_eq!(id, c);
            assert!(e.contains("refused or unanswered"), "{e}");
        }
        other => panic!("unexpected {other:?}"),
    }
    // An abort on one side is a reset on the other.
    b.host.listen(7002, 1);
    let c = a.host.connect(SocketAddrV4::new(b.ip, 7002));
    assert_eq!(a.next(), HostEvent::Connected { id: c });
    let HostEvent::Accepted { id: s, .. } = b.next() else {
        panic!("accepted")
    };
    a.host.abort(c);
    match b.until(s, &mut Vec::new(), |e| {
        matches!(e, HostEvent::Closed { .. })
    }) {
        HostEvent::Closed { id, error: Some(e) } => {
            assert_eq!(id, s);
            assert!(e.contains("reset"), "{e}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(a.next(), HostEvent::Closed { id, error: None } if id == c));
}

#[test]
fn a_port_that_does_not_open_stops_the_host_with_the_reason() {
    let (tx, rx) = mpsc::channel();
    let _host = TcpHost::start(
        "hd-test-host",
        || -> Result<SharedWire, NetError> { Err(NetError::Dpdk("no such port".into())) },
        HostOptions {
            ip: Ipv4Addr::new(198, 18, 9, 3),
            prefix: 24,
            buffer: 4096,
            busy_poll: false,
            max_undelivered: 1 << 20,
        },
        Arc::new(AtomicUsize::new(0)),
        move |batch| {
            for e in batch {
                let _ = tx.send(e);
            }
        },
    )
    .expect("the thread starts");
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        HostEvent::Stopped {
            error: Some("no such port".into())
        }
    );
}
