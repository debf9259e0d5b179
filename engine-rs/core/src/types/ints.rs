//! Integers of 8 to 256 bits from decimal or `0x` hex text, written in the dataset's byte order.
//! Up to 64 bits a plain `u64` path is used; wider values go through a four-limb magnitude.

use super::quote;
use crate::schema::ByteOrder;

/// A 256-bit magnitude as four little-endian 64-bit limbs.
pub type U256 = [u64; 4];

/// Parses `[+-]digits` or `[+-]0x hexdigits` into (negative, magnitude). `None` when the text is
/// not an integer or the magnitude needs more than 256 bits.
pub fn parse_magnitude(text: &str) -> Option<(bool, U256)> {
    let b = text.as_bytes();
    let (neg, rest) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let (radix, digits) =
        if rest.len() > 2 && rest[0] == b'0' && (rest[1] == b'x' || rest[1] == b'X') {
            (16u64, &rest[2..])
        } else {
            (10u64, rest)
        };
    if digits.is_empty() {
        return None;
    }
    let mut m: U256 = [0; 4];
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => (c - b'0') as u64,
            b'a'..=b'f' if radix == 16 => (c - b'a' + 10) as u64,
            b'A'..=b'F' if radix == 16 => (c - b'A' + 10) as u64,
            b'_' if radix == 16 => continue,
            _ => return None,
        };
        if mul_add(&mut m, radix, d) {
            return None;
        }
    }
    Some((neg, m))
}

/// m = m * mul + add; true on overflow past 256 bits.
pub fn mul_add(m: &mut U256, mul: u64, add: u64) -> bool {
    let mut carry = add as u128;
    for limb in m.iter_mut() {
        let v = (*limb as u128) * (mul as u128) + carry;
        *limb = v as u64;
        carry = v >> 64;
    }
    carry != 0
}

/// Number of significant bits of a magnitude.
pub fn bit_len(m: &U256) -> u32 {
    for i in (0..4).rev() {
        if m[i] != 0 {
            return i as u32 * 64 + (64 - m[i].leading_zeros());
        }
    }
    0
}

/// True when the magnitude is exactly 2^(bits-1), the one negative value without a positive twin.
fn is_min_signed(m: &U256, bits: u32) -> bool {
    let top = bits - 1;
    let mut want: U256 = [0; 4];
    want[(top / 64) as usize] = 1u64 << (top % 64);
    *m == want
}

/// Two's complement negation in 256 bits.
pub fn negate(m: &U256) -> U256 {
    let mut out: U256 = [0; 4];
    let mut carry = 1u128;
    for i in 0..4 {
        let v = (!m[i]) as u128 + carry;
        out[i] = v as u64;
        carry = v >> 64;
    }
    out
}

/// A value outside the range of its integer width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange;

/// Checks a signed magnitude against a `bits`-wide signed or unsigned range and returns the
/// two's complement 256-bit value.
pub fn fit(neg: bool, m: U256, bits: u32, signed: bool) -> Result<U256, OutOfRange> {
    let zero = m == [0; 4];
    let len = bit_len(&m);
    if signed {
        let ok = len < bits || (neg && len == bits && is_min_signed(&m, bits));
        if !ok {
            return Err(OutOfRange);
        }
    } else if (neg && !zero) || len > bits {
        return Err(OutOfRange);
    }
    Ok(if neg { negate(&m) } else { m })
}

/// Writes the low `out.len()` bytes of a 256-bit two's complement value in the given order.
pub fn write_u256(out: &mut [u8], v: &U256, order: ByteOrder) {
    let n = out.len();
    for i in 0..n {
        let byte = (v[i / 8] >> ((i % 8) * 8)) as u8;
        match order {
            ByteOrder::Little => out[i] = byte,
            ByteOrder::Big => out[n - 1 - i] = byte,
        }
    }
}

/// Writes the low `out.len()` (1, 2, 4 or 8) bytes of `v` in the given order.
#[inline]
pub fn write_u64(out: &mut [u8], v: u64, order: ByteOrder) {
    let n = out.len();
    // Fixed-size copies for the common widths compile to single stores.
    match (n, order) {
        (1, _) => return out[0] = v as u8,
        (2, ByteOrder::Little) => return out.copy_from_slice(&(v as u16).to_le_bytes()),
        (4, ByteOrder::Little) => return out.copy_from_slice(&(v as u32).to_le_bytes()),
        (8, ByteOrder::Little) => return out.copy_from_slice(&v.to_le_bytes()),
        _ => {}
    }
    match order {
        ByteOrder::Little => out.copy_from_slice(&v.to_le_bytes()[..n]),
        ByteOrder::Big => out.copy_from_slice(&v.to_be_bytes()[8 - n..]),
    }
}

/// Plain decimal `u64` (no sign), the hot path of NDJSON numbers. `None` on anything else.
#[inline]
pub fn parse_u64_dec(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

fn range_text(bits: u32, signed: bool) -> String {
    let name = if signed { "int" } else { "uint" };
    format!("{name}{bits}")
}

/// Encodes an integer of `out.len()*8` bits from text.
pub fn encode_int(
    text: &str,
    out: &mut [u8],
    signed: bool,
    order: ByteOrder,
) -> Result<(), String> {
    let bits = (out.len() * 8) as u32;
    if bits <= 64 {
        if let Some(v) = parse_u64_dec(text.as_bytes()) {
            let limit_ok = if signed {
                bits == 64 && v < 1 << 63 || bits < 64 && v < 1 << (bits - 1)
            } else {
                bits == 64 || v < 1 << bits
            };
            if !limit_ok {
                return Err(format!(
                    "value {} is out of range for {}",
                    quote(text),
                    range_text(bits, signed)
                ));
            }
            write_u64(out, v, order);
            return Ok(());
        }
    }
    let (neg, m) =
        parse_magnitude(text).ok_or_else(|| format!("expected an integer, got {}", quote(text)))?;
    let v = fit(neg, m, bits, signed).map_err(|_| {
        format!(
            "value {} is out of range for {}",
            quote(text),
            range_text(bits, signed)
        )
    })?;
    write_u256(out, &v, order);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ByteOrder::*;

    fn enc(text: &str, size: usize, signed: bool, order: ByteOrder) -> Result<Vec<u8>, String> {
        let mut out = vec![0xAA; size];
        encode_int(text, &mut out, signed, order).map(|_| out)
    }

    #[test]
    fn small_ints_both_orders() {
        assert_eq!(enc("258", 2, false, Little).unwrap(), [2, 1]);
        assert_eq!(enc("258", 2, false, Big).unwrap(), [1, 2]);
        assert_eq!(enc("-1", 4, true, Little).unwrap(), [0xff; 4]);
        assert_eq!(enc("-128", 1, true, Little).unwrap(), [0x80]);
        assert_eq!(enc("0x1234", 2, false, Big).unwrap(), [0x12, 0x34]);
        assert_eq!(enc("+7", 1, false, Big).unwrap(), [7]);
        assert_eq!(
            enc("18446744073709551615", 8, false, Little).unwrap(),
            [0xff; 8]
        );
        assert_eq!(
            enc("-9223372036854775808", 8, true, Big).unwrap(),
            [0x80, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn ranges_are_enforced() {
        assert!(enc("256", 1, false, Little)
            .unwrap_err()
            .contains("out of range for uint8"));
        assert!(enc("128", 1, true, Little).is_err());
        assert!(enc("-129", 1, true, Little).is_err());
        assert!(enc("-1", 1, false, Little).is_err());
        assert!(enc("-0", 1, false, Little).is_ok());
        assert!(enc("18446744073709551616", 8, false, Little).is_err());
        assert!(enc("9223372036854775808", 8, true, Little).is_err());
        assert!(enc("1.5", 4, false, Little)
            .unwrap_err()
            .contains("expected an integer"));
        assert!(enc("", 4, false, Little).is_err());
        assert!(enc("0x", 4, false, Little).is_err());
        assert!(enc("12a", 4, false, Little).is_err());
    }

    #[test]
    fn wide_ints() {
        let max128 = "340282366920938463463374607431768211455";
        assert_eq!(enc(max128, 16, false, Little).unwrap(), [0xff; 16]);
        assert!(enc("340282366920938463463374607431768211456", 16, false, Little).is_err());
        let min256 = format!("-0x8{}", "0".repeat(63));
        let mut want = vec![0u8; 32];
        want[0] = 0x80;
        assert_eq!(enc(&min256, 32, true, Big).unwrap(), want);
        assert_eq!(enc("-2", 16, true, Little).unwrap()[..2], [0xfe, 0xff]);
        let max256 = format!("0x{}", "f".repeat(64));
        assert_eq!(enc(&max256, 32, false, Little).unwrap(), [0xff; 32]);
        assert!(enc(&format!("0x1{}", "0".repeat(64)), 32, false, Little).is_err());
        assert!(enc(&max256, 32, true, Little).is_err());
    }
}
