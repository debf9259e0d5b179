//! ipv4: the address as an unsigned 32-bit integer in the dataset's byte order. ipv6: 16 bytes in
//! network order (big-endian) always. Text is the address (`10.0.0.1`, `::1`, `::ffff:1.2.3.4`)
//! or the unsigned integer itself (the column's own form, as filters use).

use super::ints::{encode_int, write_u64};
use super::quote;
use crate::schema::ByteOrder;

/// The decimal digit at `b[i]`, if there is one.
#[inline(always)]
fn digit_at(b: &[u8], i: usize) -> Option<u32> {
    let d = b.get(i)?.wrapping_sub(b'0');
    (d <= 9).then_some(d as u32)
}

/// Dotted-quad IPv4 without leading zeros beyond a single `0`. Unrolled per octet (at most three
/// digits each): this runs for every address of every ingested line.
#[inline]
pub fn parse_ipv4(b: &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    let mut i = 0;
    for k in 0..4 {
        if k > 0 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let mut part = digit_at(b, i)?;
        i += 1;
        // A leading 0 stands alone: "0" is an octet, "01" is not (the next byte must be a dot).
        if part != 0 {
            if let Some(d) = digit_at(b, i) {
                part = part * 10 + d;
                i += 1;
                if let Some(d) = digit_at(b, i) {
                    part = part * 10 + d;
                    i += 1;
                }
            }
        }
        if part > 255 {
            return None;
        }
        v = v << 8 | part;
    }
    (i == b.len()).then_some(v)
}

/// Encodes an IPv4 address (4 bytes).
pub fn encode_ipv4(text: &str, out: &mut [u8], order: ByteOrder) -> Result<(), String> {
    if let Some(v) = parse_ipv4(text.as_bytes()) {
        write_u64(out, v as u64, order);
        return Ok(());
    }
    if text.bytes().all(|c| c.is_ascii_digit()) && !text.is_empty() {
        return encode_int(text, out, false, order)
            .map_err(|_| format!("IPv4 integer {} is out of range", quote(text)));
    }
    Err(format!("expected an IPv4 address, got {}", quote(text)))
}

/// Encodes an IPv6 address (16 bytes, network order).
pub fn encode_ipv6(text: &str, out: &mut [u8]) -> Result<(), String> {
    if let Ok(a) = text.parse::<std::net::Ipv6Addr>() {
        out.copy_from_slice(&a.octets());
        return Ok(());
    }
    if !text.is_empty() && text.bytes().all(|c| c.is_ascii_digit()) {
        return encode_int(text, out, false, ByteOrder::Big)
            .map_err(|_| format!("IPv6 integer {} is out of range", quote(text)));
    }
    Err(format!("expected an IPv6 address, got {}", quote(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4() {
        let mut o = [0u8; 4];
        encode_ipv4("10.1.2.3", &mut o, ByteOrder::Little).unwrap();
        assert_eq!(o, [3, 2, 1, 10]);
        encode_ipv4("10.1.2.3", &mut o, ByteOrder::Big).unwrap();
        assert_eq!(o, [10, 1, 2, 3]);
        encode_ipv4("167772161", &mut o, ByteOrder::Big).unwrap();
        assert_eq!(o, [10, 0, 0, 1]);
        encode_ipv4("0.0.0.0", &mut o, ByteOrder::Big).unwrap();
        for bad in [
            "256.1.1.1",
            "1.2.3",
            "1.2.3.4.5",
            "1..2.3",
            "01.2.3.4",
            "a.b.c.d",
            "",
            "4294967296",
            "1.2.3.4 ",
        ] {
            assert!(encode_ipv4(bad, &mut o, ByteOrder::Big).is_err(), "{bad}");
        }
    }

    /// The first, byte-at-a-time parser: the reference the unrolled one must agree with.
    fn reference_ipv4(b: &[u8]) -> Option<u32> {
        let (mut v, mut part, mut digits, mut dots, mut lead_zero) = (0u32, 0u32, 0, 0, false);
        for &c in b {
            if c == b'.' {
                if digits == 0 {
                    return None;
                }
                v = v << 8 | part;
                (part, digits) = (0, 0);
                dots += 1;
                if dots > 3 {
                    return None;
                }
            } else {
                let d = c.wrapping_sub(b'0');
                if d > 9 || lead_zero {
                    return None;
                }
                if digits == 0 && d == 0 {
                    lead_zero = true;
                }
                part = part * 10 + d as u32;
                digits += 1;
                if part > 255 {
                    return None;
                }
                continue;
            }
            lead_zero = false;
        }
        if dots != 3 || digits == 0 {
            return None;
        }
        Some(v << 8 | part)
    }

    #[test]
    fn v4_parser_agrees_with_the_reference() {
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let alphabet = b"0123456789.....x";
        for n in 0..300_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 18) as usize;
            let mut b: Vec<u8> = (0..len)
                .map(|k| alphabet[((seed >> (k * 3 + 5)) % 16) as usize])
                .collect();
            // Every few rounds, a real address with one edit, so valid forms are common too.
            if n % 3 == 0 {
                let parts = [
                    seed % 300,
                    (seed >> 9) % 256,
                    (seed >> 17) % 256,
                    (seed >> 25) % 260,
                ];
                b = format!("{}.{}.{}.{}", parts[0], parts[1], parts[2], parts[3]).into_bytes();
                if n % 2 == 0 {
                    let at = ((seed >> 33) as usize) % b.len();
                    b[at] = alphabet[((seed >> 41) % 16) as usize];
                }
            }
            assert_eq!(
                parse_ipv4(&b),
                reference_ipv4(&b),
                "{:?}",
                String::from_utf8_lossy(&b)
            );
        }
        for good in ["0.0.0.0", "255.255.255.255", "1.20.100.0", "10.0.0.1"] {
            assert!(parse_ipv4(good.as_bytes()).is_some(), "{good}");
        }
    }

    #[test]
    fn v6() {
        let mut o = [0u8; 16];
        encode_ipv6("::1", &mut o).unwrap();
        assert_eq!(o[15], 1);
        encode_ipv6("::ffff:1.2.3.4", &mut o).unwrap();
        assert_eq!(&o[10..], &[0xff, 0xff, 1, 2, 3, 4]);
        encode_ipv6("1", &mut o).unwrap();
        assert_eq!(o[15], 1);
        assert!(encode_ipv6("1.2.3.4", &mut o).unwrap_err().contains("IPv6"));
        assert!(encode_ipv6("gggg::", &mut o).is_err());
    }
}
