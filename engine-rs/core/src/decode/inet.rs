//! ipv4 / ipv6 addresses: inet text (the SQL presentation) or raw (16 bytes for ipv6; ipv4 raw is
//! a plain `u32` column built in numbers.rs).

use super::buf::{Prim, Slots, VarBuf};
use super::{Builder, Column, DecodeError};

/// ipv4 (a u32 in the dataset's byte order) → dotted quad.
struct Ipv4Text<const BIG: bool> {
    name: String,
    slots: Slots,
    out: VarBuf,
    len: usize,
}

impl<const BIG: bool> Builder for Ipv4Text<BIG> {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let out = &mut self.out;
        self.slots.each(records, |v| {
            push_ipv4(&mut out.data, u32::read::<BIG>(v).to_be_bytes());
            out.end_value();
        });
        self.out.check(&self.name)
    }

    fn finish(self: Box<Self>) -> Column {
        Column::var_width(self.len, self.out.finish())
    }
}

pub(crate) fn ipv4_text(name: &str, slots: Slots, big: bool, n: usize) -> Box<dyn Builder> {
    // 15 bytes per address at most, and room for the last one's 16-byte store.
    let out = VarBuf::new(n, n * 15 + 16);
    let name = name.to_string();
    if big {
        Box::new(Ipv4Text::<true> {
            name,
            slots,
            out,
            len: n,
        })
    } else {
        Box::new(Ipv4Text::<false> {
            name,
            slots,
            out,
            len: n,
        })
    }
}

/// Decimal text of every byte value: its (up to three) digits, then the digit count in byte 3.
const DEC: [[u8; 4]; 256] = {
    let mut t = [[0u8; 4]; 256];
    let mut v = 0;
    while v < 256 {
        let (h, d, u) = ((v / 100) as u8, (v / 10 % 10) as u8, (v % 10) as u8);
        t[v] = if v >= 100 {
            [b'0' + h, b'0' + d, b'0' + u, 3]
        } else if v >= 10 {
            [b'0' + d, b'0' + u, 0, 2]
        } else {
            [b'0' + u, 0, 0, 1]
        };
        v += 1;
    }
    t
};

/// Appends a dotted quad. Every address of every row passes here, so the text is built in a
/// 16-byte buffer from table entries with fixed-size stores and appended in one fixed-size copy
/// (cut back to its length), instead of a push per character.
fn push_ipv4(out: &mut Vec<u8>, o: [u8; 4]) {
    let mut tmp = [0u8; 16];
    let mut n = 0;
    for b in o {
        let d = DEC[b as usize];
        tmp[n..n + 4].copy_from_slice(&d);
        n += d[3] as usize;
        tmp[n] = b'.';
        n += 1;
    }
    // At most 4 * 3 digits and 3 dots: 15 bytes; the fourth dot is not part of the text.
    let len = out.len() + n - 1;
    if out.capacity() - out.len() >= tmp.len() {
        out.extend_from_slice(&tmp);
        out.truncate(len);
    } else {
        out.extend_from_slice(&tmp[..n - 1]);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_hex16(out: &mut Vec<u8>, g: u16) {
    let mut started = false;
    for shift in [12, 8, 4, 0] {
        let d = (g >> shift) & 0xf;
        if d != 0 || started || shift == 0 {
            out.push(HEX[d as usize]);
            started = true;
        }
    }
}

/// Appends RFC 5952 text of a 16-byte network-order address: lower-case hex without leading
/// zeros, the longest run (first on a tie) of two or more zero groups as `::`, and IPv4-mapped
/// addresses as `::ffff:a.b.c.d`.
pub(crate) fn push_ipv6(out: &mut Vec<u8>, a: &[u8; 16]) {
    let mut g = [0u16; 8];
    for (i, x) in g.iter_mut().enumerate() {
        *x = u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
    }
    if g[..5] == [0; 5] && g[5] == 0xffff {
        out.extend_from_slice(b"::ffff:");
        push_ipv4(out, [a[12], a[13], a[14], a[15]]);
        return;
    }
    let (mut best, mut best_len, mut run, mut run_len) = (8usize, 0usize, 0usize, 0usize);
    for (i, x) in g.iter().enumerate() {
        if *x == 0 {
            if run_len == 0 {
                run = i;
            }
            run_len += 1;
            if run_len > best_len {
                best = run;
                best_len = run_len;
            }
        } else {
            run_len = 0;
        }
    }
    if best_len < 2 {
        best = 8;
    }
    let mut i = 0;
    while i < 8 {
        if i == best {
            out.extend_from_slice(b"::");
            i += best_len;
            continue;
        }
        if i > 0 && i != best + best_len {
            out.push(b':');
        }
        push_hex16(out, g[i]);
        i += 1;
    }
}

/// ipv6 (16 bytes, network order) → RFC 5952 text.
struct Ipv6Text {
    name: String,
    slots: Slots,
    out: VarBuf,
    len: usize,
}

impl Builder for Ipv6Text {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let out = &mut self.out;
        self.slots.each(records, |v| {
            let mut a = [0u8; 16];
            a.copy_from_slice(&v[..16]);
            push_ipv6(&mut out.data, &a);
            out.end_value();
        });
        self.out.check(&self.name)
    }

    fn finish(self: Box<Self>) -> Column {
        Column::var_width(self.len, self.out.finish())
    }
}

pub(crate) fn ipv6_text(name: &str, slots: Slots, n: usize) -> Box<dyn Builder> {
    Box::new(Ipv6Text {
        name: name.to_string(),
        slots,
        out: VarBuf::new(n, n * 20),
        len: n,
    })
}

/// ipv6 → FixedSizeBinary(16), network order, for comparisons on the underlying integer.
struct Ipv6Raw {
    slots: Slots,
    data: Vec<u8>,
    len: usize,
}

impl Builder for Ipv6Raw {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let data = &mut self.data;
        self.slots
            .each(records, |v| data.extend_from_slice(&v[..16]));
        Ok(())
    }

    fn finish(self: Box<Self>) -> Column {
        Column {
            len: self.len,
            null_count: 0,
            validity: None,
            offsets: None,
            data: self.data,
            child: None,
        }
    }
}

pub(crate) fn ipv6_raw(slots: Slots, n: usize) -> Box<dyn Builder> {
    Box::new(Ipv6Raw {
        slots,
        data: Vec::with_capacity(n * 16),
        len: n,
    })
}
