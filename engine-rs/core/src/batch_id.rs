//! 64-byte batch identifiers, laid out exactly as the platform reference specifies.
//!
//! * string form: the first 64 bytes of the UTF-8 encoding, right-aligned, zero-padded on the left;
//! * number form: the big-endian u64 in bytes 56..64;
//! * time form: start floored to the interval as big-endian i64 in bytes 48..56, end rounded up
//!   (ceiling; an end already on a boundary stays there) in bytes 56..64. Interval 0 means 1 second.

/// Size of every batch identifier in bytes.
pub const BATCH_ID_LEN: usize = 64;

/// A 64-byte batch identifier.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct BatchId(pub [u8; BATCH_ID_LEN]);

impl BatchId {
    /// Builds the string form: the first 64 bytes of `s`, right-aligned with zero padding.
    pub fn from_str_bytes(s: &[u8]) -> Self {
        let mut out = [0u8; BATCH_ID_LEN];
        let n = s.len().min(BATCH_ID_LEN);
        out[BATCH_ID_LEN - n..].copy_from_slice(&s[..n]);
        BatchId(out)
    }

    /// Builds the number form: the big-endian value in the final 8 bytes.
    pub fn from_number(n: u64) -> Self {
        let mut out = [0u8; BATCH_ID_LEN];
        out[56..].copy_from_slice(&n.to_be_bytes());
        BatchId(out)
    }

    /// Builds the time form for `[start, end]` with the given interval in seconds (0 means 1).
    pub fn from_time(start: i64, end: i64, interval: i64) -> Self {
        let iv = normalize_interval(interval);
        let mut out = [0u8; BATCH_ID_LEN];
        out[48..56].copy_from_slice(&floor_to(start, iv).to_be_bytes());
        out[56..].copy_from_slice(&ceil_to(end, iv).to_be_bytes());
        BatchId(out)
    }

    /// Start of the time window of a time-form id (bytes 48..56).
    pub fn time_start(&self) -> i64 {
        i64::from_be_bytes(self.0[48..56].try_into().unwrap_or([0; 8]))
    }

    /// End of the time window of a time-form id (bytes 56..64).
    pub fn time_end(&self) -> i64 {
        i64::from_be_bytes(self.0[56..64].try_into().unwrap_or([0; 8]))
    }

    /// Lower-case hex of the 64 bytes.
    pub fn to_hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(BATCH_ID_LEN * 2);
        for b in self.0 {
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 15) as usize] as char);
        }
        s
    }
}

/// An interval of zero (or below) is treated as one second, as the reference says for zero.
pub fn normalize_interval(interval: i64) -> i64 {
    if interval <= 0 {
        1
    } else {
        interval
    }
}

/// Floors `t` to a multiple of `iv` (toward negative infinity).
pub fn floor_to(t: i64, iv: i64) -> i64 {
    t.div_euclid(iv).saturating_mul(iv)
}

/// Rounds `t` up to a multiple of `iv`; a value already on a boundary stays.
pub fn ceil_to(t: i64, iv: i64) -> i64 {
    let f = floor_to(t, iv);
    if f == t {
        t
    } else {
        f.saturating_add(iv)
    }
}

/// One id per interval covering `[start, end]`: start floors, end rounds up, and the loop runs
/// inclusively to the rounded end, so the list typically extends one interval past the range.
/// Each id covers `[t, t + interval)`. `max` bounds the list so a wide range cannot exhaust memory.
pub fn ids_for_time_range(
    start: i64,
    end: i64,
    interval: i64,
    max: usize,
) -> Result<Vec<BatchId>, String> {
    if end < start {
        return Ok(Vec::new());
    }
    let iv = normalize_interval(interval);
    let first = floor_to(start, iv);
    let last = ceil_to(end, iv);
    let count = ((last as i128 - first as i128) / iv as i128) + 1;
    if count > max as i128 {
        return Err(format!(
            "time range {start}..{end} at interval {iv}s needs {count} batch ids, more than the limit of {max}"
        ));
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut t = first;
    for _ in 0..count {
        out.push(BatchId::from_time(t, t.saturating_add(iv), iv));
        t = t.saturating_add(iv);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_form_right_aligned() {
        let id = BatchId::from_str_bytes(b"abc");
        assert_eq!(&id.0[61..], b"abc");
        assert!(id.0[..61].iter().all(|&b| b == 0));
    }

    #[test]
    fn string_form_keeps_first_64_bytes() {
        let long: Vec<u8> = (0..100u8).collect();
        let id = BatchId::from_str_bytes(&long);
        assert_eq!(&id.0[..], &long[..64]);
    }

    #[test]
    fn number_form_big_endian() {
        let id = BatchId::from_number(0x0102030405060708);
        assert_eq!(&id.0[56..], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(id.0[..56].iter().all(|&b| b == 0));
    }

    #[test]
    fn time_form_floor_and_ceil() {
        let id = BatchId::from_time(125, 130, 60);
        assert_eq!(id.time_start(), 120);
        assert_eq!(id.time_end(), 180);
        let on_boundary = BatchId::from_time(120, 180, 60);
        assert_eq!(on_boundary.time_end(), 180);
        let negative = BatchId::from_time(-1, -1, 60);
        assert_eq!(negative.time_start(), -60);
        assert_eq!(negative.time_end(), 0);
    }

    #[test]
    fn zero_interval_is_one_second() {
        let id = BatchId::from_time(5, 7, 0);
        assert_eq!((id.time_start(), id.time_end()), (5, 7));
    }

    #[test]
    fn ids_for_range_inclusive_to_rounded_end() {
        let ids = ids_for_time_range(125, 130, 60, 1000).unwrap();
        // floor 120, ceil 180, inclusive loop: 120, 180
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0].time_start(), 120);
        assert_eq!(ids[1].time_start(), 180);
        assert!(ids_for_time_range(0, 1_000_000, 1, 10).is_err());
        assert!(ids_for_time_range(10, 0, 60, 10).unwrap().is_empty());
    }
}
