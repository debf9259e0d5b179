//! Ethernet II, ARP and IPv4/UDP on the wire: what a user-space packet port builds and checks
//! itself, because no kernel stands between it and the NIC. Parsing never trusts a length and
//! never panics (fuzz target `netio_frame`); anything HD's data plane does not send (VLAN tags,
//! IPv4 fragments, other protocols) is refused with a reason rather than half-read.

use std::net::{Ipv4Addr, SocketAddrV4};

/// An Ethernet MAC address.
pub type Mac = [u8; 6];
/// The broadcast MAC address (ARP requests go there).
pub const BROADCAST: Mac = [0xff; 6];
/// Bytes of an Ethernet II header (no VLAN tag).
pub const ETH_HEADER_LEN: usize = 14;
/// Bytes of an IPv4 header without options (what this module sends).
pub const IPV4_HEADER_LEN: usize = 20;
/// Bytes of a UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// Bytes between the start of a frame and a UDP payload this module sends.
pub const UDP_FRAME_OVERHEAD: usize = ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;
/// Bytes of an IPv4-over-Ethernet ARP packet.
pub const ARP_LEN: usize = 28;
/// Shortest Ethernet frame without its FCS; shorter frames are padded with zeros.
pub const MIN_FRAME: usize = 60;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
const PROTO_UDP: u8 = 17;
const TTL: u8 = 64;

/// Why a frame was not a packet this module reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{what}: need {need} bytes, have {have}")]
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    #[error("EtherType 0x{0:04x} is neither IPv4 nor ARP (VLAN tags are not read)")]
    EtherType(u16),
    #[error("IP version {0}, not 4")]
    IpVersion(u8),
    #[error("IPv4 header length {0} bytes is under 20")]
    IpHeaderLen(usize),
    #[error("IPv4 total length {total} does not fit header {header} and frame {have}")]
    IpTotalLen {
        total: usize,
        header: usize,
        have: usize,
    },
    #[error("IPv4 fragment (HD's datagrams fit the MTU and are never fragmented)")]
    Fragment,
    #[error("IP protocol {0}, not UDP")]
    Protocol(u8),
    #[error("IPv4 header checksum does not match")]
    IpChecksum,
    #[error("UDP length {udp} does not match IP payload {ip}")]
    UdpLen { udp: usize, ip: usize },
    #[error("UDP checksum does not match")]
    UdpChecksum,
    #[error("ARP packet is not IPv4 over Ethernet or has operation {0}")]
    Arp(u16),
}

/// A UDP datagram read from a frame; `payload` borrows the frame's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Udp<'a> {
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub payload: &'a [u8],
}

/// ARP's two operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOp {
    Request = 1,
    Reply = 2,
}

/// An IPv4-over-Ethernet ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp {
    pub op: ArpOp,
    pub sender_mac: Mac,
    pub sender_ip: Ipv4Addr,
    pub target_mac: Mac,
    pub target_ip: Ipv4Addr,
}

/// What a frame holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    Udp(Udp<'a>),
    Arp(Arp),
}

fn need(what: &'static str, bytes: &[u8], n: usize) -> Result<(), WireError> {
    if bytes.len() < n {
        return Err(WireError::Truncated {
            what,
            need: n,
            have: bytes.len(),
        });
    }
    Ok(())
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn mac_at(b: &[u8], at: usize) -> Mac {
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[at..at + 6]);
    m
}

fn ip_at(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

/// Adds `bytes` to a ones'-complement sum (RFC 1071), an odd last byte padded with zero.
fn sum16(mut acc: u32, bytes: &[u8]) -> u32 {
    let mut pairs = bytes.chunks_exact(2);
    for p in &mut pairs {
        acc += u32::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// UDP checksum over the IPv4 pseudo-header and `udp` (header with its checksum field as sent).
fn udp_sum(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
    let mut acc = sum16(0, &src.octets());
    acc = sum16(acc, &dst.octets());
    acc += u32::from(PROTO_UDP) + udp.len() as u32;
    fold(sum16(acc, udp))
}

/// Reads one Ethernet frame (without FCS): a UDP datagram over IPv4 or an ARP packet.
pub fn parse(frame: &[u8]) -> Result<Packet<'_>, WireError> {
    need("Ethernet header", frame, ETH_HEADER_LEN)?;
    let dst_mac = mac_at(frame, 0);
    let src_mac = mac_at(frame, 6);
    let body = &frame[ETH_HEADER_LEN..];
    match be16(frame, 12) {
        ETHERTYPE_ARP => parse_arp(body).map(Packet::Arp),
        ETHERTYPE_IPV4 => parse_ipv4_udp(body, src_mac, dst_mac).map(Packet::Udp),
        other => Err(WireError::EtherType(other)),
    }
}

fn parse_arp(b: &[u8]) -> Result<Arp, WireError> {
    need("ARP packet", b, ARP_LEN)?;
    // Hardware Ethernet (1), protocol IPv4, address lengths 6 and 4.
    if be16(b, 0) != 1 || be16(b, 2) != ETHERTYPE_IPV4 || b[4] != 6 || b[5] != 4 {
        return Err(WireError::Arp(be16(b, 6)));
    }
    let op = match be16(b, 6) {
        1 => ArpOp::Request,
        2 => ArpOp::Reply,
        other => return Err(WireError::Arp(other)),
    };
    Ok(Arp {
        op,
        sender_mac: mac_at(b, 8),
        sender_ip: ip_at(b, 14),
        target_mac: mac_at(b, 18),
        target_ip: ip_at(b, 24),
    })
}

fn parse_ipv4_udp(b: &[u8], src_mac: Mac, dst_mac: Mac) -> Result<Udp<'_>, WireError> {
    need("IPv4 header", b, IPV4_HEADER_LEN)?;
    let version = b[0] >> 4;
    if version != 4 {
        return Err(WireError::IpVersion(version));
    }
    let header = usize::from(b[0] & 0x0f) * 4;
    if header < IPV4_HEADER_LEN {
        return Err(WireError::IpHeaderLen(header));
    }
    let total = usize::from(be16(b, 2));
    if total < header || total > b.len() {
        return Err(WireError::IpTotalLen {
            total,
            header,
            have: b.len(),
        });
    }
    // More-fragments flag or a fragment offset: a piece of a larger datagram.
    if be16(b, 6) & 0x3fff != 0 {
        return Err(WireError::Fragment);
    }
    if b[9] != PROTO_UDP {
        return Err(WireError::Protocol(b[9]));
    }
    if fold(sum16(0, &b[..header])) != 0 {
        return Err(WireError::IpChecksum);
    }
    let src_ip = ip_at(b, 12);
    let dst_ip = ip_at(b, 16);
    // Ethernet pads short frames: the IP total length, not the frame, ends the datagram.
    let udp = &b[header..total];
    need("UDP header", udp, UDP_HEADER_LEN)?;
    let udp_len = usize::from(be16(udp, 4));
    if udp_len != udp.len() {
        return Err(WireError::UdpLen {
            udp: udp_len,
            ip: udp.len(),
        });
    }
    // Zero means the sender computed none (allowed over IPv4).
    if be16(udp, 6) != 0 && udp_sum(src_ip, dst_ip, udp) != 0 {
        return Err(WireError::UdpChecksum);
    }
    Ok(Udp {
        src_mac,
        dst_mac,
        src: SocketAddrV4::new(src_ip, be16(udp, 0)),
        dst: SocketAddrV4::new(dst_ip, be16(udp, 2)),
        payload: &udp[UDP_HEADER_LEN..],
    })
}

fn pad(out: &mut Vec<u8>, start: usize) {
    if out.len() - start < MIN_FRAME {
        out.resize(start + MIN_FRAME, 0);
    }
}

/// Appends one Ethernet frame carrying `payload` as a UDP datagram from `src` to `dst`, with the
/// IPv4 don't-fragment bit set, both checksums filled in, and `ident` as the IPv4 identification.
/// `payload` must be at most 65507 bytes (the caller's MTU check keeps it far below).
pub fn write_udp(
    out: &mut Vec<u8>,
    src_mac: Mac,
    dst_mac: Mac,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    ident: u16,
    payload: &[u8],
) {
    debug_assert!(payload.len() <= 65_507);
    let start = out.len();
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip_at = out.len();
    let udp_len = (UDP_HEADER_LEN + payload.len()) as u16;
    let total = IPV4_HEADER_LEN as u16 + udp_len;
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&ident.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    out.extend_from_slice(&[TTL, PROTO_UDP, 0, 0]);
    out.extend_from_slice(&src.ip().octets());
    out.extend_from_slice(&dst.ip().octets());
    let ip_sum = fold(sum16(0, &out[ip_at..ip_at + IPV4_HEADER_LEN]));
    out[ip_at + 10..ip_at + 12].copy_from_slice(&ip_sum.to_be_bytes());
    let udp_at = out.len();
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
    let mut sum = udp_sum(*src.ip(), *dst.ip(), &out[udp_at..]);
    // A computed zero is sent as all ones: zero on the wire means "no checksum".
    if sum == 0 {
        sum = 0xffff;
    }
    out[udp_at + 6..udp_at + 8].copy_from_slice(&sum.to_be_bytes());
    pad(out, start);
}

/// Appends one Ethernet frame carrying `arp`: requests to the broadcast address, replies to the
/// asker.
pub fn write_arp(out: &mut Vec<u8>, arp: &Arp) {
    let start = out.len();
    let dst = match arp.op {
        ArpOp::Request => BROADCAST,
        ArpOp::Reply => arp.target_mac,
    };
    out.extend_from_slice(&dst);
    out.extend_from_slice(&arp.sender_mac);
    out.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    out.extend_from_slice(&[6, 4]);
    out.extend_from_slice(&(arp.op as u16).to_be_bytes());
    out.extend_from_slice(&arp.sender_mac);
    out.extend_from_slice(&arp.sender_ip.octets());
    out.extend_from_slice(&arp.target_mac);
    out.extend_from_slice(&arp.target_ip.octets());
    pad(out, start);
}
