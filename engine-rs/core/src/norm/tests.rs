//! The binding against the real library: one sender and one receiver on a multicast group over
//! loopback, and the message a missing library gives.

use super::*;
use std::time::{Duration, Instant};

#[test]
fn a_missing_library_says_what_to_install() {
    let err = sys::load_from(&["/nonexistent/libnorm.so.1".to_string()])
        .err()
        .expect("no library there");
    assert!(err.contains("apt-get install libnorm1"), "{err}");
    assert!(err.contains("replication: tcp"), "{err}");
}

#[test]
fn the_installed_library_is_1_5_or_later() {
    let (major, minor, _) = version().expect("libnorm1 is installed (.ci/run installs it)");
    assert!(
        major > 1 || (major == 1 && minor >= 5),
        "NORM {major}.{minor}"
    );
}

#[test]
fn bad_arguments_are_refused_with_a_reason() {
    let inst = Instance::new().unwrap();
    let cfg = SessionConfig {
        address: "224.1.2.3\0x".into(),
        port: 6988,
        node_id: 1,
        interface: None,
        loopback: true,
        rx_socket_buffer: 0,
    };
    let err = Session::new(&inst, &cfg).err().unwrap();
    assert!(err.0.contains("NUL"), "{}", err.0);
    let cfg = SessionConfig {
        address: "224.1.2.3".into(),
        ..cfg
    };
    let s = Session::new(&inst, &cfg).unwrap();
    let sc = SenderConfig {
        buffer_bytes: 1 << 20,
        segment_size: 10,
        block_size: 16,
        parity: 0,
        tx_rate_bps: 1e6,
        stream_bytes: 1 << 20,
        grtt_estimate: 0.01,
    };
    assert!(s.start_sender(&sc).err().unwrap().0.contains("too small"));
}

/// A stream written by one session arrives, whole and in order, at a receiving session of another
/// instance on the same group (multicast loopback on `lo`).
#[test]
fn a_stream_reaches_a_receiver_in_order() {
    let port = 16988 + (std::process::id() % 1000) as u16;
    let session = |id: u32| {
        let inst = Instance::new().unwrap();
        let cfg = SessionConfig {
            address: "239.255.42.7".into(),
            port,
            node_id: id,
            interface: Some("lo".into()),
            loopback: true,
            rx_socket_buffer: 4 << 20,
        };
        let s = Session::new(&inst, &cfg).unwrap();
        (inst, s)
    };
    let (rx_inst, rx) = session(2);
    rx.start_receiver(8 << 20).unwrap();
    let (tx_inst, tx) = session(1);
    // The stream buffer holds the whole payload for repairs; 50 Mbit/s is what one loopback
    // receiver keeps up with on a busy 2-core machine (faster senders overrun it, losses beyond repair).
    let sc = SenderConfig {
        buffer_bytes: 32 << 20,
        segment_size: 1200,
        block_size: 64,
        parity: 0,
        tx_rate_bps: 50e6,
        stream_bytes: 16 << 20,
        grtt_estimate: 0.01,
    };
    let stream = tx.start_sender(&sc).unwrap();
    let payload: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();

    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        let deadline = Instant::now() + Duration::from_secs(20);
        while got.len() < 3_000_000 && Instant::now() < deadline {
            match rx_inst.next_event() {
                Some(Event::RxStreamNew(s)) | Some(Event::RxStreamUpdated(s)) => loop {
                    match s.read(&mut buf) {
                        Read::Bytes(0) => break,
                        Read::Bytes(n) => got.extend_from_slice(&buf[..n]),
                        Read::Break => {
                            panic!("a break on a loss-free loopback after {} bytes", got.len())
                        }
                    }
                },
                Some(_) => {}
                None => break,
            }
        }
        drop(rx);
        got
    });

    let mut off = 0;
    while off < payload.len() {
        let n = stream.write(&payload[off..(off + 65536).min(payload.len())]);
        off += n;
        if n == 0 {
            // Wait for room: the instance tells us.
            while !matches!(tx_inst.next_event(), Some(Event::TxQueueVacancy) | None) {}
        }
    }
    stream.mark_eom();
    stream.flush(true);
    let got = reader.join().unwrap();
    assert_eq!(got.len(), payload.len());
    assert!(got == payload, "bytes differ");
    drop(stream);
    drop(tx);
}
