//! Key ranges and sets of the ordered operators, with the float rules (`-0.0 == +0.0`, NaN in
//! no range), and how a u64 key layout maps onto a zone field.

use super::key::{float_key, Load64, OrderKey};
use super::op::FilterOp;
use super::pred::Test;
use crate::segment::ZoneKind;

/// An inclusive key range for an ordered op, `None` when no key can satisfy it.
pub(super) fn range<K: OrderKey>(op: FilterOp, keys: &[K]) -> Option<(K, K)> {
    let k = keys[0];
    let (lo, hi) = match op {
        FilterOp::Lt => (K::MIN, k.pred()?),
        FilterOp::Le => (K::MIN, k),
        FilterOp::Gt => (k.succ()?, K::MAX),
        FilterOp::Ge => (k, K::MAX),
        FilterOp::Between => (k, keys[1]),
        _ => (k, k),
    };
    (lo <= hi).then_some((lo, hi))
}

pub(super) const KNEG0: u64 = 0x7fff_ffff_ffff_ffff; // float_key(-0.0)
pub(super) const KPOS0: u64 = 0x8000_0000_0000_0000; // float_key(+0.0)

/// Float ranges: `-0.0` and `+0.0` are equal (adjacent keys), NaN lies outside every range.
pub(super) fn float_range(op: FilterOp, keys: &[u64]) -> Option<(u64, u64)> {
    let (kmin, kmax) = (float_key(f64::NEG_INFINITY), float_key(f64::INFINITY));
    let zero = |k: u64| k == KNEG0 || k == KPOS0;
    let lo_in = |k: u64| if zero(k) { KNEG0 } else { k };
    let lo_ex = |k: u64| if zero(k) { KPOS0 + 1 } else { k + 1 };
    let hi_in = |k: u64| if zero(k) { KPOS0 } else { k };
    let hi_ex = |k: u64| if zero(k) { KNEG0 - 1 } else { k - 1 };
    let k = keys[0];
    let (lo, hi) = match op {
        FilterOp::Lt => (kmin, hi_ex(k)),
        FilterOp::Le => (kmin, hi_in(k)),
        FilterOp::Gt => (lo_ex(k), kmax),
        FilterOp::Ge => (lo_in(k), kmax),
        FilterOp::Between => (lo_in(k), hi_in(keys[1])),
        _ => (lo_in(k), hi_in(k)),
    };
    (lo <= hi).then_some((lo, hi))
}

/// A sorted set without duplicates (a range when it holds one key).
pub(super) fn set<K: OrderKey>(mut keys: Vec<K>) -> Test<K> {
    keys.sort_unstable();
    keys.dedup();
    if keys.len() == 1 {
        Test::Range {
            lo: keys[0],
            hi: keys[0],
        }
    } else {
        Test::Set(keys)
    }
}

pub(super) fn zone_kind(load: Load64) -> ZoneKind {
    use Load64::*;
    match load {
        U8 | U16Le | U16Be | U32Le | U32Be | U64Le | U64Be => ZoneKind::Unsigned,
        I8 | I16Le | I16Be | I32Le | I32Be | I64Le | I64Be => ZoneKind::Signed,
        F32Le | F32Be | F64Le | F64Be => ZoneKind::Float,
    }
}

/// Whether `lo ..= hi` holds every key a field read by `load` can have (floats never: NaN).
pub(super) fn covers(load: Load64, lo: u64, hi: u64) -> bool {
    use Load64::*;
    let sign = 1u64 << 63;
    let (min, max) = match load {
        U8 => (0, u64::from(u8::MAX)),
        U16Le | U16Be => (0, u64::from(u16::MAX)),
        U32Le | U32Be => (0, u64::from(u32::MAX)),
        U64Le | U64Be => (0, u64::MAX),
        I8 => (
            i64::from(i8::MIN) as u64 ^ sign,
            i64::from(i8::MAX) as u64 ^ sign,
        ),
        I16Le | I16Be => (
            i64::from(i16::MIN) as u64 ^ sign,
            i64::from(i16::MAX) as u64 ^ sign,
        ),
        I32Le | I32Be => (
            i64::from(i32::MIN) as u64 ^ sign,
            i64::from(i32::MAX) as u64 ^ sign,
        ),
        I64Le | I64Be => (0, u64::MAX),
        F32Le | F32Be | F64Le | F64Be => return false,
    };
    lo <= min && hi >= max
}

pub(super) fn load_big_endian(load: Load64) -> bool {
    use Load64::*;
    matches!(
        load,
        U16Be | U32Be | U64Be | I16Be | I32Be | I64Be | F32Be | F64Be
    )
}
