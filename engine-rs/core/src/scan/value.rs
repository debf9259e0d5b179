//! Filter value text → the bytes a field stores for it (docs/query.md, "value text per type").
//! Filters then compare stored bytes with stored bytes, loaded the same way on both sides, so a
//! value and a record can never disagree on byte order or encoding.
//!
//! These rules are stricter than record encoding (docs/schema.md): timestamps are Unix seconds,
//! addresses their integers, numerics exact; what does not fit is refused, never rounded.

use crate::schema::{ByteOrder, FieldType};
use crate::types::ints::{fit, mul_add, parse_magnitude, write_u256, U256};
use crate::types::quote;

/// Longest stretch of a value repeated in a message.
const SHOWN: usize = 40;

/// The text as written, cut short for a message.
fn shown(text: &str) -> String {
    if text.len() <= SHOWN {
        return text.to_string();
    }
    let mut end = SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The type as messages name it.
pub fn type_label(ty: &FieldType, size: usize) -> String {
    match ty {
        FieldType::Numeric { precision, scale } => format!("numeric({precision},{scale})"),
        FieldType::Timestamp if size == 4 => "timestamp (uint32 seconds)".into(),
        FieldType::Timestamp => "timestamp (int64 seconds)".into(),
        FieldType::Ipv4 => "ipv4 (its uint32)".into(),
        FieldType::Ipv6 => "ipv6 (its uint128)".into(),
        FieldType::ChessMove => "chess_move (its uint16 code)".into(),
        FieldType::String | FieldType::Bytes | FieldType::Blob => format!("{}({size})", ty.name()),
        other => other.name(),
    }
}

/// Encodes `text` as field type `ty` of `size` bytes stores it.
pub fn encode(
    ty: &FieldType,
    size: usize,
    order: ByteOrder,
    text: &str,
) -> Result<Vec<u8>, String> {
    let label = || type_label(ty, size);
    match ty {
        FieldType::UInt(_) | FieldType::Ipv4 => int(text, size, false, order, &label()),
        FieldType::Int(_) => int(text, size, true, order, &label()),
        FieldType::Timestamp => int(text, size, size == 8, order, &label()),
        FieldType::Ipv6 | FieldType::ChessMove => int(text, size, false, ByteOrder::Big, &label()),
        FieldType::Numeric { precision, scale } => {
            numeric(text, size, *precision, *scale, order, &label())
        }
        FieldType::Float | FieldType::Double => float(text, size, order, &label()),
        FieldType::Boolean => match text {
            "true" => Ok(vec![1]),
            "false" => Ok(vec![0]),
            _ => Err(format!("expected true or false, got {}", quote(text))),
        },
        FieldType::String | FieldType::Blob => string(text, size, &label()),
        FieldType::Bytes | FieldType::ChessFen => hex(text, size, &label()),
    }
}

fn int(
    text: &str,
    size: usize,
    signed: bool,
    order: ByteOrder,
    label: &str,
) -> Result<Vec<u8>, String> {
    let (neg, m) = parse_magnitude(text).ok_or_else(|| {
        format!(
            "expected an integer (decimal or 0x hex), got {}",
            quote(text)
        )
    })?;
    let v = fit(neg, m, (size * 8) as u32, signed)
        .map_err(|_| format!("{} does not fit {label}", shown(text)))?;
    let mut out = vec![0u8; size];
    write_u256(&mut out, &v, order);
    Ok(out)
}

/// |m| < 10^digits.
fn below_power_of_ten(m: &U256, digits: u8) -> bool {
    let mut limit: U256 = [1, 0, 0, 0];
    for _ in 0..digits {
        if mul_add(&mut limit, 10, 0) {
            return true;
        }
    }
    (0..4)
        .rev()
        .find(|&i| m[i] != limit[i])
        .is_some_and(|i| m[i] < limit[i])
}

fn numeric(
    text: &str,
    size: usize,
    precision: u8,
    scale: u8,
    order: ByteOrder,
    label: &str,
) -> Result<Vec<u8>, String> {
    let bad = || format!("expected a decimal number, got {}", quote(text));
    let b = text.as_bytes();
    let (neg, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let mut digits: Vec<u8> = Vec::with_capacity(b.len());
    let mut frac: i64 = 0;
    let mut point = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                digits.push(c - b'0');
                frac += i64::from(point);
            }
            b'.' if !point => point = true,
            b'e' | b'E' => break,
            _ => return Err(bad()),
        }
        i += 1;
    }
    if digits.is_empty() {
        return Err(bad());
    }
    let mut exp: i64 = 0;
    if i < b.len() {
        exp = text[i + 1..].parse::<i64>().map_err(|_| bad())?;
        if exp.abs() > 1000 {
            return Err(format!("{} does not fit {label}", shown(text)));
        }
    }
    // value = digits · 10^(exp − frac); stored = value · 10^scale, exactly.
    let shift = exp - frac + i64::from(scale);
    let keep = (digits.len() as i64 + shift.min(0)).max(0) as usize;
    if digits[keep..].iter().any(|&d| d != 0) {
        return Err(format!(
            "{} has more fractional digits than {label} keeps ({scale})",
            shown(text)
        ));
    }
    let range = || format!("{} does not fit {label}", shown(text));
    let mut m: U256 = [0; 4];
    for &d in &digits[..keep] {
        if mul_add(&mut m, 10, u64::from(d)) {
            return Err(range());
        }
    }
    for _ in 0..shift.max(0) {
        if mul_add(&mut m, 10, 0) {
            return Err(range());
        }
    }
    if !below_power_of_ten(&m, precision) {
        return Err(range());
    }
    let v = fit(neg, m, (size * 8) as u32, true).map_err(|_| range())?;
    let mut out = vec![0u8; size];
    write_u256(&mut out, &v, order);
    Ok(out)
}

fn float(text: &str, size: usize, order: ByteOrder, label: &str) -> Result<Vec<u8>, String> {
    let bad = || format!("expected a number, got {}", quote(text));
    let word = text.trim_start_matches(['+', '-']);
    let inf_word = word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("infinity");
    let v: f64 = if size == 4 {
        f64::from(text.parse::<f32>().map_err(|_| bad())?)
    } else {
        text.parse::<f64>().map_err(|_| bad())?
    };
    if v.is_nan() {
        return Err("NaN is refused: it equals nothing, not even itself".into());
    }
    if v.is_infinite() && !inf_word {
        return Err(format!("{} does not fit {label}", shown(text)));
    }
    let bytes = if size == 4 {
        let f = v as f32;
        match order {
            ByteOrder::Little => f.to_le_bytes().to_vec(),
            ByteOrder::Big => f.to_be_bytes().to_vec(),
        }
    } else {
        match order {
            ByteOrder::Little => v.to_le_bytes().to_vec(),
            ByteOrder::Big => v.to_be_bytes().to_vec(),
        }
    };
    Ok(bytes)
}

fn string(text: &str, size: usize, label: &str) -> Result<Vec<u8>, String> {
    let b = text.as_bytes();
    if b.len() > size {
        return Err(format!(
            "{} is {} bytes, {label} holds {size}",
            quote(text),
            b.len()
        ));
    }
    if b.last() == Some(&0) {
        return Err(format!(
            "{} ends in a zero byte, which stored text cannot (it is zero padding)",
            quote(text)
        ));
    }
    let mut out = vec![0u8; size];
    out[..b.len()].copy_from_slice(b);
    Ok(out)
}

/// Hex text (two digits a byte, optional `0x`) of at most `size` bytes, zero-padded on the right.
pub fn hex(text: &str, size: usize, label: &str) -> Result<Vec<u8>, String> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text)
        .as_bytes();
    let bad = || format!("expected hex, two digits a byte, got {}", quote(text));
    if !digits.len().is_multiple_of(2) {
        return Err(bad());
    }
    if digits.len() / 2 > size {
        return Err(format!(
            "{} is {} bytes, {label} holds {size}",
            quote(text),
            digits.len() / 2
        ));
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = vec![0u8; size];
    for (k, pair) in digits.chunks_exact(2).enumerate() {
        let (Some(h), Some(l)) = (nibble(pair[0]), nibble(pair[1])) else {
            return Err(bad());
        };
        out[k] = h << 4 | l;
    }
    Ok(out)
}
