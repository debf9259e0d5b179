//! [`UserUdp`]: IPv4/UDP and ARP in user space over a [`PacketPort`], so a DPDK-driven NIC speaks
//! to ordinary hosts. It answers ARP for its own address, learns neighbours from ARP and from the
//! datagrams it receives, holds datagrams for a neighbour it has not resolved yet (asking again on
//! every send while it waits), and drops anything not addressed to it.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

use super::wire::{self, Arp, ArpOp, Mac, Packet};
use super::{
    check_link, check_payloads, Datagram, DatagramSocket, NetError, PacketPort, RxFrames, TxFrames,
};

/// Most datagrams held per unresolved neighbour; older ones are dropped first.
const MAX_PENDING: usize = 1024;
/// Frames read per receive burst.
const RX_BURST: usize = 64;

/// What a [`UserUdp`] has seen and done, for /health and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UserUdpStats {
    /// Datagrams delivered to the caller.
    pub received: u64,
    /// Datagrams handed to the port.
    pub sent: u64,
    /// Frames that did not parse (bad checksum, truncated, fragments, other protocols).
    pub malformed: u64,
    /// Well-formed frames addressed to another host or port.
    pub not_ours: u64,
    /// ARP requests answered.
    pub arp_answered: u64,
    /// ARP requests sent.
    pub arp_asked: u64,
    /// Datagrams dropped while their neighbour stayed unresolved, or refused by a full device.
    pub dropped: u64,
}

/// A UDP endpoint at one IPv4 address and port, over a user-space packet port.
pub struct UserUdp<P: PacketPort> {
    port: P,
    local: SocketAddrV4,
    mac: Mac,
    mtu: usize,
    neighbours: HashMap<Ipv4Addr, Mac>,
    pending: HashMap<Ipv4Addr, Vec<(u16, Vec<u8>)>>,
    ident: u16,
    rx: RxFrames,
    tx: TxFrames,
    /// Datagrams read in a burst beyond what the caller asked for; delivered first next time.
    backlog: VecDeque<Datagram>,
    stats: UserUdpStats,
}

impl<P: PacketPort> UserUdp<P> {
    /// An endpoint at `local` for datagrams of at most `mtu` bytes; refused when the port cannot
    /// carry such a datagram in one frame.
    pub fn new(port: P, local: SocketAddrV4, mtu: usize) -> Result<Self, NetError> {
        check_link(mtu, port.max_frame())?;
        let mac = port.mac();
        let stride = port.max_frame();
        Ok(UserUdp {
            port,
            local,
            mac,
            mtu,
            neighbours: HashMap::new(),
            pending: HashMap::new(),
            ident: 0,
            rx: RxFrames::new(RX_BURST, stride),
            tx: TxFrames::default(),
            backlog: VecDeque::new(),
            stats: UserUdpStats::default(),
        })
    }

    /// Counters since the endpoint opened.
    pub fn stats(&self) -> UserUdpStats {
        self.stats
    }

    /// The port underneath.
    pub fn port(&self) -> &P {
        &self.port
    }

    fn flush(&mut self) -> Result<(), NetError> {
        if self.tx.is_empty() {
            return Ok(());
        }
        let took = self.port.transmit(&self.tx)?;
        self.stats.dropped += (self.tx.len() - took) as u64;
        self.tx.clear();
        Ok(())
    }

    fn push_udp(&mut self, dst_mac: Mac, dst: SocketAddrV4, payload: &[u8]) {
        self.ident = self.ident.wrapping_add(1);
        let (mac, local, ident) = (self.mac, self.local, self.ident);
        self.tx
            .push_with(|b| wire::write_udp(b, mac, dst_mac, local, dst, ident, payload));
        self.stats.sent += 1;
    }

    fn ask(&mut self, ip: Ipv4Addr) {
        let arp = Arp {
            op: ArpOp::Request,
            sender_mac: self.mac,
            sender_ip: *self.local.ip(),
            target_mac: [0; 6],
            target_ip: ip,
        };
        self.tx.push_with(|b| wire::write_arp(b, &arp));
        self.stats.arp_asked += 1;
    }

    fn learn(&mut self, ip: Ipv4Addr, mac: Mac) {
        self.neighbours.insert(ip, mac);
        if let Some(held) = self.pending.remove(&ip) {
            for (port, payload) in held {
                self.push_udp(mac, SocketAddrV4::new(ip, port), &payload);
            }
        }
    }

    fn on_arp(&mut self, arp: Arp) {
        if arp.target_ip != *self.local.ip() {
            self.stats.not_ours += 1;
            return;
        }
        self.learn(arp.sender_ip, arp.sender_mac);
        if arp.op == ArpOp::Request {
            let reply = Arp {
                op: ArpOp::Reply,
                sender_mac: self.mac,
                sender_ip: *self.local.ip(),
                target_mac: arp.sender_mac,
                target_ip: arp.sender_ip,
            };
            self.tx.push_with(|b| wire::write_arp(b, &reply));
            self.stats.arp_answered += 1;
        }
    }
}

impl<P: PacketPort> DatagramSocket for UserUdp<P> {
    fn local(&self) -> SocketAddrV4 {
        self.local
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn send_to(&mut self, payloads: &[&[u8]], dst: SocketAddrV4) -> Result<usize, NetError> {
        check_payloads(payloads, self.mtu)?;
        match self.neighbours.get(dst.ip()).copied() {
            Some(mac) => {
                for p in payloads {
                    self.push_udp(mac, dst, p);
                }
            }
            None => {
                let held = self.pending.entry(*dst.ip()).or_default();
                held.extend(payloads.iter().map(|p| (dst.port(), p.to_vec())));
                let over = held.len().saturating_sub(MAX_PENDING);
                held.drain(..over);
                self.stats.dropped += over as u64;
                self.ask(*dst.ip());
            }
        }
        self.flush()?;
        Ok(payloads.len())
    }

    fn recv(&mut self, out: &mut Vec<Datagram>, max: usize) -> Result<usize, NetError> {
        let mut got = 0;
        while got < max {
            let Some(d) = self.backlog.pop_front() else {
                break;
            };
            out.push(d);
            got += 1;
        }
        while got < max {
            let mut rx = std::mem::take(&mut self.rx);
            let n = self.port.receive(&mut rx)?;
            for i in 0..n {
                match wire::parse(rx.get(i)) {
                    Err(_) => self.stats.malformed += 1,
                    Ok(Packet::Arp(arp)) => self.on_arp(arp),
                    Ok(Packet::Udp(u)) => {
                        let ours = u.dst == self.local
                            && (u.dst_mac == self.mac || u.dst_mac == wire::BROADCAST);
                        if !ours || u.payload.len() > self.mtu {
                            self.stats.not_ours += u64::from(!ours);
                            self.stats.dropped += u64::from(ours);
                            continue;
                        }
                        if !self.neighbours.contains_key(u.src.ip()) {
                            self.learn(*u.src.ip(), u.src_mac);
                        }
                        let d = Datagram {
                            from: u.src,
                            payload: u.payload.to_vec(),
                        };
                        self.stats.received += 1;
                        if got < max {
                            out.push(d);
                            got += 1;
                        } else {
                            self.backlog.push_back(d);
                        }
                    }
                }
            }
            self.rx = rx;
            // ARP answers and datagrams released by a learned neighbour go out with this burst.
            self.flush()?;
            if n < self.rx.capacity() {
                break;
            }
        }
        Ok(got)
    }
}
