//! numeric(p,s): a signed integer of the field's size (4, 8, 16 or 32 bytes) holding value·10^s.
//! Text is a decimal number (`-12.345`, `1e3`); digits past the scale are rounded half away from
//! zero (as SQL numeric does); a value needing more than `p` digits is out of range.

use super::ints::{fit, mul_add, write_u256, U256};
use super::quote;
use crate::schema::ByteOrder;

/// Most digits a numeric of `size` bytes can hold.
pub fn max_precision(size: usize) -> Option<u8> {
    match size {
        4 => Some(9),
        8 => Some(18),
        16 => Some(38),
        32 => Some(76),
        _ => None,
    }
}

/// True when |m| < 10^digits (a magnitude fits a precision of `digits`).
pub fn fits_digits(m: &U256, digits: u8) -> bool {
    let mut limit: U256 = [1, 0, 0, 0];
    for _ in 0..digits {
        if mul_add(&mut limit, 10, 0) {
            return true;
        }
    }
    for i in (0..4).rev() {
        if m[i] != limit[i] {
            return m[i] < limit[i];
        }
    }
    false
}

/// Encodes a decimal text as value·10^scale into `out` (4, 8, 16 or 32 bytes).
pub fn encode_numeric(
    text: &str,
    out: &mut [u8],
    precision: u8,
    scale: u8,
    order: ByteOrder,
) -> Result<(), String> {
    let bad = || format!("expected a decimal number, got {}", quote(text));
    let b = text.as_bytes();
    let (neg, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    // Collect significant digits and where the decimal point falls.
    let mut digits: Vec<u8> = Vec::with_capacity(b.len());
    let mut frac_digits: i64 = 0;
    let mut seen_point = false;
    let mut any = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                any = true;
                digits.push(c - b'0');
                if seen_point {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            b'e' | b'E' => break,
            _ => return Err(bad()),
        }
        i += 1;
    }
    if !any {
        return Err(bad());
    }
    let mut exp: i64 = 0;
    if i < b.len() {
        let e = &text[i + 1..];
        exp = e.parse::<i64>().map_err(|_| bad())?;
        if exp.abs() > 1000 {
            return Err(format!(
                "value {} is out of range for numeric({precision},{scale})",
                quote(text)
            ));
        }
    }
    // value = digits · 10^(exp - frac_digits); stored = value · 10^scale.
    let shift = exp - frac_digits + scale as i64;
    let keep = if shift >= 0 {
        digits.len()
    } else {
        (digits.len() as i64 + shift).max(0) as usize
    };
    let mut m: U256 = [0; 4];
    let range = || {
        format!(
            "value {} is out of range for numeric({precision},{scale})",
            quote(text)
        )
    };
    for &d in &digits[..keep] {
        if mul_add(&mut m, 10, d as u64) {
            return Err(range());
        }
    }
    if shift > 0 {
        for _ in 0..shift {
            if mul_add(&mut m, 10, 0) {
                return Err(range());
            }
        }
    } else if keep < digits.len() && digits[keep] >= 5 && mul_add(&mut m, 1, 1) {
        return Err(range());
    }
    if !fits_digits(&m, precision) {
        return Err(range());
    }
    let v = fit(neg, m, (out.len() * 8) as u32, true).map_err(|_| range())?;
    write_u256(out, &v, order);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(text: &str, p: u8, s: u8) -> Result<i64, String> {
        let mut out = [0u8; 8];
        encode_numeric(text, &mut out, p, s, ByteOrder::Little).map(|_| i64::from_le_bytes(out))
    }

    #[test]
    fn scales_and_rounds() {
        assert_eq!(enc("12.345", 18, 4).unwrap(), 123450);
        assert_eq!(enc("-12.345", 18, 2).unwrap(), -1235);
        assert_eq!(enc("0.005", 18, 2).unwrap(), 1);
        assert_eq!(enc("0.0049", 18, 2).unwrap(), 0);
        assert_eq!(enc("1e3", 18, 1).unwrap(), 10000);
        assert_eq!(enc("15E-1", 18, 0).unwrap(), 2);
        assert_eq!(enc("7", 18, 0).unwrap(), 7);
        assert_eq!(enc(".5", 18, 1).unwrap(), 5);
        assert_eq!(enc("0.30000000000000004", 18, 2).unwrap(), 30);
    }

    #[test]
    fn precision_and_garbage() {
        assert_eq!(enc("99.99", 4, 2).unwrap(), 9999);
        assert!(enc("100.00", 4, 2).unwrap_err().contains("numeric(4,2)"));
        assert!(
            enc("99.999", 4, 2).is_err(),
            "rounds up to 100.00, past the precision"
        );
        assert!(enc("abc", 18, 2).unwrap_err().contains("decimal"));
        assert!(enc("1.2.3", 18, 2).is_err());
        assert!(enc("-", 18, 2).is_err());
        assert!(enc("1e", 18, 2).is_err());
        assert!(enc("1e99999", 18, 2).is_err());
        let mut wide = [0u8; 32];
        encode_numeric(&"9".repeat(76), &mut wide, 76, 0, ByteOrder::Big).unwrap();
        assert!(encode_numeric(&"9".repeat(77), &mut wide, 76, 0, ByteOrder::Big).is_err());
    }
}
