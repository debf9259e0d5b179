//! Datagram I/O for HD's data plane, over the kernel or over a user-space packet port.
//!
//! Two traits, one per layer:
//! - [`PacketPort`]: bursts of raw Ethernet frames in and out of one NIC queue. [`dpdk::DpdkPort`]
//!   is the user-space one (DPDK's poll-mode drivers: a NIC bound to vfio-pci by PCIe address, or a
//!   virtual device such as `net_tap`); tests use any other implementation they need.
//! - [`DatagramSocket`]: bursts of UDP payloads to and from IPv4 addresses. [`KernelUdp`] is a
//!   kernel socket; [`UserUdp`] runs IPv4/UDP and ARP itself over any [`PacketPort`].
//!
//! Both sockets enforce the instance's HDWP MTU mode (1200 Standard, 8500 Jumbo): a payload is one
//! HDWP frame and never larger. docs/kernel-bypass.md says where these stand in the platform.

pub mod dpdk;
mod host;
mod kernel;
mod tcp;
mod user_udp;
pub mod wire;

#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod tests;

use std::net::SocketAddrV4;

pub use host::{ConnId, HostEvent, HostOptions, TcpHost};
pub use kernel::KernelUdp;
pub use tcp::{TcpConn, TcpState, UserTcp};
pub use user_udp::{UserUdp, UserUdpStats};
pub use wire::Mac;

/// Why a datagram operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The operating system refused a call.
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A payload larger than the socket's MTU mode allows.
    #[error("datagram of {len} bytes is over the MTU mode's {mtu}")]
    TooLarge { len: usize, mtu: usize },
    /// The link cannot carry the MTU mode's datagrams whole.
    #[error("the port carries frames of at most {max_frame} bytes; an MTU of {mtu} needs {needed} (IP MTU {ip_mtu}); jumbo mode needs links of at least 8550")]
    LinkTooSmall {
        mtu: usize,
        max_frame: usize,
        needed: usize,
        ip_mtu: usize,
    },
    /// DPDK is not built in, not installed, or refused.
    #[error("{0}")]
    Dpdk(String),
}

/// One received datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub from: SocketAddrV4,
    pub payload: Vec<u8>,
}

/// Bursts of UDP payloads to and from IPv4 addresses; never blocks.
pub trait DatagramSocket {
    /// The address datagrams are sent from and received at.
    fn local(&self) -> SocketAddrV4;
    /// The largest payload sent or received whole (the HDWP MTU mode).
    fn mtu(&self) -> usize;
    /// Sends every payload to `dst`; returns how many left (the rest may be retried). A payload
    /// over [`Self::mtu`] is refused before anything is sent.
    fn send_to(&mut self, payloads: &[&[u8]], dst: SocketAddrV4) -> Result<usize, NetError>;
    /// Appends up to `max` waiting datagrams to `out`; returns how many.
    fn recv(&mut self, out: &mut Vec<Datagram>, max: usize) -> Result<usize, NetError>;
}

/// Frames received in one burst: frame `i` is `buf[i * stride..][..lens[i]]`.
#[derive(Debug, Default)]
pub struct RxFrames {
    buf: Vec<u8>,
    stride: usize,
    lens: Vec<u32>,
}

impl RxFrames {
    /// Room for `max` frames of up to `stride` bytes.
    pub fn new(max: usize, stride: usize) -> Self {
        RxFrames {
            buf: vec![0; max * stride],
            stride,
            lens: Vec::with_capacity(max),
        }
    }
    /// Frames the buffer holds room for.
    pub fn capacity(&self) -> usize {
        self.buf.len().checked_div(self.stride).unwrap_or(0)
    }
    /// The longest frame kept whole.
    pub fn stride(&self) -> usize {
        self.stride
    }
    /// The flat buffer and the lengths array, for a port to fill (lengths cleared first).
    pub fn parts(&mut self) -> (&mut [u8], &mut Vec<u32>) {
        self.lens.clear();
        (&mut self.buf, &mut self.lens)
    }
    /// Number of frames held.
    pub fn len(&self) -> usize {
        self.lens.len()
    }
    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }
    /// Drops the frames held.
    pub fn clear(&mut self) {
        self.lens.clear();
    }
    /// Frame `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        &self.buf[i * self.stride..][..self.lens[i] as usize]
    }
}

/// Frames to send in one burst, packed one after another.
#[derive(Debug, Default)]
pub struct TxFrames {
    buf: Vec<u8>,
    offs: Vec<u32>,
    lens: Vec<u32>,
}

impl TxFrames {
    /// Empties the burst, keeping its memory.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.offs.clear();
        self.lens.clear();
    }
    /// Appends one frame written by `write` (which appends to the buffer it is given).
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let at = self.buf.len();
        write(&mut self.buf);
        self.offs.push(at as u32);
        self.lens.push((self.buf.len() - at) as u32);
    }
    /// Number of frames.
    pub fn len(&self) -> usize {
        self.lens.len()
    }
    /// True when there is no frame.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }
    /// Frame `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        &self.buf[self.offs[i] as usize..][..self.lens[i] as usize]
    }
    /// The packed bytes, each frame's offset and each frame's length.
    pub fn parts(&self) -> (&[u8], &[u32], &[u32]) {
        (&self.buf, &self.offs, &self.lens)
    }
}

/// Bursts of raw Ethernet frames (without FCS) through one queue of one NIC; never blocks.
pub trait PacketPort {
    /// The port's MAC address.
    fn mac(&self) -> Mac;
    /// The longest frame the port carries, Ethernet header included.
    fn max_frame(&self) -> usize;
    /// Sends frames from the first; returns how many the device took.
    fn transmit(&mut self, frames: &TxFrames) -> Result<usize, NetError>;
    /// Fills `into` with waiting frames (as many as it has room for); returns how many.
    fn receive(&mut self, into: &mut RxFrames) -> Result<usize, NetError>;
}

/// Refuses the burst when any payload is over `mtu`, before anything is sent.
fn check_payloads(payloads: &[&[u8]], mtu: usize) -> Result<(), NetError> {
    match payloads.iter().find(|p| p.len() > mtu) {
        Some(p) => Err(NetError::TooLarge { len: p.len(), mtu }),
        None => Ok(()),
    }
}

/// Checks that `mtu` is an HDWP datagram MTU a link of `max_frame` bytes carries whole.
pub fn check_link(mtu: usize, max_frame: usize) -> Result<(), NetError> {
    let needed = mtu + wire::UDP_FRAME_OVERHEAD;
    if needed > max_frame {
        return Err(NetError::LinkTooSmall {
            mtu,
            max_frame,
            needed,
            ip_mtu: mtu + wire::IPV4_HEADER_LEN + wire::UDP_HEADER_LEN,
        });
    }
    Ok(())
}
