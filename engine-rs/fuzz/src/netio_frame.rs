//! Fuzzes `netio::wire::parse`, the reader of every Ethernet frame a user-space (DPDK) port
//! receives from the network. Beyond "never panics": a UDP datagram that parses has a payload
//! that fits its frame, and written again from its fields it parses to the same datagram; an ARP
//! packet that parses is written again to the same packet.

use hd_engine_core::netio::wire::{self, Packet};

/// The target: never panics on any input, and holds the properties above.
pub fn run(input: &[u8]) {
    match wire::parse(input) {
        Err(_) => {}
        Ok(Packet::Udp(u)) => {
            assert!(
                u.payload.len() + wire::UDP_FRAME_OVERHEAD <= input.len(),
                "payload within the frame"
            );
            let mut again = Vec::new();
            wire::write_udp(&mut again, u.src_mac, u.dst_mac, u.src, u.dst, 1, u.payload);
            assert_eq!(
                wire::parse(&again),
                Ok(Packet::Udp(u.clone())),
                "rewritten datagram"
            );
        }
        Ok(Packet::Arp(a)) => {
            let mut again = Vec::new();
            wire::write_arp(&mut again, &a);
            assert_eq!(wire::parse(&again), Ok(Packet::Arp(a)), "rewritten ARP");
        }
    }
}
