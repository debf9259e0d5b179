//! The compiled form of one filter: a predicate over a record's bytes, plus what the zone maps
//! can say about it. Built by `compile`, evaluated by `kernel`, tested against zones by `zones`.

use super::key::{Load64, K256};
use crate::segment::ZoneKind;

/// A key test: an inclusive range (never empty: empty ranges compile to constants) or a sorted
/// set without duplicates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Test<K> {
    Range { lo: K, hi: K },
    Set(Vec<K>),
}

/// One 8-byte window of a masked comparison: `(load_le(record[at..at+len]) & mask) == want`.
/// Windows are 8 bytes whenever the record is, so the loop does whole-word loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaskWord {
    /// Offset in the record.
    pub at: usize,
    /// Bytes loaded (8 unless the record is shorter).
    pub len: usize,
    pub mask: u64,
    pub want: u64,
}

/// Equality of one array element with the filter's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// The element's key lies in `lo ..= hi` (a range, so `0.0` also matches `-0.0` and `true`
    /// matches any non-zero byte).
    K64 { load: Load64, lo: u64, hi: u64 },
    K128 {
        big_endian: bool,
        signed: bool,
        key: u128,
    },
    K256 {
        big_endian: bool,
        signed: bool,
        key: K256,
    },
}

/// A predicate over one record. `negate` inverts the test (ne, is_not_null, not_list_contains).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pred {
    /// Always or never true (a range that is empty or covers everything).
    Const(bool),
    K64 {
        off: usize,
        load: Load64,
        test: Test<u64>,
        negate: bool,
    },
    K128 {
        off: usize,
        big_endian: bool,
        signed: bool,
        test: Test<u128>,
        negate: bool,
    },
    K256 {
        off: usize,
        big_endian: bool,
        signed: bool,
        test: Test<K256>,
        negate: bool,
    },
    /// Masked equality of the field's bytes (eq, is_null and prefix on text and bytes, masked_eq
    /// on every field).
    Masked { words: Vec<MaskWord>, negate: bool },
    /// Lexicographic range of the field's bytes; each bound with whether it is inclusive.
    Bytes {
        off: usize,
        len: usize,
        lo: Option<(Vec<u8>, bool)>,
        hi: Option<(Vec<u8>, bool)>,
    },
    /// The field's bytes are one of a sorted set.
    BytesSet {
        off: usize,
        len: usize,
        values: Vec<Vec<u8>>,
    },
    /// Some element of an array field equals the value.
    List {
        off: usize,
        stride: usize,
        count: usize,
        elem: Elem,
        negate: bool,
    },
}

impl Pred {
    /// Rough cost rank: cheap tests run first within a sub-query, so costly ones see fewer records.
    pub fn cost(&self) -> u8 {
        match self {
            Pred::Const(_) => 0,
            Pred::K64 {
                test: Test::Range { .. },
                ..
            } => 1,
            Pred::Masked { words, .. } if words.len() <= 1 => 2,
            Pred::K128 {
                test: Test::Range { .. },
                ..
            }
            | Pred::K256 {
                test: Test::Range { .. },
                ..
            } => 3,
            Pred::Masked { .. } => 4,
            Pred::K64 { .. } | Pred::K128 { .. } | Pred::K256 { .. } => 5,
            Pred::Bytes { .. } => 6,
            Pred::BytesSet { .. } => 7,
            Pred::List { .. } => 8,
        }
    }
}

/// What a zone (the min and max order key of a field over a block) must allow for the filter
/// to have a match in the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZoneCheck {
    /// Some key in `lo ..= hi`.
    Within { lo: u64, hi: u64 },
    /// Some key outside `lo ..= hi` (a negated range on a field without NaN).
    Outside { lo: u64, hi: u64 },
    /// One of these keys (sorted).
    AnyOf(Vec<u64>),
}

/// A filter's zone test and the zone field it needs: a segment that keeps zones for a field
/// at `offset`, `size` bytes, of `kind` (and byte order, for numbers wider than a byte).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneHint {
    pub offset: u32,
    pub size: u16,
    pub kind: ZoneKind,
    pub big_endian: bool,
    pub check: ZoneCheck,
    /// The check is the filter itself on the zone's keys (integer, float and enum keys), not a
    /// looser test (byte prefixes): a zone whose every key passes then proves every record matches.
    pub exact: bool,
}

/// One compiled filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledFilter {
    pub pred: Pred,
    pub zone: Option<ZoneHint>,
}
