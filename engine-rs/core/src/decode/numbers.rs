//! Fixed-width numbers (integers up to 64 bits, floats, timestamps), booleans, and delta time.

use std::marker::PhantomData;

use super::buf::{read_int, Native, Prim, Slots, Validity};
use super::plan::type_name;
use super::{Builder, Column, DecodeError};
use crate::schema::{Field, FieldType, TimeUnit};

/// Widens each stored `S` to the presented `D` into one preallocated buffer.
struct Num<S, D, const BIG: bool> {
    slots: Slots,
    data: Vec<u8>,
    pos: usize,
    len: usize,
    _t: PhantomData<fn(S) -> D>,
}

impl<S: Prim, D: Native + From<S>, const BIG: bool> Builder for Num<S, D, BIG> {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let n = self.slots.values_in(records);
        let end = self.pos + n * D::WIDTH;
        let mut out = self.data[self.pos..end].chunks_exact_mut(D::WIDTH);
        self.slots.each(records, |v| {
            if let Some(dst) = out.next() {
                D::from(S::read::<BIG>(v)).put(dst);
            }
        });
        self.pos = end;
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

/// A builder presenting `S` values as `D` (`n` values in all).
pub(crate) fn num<S: Prim, D: Native + From<S>>(
    slots: Slots,
    big: bool,
    n: usize,
) -> Box<dyn Builder> {
    let data = vec![0u8; n * D::WIDTH];
    if big {
        Box::new(Num::<S, D, true> {
            slots,
            data,
            pos: 0,
            len: n,
            _t: PhantomData,
        })
    } else {
        Box::new(Num::<S, D, false> {
            slots,
            data,
            pos: 0,
            len: n,
            _t: PhantomData,
        })
    }
}

/// Booleans, bit-packed: any non-zero byte reads as true.
struct Bools {
    slots: Slots,
    bits: Vec<u8>,
    i: usize,
    len: usize,
}

impl Builder for Bools {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let (bits, mut i) = (&mut self.bits, self.i);
        self.slots.each(records, |v| {
            if let Some(byte) = bits.get_mut(i / 8) {
                *byte |= u8::from(v[0] != 0) << (i % 8);
            }
            i += 1;
        });
        self.i = i;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Column {
        Column {
            len: self.len,
            null_count: 0,
            validity: None,
            offsets: None,
            data: self.bits,
            child: None,
        }
    }
}

pub(crate) fn bools(slots: Slots, n: usize) -> Box<dyn Builder> {
    Box::new(Bools {
        slots,
        bits: vec![0u8; n.div_ceil(8)],
        i: 0,
        len: n,
    })
}

/// Width in bytes and signedness of an integer (or timestamp) of `size` bytes.
fn int_layout(ty: &FieldType, size: usize) -> Option<(usize, bool)> {
    match ty {
        FieldType::UInt(b) if *b <= 128 => Some((*b as usize / 8, false)),
        FieldType::Int(b) if *b <= 128 => Some((*b as usize / 8, true)),
        FieldType::Timestamp => Some((size, size == 8)),
        _ => None,
    }
}

/// How many delta units one second holds.
pub(crate) fn unit_factor(u: TimeUnit) -> i128 {
    match u {
        TimeUnit::Seconds => 1,
        TimeUnit::Milliseconds => 1_000,
        TimeUnit::Microseconds => 1_000_000,
        TimeUnit::Nanoseconds => 1_000_000_000,
    }
}

/// Delta-compressed time: `source * factor + delta` as Int64 in the delta's unit. A result outside
/// the signed 64-bit range reads as null.
struct Delta {
    slots: Slots,
    delta: (usize, bool),
    source: Slots,
    source_layout: (usize, bool),
    factor: i128,
    big: bool,
    data: Vec<u8>,
    validity: Validity,
    i: usize,
    len: usize,
}

impl Builder for Delta {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let ((dw, ds), (sw, ss)) = (self.delta, self.source_layout);
        let (so, doff) = (self.source.offset, self.slots.offset);
        for r in records.chunks_exact(self.slots.record_size) {
            let src = read_int(&r[so..so + sw], sw, ss, self.big);
            let d = read_int(&r[doff..doff + dw], dw, ds, self.big);
            let abs = match (src, d) {
                (Some(s), Some(d)) => s
                    .checked_mul(self.factor)
                    .and_then(|x| x.checked_add(d))
                    .and_then(|x| i64::try_from(x).ok()),
                _ => None,
            };
            let at = self.i * 8;
            match abs {
                Some(v) => self.data[at..at + 8].copy_from_slice(&v.to_ne_bytes()),
                None => self.validity.null_at(self.i),
            }
            self.i += 1;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Column {
        let (validity, null_count) = self.validity.finish();
        Column {
            len: self.len,
            null_count,
            validity,
            offsets: None,
            data: self.data,
            child: None,
        }
    }
}

/// The builder of a delta time field `name` of type `ty` whose source field is `src`.
pub(crate) fn delta(
    name: &str,
    ty: &FieldType,
    slots: Slots,
    src: &Field,
    unit: TimeUnit,
    big: bool,
    n: usize,
) -> Result<Box<dyn Builder>, DecodeError> {
    let bad = |message: String| DecodeError::Schema {
        field: name.to_string(),
        message,
    };
    let delta = int_layout(ty, slots.width).ok_or_else(|| {
        bad(format!(
            "a time delta must be an integer up to 128 bits, not {}",
            type_name(ty)
        ))
    })?;
    let source_layout = int_layout(&src.ty, src.size).ok_or_else(|| {
        bad(format!(
            "time_reference source '{}' is a {}, not a timestamp or integer",
            src.name,
            type_name(&src.ty)
        ))
    })?;
    if src.offset + source_layout.0 > slots.record_size {
        return Err(bad(format!(
            "time_reference source '{}' lies outside the record",
            src.name
        )));
    }
    let source = Slots {
        offset: src.offset,
        width: source_layout.0,
        count: 1,
        record_size: slots.record_size,
    };
    Ok(Box::new(Delta {
        slots,
        delta,
        source,
        source_layout,
        factor: unit_factor(unit),
        big,
        data: vec![0u8; n * 8],
        validity: Validity::new(n),
        i: 0,
        len: n,
    }))
}
