//! [`UserTcp`]: TCP in user space over a [`PacketPort`], through smoltcp (a well-kept,
//! event-driven TCP/IP stack). With a [`DpdkPort`](super::dpdk::DpdkPort) underneath, HDWP
//! streams run over a DPDK-driven NIC as ordinary TCP, which any kernel peer speaks: no transport
//! protocol of our own. smoltcp answers ARP and keeps the neighbour cache itself.
//!
//! The caller drives it: [`UserTcp::poll`] moves frames between the port and the stack, and runs
//! the stack's timers (retransmission, delayed acknowledgements); it never blocks.

use std::net::{Ipv4Addr, SocketAddrV4};

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint};

use super::{NetError, PacketPort, RxFrames, TxFrames};

/// Frames read from the port per burst.
const RX_BURST: usize = 64;
/// Frames taken in before the stack sends what it owes (ACKs, window updates, data).
const INGRESS_PER_EGRESS: usize = 8;
/// Seconds between keep-alive probes on an idle connection.
const KEEP_ALIVE_S: u64 = 10;
/// Seconds without an answer (to data, a handshake or a keep-alive) after which a connection resets.
const TIMEOUT_S: u64 = 30;

/// smoltcp's `Device` over a [`PacketPort`]: frames read in bursts and handed out one by one;
/// frames sent collected and handed to the port after each poll.
struct PortDevice<P: PacketPort> {
    port: P,
    rx: RxFrames,
    next: usize,
    tx: TxFrames,
}

/// One received frame, lent from the burst buffer.
struct Rx<'a>(&'a [u8]);

/// Room for one frame to send, appended to the device's burst.
struct Tx<'a>(&'a mut TxFrames);

impl phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut out = None;
        self.0.push_with(|buf| {
            let at = buf.len();
            buf.resize(at + len, 0);
            out = Some(f(&mut buf[at..]));
        });
        out.expect("push_with runs the writer")
    }
}

impl<P: PacketPort> PortDevice<P> {
    fn refill(&mut self) {
        if self.next >= self.rx.len() {
            self.next = 0;
            // A port error drops this burst; the stack's retransmissions recover.
            if self.port.receive(&mut self.rx).is_err() {
                self.rx.clear();
            }
        }
    }

    fn flush(&mut self) -> Result<(), NetError> {
        if !self.tx.is_empty() {
            self.port.transmit(&self.tx)?;
            self.tx.clear();
        }
        Ok(())
    }
}

impl<P: PacketPort> Device for PortDevice<P> {
    type RxToken<'a>
        = Rx<'a>
    where
        Self: 'a;
    type TxToken<'a>
        = Tx<'a>
    where
        Self: 'a;

    fn receive(&mut self, _now: Instant) -> Option<(Rx<'_>, Tx<'_>)> {
        self.refill();
        if self.next >= self.rx.len() {
            return None;
        }
        self.next += 1;
        // The frame and the send burst are separate fields: one lent, the other borrowed mutably.
        Some((Rx(self.rx.get(self.next - 1)), Tx(&mut self.tx)))
    }

    fn transmit(&mut self, _now: Instant) -> Option<Tx<'_>> {
        Some(Tx(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        // For an Ethernet medium smoltcp counts the Ethernet header in the MTU.
        c.max_transmission_unit = self.port.max_frame();
        c.max_burst_size = Some(RX_BURST);
        c
    }
}

/// A TCP connection's state, as far as the caller needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpState {
    /// Listening, or the handshake is under way.
    Opening,
    /// Data may flow both ways.
    Established,
    /// The peer closed its side; what it sent may still be read.
    PeerClosed,
    /// Closed (or reset).
    Closed,
}

/// A user-space TCP/IP host at one IPv4 address over a packet port.
pub struct UserTcp<P: PacketPort> {
    iface: Interface,
    dev: PortDevice<P>,
    sockets: SocketSet<'static>,
    local: Ipv4Addr,
    start: std::time::Instant,
    next_port: u16,
}

/// A TCP connection of a [`UserTcp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpConn(SocketHandle);

impl<P: PacketPort> UserTcp<P> {
    /// A host at `ip/prefix` on `port`'s link.
    pub fn new(port: P, ip: Ipv4Addr, prefix: u8) -> Result<Self, NetError> {
        let mac = port.mac();
        let stride = port.max_frame();
        let mut dev = PortDevice {
            port,
            rx: RxFrames::new(RX_BURST, stride),
            next: 0,
            tx: TxFrames::default(),
        };
        let config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        let start = std::time::Instant::now();
        let mut iface = Interface::new(config, &mut dev, Instant::from_millis(0));
        let mut bad = None;
        iface.update_ip_addrs(|addrs| {
            if addrs
                .push(IpCidr::new(IpAddress::Ipv4(ip), prefix))
                .is_err()
            {
                bad = Some(NetError::Dpdk("no room for the interface's address".into()));
            }
        });
        if let Some(e) = bad {
            return Err(e);
        }
        Ok(UserTcp {
            iface,
            dev,
            sockets: SocketSet::new(vec![]),
            local: ip,
            start,
            next_port: 49152,
        })
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.start.elapsed().as_micros() as i64)
    }

    fn socket(buffer: usize) -> tcp::Socket<'static> {
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; buffer]),
            tcp::SocketBuffer::new(vec![0; buffer]),
        );
        // A peer that vanishes (a crashed node, a pulled cable) resets the connection rather than
        // leaving it open forever: keep-alives keep an idle but live connection answered.
        s.set_keep_alive(Some(smoltcp::time::Duration::from_secs(KEEP_ALIVE_S)));
        s.set_timeout(Some(smoltcp::time::Duration::from_secs(TIMEOUT_S)));
        s
    }

    /// A socket listening on `port` with `buffer` bytes each way; it becomes the connection of
    /// the first peer that connects.
    pub fn listen(&mut self, port: u16, buffer: usize) -> Result<TcpConn, NetError> {
        let mut s = Self::socket(buffer);
        s.listen(port)
            .map_err(|e| NetError::Dpdk(format!("listen on {port}: {e}")))?;
        Ok(TcpConn(self.sockets.add(s)))
    }

    /// Opens a connection to `to` with `buffer` bytes each way (established after some polls).
    pub fn connect(&mut self, to: SocketAddrV4, buffer: usize) -> Result<TcpConn, NetError> {
        let mut s = Self::socket(buffer);
        let local = self.next_port;
        self.next_port = if self.next_port == u16::MAX {
            49152
        } else {
            self.next_port + 1
        };
        let remote = IpEndpoint::new(IpAddress::Ipv4(*to.ip()), to.port());
        s.connect(self.iface.context(), remote, local)
            .map_err(|e| NetError::Dpdk(format!("connect to {to}: {e}")))?;
        Ok(TcpConn(self.sockets.add(s)))
    }

    /// Moves frames between the port and the stack and runs its timers; never blocks. True when
    /// a socket may have changed (a frame arrived or one was sent).
    pub fn poll(&mut self) -> Result<bool, NetError> {
        use smoltcp::iface::{PollIngressSingleResult as In, PollResult};
        let now = self.now();
        self.iface.poll_maintenance(now);
        let mut changed = false;
        // Ingress in rounds with egress between them, not smoltcp's `poll` (all ingress, then
        // egress): a sender's burst of hundreds of segments would get one ACK, and a kernel sender
        // grows its window per ACK.
        loop {
            let mut took = 0;
            while took < INGRESS_PER_EGRESS {
                match self
                    .iface
                    .poll_ingress_single(now, &mut self.dev, &mut self.sockets)
                {
                    In::None => break,
                    In::PacketProcessed => {}
                    In::SocketStateChanged => changed = true,
                }
                took += 1;
            }
            while self
                .iface
                .poll_egress(now, &mut self.dev, &mut self.sockets)
                == PollResult::SocketStateChanged
            {
                changed = true;
            }
            let sent = !self.dev.tx.is_empty();
            self.dev.flush()?;
            changed |= sent || took > 0;
            if took < INGRESS_PER_EGRESS {
                return Ok(changed);
            }
        }
    }

    /// Queues bytes to send on `c`; returns how many fit in its buffer.
    pub fn send(&mut self, c: TcpConn, bytes: &[u8]) -> Result<usize, NetError> {
        let s = self.sockets.get_mut::<tcp::Socket>(c.0);
        if !s.can_send() {
            return Ok(0);
        }
        s.send_slice(bytes)
            .map_err(|e| NetError::Dpdk(format!("send: {e}")))
    }

    /// Reads what has arrived on `c` into `buf`; returns how many bytes.
    pub fn recv(&mut self, c: TcpConn, buf: &mut [u8]) -> Result<usize, NetError> {
        let s = self.sockets.get_mut::<tcp::Socket>(c.0);
        if !s.can_recv() {
            return Ok(0);
        }
        s.recv_slice(buf)
            .map_err(|e| NetError::Dpdk(format!("recv: {e}")))
    }

    /// Closes the sending side of `c` once what was queued is sent.
    pub fn close(&mut self, c: TcpConn) {
        self.sockets.get_mut::<tcp::Socket>(c.0).close();
    }

    /// Resets `c` at once (an RST to the peer); what was queued is dropped.
    pub fn abort(&mut self, c: TcpConn) {
        self.sockets.get_mut::<tcp::Socket>(c.0).abort();
    }

    /// Forgets `c`, freeing its buffers; `c` must not be used again.
    pub fn remove(&mut self, c: TcpConn) {
        self.sockets.remove(c.0);
    }

    /// True while `c` still listens (no peer has started a handshake on it).
    pub fn is_listening(&self, c: TcpConn) -> bool {
        self.sockets.get::<tcp::Socket>(c.0).state() == tcp::State::Listen
    }

    /// True when `c` closed without the TCP close sequence (reset, timed out, aborted), or after
    /// it (a closing handshake that went on to its end: tell them apart by the FIN seen before).
    pub fn is_shut(&self, c: TcpConn) -> bool {
        self.sockets.get::<tcp::Socket>(c.0).state() == tcp::State::Closed
    }

    /// The peer of `c`, once a handshake has started.
    pub fn remote(&self, c: TcpConn) -> Option<SocketAddrV4> {
        match self.sockets.get::<tcp::Socket>(c.0).remote_endpoint()? {
            IpEndpoint {
                addr: IpAddress::Ipv4(ip),
                port,
            } => Some(SocketAddrV4::new(ip, port)),
        }
    }

    /// Bytes received on `c` and not yet read.
    pub fn recv_queue(&self, c: TcpConn) -> usize {
        self.sockets.get::<tcp::Socket>(c.0).recv_queue()
    }

    /// How long the stack may sleep before its next timer (retransmission, delayed ACK); `None`
    /// when no timer is pending.
    pub fn poll_delay(&mut self) -> Option<std::time::Duration> {
        let now = self.now();
        self.iface
            .poll_delay(now, &self.sockets)
            .map(|d| std::time::Duration::from_micros(d.total_micros()))
    }

    /// Where `c` stands.
    pub fn state(&self, c: TcpConn) -> TcpState {
        use tcp::State::*;
        match self.sockets.get::<tcp::Socket>(c.0).state() {
            Listen | SynSent | SynReceived => TcpState::Opening,
            Established | FinWait1 | FinWait2 => TcpState::Established,
            CloseWait | LastAck => TcpState::PeerClosed,
            Closed | Closing | TimeWait => TcpState::Closed,
        }
    }

    /// The host's address.
    pub fn local(&self) -> Ipv4Addr {
        self.local
    }

    /// The port underneath.
    pub fn port(&self) -> &P {
        &self.dev.port
    }
}
