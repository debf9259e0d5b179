//! Order keys: a field's stored bytes read as an unsigned key whose order is the field's own
//! order (signed integers with the sign bit flipped, floats by the IEEE order of their f64 value).
//! Up to 8 bytes the key is the same u64 the segment zone maps store (segment/zone.rs), so a
//! filter's key range is tested against a zone directly. 16-byte fields read as u128, 32-byte
//! fields as a pair of u128.

use crate::schema::{ByteOrder, FieldType};

/// A totally ordered key with a least and a greatest value.
pub trait OrderKey: Copy + Ord + std::fmt::Debug {
    const MIN: Self;
    const MAX: Self;
    /// The next key up, if any.
    fn succ(self) -> Option<Self>;
    /// The next key down, if any.
    fn pred(self) -> Option<Self>;
}

impl OrderKey for u64 {
    const MIN: u64 = 0;
    const MAX: u64 = u64::MAX;
    fn succ(self) -> Option<u64> {
        self.checked_add(1)
    }
    fn pred(self) -> Option<u64> {
        self.checked_sub(1)
    }
}

impl OrderKey for u128 {
    const MIN: u128 = 0;
    const MAX: u128 = u128::MAX;
    fn succ(self) -> Option<u128> {
        self.checked_add(1)
    }
    fn pred(self) -> Option<u128> {
        self.checked_sub(1)
    }
}

/// A 256-bit key: high half first, so the derived order is the numeric order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct K256 {
    pub hi: u128,
    pub lo: u128,
}

impl OrderKey for K256 {
    const MIN: K256 = K256 { hi: 0, lo: 0 };
    const MAX: K256 = K256 {
        hi: u128::MAX,
        lo: u128::MAX,
    };
    fn succ(self) -> Option<K256> {
        match self.lo.checked_add(1) {
            Some(lo) => Some(K256 { hi: self.hi, lo }),
            None => Some(K256 {
                hi: self.hi.checked_add(1)?,
                lo: 0,
            }),
        }
    }
    fn pred(self) -> Option<K256> {
        match self.lo.checked_sub(1) {
            Some(lo) => Some(K256 { hi: self.hi, lo }),
            None => Some(K256 {
                hi: self.hi.checked_sub(1)?,
                lo: u128::MAX,
            }),
        }
    }
}

/// The zone-map key of an f64 (NaN lands outside the keys of -inf ..= +inf).
#[inline(always)]
pub fn float_key(f: f64) -> u64 {
    let b = f.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

#[inline(always)]
fn arr<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

const SIGN: u64 = 1 << 63;

// One function per layout, so the scan loops are compiled per layout with no dispatch inside.
#[inline(always)]
pub fn k_u8(b: &[u8], at: usize) -> u64 {
    u64::from(b[at])
}
#[inline(always)]
pub fn k_u16le(b: &[u8], at: usize) -> u64 {
    u64::from(u16::from_le_bytes(arr(b, at)))
}
#[inline(always)]
pub fn k_u16be(b: &[u8], at: usize) -> u64 {
    u64::from(u16::from_be_bytes(arr(b, at)))
}
#[inline(always)]
pub fn k_u32le(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(arr(b, at)))
}
#[inline(always)]
pub fn k_u32be(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_be_bytes(arr(b, at)))
}
#[inline(always)]
pub fn k_u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(arr(b, at))
}
#[inline(always)]
pub fn k_u64be(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(arr(b, at))
}
#[inline(always)]
pub fn k_i8(b: &[u8], at: usize) -> u64 {
    i64::from(b[at] as i8) as u64 ^ SIGN
}
#[inline(always)]
pub fn k_i16le(b: &[u8], at: usize) -> u64 {
    i64::from(i16::from_le_bytes(arr(b, at))) as u64 ^ SIGN
}
#[inline(always)]
pub fn k_i16be(b: &[u8], at: usize) -> u64 {
    i64::from(i16::from_be_bytes(arr(b, at))) as u64 ^ SIGN
}
#[inline(always)]
pub fn k_i32le(b: &[u8], at: usize) -> u64 {
    i64::from(i32::from_le_bytes(arr(b, at))) as u64 ^ SIGN
}
#[inline(always)]
pub fn k_i32be(b: &[u8], at: usize) -> u64 {
    i64::from(i32::from_be_bytes(arr(b, at))) as u64 ^ SIGN
}
#[inline(always)]
pub fn k_i64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(arr(b, at)) ^ SIGN
}
#[inline(always)]
pub fn k_i64be(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(arr(b, at)) ^ SIGN
}
#[inline(always)]
pub fn k_f32le(b: &[u8], at: usize) -> u64 {
    float_key(f64::from(f32::from_le_bytes(arr(b, at))))
}
#[inline(always)]
pub fn k_f32be(b: &[u8], at: usize) -> u64 {
    float_key(f64::from(f32::from_be_bytes(arr(b, at))))
}
#[inline(always)]
pub fn k_f64le(b: &[u8], at: usize) -> u64 {
    float_key(f64::from_le_bytes(arr(b, at)))
}
#[inline(always)]
pub fn k_f64be(b: &[u8], at: usize) -> u64 {
    float_key(f64::from_be_bytes(arr(b, at)))
}

/// How a field of at most 8 bytes reads as a u64 key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load64 {
    U8,
    U16Le,
    U16Be,
    U32Le,
    U32Be,
    U64Le,
    U64Be,
    I8,
    I16Le,
    I16Be,
    I32Le,
    I32Be,
    I64Le,
    I64Be,
    F32Le,
    F32Be,
    F64Le,
    F64Be,
}

/// Calls `$body` with `$f` bound to the key function of a `Load64`, one arm per layout.
macro_rules! with_load64 {
    ($load:expr, $f:ident => $body:expr) => {{
        use $crate::scan::key::*;
        match $load {
            Load64::U8 => {
                let $f = k_u8;
                $body
            }
            Load64::U16Le => {
                let $f = k_u16le;
                $body
            }
            Load64::U16Be => {
                let $f = k_u16be;
                $body
            }
            Load64::U32Le => {
                let $f = k_u32le;
                $body
            }
            Load64::U32Be => {
                let $f = k_u32be;
                $body
            }
            Load64::U64Le => {
                let $f = k_u64le;
                $body
            }
            Load64::U64Be => {
                let $f = k_u64be;
                $body
            }
            Load64::I8 => {
                let $f = k_i8;
                $body
            }
            Load64::I16Le => {
                let $f = k_i16le;
                $body
            }
            Load64::I16Be => {
                let $f = k_i16be;
                $body
            }
            Load64::I32Le => {
                let $f = k_i32le;
                $body
            }
            Load64::I32Be => {
                let $f = k_i32be;
                $body
            }
            Load64::I64Le => {
                let $f = k_i64le;
                $body
            }
            Load64::I64Be => {
                let $f = k_i64be;
                $body
            }
            Load64::F32Le => {
                let $f = k_f32le;
                $body
            }
            Load64::F32Be => {
                let $f = k_f32be;
                $body
            }
            Load64::F64Le => {
                let $f = k_f64le;
                $body
            }
            Load64::F64Be => {
                let $f = k_f64be;
                $body
            }
        }
    }};
}
pub(crate) use with_load64;

impl Load64 {
    /// The key of the field's bytes at `b[at..]` (outside the hot loops).
    pub fn key(self, b: &[u8], at: usize) -> u64 {
        with_load64!(self, f => f(b, at))
    }

    /// Whether the key orders as an IEEE float (NaN outside every range).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Load64::F32Le | Load64::F32Be | Load64::F64Le | Load64::F64Be
        )
    }
}

/// How a field compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A u64 key (integers, numerics and timestamps up to 8 bytes, floats, booleans, ipv4, chess_move).
    K64(Load64),
    /// A u128 key from 16 bytes (128-bit integers and numerics, ipv6).
    K128 { big_endian: bool, signed: bool },
    /// A 256-bit key from 32 bytes.
    K256 { big_endian: bool, signed: bool },
    /// The bytes themselves, unsigned and lexicographic (string, bytes, blob, chess_fen).
    Bytes,
}

/// The shape of a field of type `ty`, `size` bytes, stored in `order`.
pub fn shape_of(ty: &FieldType, size: usize, order: ByteOrder) -> Shape {
    let be = order == ByteOrder::Big;
    let int = |signed: bool, be: bool| -> Shape {
        let l = match (size, signed, be) {
            (1, false, _) => Load64::U8,
            (2, false, false) => Load64::U16Le,
            (2, false, true) => Load64::U16Be,
            (4, false, false) => Load64::U32Le,
            (4, false, true) => Load64::U32Be,
            (8, false, false) => Load64::U64Le,
            (8, false, true) => Load64::U64Be,
            (1, true, _) => Load64::I8,
            (2, true, false) => Load64::I16Le,
            (2, true, true) => Load64::I16Be,
            (4, true, false) => Load64::I32Le,
            (4, true, true) => Load64::I32Be,
            (8, true, false) => Load64::I64Le,
            (8, true, true) => Load64::I64Be,
            (16, _, _) => {
                return Shape::K128 {
                    big_endian: be,
                    signed,
                }
            }
            _ => {
                return Shape::K256 {
                    big_endian: be,
                    signed,
                }
            }
        };
        Shape::K64(l)
    };
    match ty {
        FieldType::UInt(_) | FieldType::Ipv4 | FieldType::Boolean => int(false, be),
        FieldType::Int(_) | FieldType::Numeric { .. } => int(true, be),
        FieldType::Timestamp => int(size == 8, be),
        FieldType::Ipv6 | FieldType::ChessMove => int(false, true),
        FieldType::Float => Shape::K64(if be { Load64::F32Be } else { Load64::F32Le }),
        FieldType::Double => Shape::K64(if be { Load64::F64Be } else { Load64::F64Le }),
        FieldType::String | FieldType::Bytes | FieldType::Blob | FieldType::ChessFen => {
            Shape::Bytes
        }
    }
}

/// A u128 key from 16 bytes at `b[at..]`.
#[inline(always)]
pub fn key128<const BE: bool, const SIGNED: bool>(b: &[u8], at: usize) -> u128 {
    let a: [u8; 16] = arr(b, at);
    let v = if BE {
        u128::from_be_bytes(a)
    } else {
        u128::from_le_bytes(a)
    };
    if SIGNED {
        v ^ (1 << 127)
    } else {
        v
    }
}

/// A 256-bit key from 32 bytes at `b[at..]`.
#[inline(always)]
pub fn key256<const BE: bool, const SIGNED: bool>(b: &[u8], at: usize) -> K256 {
    let (hi, lo) = if BE {
        (
            u128::from_be_bytes(arr(b, at)),
            u128::from_be_bytes(arr(b, at + 16)),
        )
    } else {
        (
            u128::from_le_bytes(arr(b, at + 16)),
            u128::from_le_bytes(arr(b, at)),
        )
    };
    K256 {
        hi: if SIGNED { hi ^ (1 << 127) } else { hi },
        lo,
    }
}

/// Calls `$body` with `$f` bound to the key function of a 128- or 256-bit layout.
macro_rules! with_wide {
    ($keyfn:ident, $be:expr, $signed:expr, $f:ident => $body:expr) => {{
        match ($be, $signed) {
            (false, false) => {
                let $f = $crate::scan::key::$keyfn::<false, false>;
                $body
            }
            (false, true) => {
                let $f = $crate::scan::key::$keyfn::<false, true>;
                $body
            }
            (true, false) => {
                let $f = $crate::scan::key::$keyfn::<true, false>;
                $body
            }
            (true, true) => {
                let $f = $crate::scan::key::$keyfn::<true, true>;
                $body
            }
        }
    }};
}
pub(crate) use with_wide;
