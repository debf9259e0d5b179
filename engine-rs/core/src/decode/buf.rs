//! Output buffers and byte readers shared by the column builders.
//!
//! Every output buffer is a `Vec<u8>` holding values in the host's native byte order (what Arrow's
//! typed arrays read); the bridge copies each into a fresh, aligned `ArrayBuffer`.

use super::DecodeError;

/// Where a column's values sit in each record: `count` slots of `width` bytes from `offset`.
/// A scalar field is one slot; an array field is `count` element slots.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slots {
    pub offset: usize,
    pub width: usize,
    pub count: usize,
    pub record_size: usize,
}

impl Slots {
    /// Calls `f` with every slot of every record in `records` (whole records), in order.
    /// The plan checked that `offset + width * count <= record_size`, so slicing cannot fail.
    #[inline(always)]
    pub fn each<'a>(&self, records: &'a [u8], mut f: impl FnMut(&'a [u8])) {
        let span = self.width * self.count;
        for r in records.chunks_exact(self.record_size) {
            let base = &r[self.offset..self.offset + span];
            if self.count == 1 {
                f(base)
            } else {
                for v in base.chunks_exact(self.width) {
                    f(v)
                }
            }
        }
    }

    /// Number of values `records` holds for this column.
    pub fn values_in(&self, records: &[u8]) -> usize {
        records.len() / self.record_size * self.count
    }
}

/// First `N` bytes of `v` as an array (the plan guarantees `v.len() >= N`).
#[inline(always)]
pub(crate) fn arr<const N: usize>(v: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&v[..N]);
    a
}

/// A primitive read from a record in the dataset's byte order (`BIG` = big-endian).
pub(crate) trait Prim: Copy + Send + 'static {
    fn read<const BIG: bool>(v: &[u8]) -> Self;
}

macro_rules! prim {
    ($($t:ty),*) => {$(
        impl Prim for $t {
            #[inline(always)]
            fn read<const BIG: bool>(v: &[u8]) -> Self {
                let a = arr::<{ std::mem::size_of::<$t>() }>(v);
                if BIG { <$t>::from_be_bytes(a) } else { <$t>::from_le_bytes(a) }
            }
        }
    )*};
}
prim!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, f32, f64);

/// A value written to a column buffer in native byte order.
pub(crate) trait Native: Copy + Send + 'static {
    const WIDTH: usize;
    fn put(self, dst: &mut [u8]);
}

macro_rules! native {
    ($($t:ty),*) => {$(
        impl Native for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn put(self, dst: &mut [u8]) { dst.copy_from_slice(&self.to_ne_bytes()) }
        }
    )*};
}
native!(i16, i32, i64, u32, u64, f32, f64);

/// Reads an integer of `width` bytes (1..=16) as i128; `None` for an unsigned 128-bit value
/// above `i128::MAX`. Used off the hot paths (enum codes of odd widths, time deltas).
pub(crate) fn read_int(v: &[u8], width: usize, signed: bool, big: bool) -> Option<i128> {
    let mut le = [0u8; 16];
    for (i, b) in le.iter_mut().enumerate().take(width) {
        *b = if big { v[width - 1 - i] } else { v[i] };
    }
    let negative = signed && width > 0 && le[width - 1] & 0x80 != 0;
    if negative {
        for b in le.iter_mut().skip(width) {
            *b = 0xff;
        }
    }
    let u = u128::from_le_bytes(le);
    if !signed && width == 16 && u > i128::MAX as u128 {
        return None;
    }
    Some(u as i128)
}

/// Validity bitmap (Arrow layout: bit i of byte i/8, least significant bit first; 1 = valid),
/// allocated only when the first null appears, so columns without nulls carry none.
pub(crate) struct Validity {
    bits: Option<Vec<u8>>,
    nulls: usize,
    len: usize,
}

impl Validity {
    pub fn new(len: usize) -> Self {
        Validity {
            bits: None,
            nulls: 0,
            len,
        }
    }

    /// Marks value `i` null.
    pub fn null_at(&mut self, i: usize) {
        let len = self.len;
        let bits = self.bits.get_or_insert_with(|| {
            let mut b = vec![0xffu8; len.div_ceil(8)];
            if !len.is_multiple_of(8) {
                if let Some(last) = b.last_mut() {
                    *last = (1u8 << (len % 8)) - 1;
                }
            }
            b
        });
        if let Some(byte) = bits.get_mut(i / 8) {
            *byte &= !(1u8 << (i % 8));
            self.nulls += 1;
        }
    }

    pub fn finish(self) -> (Option<Vec<u8>>, usize) {
        (self.bits, self.nulls)
    }
}

/// Variable-length values (Utf8, Binary): i32 offsets (`values + 1` of them) and the bytes.
pub(crate) struct VarBuf {
    offsets: Vec<u8>,
    pub data: Vec<u8>,
    overflow: bool,
}

impl VarBuf {
    pub fn new(values: usize, data_capacity: usize) -> Self {
        let mut offsets = Vec::with_capacity((values + 1) * 4);
        offsets.extend_from_slice(&0i32.to_ne_bytes());
        VarBuf {
            offsets,
            data: Vec::with_capacity(data_capacity),
            overflow: false,
        }
    }

    /// Ends the current value: whatever was appended to `data` since the last call.
    #[inline(always)]
    pub fn end_value(&mut self) {
        let end = self.data.len();
        self.overflow |= end > i32::MAX as usize;
        self.offsets.extend_from_slice(&(end as i32).to_ne_bytes());
    }

    /// Arrow's Utf8/Binary/List offsets are 32-bit: a column over 2 GiB cannot be presented.
    pub fn check(&self, column: &str) -> Result<(), DecodeError> {
        if self.overflow {
            return Err(DecodeError::TooLarge {
                column: column.to_string(),
            });
        }
        Ok(())
    }

    pub fn finish(self) -> (Vec<u8>, Vec<u8>) {
        (self.offsets, self.data)
    }
}
