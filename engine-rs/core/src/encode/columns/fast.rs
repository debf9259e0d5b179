//! Fast paths for the column shapes nearly every batch has: an integer, float, boolean, text or
//! decimal column into the matching scalar field, and any dictionary column through a table of its
//! entries encoded once. Each either fills a whole segment with exactly the bytes the general path
//! (`scalar::put` per value) writes, or declines, at once or on meeting a value it leaves to the
//! general path (out of range, too long, an entry that does not encode). The general path then runs
//! the segment from its start, rewriting every field the fast path touched, so results and error
//! messages are always the general path's; the tests compare the two on every shape.

use super::raw::{read_int, Offsets};
use super::scalar;
use super::source::{Chunk, Dict, Layout};
use crate::encode::{Kind, RecordEncoder};
use crate::schema::ByteOrder;
use crate::types::ints::write_u64;

#[cfg(test)]
thread_local! {
    /// Tests turn the fast paths off to compare them with the general path.
    pub(super) static ENABLED: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether the fast paths run (always, outside tests).
#[inline(always)]
pub(super) fn enabled() -> bool {
    #[cfg(test)]
    return ENABLED.with(|e| e.get());
    #[cfg(not(test))]
    true
}

/// A dictionary's entries encoded for one field (or array element) kind: `size` bytes each, or
/// the reason an entry does not encode (reported only if a row uses it).
pub(super) struct DictTable {
    size: usize,
    bytes: Vec<u8>,
    bad: Vec<bool>,
}

impl DictTable {
    pub fn new(enc: &RecordEncoder, kind: &Kind, size: usize, dict: &Dict) -> DictTable {
        let n = dict.len();
        let (mut bytes, mut bad) = (vec![0u8; n * size], vec![false; n]);
        for (i, out) in bytes.chunks_exact_mut(size).enumerate() {
            let ok = match dict.get(i) {
                Ok(v) => scalar::put(enc, kind, &v, out).is_ok(),
                Err(_) => false,
            };
            bad[i] = !ok;
        }
        DictTable { size, bytes, bad }
    }

    /// The encoded entry `i`, or `None` when it did not encode or does not exist.
    #[inline(always)]
    fn entry(&self, i: i128) -> Option<&[u8]> {
        let i = usize::try_from(i).ok()?;
        if *self.bad.get(i)? {
            return None;
        }
        Some(&self.bytes[i * self.size..(i + 1) * self.size])
    }
}

/// Where a segment's values go: records `seg` (whole records of `rs` bytes), field bytes
/// `off..off + size` of each, values from index `j0` of the chunk.
pub(super) struct Segment<'s> {
    pub seg: &'s mut [u8],
    pub rs: usize,
    pub off: usize,
    pub size: usize,
    pub j0: usize,
}

/// The signed range a value must lie in to be stored in `size` bytes as `kind`, when the fast
/// integer path writes that kind (its low bytes in the dataset's order).
fn int_range(kind: &Kind, size: usize) -> Option<(i128, i128)> {
    if !matches!(size, 1 | 2 | 4 | 8) {
        return None;
    }
    let bits = size as u32 * 8;
    let signed = match kind {
        Kind::UInt | Kind::Enum(_) | Kind::Ipv4 => false,
        Kind::Int => true,
        Kind::Timestamp => size == 8,
        _ => return None,
    };
    Some(if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    })
}

/// 10^p for p ≤ 38.
fn pow10(p: u8) -> i128 {
    (0..p).fold(1i128, |v, _| v * 10)
}

/// Runs `f(value index, field bytes)` for every record of the segment with a valid value, zeroing
/// the field of a null one; stops (false) as soon as `f` declines.
#[inline(always)]
fn each(c: &Chunk, s: Segment, mut f: impl FnMut(usize, &mut [u8]) -> bool) -> bool {
    for (k, rec) in s.seg.chunks_exact_mut(s.rs).enumerate() {
        let (j, out) = (s.j0 + k, &mut rec[s.off..s.off + s.size]);
        if !c.valid(j) {
            out.fill(0);
        } else if !f(j, out) {
            return false;
        }
    }
    true
}

/// Fills the segment by a fast path for `kind` from chunk `c`, or returns false.
pub(super) fn scalar(
    enc: &RecordEncoder,
    kind: &Kind,
    c: &Chunk,
    table: Option<&DictTable>,
    s: Segment,
) -> bool {
    let (order, size) = (enc.order, s.size);
    match (&c.layout, kind) {
        (
            Layout::Dictionary {
                width,
                signed,
                indices,
                ..
            },
            _,
        ) => match table {
            Some(t) => each(c, s, |j, out| {
                match t.entry(read_int(indices, j, *width, *signed)) {
                    Some(e) => {
                        out.copy_from_slice(e);
                        true
                    }
                    None => false,
                }
            }),
            None => false,
        },
        (
            Layout::Int {
                width,
                signed,
                values,
            },
            _,
        ) => match int_range(kind, size) {
            Some((lo, hi)) => each(c, s, |j, out| {
                let x = read_int(values, j, *width, *signed);
                (lo..=hi).contains(&x) && {
                    write_u64(out, x as u64, order);
                    true
                }
            }),
            None => false,
        },
        (Layout::Float { width, values }, Kind::Float) if *width == size && size != 2 => {
            each(c, s, |j, out| {
                write_u64(out, read_int(values, j, size, false) as u64, order);
                true
            })
        }
        (Layout::Bool(bits), Kind::Bool) => each(c, s, |j, out| {
            out[0] = u8::from(bits.get(j));
            true
        }),
        (Layout::Var { offsets, data, .. }, Kind::Text) => text(c, s, offsets, data),
        (
            Layout::Decimal {
                words: 4,
                scale,
                values,
            },
            Kind::Numeric {
                precision,
                scale: to,
            },
        ) if scale == to && *precision <= 38 && size <= 16 => {
            let limit = pow10(*precision);
            let bits = size as u32 * 8;
            each(c, s, |j, out| {
                let lo = read_int(values, 2 * j, 8, false) as u128;
                let hi = read_int(values, 2 * j + 1, 8, false) as u128;
                let x = (hi << 64 | lo) as i128;
                let fits = bits == 128 || (x >> (bits - 1) == 0 || x >> (bits - 1) == -1);
                (x.unsigned_abs() < limit as u128 && fits) && {
                    put_i128(out, x, order);
                    true
                }
            })
        }
        _ => false,
    }
}

/// The low `out.len()` bytes of `x` in `order`.
#[inline(always)]
fn put_i128(out: &mut [u8], x: i128, order: ByteOrder) {
    let n = out.len();
    match order {
        ByteOrder::Little => out.copy_from_slice(&x.to_le_bytes()[..n]),
        ByteOrder::Big => out.copy_from_slice(&x.to_be_bytes()[16 - n..]),
    }
}

fn text(c: &Chunk, s: Segment, offsets: &Offsets, data: &[u8]) -> bool {
    each(c, s, |j, out| match offsets.range(j, data.len()) {
        Some((a, b)) if b - a <= out.len() => {
            out[..b - a].copy_from_slice(&data[a..b]);
            out[b - a..].fill(0);
            true
        }
        _ => false,
    })
}

/// Element `j` of a dictionary element chunk `c` into `slot` through `table`, or false.
#[inline]
pub(super) fn dict_element(
    c: &Chunk,
    j: usize,
    table: Option<&DictTable>,
    slot: &mut [u8],
) -> bool {
    let (
        Layout::Dictionary {
            width,
            signed,
            indices,
            ..
        },
        Some(t),
    ) = (&c.layout, table)
    else {
        return false;
    };
    if !c.valid(j) {
        slot.fill(0);
        return true;
    }
    match t.entry(read_int(indices, j, *width, *signed)) {
        Some(e) => {
            slot.copy_from_slice(e);
            true
        }
        None => false,
    }
}
