//! Fast paths of the NDJSON scanner, for the shapes nearly every ingest line has: a key spelled
//! exactly as on the previous line, a string without escapes, a plain unsigned decimal. Each one
//! either finishes its piece with the result the general path would give, or declines before
//! touching anything, and the general path in `ndjson` takes the piece from the same byte. So the
//! fast paths change speed only, never results; `ndjson`'s tests run both ways and compare.

use super::{Kind, Plan, RecordEncoder};
use crate::schema::ByteOrder;
use crate::types::ints::write_u64;
use crate::types::ip::parse_ipv4;

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Bit 7 of every byte of `w` that equals `c` (exact for the lowest such byte, which is the one
/// used: a borrow only runs upward from a matching byte).
#[inline(always)]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (LO * c as u64);
    x.wrapping_sub(LO) & !x & HI
}

/// Index of the first `"` or `\` in `b` at or after `k`, or `b.len()`. Eight bytes per step:
/// values are short, but not so short that a byte loop wins (host names, addresses, labels).
#[inline]
pub(super) fn find_quote_or_backslash(b: &[u8], mut k: usize) -> usize {
    while let Some(chunk) = b.get(k..k + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let w = u64::from_le_bytes(w);
        let hit = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
        if hit != 0 {
            return k + (hit.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    while k < b.len() && b[k] != b'"' && b[k] != b'\\' {
        k += 1;
    }
    k
}

/// True when every byte of `b` is ASCII. 64 bytes per step, one test each: twice the speed of
/// `<[u8]>::is_ascii` here, and every block of ingest passes through it.
pub(super) fn is_ascii(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(64);
    for c in &mut chunks {
        let mut any = 0u64;
        for w in c.chunks_exact(8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            any |= u64::from_le_bytes(a);
        }
        if any & HI != 0 {
            return false;
        }
    }
    chunks.remainder().is_ascii()
}

/// Writes the low `out.len()` bytes of `v` in `order`; the common widths are single stores,
/// inlined here (the shared `write_u64` is not inlined into the scanner's loop).
#[inline(always)]
fn store(out: &mut [u8], v: u64, order: ByteOrder) {
    match (out.len(), order) {
        (1, _) => out[0] = v as u8,
        (2, ByteOrder::Little) => out.copy_from_slice(&(v as u16).to_le_bytes()),
        (4, ByteOrder::Little) => out.copy_from_slice(&(v as u32).to_le_bytes()),
        (8, ByteOrder::Little) => out.copy_from_slice(&v.to_le_bytes()),
        (2, ByteOrder::Big) => out.copy_from_slice(&(v as u16).to_be_bytes()),
        (4, ByteOrder::Big) => out.copy_from_slice(&(v as u32).to_be_bytes()),
        (8, ByteOrder::Big) => out.copy_from_slice(&v.to_be_bytes()),
        _ => write_u64(out, v, order),
    }
}

/// A key as it appears in a line, quotes and colon included (`"name":`), kept in two words with
/// a mask so one 16-byte compare checks it.
pub(super) struct KeyPattern {
    bytes: Box<[u8]>,
    word: u128,
    mask: u128,
}

impl KeyPattern {
    fn new(name: &str) -> Self {
        let mut bytes = Vec::with_capacity(name.len() + 3);
        bytes.push(b'"');
        bytes.extend_from_slice(name.as_bytes());
        bytes.extend_from_slice(b"\":");
        let mut w = [0u8; 16];
        let mut m = [0u8; 16];
        let n = bytes.len().min(16);
        w[..n].copy_from_slice(&bytes[..n]);
        m[..n].fill(0xff);
        KeyPattern {
            bytes: bytes.into(),
            word: u128::from_le_bytes(w),
            mask: u128::from_le_bytes(m),
        }
    }

    /// Length of the pattern when `b[i..]` starts with it.
    #[inline]
    pub(super) fn matches(&self, b: &[u8], i: usize) -> Option<usize> {
        let n = self.bytes.len();
        let hit = match b.get(i..i + 16) {
            // One unaligned 16-byte load (a copy into a buffer first would stall the load).
            Some(chunk) if n <= 16 => {
                let mut w = [0u8; 16];
                w.copy_from_slice(chunk);
                (u128::from_le_bytes(w) ^ self.word) & self.mask == 0
            }
            // Near the end of the line, or a long name: byte by byte (no memcmp call).
            _ => match b.get(i..i + n) {
                Some(s) => s.iter().zip(self.bytes.iter()).all(|(x, y)| x == y),
                None => false,
            },
        };
        hit.then_some(n)
    }
}

/// Per-field fast-path data, built once per block.
pub(super) struct FastFields {
    pub keys: Vec<KeyPattern>,
}

impl FastFields {
    pub(super) fn new(enc: &RecordEncoder) -> Self {
        FastFields {
            keys: enc.plans.iter().map(|p| KeyPattern::new(&p.name)).collect(),
        }
    }
}

/// True when `v` fits a `bits`-wide integer (as `encode_int` decides for plain digits).
#[inline]
fn fits(v: u64, bits: u32, signed: bool) -> bool {
    if signed {
        bits == 64 && v < 1 << 63 || bits < 64 && v < 1 << (bits - 1)
    } else {
        bits == 64 || v < 1 << bits
    }
}

/// Writes the string value `text` (no escapes) into scalar field `p` when its type has a direct
/// path and the value is good; false leaves the field to `encode_field`.
#[inline(always)]
pub(super) fn string_value(enc: &RecordEncoder, p: &Plan, text: &[u8], rec: &mut [u8]) -> bool {
    let out = &mut rec[p.offset..p.offset + p.size];
    match p.kind {
        Kind::Text if text.len() <= out.len() => {
            out[..text.len()].copy_from_slice(text);
            out[text.len()..].fill(0);
            true
        }
        Kind::Ipv4 => match parse_ipv4(text) {
            Some(v) => {
                store(out, v as u64, enc.order);
                true
            }
            None => false,
        },
        Kind::Enum(e) if out.len() <= 8 => match enc.lookups[e].label_code(text) {
            Some(c) if out.len() == 8 || c >> (out.len() * 8) == 0 => {
                store(out, c, enc.order);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Writes the plain unsigned decimal `v` (its text had no sign, fraction or exponent) into
/// scalar field `p` when its type is an integer of 1, 2, 4 or 8 bytes (or a timestamp, which
/// reads plain digits as one) and the value fits; false leaves the field to `encode_field`.
#[inline(always)]
pub(super) fn uint_value(order: ByteOrder, p: &Plan, v: u64, rec: &mut [u8]) -> bool {
    let signed = match p.kind {
        Kind::UInt => false,
        Kind::Int => true,
        // Unix seconds: unsigned in 4 bytes, signed in 8 (see `encode_timestamp`).
        Kind::Timestamp => p.size == 8,
        _ => return false,
    };
    if !matches!(p.size, 1 | 2 | 4 | 8) || !fits(v, p.size as u32 * 8, signed) {
        return false;
    }
    store(&mut rec[p.offset..p.offset + p.size], v, order);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_scan_finds_the_first_of_either() {
        for text in [
            &b"abc\"def"[..],
            b"abcdefghij\\k\"",
            b"0123456789abcdef\"",
            b"",
            b"no quote at all here",
            b"\"",
            b"abcdefg\\",
        ] {
            for start in 0..=text.len() {
                let want = text[start..]
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\')
                    .map_or(text.len(), |k| start + k);
                assert_eq!(
                    find_quote_or_backslash(text, start),
                    want,
                    "{text:?} {start}"
                );
            }
        }
    }

    #[test]
    fn ascii_check_finds_a_high_byte_anywhere() {
        let mut b = vec![b'a'; 300];
        assert!(is_ascii(&b) && is_ascii(&[]));
        for at in 0..b.len() {
            b[at] = 0x80;
            assert!(!is_ascii(&b), "{at}");
            b[at] = b'a';
        }
    }

    #[test]
    fn stores_match_write_u64() {
        for size in [1usize, 2, 3, 4, 8] {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let (mut a, mut b) = (vec![0u8; size], vec![0u8; size]);
                store(&mut a, 0x0102_0304_0506_0708, order);
                write_u64(&mut b, 0x0102_0304_0506_0708, order);
                assert_eq!(a, b, "{size} {order:?}");
            }
        }
    }

    #[test]
    fn key_patterns_match_whole_keys_only() {
        let k = KeyPattern::new("ts");
        assert_eq!(k.matches(b"\"ts\":1, \"padding........\"", 0), Some(5));
        assert_eq!(k.matches(b"\"ts\":1", 0), Some(5));
        assert_eq!(k.matches(b"x\"ts\":1", 1), Some(5));
        assert_eq!(k.matches(b"\"tss\":1, \"padding........\"", 0), None);
        assert_eq!(k.matches(b"\"ts\" :1, \"padding........\"", 0), None);
        assert_eq!(k.matches(b"\"ts\"", 0), None);
        let long = KeyPattern::new("a_rather_long_field_name");
        assert_eq!(
            long.matches(b"\"a_rather_long_field_name\": 5", 0),
            Some(27)
        );
        assert_eq!(long.matches(b"\"a_rather_long_field_namX\": 5", 0), None);
        let exact = KeyPattern::new("abcdefghijklm");
        assert_eq!(exact.matches(b"\"abcdefghijklm\":", 0), Some(16));
        assert_eq!(exact.matches(b"\"abcdefghijklm\";", 0), None);
    }

    #[test]
    fn integer_limits_match_encode_int() {
        assert!(fits(255, 8, false) && !fits(256, 8, false));
        assert!(fits(127, 8, true) && !fits(128, 8, true));
        assert!(fits(u64::MAX, 64, false) && !fits(1 << 63, 64, true));
        assert!(fits((1 << 63) - 1, 64, true));
    }
}
