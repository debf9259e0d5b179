//! The user-space TCP path alone, without Node: the kernel's TCP sends to [`UserTcp`] over DPDK's
//! `net_tap` (the kernel's tap driver on one side, DPDK's on the other), polled on one thread as
//! the transport thread polls it. The ceiling the Node bridge is measured against in
//! `bench/userSpaceNic.bench.ts` (docs/BENCHMARKS.md, "User-space NIC").
//!
//! As root: `cargo run --release -p hd-engine-core --example tap_tcp [-- MB ROUNDS]`; prints MB/s
//! per round and the median.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Command;
use std::time::Instant;

use hd_engine_core::netio::dpdk::{self, DpdkPort, EalOptions};
use hd_engine_core::netio::UserTcp;

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    dpdk::init(&EalOptions {
        vdevs: vec!["net_tap0,iface=hdtcp0".into()],
        no_huge: true,
        ..EalOptions::default()
    })
    .expect("DPDK starts (root, /dev/net/tun, libdpdk-dev)");
    let port = DpdkPort::open("net_tap0", 1500, 8192).expect("opens net_tap0");
    for a in [
        &["addr", "add", "198.18.71.1/24", "dev", "hdtcp0"][..],
        &["link", "set", "hdtcp0", "up"],
    ] {
        let ok = Command::new("ip").args(a).status().map(|s| s.success());
        assert!(matches!(ok, Ok(true)), "ip {a:?}");
    }
    let mut host = UserTcp::new(port, Ipv4Addr::new(198, 18, 71, 2), 24).expect("host");
    let mut rates = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    for r in 0..rounds {
        let server = host.listen(7400 + r as u16, 1 << 20).expect("listens");
        let to = SocketAddrV4::new(host.local(), 7400 + r as u16);
        let total = mb << 20;
        let sender = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(to).expect("connects");
            let chunk = vec![7u8; 1 << 20];
            for _ in 0..total >> 20 {
                s.write_all(&chunk).expect("writes");
            }
        });
        let (mut got, mut start) = (0usize, None);
        while got < total {
            host.poll().expect("polls");
            let n = host.recv(server, &mut buf).expect("recv");
            if n > 0 && start.is_none() {
                start = Some(Instant::now());
            }
            got += n;
        }
        let secs = start.map_or(f64::NAN, |s| s.elapsed().as_secs_f64());
        sender.join().expect("sender");
        host.close(server);
        for _ in 0..1000 {
            let _ = host.poll();
        }
        host.remove(server);
        let rate = total as f64 / 1e6 / secs;
        println!("round {r}: {rate:.0} MB/s");
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "median: {:.0} MB/s over {mb} MB rounds",
        rates[rates.len() / 2]
    );
}
