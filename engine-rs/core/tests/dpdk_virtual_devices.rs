//! DPDK ports against the kernel's own network stack, with no NIC: HDWP datagrams sent by
//! [`UserUdp`] over DPDK reach an ordinary kernel UDP socket, and the other way round, with ARP
//! resolved both ways.
//! - Standard MTU over DPDK's `net_tap` virtual device (a kernel tap interface driven by DPDK's
//!   poll-mode driver; the tap driver carries frames of at most 1522 bytes).
//! - Jumbo MTU over `net_pcap` bound to one end of a veth pair whose other end is the kernel's
//!   (links of 8550 bytes, as the reference asks of jumbo mode; DPDK 22.11's `net_af_packet`
//!   caps frames at 1518 bytes, `net_pcap` does not).
//!
//! One EAL per process, so this file is its own test binary. It runs where the DPDK shim was built
//! (libdpdk-dev present at build time; CI installs it) and the process may create interfaces
//! (root, /dev/net/tun); elsewhere it says loudly that it skips.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Command;
use std::time::{Duration, Instant};

use hd_engine_core::batch_id::BatchId;
use hd_engine_core::hdwp::{decode_datagram, encode_datagrams, Frame, MTU_JUMBO, MTU_STANDARD};
use hd_engine_core::netio::dpdk::{self, DpdkPort, EalOptions};
use hd_engine_core::netio::{
    Datagram, DatagramSocket, KernelUdp, NetError, TcpState, UserTcp, UserUdp,
};

fn skip(why: &str) {
    eprintln!("SKIPPED dpdk_virtual_devices: {why}");
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("the ip command (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn datagrams(records: &[u8], record_size: u16, mtu: usize) -> Vec<Vec<u8>> {
    encode_datagrams(None, &BatchId([9; 64]), record_size, records, mtu).expect("encodes")
}

/// Polls both sockets until `into` has `n` datagrams (polling the other keeps its ARP answered).
fn collect(
    into: &mut dyn DatagramSocket,
    other: &mut dyn DatagramSocket,
    n: usize,
) -> Vec<Datagram> {
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < n && Instant::now() < deadline {
        let want = n - got.len();
        into.recv(&mut got, want).expect("recv");
        other.recv(&mut scratch, usize::MAX).expect("recv");
        std::thread::sleep(Duration::from_micros(200));
    }
    got
}

fn records_of(got: &[Datagram], mtu: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for d in got {
        match decode_datagram(&d.payload, mtu).expect("an HDWP datagram") {
            Frame::Records(r) => out.extend_from_slice(r.payload),
            _ => panic!("not a records frame"),
        }
    }
    out
}

/// Deletes the veth pair however the test ends.
struct Veth(String);

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).output();
    }
}

fn kernel_to_dpdk(
    kernel: &mut KernelUdp,
    user: &mut UserUdp<DpdkPort>,
    payloads: &[&[u8]],
    records: &[u8],
) {
    assert_eq!(
        kernel.send_to(payloads, user.local()).expect("sends"),
        payloads.len()
    );
    let got = collect(user, kernel, payloads.len());
    assert_eq!(
        got.len(),
        payloads.len(),
        "every datagram reached DPDK: {:?}",
        user.stats()
    );
    assert!(got.iter().all(|d| d.from == kernel.local()));
    assert_eq!(records_of(&got, user.mtu()), records);
}

fn dpdk_to_kernel(
    kernel: &mut KernelUdp,
    user: &mut UserUdp<DpdkPort>,
    payloads: &[&[u8]],
    records: &[u8],
) {
    assert_eq!(
        user.send_to(payloads, kernel.local()).expect("sends"),
        payloads.len()
    );
    let back = collect(kernel, user, payloads.len());
    assert_eq!(
        back.len(),
        payloads.len(),
        "every datagram reached the kernel: {:?}",
        user.stats()
    );
    assert!(back.iter().all(|d| d.from == user.local()));
    // The kernel drops a datagram whose IPv4 or UDP checksum is wrong: arriving proves ours right.
    assert_eq!(records_of(&back, user.mtu()), records);
}

/// One link: kernel side `iface` at 198.18.`net`.1, DPDK side 198.18.`net`.2:6987. Whoever sends
/// first resolves the other's address by ARP: the kernel when `dpdk_first` is false, else DPDK.
fn exchange(vdev: &str, iface: &str, net: u8, mtu: usize, ip_mtu: u16, dpdk_first: bool) {
    let port = DpdkPort::open(vdev, ip_mtu, 4096).expect("opens the port");
    ip(&["addr", "add", &format!("198.18.{net}.1/24"), "dev", iface]);
    ip(&["link", "set", iface, "mtu", &ip_mtu.to_string(), "up"]);
    let dpdk_at = SocketAddrV4::new(Ipv4Addr::new(198, 18, net, 2), 6987);
    let mut user = UserUdp::new(port, dpdk_at, mtu).expect("the link carries the MTU mode");
    let mut kernel =
        KernelUdp::bind(SocketAddrV4::new(Ipv4Addr::new(198, 18, net, 1), 0), mtu).expect("binds");

    let records: Vec<u8> = (0..150 * 200).map(|i| (i % 251) as u8).collect();
    let sent = datagrams(&records, 150, mtu);
    assert!(sent.iter().all(|d| d.len() <= mtu) && sent.len() > 3);
    let payloads: Vec<&[u8]> = sent.iter().map(|d| d.as_slice()).collect();
    if dpdk_first {
        dpdk_to_kernel(&mut kernel, &mut user, &payloads, &records);
        assert_eq!(
            (user.stats().arp_asked, user.stats().arp_answered),
            (1, 0),
            "DPDK asked: {:?}",
            user.stats()
        );
        kernel_to_dpdk(&mut kernel, &mut user, &payloads, &records);
    } else {
        kernel_to_dpdk(&mut kernel, &mut user, &payloads, &records);
        assert_eq!(
            (user.stats().arp_asked, user.stats().arp_answered),
            (0, 1),
            "the kernel asked: {:?}",
            user.stats()
        );
        dpdk_to_kernel(&mut kernel, &mut user, &payloads, &records);
    }
    eprintln!(
        "dpdk_virtual_devices: {vdev} mtu {mtu}: {} datagrams each way, {:?}",
        payloads.len(),
        user.stats()
    );
}

#[test]
fn dpdk_ports_exchange_hdwp_datagrams_with_the_kernel_stack() {
    if dpdk::shim_path().is_none() {
        return skip("this build has no DPDK shim (libdpdk-dev and pkg-config were absent when engine-rs was built)");
    }
    // SAFETY: geteuid has no preconditions.
    if !std::path::Path::new("/dev/net/tun").exists() || unsafe { libc::geteuid() } != 0 {
        return skip("net_tap needs /dev/net/tun and root to create tap interfaces");
    }
    let tag = std::process::id() % 100_000;
    let tcp_if = format!("hdt{tag}");
    let (std_if, dpdk_end, kernel_end) = (
        format!("hds{tag}"),
        format!("hdjd{tag}"),
        format!("hdjk{tag}"),
    );
    // A container without CAP_NET_ADMIN cannot create interfaces at all: say so and skip.
    let veth = Command::new("ip")
        .args([
            "link",
            "add",
            &dpdk_end,
            "mtu",
            "8550",
            "type",
            "veth",
            "peer",
            "name",
            &kernel_end,
        ])
        .output();
    match veth {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            return skip(&format!(
                "cannot create network interfaces here: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Err(e) => return skip(&format!("no ip command (iproute2): {e}")),
    }
    let _veth = Veth(dpdk_end.clone());
    ip(&["link", "set", &dpdk_end, "up"]);
    // veth leaves UDP checksums to "hardware" that does not exist on this path: the kernel end must
    // fill them in, as a real NIC would, or every datagram reaches DPDK with a partial checksum.
    let ethtool = Command::new("ethtool")
        .args(["-K", &kernel_end, "tx", "off"])
        .output();
    assert!(
        matches!(&ethtool, Ok(o) if o.status.success()),
        "ethtool -K {kernel_end} tx off (install ethtool): {ethtool:?}"
    );
    let opts = EalOptions {
        vdevs: vec![
            format!("net_tap0,iface={std_if}"),
            format!("net_tap1,iface={tcp_if}"),
            format!("net_pcap0,iface={dpdk_end}"),
        ],
        no_huge: true,
        memory_mb: 256,
        ..Default::default()
    };
    dpdk::init(&opts).expect("DPDK's environment starts on plain memory");
    assert_eq!(dpdk::port_count().expect("counts"), 3);
    dpdk::init(&opts).expect("the same options again are a no-op");
    let again = dpdk::init(&EalOptions {
        no_huge: true,
        ..Default::default()
    })
    .expect_err("the EAL cannot restart");
    assert!(again.to_string().contains("once per process"), "{again}");
    assert!(
        DpdkPort::open("net_tap9", 1500, 1024).is_err(),
        "an unknown device is refused"
    );

    exchange("net_tap0", &std_if, 201, MTU_STANDARD, 1500, false);
    tcp_with_the_kernel("net_tap1", &tcp_if, 203);
    exchange("net_pcap0", &kernel_end, 202, MTU_JUMBO, 8550, true);
}

#[test]
fn a_jumbo_endpoint_over_a_standard_link_is_refused() {
    // The check happens before any device is touched, so it holds with or without DPDK.
    let e = hd_engine_core::netio::check_link(MTU_JUMBO, 1514).expect_err("too small");
    assert!(
        matches!(e, NetError::LinkTooSmall { .. }) && e.to_string().contains("8550"),
        "{e}"
    );
}

/// Polls `host` until `done` or 10 s.
fn poll_until(
    host: &mut UserTcp<DpdkPort>,
    mut done: impl FnMut(&mut UserTcp<DpdkPort>) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        host.poll().expect("polls");
        if done(host) {
            return true;
        }
    }
    false
}

/// HDWP over TCP between smoltcp on a DPDK port and the kernel's TCP, both ways: the kernel
/// connects to DPDK and streams records frames, then DPDK connects to a kernel listener.
fn tcp_with_the_kernel(vdev: &str, iface: &str, net: u8) {
    use hd_engine_core::hdwp::{encode_records, FrameDecoder, DEFAULT_MAX_PAYLOAD, HEADER_LEN};
    use std::io::{Read, Write};
    let port = DpdkPort::open(vdev, 1500, 4096).expect("opens the port");
    ip(&["addr", "add", &format!("198.18.{net}.1/24"), "dev", iface]);
    ip(&["link", "set", iface, "up"]);
    let mut host = UserTcp::new(port, Ipv4Addr::new(198, 18, net, 2), 24).expect("host");
    let records: Vec<u8> = (0..150 * 10_000).map(|i| (i % 249) as u8).collect();
    let mut stream = Vec::new();
    encode_records(
        &mut stream,
        None,
        &BatchId([4; 64]),
        150,
        &records,
        HEADER_LEN + DEFAULT_MAX_PAYLOAD as usize,
    )
    .expect("encodes");

    // The kernel connects (resolving DPDK's address by ARP, answered by smoltcp) and sends.
    let server = host.listen(6987, 1 << 20).expect("listens");
    let to = SocketAddrV4::new(host.local(), 6987);
    let sent = stream.clone();
    let kernel = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect_timeout(&to.into(), Duration::from_secs(10))
            .expect("the kernel connects");
        s.write_all(&sent).expect("writes");
        let mut answer = [0u8; 5];
        s.read_exact(&mut answer).expect("reads the answer");
        answer
    });
    let (mut got, mut buf) = (Vec::new(), vec![0u8; 64 << 10]);
    assert!(
        poll_until(&mut host, |h| {
            let n = h.recv(server, &mut buf).expect("recv");
            got.extend_from_slice(&buf[..n]);
            got.len() == stream.len()
        }),
        "received {} of {} bytes",
        got.len(),
        stream.len()
    );
    let mut d = FrameDecoder::new();
    d.push(&got);
    let mut back = Vec::new();
    while let Some(f) = d.next_frame().expect("frames") {
        let Frame::Records(r) = f else {
            panic!("records frame")
        };
        back.extend_from_slice(r.payload);
    }
    assert_eq!(back, records, "the kernel's TCP stream reached DPDK whole");
    assert_eq!(host.send(server, b"done!").expect("send"), 5);
    assert!(poll_until(&mut host, |_| kernel.is_finished()));
    assert_eq!(&kernel.join().expect("kernel side"), b"done!");

    // DPDK connects to a kernel listener and sends the same stream.
    let listener = std::net::TcpListener::bind((Ipv4Addr::new(198, 18, net, 1), 0)).expect("binds");
    let at = match listener.local_addr().expect("addr") {
        std::net::SocketAddr::V4(a) => a,
        other => panic!("{other}"),
    };
    let want = stream.len();
    let kernel = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accepts");
        let mut all = vec![0u8; want];
        s.read_exact(&mut all).expect("reads");
        all
    });
    let client = host.connect(at, 1 << 20).expect("connects");
    let mut off = 0;
    assert!(
        poll_until(&mut host, |h| {
            if h.state(client) == TcpState::Established && off < stream.len() {
                off += h.send(client, &stream[off..]).expect("send");
            }
            kernel.is_finished()
        }),
        "sent {off} of {}",
        stream.len()
    );
    assert_eq!(
        kernel.join().expect("kernel side"),
        stream,
        "DPDK's TCP stream reached the kernel whole"
    );
    host.close(client);
    eprintln!(
        "dpdk_virtual_devices: {vdev}: {} bytes of HDWP over TCP each way with the kernel",
        stream.len()
    );
}
