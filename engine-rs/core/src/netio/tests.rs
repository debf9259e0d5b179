use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;

use super::wire::{self, Arp, ArpOp, Packet, WireError};
use super::*;
use crate::batch_id::BatchId;
use crate::hdwp::{decode_datagram, encode_datagrams, Frame, MTU_JUMBO, MTU_STANDARD};

const MAC_A: Mac = [2, 0, 0, 0, 0, 0xa];
const MAC_B: Mac = [2, 0, 0, 0, 0, 0xb];

fn addr(last: u8, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(198, 18, 7, last), port)
}

/// `records` as HDWP records frames of at most `mtu` bytes, one per datagram.
fn hdwp_datagrams(records: &[u8], record_size: u16, mtu: usize) -> Vec<Vec<u8>> {
    encode_datagrams(None, &BatchId([7; 64]), record_size, records, mtu).unwrap()
}

fn udp_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    wire::write_udp(
        &mut f,
        MAC_A,
        MAC_B,
        addr(1, 4000),
        addr(2, 6987),
        7,
        payload,
    );
    f
}

#[test]
fn ipv4_header_checksum_matches_a_known_header() {
    // RFC 1071's worked example header (192.168.0.1 -> 192.168.0.199), checksum 0xb861.
    let mut f = Vec::new();
    wire::write_udp(
        &mut f,
        MAC_A,
        MAC_B,
        SocketAddrV4::new(Ipv4Addr::new(192, 168, 0, 1), 1),
        SocketAddrV4::new(Ipv4Addr::new(192, 168, 0, 199), 2),
        0,
        &[0; 87],
    );
    let ip = &f[wire::ETH_HEADER_LEN..wire::ETH_HEADER_LEN + 20];
    assert_eq!(&ip[..4], &[0x45, 0x00, 0x00, 0x73]);
    // Same fields as the example but with our DF flag, TTL 64, protocol 17: checksum recomputed by hand.
    let words: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let folded = (words & 0xffff) + (words >> 16);
    assert_eq!(
        folded as u16, 0xffff,
        "a header with its checksum sums to all ones"
    );
}

#[test]
fn a_udp_frame_round_trips() {
    for len in [0usize, 1, 17, 18, 19, 100, MTU_STANDARD, MTU_JUMBO] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        let f = udp_frame(&payload);
        assert_eq!(
            f.len(),
            (wire::UDP_FRAME_OVERHEAD + len).max(wire::MIN_FRAME)
        );
        match wire::parse(&f).unwrap() {
            Packet::Udp(u) => {
                assert_eq!(u.payload, &payload[..], "payload of {len}");
                assert_eq!(
                    (u.src, u.dst, u.src_mac, u.dst_mac),
                    (addr(1, 4000), addr(2, 6987), MAC_A, MAC_B)
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn an_arp_frame_round_trips() {
    let arp = Arp {
        op: ArpOp::Request,
        sender_mac: MAC_A,
        sender_ip: *addr(1, 0).ip(),
        target_mac: [0; 6],
        target_ip: *addr(2, 0).ip(),
    };
    let mut f = Vec::new();
    wire::write_arp(&mut f, &arp);
    assert_eq!(f.len(), wire::MIN_FRAME, "padded to the Ethernet minimum");
    assert_eq!(&f[..6], &wire::BROADCAST, "requests are broadcast");
    assert_eq!(wire::parse(&f).unwrap(), Packet::Arp(arp));
}

#[test]
fn every_cut_of_a_frame_is_refused_without_panicking() {
    let f = udp_frame(b"hello, storage node");
    let payload_end = wire::UDP_FRAME_OVERHEAD + 19;
    for cut in 0..payload_end {
        assert!(wire::parse(&f[..cut]).is_err(), "cut at {cut}");
    }
}

fn assert_refused(f: &[u8], want: fn(&WireError) -> bool) {
    let e = wire::parse(f).unwrap_err();
    assert!(want(&e), "{e}");
}

#[test]
fn malformed_frames_are_refused_with_a_reason() {
    let good = udp_frame(b"0123456789abcdefghij");
    let ip = wire::ETH_HEADER_LEN;
    let mut f = good.clone();
    f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
    assert_refused(&f, |e| matches!(e, WireError::EtherType(0x8100)));
    let mut f = good.clone();
    f[ip] = 0x65;
    assert_refused(&f, |e| matches!(e, WireError::IpVersion(6)));
    let mut f = good.clone();
    f[ip] = 0x44;
    assert_refused(&f, |e| matches!(e, WireError::IpHeaderLen(16)));
    let mut f = good.clone();
    f[ip + 2..ip + 4].copy_from_slice(&2000u16.to_be_bytes());
    assert_refused(&f, |e| {
        matches!(e, WireError::IpTotalLen { total: 2000, .. })
    });
    let mut f = good.clone();
    f[ip + 6] |= 0x20; // more fragments
    assert_refused(&f, |e| matches!(e, WireError::Fragment));
    let mut f = good.clone();
    f[ip + 9] = 6;
    assert_refused(&f, |e| matches!(e, WireError::Protocol(6)));
    let mut f = good.clone();
    f[ip + 8] ^= 1; // TTL: only the header checksum notices
    assert_refused(&f, |e| matches!(e, WireError::IpChecksum));
    let mut f = good.clone();
    let last = wire::UDP_FRAME_OVERHEAD + 19;
    f[last] ^= 0x40;
    assert_refused(&f, |e| matches!(e, WireError::UdpChecksum));
    let mut f = good.clone();
    let udp = ip + 20;
    f[udp + 4..udp + 6].copy_from_slice(&10u16.to_be_bytes());
    assert_refused(&f, |e| matches!(e, WireError::UdpLen { udp: 10, .. }));
    let mut arp = Vec::new();
    wire::write_arp(
        &mut arp,
        &Arp {
            op: ArpOp::Reply,
            sender_mac: MAC_A,
            sender_ip: Ipv4Addr::LOCALHOST,
            target_mac: MAC_B,
            target_ip: Ipv4Addr::LOCALHOST,
        },
    );
    arp[ip + 7] = 9;
    assert_refused(&arp, |e| matches!(e, WireError::Arp(9)));
}

#[test]
fn a_zero_udp_checksum_means_none() {
    let mut f = udp_frame(b"no checksum");
    let at = wire::ETH_HEADER_LEN + 20 + 6;
    f[at..at + 2].copy_from_slice(&[0, 0]);
    assert!(matches!(wire::parse(&f), Ok(Packet::Udp(u)) if u.payload == b"no checksum"));
}

/// One end of an in-memory Ethernet segment joining two ports, with room for a given frame size.
struct Wire {
    mac: Mac,
    max_frame: usize,
    out: Rc<RefCell<VecDeque<Vec<u8>>>>,
    inbox: Rc<RefCell<VecDeque<Vec<u8>>>>,
}

fn cable(max_frame: usize) -> (Wire, Wire) {
    let ab = Rc::new(RefCell::new(VecDeque::new()));
    let ba = Rc::new(RefCell::new(VecDeque::new()));
    (
        Wire {
            mac: MAC_A,
            max_frame,
            out: ab.clone(),
            inbox: ba.clone(),
        },
        Wire {
            mac: MAC_B,
            max_frame,
            out: ba,
            inbox: ab,
        },
    )
}

impl PacketPort for Wire {
    fn mac(&self) -> Mac {
        self.mac
    }
    fn max_frame(&self) -> usize {
        self.max_frame
    }
    fn transmit(&mut self, frames: &TxFrames) -> Result<usize, NetError> {
        for i in 0..frames.len() {
            assert!(frames.get(i).len() <= self.max_frame, "frame over the link");
            self.out.borrow_mut().push_back(frames.get(i).to_vec());
        }
        Ok(frames.len())
    }
    fn receive(&mut self, into: &mut RxFrames) -> Result<usize, NetError> {
        let stride = into.stride();
        let cap = into.capacity();
        let (buf, lens) = into.parts();
        let mut inbox = self.inbox.borrow_mut();
        while lens.len() < cap {
            let Some(f) = inbox.pop_front() else { break };
            buf[lens.len() * stride..][..f.len()].copy_from_slice(&f);
            lens.push(f.len() as u32);
        }
        Ok(lens.len())
    }
}

fn recv_all<S: DatagramSocket>(s: &mut S) -> Vec<Datagram> {
    let mut out = Vec::new();
    s.recv(&mut out, usize::MAX).unwrap();
    out
}

#[test]
fn user_udp_resolves_its_neighbour_by_arp_then_delivers_hdwp_datagrams() {
    let (wa, wb) = cable(1514);
    let mut a = UserUdp::new(wa, addr(1, 4000), MTU_STANDARD).unwrap();
    let mut b = UserUdp::new(wb, addr(2, 6987), MTU_STANDARD).unwrap();
    let records: Vec<u8> = (0..150 * 40).map(|i| i as u8).collect();
    let frames = hdwp_datagrams(&records, 150, MTU_STANDARD);
    let payloads: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    assert!(
        payloads.len() > 1,
        "40 records need several 1200-byte datagrams"
    );

    // A does not know B's MAC: the datagrams wait behind an ARP request.
    assert_eq!(a.send_to(&payloads, b.local()).unwrap(), payloads.len());
    assert_eq!(a.stats().arp_asked, 1);
    assert!(
        recv_all(&mut b).is_empty(),
        "B answers the request and learns A"
    );
    assert_eq!(b.stats().arp_answered, 1);
    assert!(
        recv_all(&mut a).is_empty(),
        "A learns B from the reply and sends what it held"
    );
    let got = recv_all(&mut b);
    assert_eq!(got.len(), payloads.len());
    let mut back = Vec::new();
    for (d, sent) in got.iter().zip(&payloads) {
        assert_eq!(d.from, a.local());
        assert_eq!(&d.payload[..], *sent);
        let Frame::Records(r) = decode_datagram(&d.payload, MTU_STANDARD).unwrap() else {
            panic!("records frame")
        };
        back.extend_from_slice(r.payload);
    }
    assert_eq!(back, records);

    // B learned A from the request: its answer goes out without asking.
    b.send_to(&[b"ack"], a.local()).unwrap();
    assert_eq!(b.stats().arp_asked, 0);
    assert_eq!(
        recv_all(&mut a),
        vec![Datagram {
            from: b.local(),
            payload: b"ack".to_vec()
        }]
    );
}

#[test]
fn user_udp_keeps_what_a_short_read_left() {
    let (wa, wb) = cable(1514);
    let mut a = UserUdp::new(wa, addr(1, 4000), MTU_STANDARD).unwrap();
    let mut b = UserUdp::new(wb, addr(2, 6987), MTU_STANDARD).unwrap();
    a.send_to(&[b"x"], b.local()).unwrap();
    recv_all(&mut b);
    recv_all(&mut a);
    recv_all(&mut b);
    a.send_to(&[b"1", b"2", b"3"], b.local()).unwrap();
    let mut out = Vec::new();
    for want in [b"1", b"2", b"3"] {
        assert_eq!(b.recv(&mut out, 1).unwrap(), 1);
        assert_eq!(out.pop().unwrap().payload, want.to_vec());
    }
    assert_eq!(b.recv(&mut out, 1).unwrap(), 0);
}

#[test]
fn user_udp_drops_frames_for_others_and_malformed_ones() {
    let (mut wa, wb) = cable(1514);
    let mut b = UserUdp::new(wb, addr(2, 6987), MTU_STANDARD).unwrap();
    let mut tx = TxFrames::default();
    // Another port, another address, a broken checksum, an ARP for someone else.
    tx.push_with(|f| wire::write_udp(f, MAC_A, MAC_B, addr(1, 1), addr(2, 9999), 1, b"p"));
    tx.push_with(|f| wire::write_udp(f, MAC_A, MAC_B, addr(1, 1), addr(3, 6987), 1, b"p"));
    tx.push_with(|f| {
        let at = f.len();
        wire::write_udp(f, MAC_A, MAC_B, addr(1, 1), addr(2, 6987), 1, b"p");
        f[at + wire::UDP_FRAME_OVERHEAD] ^= 1;
    });
    tx.push_with(|f| {
        wire::write_arp(
            f,
            &Arp {
                op: ArpOp::Request,
                sender_mac: MAC_A,
                sender_ip: *addr(1, 0).ip(),
                target_mac: [0; 6],
                target_ip: *addr(9, 0).ip(),
            },
        )
    });
    wa.transmit(&tx).unwrap();
    let got = recv_all(&mut b);
    assert!(got.is_empty(), "{got:?} {:?}", b.stats());
    let s = b.stats();
    assert_eq!(
        (s.not_ours, s.malformed, s.received, s.arp_answered),
        (3, 1, 0, 0)
    );
}

#[test]
fn mtu_modes_are_enforced_on_both_sockets() {
    let (wa, _wb) = cable(1514);
    // Jumbo datagrams need links of at least 8550 bytes of IP; a standard Ethernet link is refused.
    let e = UserUdp::new(wa, addr(1, 1), MTU_JUMBO)
        .err()
        .expect("refused");
    assert!(
        matches!(
            e,
            NetError::LinkTooSmall {
                needed: 8542,
                ip_mtu: 8528,
                ..
            }
        ),
        "{e}"
    );
    let (wa, _wb) = cable(8550 + 14);
    let mut a = UserUdp::new(wa, addr(1, 1), MTU_JUMBO).unwrap();
    let big = vec![0u8; MTU_JUMBO + 1];
    assert!(matches!(
        a.send_to(&[&big], addr(2, 2)),
        Err(NetError::TooLarge {
            len: 8501,
            mtu: 8500
        })
    ));
    let mut k = KernelUdp::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), MTU_STANDARD).unwrap();
    let big = vec![0u8; MTU_STANDARD + 1];
    assert!(matches!(
        k.send_to(&[&big], k.local()),
        Err(NetError::TooLarge {
            len: 1201,
            mtu: 1200
        })
    ));
}

#[test]
fn kernel_udp_exchanges_datagrams_and_drops_oversized_ones() {
    let mut a = KernelUdp::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), MTU_STANDARD).unwrap();
    let mut b = KernelUdp::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), MTU_STANDARD).unwrap();
    let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    raw.send_to(&vec![1u8; MTU_STANDARD + 1], b.local())
        .unwrap();
    assert_eq!(a.send_to(&[b"one", b"two"], b.local()).unwrap(), 2);
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while out.len() < 2 && std::time::Instant::now() < deadline {
        b.recv(&mut out, 8).unwrap();
    }
    let got: Vec<&[u8]> = out.iter().map(|d| &d.payload[..]).collect();
    assert_eq!(
        got,
        vec![&b"one"[..], &b"two"[..]],
        "the 1201-byte datagram is dropped"
    );
    assert!(out.iter().all(|d| d.from == a.local()));
}

#[test]
fn dpdk_without_a_shim_says_how_to_get_one() {
    if dpdk::built_in() {
        return; // covered by tests/dpdk_tap.rs where the shim exists
    }
    let e = dpdk::init(&dpdk::EalOptions::default()).unwrap_err();
    assert!(e.to_string().contains("libdpdk-dev"), "{e}");
}

#[test]
fn eal_arguments_follow_the_options() {
    let o = dpdk::EalOptions {
        cores: "1-3".into(),
        pci: vec!["0000:03:00.0".into()],
        vdevs: vec![],
        no_huge: false,
        memory_mb: 0,
    };
    let a = o.args();
    assert_eq!(a[0], "hd");
    assert!(a.windows(2).any(|w| w == ["-l", "1-3"]));
    assert!(a.windows(2).any(|w| w == ["-a", "0000:03:00.0"]));
    assert!(!a.contains(&"--no-pci".to_string()) && !a.contains(&"--no-huge".to_string()));
    let v = dpdk::EalOptions {
        vdevs: vec!["net_null0".into()],
        no_huge: true,
        memory_mb: 128,
        ..Default::default()
    }
    .args();
    assert!(
        v.contains(&"--no-pci".to_string())
            && v.contains(&"--vdev=net_null0".to_string())
            && v.contains(&"--no-huge".to_string())
    );
    assert!(v.windows(2).any(|w| w == ["-m", "128"]));
}

#[test]
fn the_fuzz_seeds_are_what_their_names_say() {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/netio_frame");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let parsed = wire::parse(&bytes);
        match &name {
            n if n.starts_with("seed-udp") => {
                assert!(matches!(parsed, Ok(Packet::Udp(_))), "{n}: {parsed:?}")
            }
            n if n.starts_with("seed-arp") => {
                assert!(matches!(parsed, Ok(Packet::Arp(_))), "{n}: {parsed:?}")
            }
            n => assert!(parsed.is_err(), "{n}: {parsed:?}"),
        }
        seen += 1;
    }
    assert!(seen >= 8);
}

/// Polls both hosts until `done` or 10 000 rounds.
fn pump<A: PacketPort, B: PacketPort>(
    a: &mut UserTcp<A>,
    b: &mut UserTcp<B>,
    mut done: impl FnMut(&mut UserTcp<A>, &mut UserTcp<B>) -> bool,
) -> bool {
    for _ in 0..10_000 {
        a.poll().unwrap();
        b.poll().unwrap();
        if done(a, b) {
            return true;
        }
    }
    false
}

#[test]
fn user_tcp_carries_an_hdwp_stream_between_two_stacks_over_packet_ports() {
    use crate::hdwp::{
        encode_frame, encode_records, FrameDecoder, DEFAULT_MAX_PAYLOAD, HEADER_LEN as H,
    };
    // The credit frame stands for any answer the receiver sends back.
    let (wa, wb) = cable(1514);
    let mut a = UserTcp::new(wa, Ipv4Addr::new(198, 18, 7, 1), 24).unwrap();
    let mut b = UserTcp::new(wb, Ipv4Addr::new(198, 18, 7, 2), 24).unwrap();
    let server = b.listen(6987, 256 << 10).unwrap();
    let client = a
        .connect(SocketAddrV4::new(b.local(), 6987), 256 << 10)
        .unwrap();
    assert!(
        pump(&mut a, &mut b, |a, b| a.state(client)
            == TcpState::Established
            && b.state(server) == TcpState::Established),
        "handshake"
    );

    // 1 MiB of records as stream frames (up to 16 MiB each: several TCP segments per frame).
    let records: Vec<u8> = (0..150 * 7000).map(|i| (i % 251) as u8).collect();
    let mut stream = Vec::new();
    encode_records(
        &mut stream,
        None,
        &BatchId([5; 64]),
        150,
        &records,
        H + DEFAULT_MAX_PAYLOAD as usize,
    )
    .unwrap();
    let (mut sent, mut got) = (0, Vec::new());
    let mut buf = vec![0u8; 64 << 10];
    assert!(pump(&mut a, &mut b, |a, b| {
        sent += a.send(client, &stream[sent..]).unwrap();
        let n = b.recv(server, &mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
        got.len() == stream.len()
    }));
    assert_eq!(got, stream, "the bytes arrive whole and in order");
    let mut d = FrameDecoder::new();
    d.push(&got);
    let mut back = Vec::new();
    while let Some(f) = d.next_frame().unwrap() {
        let Frame::Records(r) = f else {
            panic!("records")
        };
        back.extend_from_slice(r.payload);
    }
    assert_eq!(back, records);

    // The answer the other way, then both close.
    let mut answer_frame = Vec::new();
    encode_frame(
        &Frame::Credit(crate::hdwp::Credit {
            auth: None,
            bytes: 4096,
        }),
        &mut answer_frame,
        1 << 20,
    )
    .unwrap();
    b.send(server, &answer_frame).unwrap();
    let mut answer = Vec::new();
    assert!(pump(&mut a, &mut b, |a, _| {
        let n = a.recv(client, &mut buf).unwrap();
        answer.extend_from_slice(&buf[..n]);
        answer.len() == answer_frame.len()
    }));
    assert_eq!(answer, answer_frame);
    a.close(client);
    assert!(pump(&mut a, &mut b, |_, b| b.state(server)
        == TcpState::PeerClosed
        || b.state(server) == TcpState::Closed));
}
