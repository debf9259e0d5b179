//! timestamp: Unix seconds, an unsigned 32-bit integer (size 4) or a signed 64-bit one (size 8), in
//! the dataset's byte order. Text is an integer number of seconds, or an RFC 3339 date-time
//! (`2024-05-01T12:00:00Z`, `2024-05-01 12:00:00.250+02:00`); fractions of a second are floored.

use super::ints::{encode_int, write_u64};
use super::quote;
use crate::schema::ByteOrder;

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp as i64 + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn num(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    b.iter().try_fold(0u32, |a, &c| {
        a.checked_mul(10)?.checked_add((c - b'0') as u32)
    })
}

/// Parses an RFC 3339 date-time into Unix seconds (fraction floored).
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (num(&b[0..4])? as i64, num(&b[5..7])?, num(&b[8..10])?);
    let (h, mi, s) = (num(&b[11..13])?, num(&b[14..16])?, num(&b[17..19])?);
    let month_days = [
        31,
        if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) {
            29
        } else {
            28
        },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d == 0
        || d > month_days[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || s > 60
    {
        return None;
    }
    let mut i = 19;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset: i64 = match &b[i..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let oh = num(&[*h1, *h2])? as i64;
            let om = num(&[*m1, *m2])? as i64;
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86400 + (h * 3600 + mi * 60 + s) as i64 - offset)
}

/// Encodes a timestamp (size 4: unsigned 32-bit; size 8: signed 64-bit).
pub fn encode_timestamp(text: &str, out: &mut [u8], order: ByteOrder) -> Result<(), String> {
    let first = text.as_bytes().first().copied().unwrap_or(0);
    if text.len() >= 19 && first.is_ascii_digit() && text.as_bytes().get(4) == Some(&b'-') {
        let secs = parse_rfc3339(text).ok_or_else(|| {
            format!(
                "expected Unix seconds or an RFC 3339 date-time, got {}",
                quote(text)
            )
        })?;
        if out.len() == 4 && !(0..=u32::MAX as i64).contains(&secs) {
            return Err(format!(
                "time {} is outside the range of a 4-byte timestamp (1970..2106)",
                quote(text)
            ));
        }
        write_u64(out, secs as u64, order);
        return Ok(());
    }
    encode_int(text, out, out.len() == 8, order).map_err(|e| {
        if e.starts_with("expected") {
            format!(
                "expected Unix seconds or an RFC 3339 date-time, got {}",
                quote(text)
            )
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc8(t: &str) -> Result<i64, String> {
        let mut o = [0u8; 8];
        encode_timestamp(t, &mut o, ByteOrder::Little).map(|_| i64::from_le_bytes(o))
    }

    #[test]
    fn seconds_and_dates() {
        assert_eq!(enc8("1700000000").unwrap(), 1_700_000_000);
        assert_eq!(enc8("-5").unwrap(), -5);
        assert_eq!(enc8("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(enc8("2024-02-29T12:00:00.999Z").unwrap(), 1_709_208_000);
        assert_eq!(enc8("2024-02-29 14:00:00+02:00").unwrap(), 1_709_208_000);
        assert_eq!(enc8("1969-12-31T23:59:59Z").unwrap(), -1);
        assert!(enc8("2023-02-29T00:00:00Z").is_err());
        assert!(enc8("2024-01-01T00:00:00").is_err());
        assert!(enc8("yesterday").unwrap_err().contains("RFC 3339"));
        let mut o4 = [0u8; 4];
        assert!(encode_timestamp("-1", &mut o4, ByteOrder::Big).is_err());
        assert!(encode_timestamp("1960-01-01T00:00:00Z", &mut o4, ByteOrder::Big).is_err());
        encode_timestamp("4294967295", &mut o4, ByteOrder::Big).unwrap();
        assert_eq!(o4, [0xff; 4]);
    }
}
