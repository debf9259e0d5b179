//! [`KernelUdp`]: the kernel's UDP socket behind [`DatagramSocket`], for hosts without a
//! user-space NIC (the default, and every test cluster).

use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};

use super::{check_payloads, Datagram, DatagramSocket, NetError};

/// A non-blocking kernel UDP socket sending and receiving datagrams of at most `mtu` bytes.
#[derive(Debug)]
pub struct KernelUdp {
    socket: UdpSocket,
    local: SocketAddrV4,
    mtu: usize,
    buf: Vec<u8>,
}

impl KernelUdp {
    /// Binds `at` (port 0 picks one) for datagrams of at most `mtu` bytes.
    pub fn bind(at: SocketAddrV4, mtu: usize) -> Result<Self, NetError> {
        let io = |what| move |source| NetError::Io { what, source };
        let socket = UdpSocket::bind(at).map_err(io("bind"))?;
        socket
            .set_nonblocking(true)
            .map_err(io("set_nonblocking"))?;
        let local = match socket.local_addr().map_err(io("local_addr"))? {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => {
                return Err(io("local_addr")(std::io::Error::other(
                    "not an IPv4 address",
                )))
            }
        };
        // One byte more than the MTU, so a longer datagram shows as too long instead of cut.
        Ok(KernelUdp {
            socket,
            local,
            mtu,
            buf: vec![0; mtu + 1],
        })
    }
}

impl DatagramSocket for KernelUdp {
    fn local(&self) -> SocketAddrV4 {
        self.local
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn send_to(&mut self, payloads: &[&[u8]], dst: SocketAddrV4) -> Result<usize, NetError> {
        check_payloads(payloads, self.mtu)?;
        for (i, p) in payloads.iter().enumerate() {
            match self.socket.send_to(p, dst) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(i),
                Err(source) => {
                    return Err(NetError::Io {
                        what: "send_to",
                        source,
                    })
                }
            }
        }
        Ok(payloads.len())
    }

    fn recv(&mut self, out: &mut Vec<Datagram>, max: usize) -> Result<usize, NetError> {
        let mut got = 0;
        while got < max {
            match self.socket.recv_from(&mut self.buf) {
                // Longer than the MTU: not an HDWP datagram of this instance; dropped.
                Ok((n, _)) if n > self.mtu => {}
                Ok((n, SocketAddr::V4(from))) => {
                    out.push(Datagram {
                        from,
                        payload: self.buf[..n].to_vec(),
                    });
                    got += 1;
                }
                Ok((_, SocketAddr::V6(_))) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(source) => {
                    return Err(NetError::Io {
                        what: "recv_from",
                        source,
                    })
                }
            }
        }
        Ok(got)
    }
}
