//! One Arrow value → the bytes of one scalar (a field, or one array element), by the field's
//! encoding kind. Text goes through the same encoders as `convert_record_to_binary`, so a Utf8
//! column is read exactly as the text forms of docs/schema.md; typed values are written directly,
//! with the same range rules. `accept.rs` has already refused the Arrow types a kind does not take.

use super::source::{Unit, Val};
use crate::encode::{Kind, RecordEncoder};
use crate::schema::ByteOrder;
use crate::types::ints::{fit, mul_add, negate, write_u256, write_u64, U256};
use crate::types::ip::parse_ipv4;
use crate::types::numeric::fits_digits;

/// Writes `v` into `out` (the scalar's whole byte range). A null writes zeros, as an empty value
/// does in every other encoder.
#[inline]
pub(super) fn put(enc: &RecordEncoder, kind: &Kind, v: &Val, out: &mut [u8]) -> Result<(), String> {
    let order = enc.order;
    match (v, kind) {
        (Val::Null, _) => {
            out.fill(0);
            Ok(())
        }
        (Val::Utf8(b) | Val::Bin(b), Kind::Text) => copy_padded(b, out, "text"),
        (Val::Bin(b), Kind::Bytes) => copy_padded(b, out, "value"),
        (Val::Utf8(b), _) => text(enc, kind, b, out),
        (Val::Int(i), _) => int(*i, kind, out, order),
        (Val::Dec(d, scale), _) => decimal(d, *scale, kind, out, order),
        (Val::F32(f), Kind::Float) if out.len() == 4 => put_bits(out, f.to_bits().into(), order),
        (Val::F32(f), Kind::Float) => put_bits(out, f64::from(*f).to_bits(), order),
        (Val::F64(f), Kind::Float) if out.len() == 4 => {
            put_bits(out, (*f as f32).to_bits().into(), order)
        }
        (Val::F64(f), Kind::Float) => put_bits(out, f.to_bits(), order),
        // A float into numeric goes through its shortest text, as the text encoder would read it.
        (Val::F32(f), Kind::Numeric { .. }) => enc.scalar(kind, &f.to_string(), out),
        (Val::F64(f), Kind::Numeric { .. }) => enc.scalar(kind, &f.to_string(), out),
        (Val::Bool(b), Kind::Bool) => {
            out[0] = u8::from(*b);
            Ok(())
        }
        (Val::Time(t, unit), Kind::Timestamp) => {
            timestamp(t.div_euclid(unit.per_second()), out, order)
        }
        (Val::Bin(b), Kind::Ipv6) if b.len() == 16 => {
            out.copy_from_slice(b);
            Ok(())
        }
        (Val::Bin(b), Kind::Ipv6) => Err(format!(
            "an IPv6 address is 16 bytes, the value has {}",
            b.len()
        )),
        _ => Err("this value cannot be written into this field".into()),
    }
}

fn put_bits(out: &mut [u8], bits: u64, order: ByteOrder) -> Result<(), String> {
    write_u64(out, bits, order);
    Ok(())
}

/// Copies `b` into `out`, zero padding the rest; longer than the field is an error (never cut).
#[inline(always)]
fn copy_padded(b: &[u8], out: &mut [u8], what: &str) -> Result<(), String> {
    if b.len() > out.len() {
        return Err(format!(
            "{what} is {} bytes, the field holds {}",
            b.len(),
            out.len()
        ));
    }
    out[..b.len()].copy_from_slice(b);
    out[b.len()..].fill(0);
    Ok(())
}

/// Text, read as `convert_record_to_binary` reads it (an empty string leaves the field zero).
fn text(enc: &RecordEncoder, kind: &Kind, b: &[u8], out: &mut [u8]) -> Result<(), String> {
    if b.is_empty() {
        out.fill(0);
        return Ok(());
    }
    if let Kind::Ipv4 = kind {
        if let Some(v) = parse_ipv4(b) {
            write_u64(out, v.into(), enc.order);
            return Ok(());
        }
    }
    let s = std::str::from_utf8(b).map_err(|_| "the text is not valid UTF-8".to_string())?;
    enc.scalar(kind, s, out)
}

fn type_name(kind: &Kind, bytes: usize) -> String {
    let bits = bytes * 8;
    match kind {
        Kind::Int => format!("int{bits}"),
        Kind::Timestamp if bytes == 4 => "a 4-byte timestamp (0..4294967295)".into(),
        Kind::Timestamp => "a timestamp".into(),
        Kind::Ipv4 => "an IPv4 address (0..4294967295)".into(),
        Kind::ChessMove => "a chess move code (0..65535)".into(),
        _ => format!("uint{bits}"),
    }
}

/// An integer into an integer-like field: integers, enum codes, timestamps (seconds), ipv4 and
/// chess move codes as their stored number, booleans as 0 / 1, numerics scaled, floats converted.
fn int(i: i128, kind: &Kind, out: &mut [u8], order: ByteOrder) -> Result<(), String> {
    let (signed, width) = match kind {
        Kind::UInt | Kind::Enum(_) | Kind::Ipv4 => (false, out.len()),
        Kind::Int => (true, out.len()),
        Kind::Timestamp => (out.len() == 8, out.len()),
        Kind::ChessMove => (false, 2),
        Kind::Bool => {
            return match i {
                0 | 1 => {
                    out[0] = i as u8;
                    Ok(())
                }
                _ => Err(format!("expected 0 or 1 for a boolean, got {i}")),
            }
        }
        Kind::Float if out.len() == 4 => return put_bits(out, (i as f32).to_bits().into(), order),
        Kind::Float => return put_bits(out, (i as f64).to_bits(), order),
        Kind::Numeric { precision, scale } => {
            let (neg, mag) = split(&from_i128(i));
            return numeric(neg, mag, 0, *scale, *precision, out, order);
        }
        _ => return Err("an integer cannot be written into this field".into()),
    };
    let out_of_range = || format!("value {i} is out of range for {}", type_name(kind, width));
    if width >= 16 {
        let (neg, mag) = split(&from_i128(i));
        let v = fit(neg, mag, width as u32 * 8, signed).map_err(|_| out_of_range())?;
        write_u256(out, &v, order);
        return Ok(());
    }
    let bits = width * 8;
    let ok = if signed {
        i >= -(1i128 << (bits - 1)) && i < 1i128 << (bits - 1)
    } else {
        i >= 0 && i < 1i128 << bits
    };
    if !ok {
        return Err(out_of_range());
    }
    match kind {
        Kind::ChessMove => out.copy_from_slice(&(i as u16).to_be_bytes()),
        _ => write_u64(out, i as u64, order),
    }
    Ok(())
}

/// Seconds into a timestamp field (4 bytes: unsigned 32-bit; 8 bytes: signed 64-bit).
pub(super) fn timestamp(secs: i128, out: &mut [u8], order: ByteOrder) -> Result<(), String> {
    int(secs, &Kind::Timestamp, out, order)
}

/// An integer value (a delta, or a converted time) into an integer field of kind `kind`.
pub(super) fn integer(
    i: i128,
    kind: &Kind,
    out: &mut [u8],
    order: ByteOrder,
) -> Result<(), String> {
    int(i, kind, out, order)
}

fn from_i128(v: i128) -> U256 {
    let ext = if v < 0 { u64::MAX } else { 0 };
    [v as u64, (v as u128 >> 64) as u64, ext, ext]
}

/// Two's complement → (negative, magnitude).
fn split(v: &U256) -> (bool, U256) {
    if v[3] >> 63 == 1 {
        (true, negate(v))
    } else {
        (false, *v)
    }
}

/// A decimal value into an integer field (scale 0, checked by `accept`) or a numeric field.
fn decimal(
    d: &U256,
    scale: u8,
    kind: &Kind,
    out: &mut [u8],
    order: ByteOrder,
) -> Result<(), String> {
    let (neg, mag) = split(d);
    match kind {
        Kind::Numeric {
            precision,
            scale: to,
        } => numeric(neg, mag, scale, *to, *precision, out, order),
        Kind::UInt | Kind::Int | Kind::Enum(_) => {
            let signed = matches!(kind, Kind::Int);
            let v = fit(neg, mag, out.len() as u32 * 8, signed).map_err(|_| {
                format!(
                    "value {} is out of range for {}",
                    decimal_text(neg, mag, scale),
                    type_name(kind, out.len())
                )
            })?;
            write_u256(out, &v, order);
            Ok(())
        }
        _ => Err("a decimal cannot be written into this field".into()),
    }
}

/// m / 10, returning the remainder.
fn div10(m: &mut U256) -> u64 {
    let mut rem = 0u128;
    for limb in m.iter_mut().rev() {
        let cur = (rem << 64) | u128::from(*limb);
        *limb = (cur / 10) as u64;
        rem = cur % 10;
    }
    rem as u64
}

/// The decimal text of ±`mag` · 10^-`scale`, for error messages.
fn decimal_text(neg: bool, mut mag: U256, scale: u8) -> String {
    let mut digits = Vec::new();
    while mag != [0; 4] || digits.len() <= scale as usize {
        digits.push(b'0' + div10(&mut mag) as u8);
    }
    let mut s = String::with_capacity(digits.len() + 2);
    if neg {
        s.push('-');
    }
    for (k, d) in digits.iter().rev().enumerate() {
        if k == digits.len() - scale as usize {
            s.push('.');
        }
        s.push(*d as char);
    }
    s
}

/// ±`mag` at scale `from` → numeric(`precision`, `to`): rescaled (extra digits rounded half away
/// from zero, as the text encoder rounds), then checked against the precision and the storage.
fn numeric(
    neg: bool,
    mut mag: U256,
    from: u8,
    to: u8,
    precision: u8,
    out: &mut [u8],
    order: ByteOrder,
) -> Result<(), String> {
    let original = mag;
    let range = || {
        format!(
            "value {} is out of range for numeric({precision},{to})",
            decimal_text(neg, original, from)
        )
    };
    if from < to {
        for _ in from..to {
            if mul_add(&mut mag, 10, 0) {
                return Err(range());
            }
        }
    } else if from > to {
        let mut last = 0;
        for _ in to..from {
            last = div10(&mut mag);
        }
        if last >= 5 && mul_add(&mut mag, 1, 1) {
            return Err(range());
        }
    }
    if !fits_digits(&mag, precision) {
        return Err(range());
    }
    let v = fit(neg && mag != [0; 4], mag, out.len() as u32 * 8, true).map_err(|_| range())?;
    write_u256(out, &v, order);
    Ok(())
}

/// A time value converted to `unit` (floored when `unit` is coarser), or `None` on overflow.
pub(super) fn time_in(t: i128, from: Unit, unit: Unit) -> Option<i128> {
    let (f, u) = (from.per_second(), unit.per_second());
    if f >= u {
        Some(t.div_euclid(f / u))
    } else {
        t.checked_mul(u / f)
    }
}

#[cfg(test)]
pub(super) fn decimal_text_for_test(v: i128, scale: u8) -> String {
    let (neg, mag) = split(&from_i128(v));
    decimal_text(neg, mag, scale)
}
