//! What one HDWP datagram costs to send and receive on this machine, kernel against user space:
//! a [`KernelUdp`] socket sending to itself over loopback, and a [`UserUdp`] endpoint sending to
//! itself over DPDK's `net_ring` virtual device (the ring loops transmit back to receive, so the
//! figure is DPDK's driver path plus our IPv4/UDP/ARP work, without a NIC or a kernel hop).
//! Both move the same 1200-byte (Standard MTU) HDWP records datagrams in bursts of 32.
//!
//! `cargo run --release -p hd-engine-core --example datagram_cost [-- SECONDS ROUNDS]`; prints
//! the median of ROUNDS rounds (default 5 of 1 s) as nanoseconds and datagrams per second.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use hd_engine_core::batch_id::BatchId;
use hd_engine_core::hdwp::{encode_datagrams, MTU_STANDARD};
use hd_engine_core::netio::dpdk::{self, DpdkPort, EalOptions};
use hd_engine_core::netio::{Datagram, DatagramSocket, KernelUdp, UserUdp};

const BURST: usize = 32;

fn datagrams() -> Vec<Vec<u8>> {
    let records: Vec<u8> = (0..150 * 7 * BURST).map(|i| i as u8).collect();
    let mut out =
        encode_datagrams(None, &BatchId([3; 64]), 150, &records, MTU_STANDARD).expect("encodes");
    out.truncate(BURST);
    out
}

/// Sends bursts to itself and reads them back for `secs`; returns nanoseconds per datagram.
fn round(s: &mut dyn DatagramSocket, payloads: &[&[u8]], secs: f64) -> f64 {
    let to = s.local();
    let mut got: Vec<Datagram> = Vec::with_capacity(BURST);
    let (mut moved, start) = (0u64, Instant::now());
    while start.elapsed().as_secs_f64() < secs {
        let sent = s.send_to(payloads, to).expect("sends");
        let mut back = 0;
        let deadline = Instant::now() + Duration::from_millis(100);
        while back < sent && Instant::now() < deadline {
            got.clear();
            back += s.recv(&mut got, BURST).expect("receives");
        }
        moved += back as u64;
    }
    start.elapsed().as_nanos() as f64 / moved.max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn report(name: &str, ns: Vec<f64>, bytes: usize) {
    let m = median(ns);
    println!(
        "{name:<32} {m:>8.0} ns/datagram  {:>10.0} datagrams/s  {:>7.2} Gbit/s of payload",
        1e9 / m,
        bytes as f64 * 8.0 / m
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let owned = datagrams();
    let payloads: Vec<&[u8]> = owned.iter().map(|d| d.as_slice()).collect();
    println!(
        "datagram_cost: {} datagrams of {} bytes a burst, median of {rounds} rounds of {secs} s",
        payloads.len(),
        payloads[0].len()
    );

    let mut kernel =
        KernelUdp::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), MTU_STANDARD).expect("binds");
    let ns = (0..rounds)
        .map(|_| round(&mut kernel, &payloads, secs))
        .collect();
    report("kernel UDP, loopback", ns, payloads[0].len());

    if dpdk::shim_path().is_none() {
        println!("user-space UDP over DPDK net_ring: skipped (this build has no DPDK shim: install libdpdk-dev and pkg-config, rebuild)");
        return;
    }
    let opts = EalOptions {
        vdevs: vec!["net_ring0".into()],
        no_huge: true,
        memory_mb: 256,
        ..Default::default()
    };
    dpdk::init(&opts).expect("DPDK starts");
    let port = DpdkPort::open("net_ring0", 1500, 8192).expect("opens net_ring0");
    let mut user = UserUdp::new(
        port,
        SocketAddrV4::new(Ipv4Addr::new(198, 18, 9, 1), 6987),
        MTU_STANDARD,
    )
    .expect("endpoint");
    let ns = (0..rounds)
        .map(|_| round(&mut user, &payloads, secs))
        .collect();
    report("user-space UDP, DPDK net_ring", ns, payloads[0].len());
}
