//! Zone maps: min/max of chosen scalar fields per block and per batch.
//!
//! Values are stored as *order keys*: a u64 whose unsigned order is the field's own order
//! (unsigned ints as they are, signed ints with the sign bit flipped, floats by IEEE total order
//! of their f64 value with NaN skipped, byte strings as their first 8 bytes big-endian). So one
//! comparison serves every kind, and a zone whose min key exceeds its max key holds no value
//! (a block of only NaNs). docs/segment.md, "Zone maps", spells it out.

use super::error::SegmentError;
use crate::schema::{ByteOrder, FieldType, Schema};

/// Bytes of one zone (min key, max key) in the file.
pub const ZONE_LEN: usize = 16;
/// Bytes of one field descriptor in the header.
pub const FIELD_DESC_LEN: usize = 8;
/// Most zone-mapped fields a segment may declare.
pub const MAX_ZONE_FIELDS: usize = 256;

/// How a field's bytes compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneKind {
    /// Unsigned integer of 1, 2, 4 or 8 bytes.
    Unsigned = 1,
    /// Two's-complement integer of 1, 2, 4 or 8 bytes.
    Signed = 2,
    /// IEEE float of 4 or 8 bytes.
    Float = 3,
    /// Byte string of any size, compared by its first 8 bytes (unsigned, lexicographic).
    Bytes = 4,
}

impl ZoneKind {
    /// The kind of a code in a field descriptor.
    pub fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(Self::Unsigned),
            2 => Some(Self::Signed),
            3 => Some(Self::Float),
            4 => Some(Self::Bytes),
            _ => None,
        }
    }
}

/// One zone-mapped field: where it lies in the record and how it compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneField {
    pub offset: u32,
    pub size: u16,
    pub kind: ZoneKind,
    /// Multi-byte numbers are big-endian (ignored for `Bytes`).
    pub big_endian: bool,
}

impl ZoneField {
    /// Checks the descriptor against the record size.
    pub fn check(&self, record_size: u32) -> Result<(), String> {
        let size_ok = match self.kind {
            ZoneKind::Unsigned | ZoneKind::Signed => matches!(self.size, 1 | 2 | 4 | 8),
            ZoneKind::Float => matches!(self.size, 4 | 8),
            ZoneKind::Bytes => self.size >= 1,
        };
        if !size_ok {
            return Err(format!(
                "a {:?} zone field cannot be {} bytes",
                self.kind, self.size
            ));
        }
        if u64::from(self.offset) + u64::from(self.size) > u64::from(record_size) {
            return Err(format!(
                "zone field at {}+{} lies outside the {record_size}-byte record",
                self.offset, self.size
            ));
        }
        Ok(())
    }

    /// The order key of this field in `rec`, or `None` for a NaN. `rec` holds the whole record.
    #[inline]
    pub fn key(&self, rec: &[u8]) -> Option<u64> {
        let o = self.offset as usize;
        let b = &rec[o..o + self.size as usize];
        if self.kind == ZoneKind::Bytes {
            let mut k = [0u8; 8];
            let n = b.len().min(8);
            k[..n].copy_from_slice(&b[..n]);
            return Some(u64::from_be_bytes(k));
        }
        let mut raw = [0u8; 8];
        if self.big_endian {
            raw[8 - b.len()..].copy_from_slice(b);
        } else {
            raw[..b.len()].copy_from_slice(b);
        }
        let v = if self.big_endian {
            u64::from_be_bytes(raw)
        } else {
            u64::from_le_bytes(raw)
        };
        let bits = 8 * u32::from(self.size);
        match self.kind {
            ZoneKind::Unsigned => Some(v),
            ZoneKind::Signed => {
                let shift = 64 - bits;
                Some((((v << shift) as i64) >> shift) as u64 ^ (1 << 63))
            }
            ZoneKind::Float => {
                let f = if bits == 32 {
                    f64::from(f32::from_bits(v as u32))
                } else {
                    f64::from_bits(v)
                };
                if f.is_nan() {
                    return None;
                }
                let b = f.to_bits();
                Some(if b >> 63 == 1 { !b } else { b | (1 << 63) })
            }
            ZoneKind::Bytes => None,
        }
    }

    /// Encodes the descriptor (offset u32, size u16, kind u8, flags u8; little-endian).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.push(self.kind as u8);
        out.push(u8::from(self.big_endian));
    }

    /// Decodes a descriptor written by [`ZoneField::encode`].
    pub(crate) fn decode(b: &[u8; FIELD_DESC_LEN], record_size: u32) -> Result<Self, SegmentError> {
        let kind = ZoneKind::from_code(b[6])
            .ok_or_else(|| SegmentError::Corrupt(format!("unknown zone field kind {}", b[6])))?;
        if b[7] > 1 {
            return Err(SegmentError::Corrupt(format!(
                "unknown zone field flags {}",
                b[7]
            )));
        }
        let f = ZoneField {
            offset: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            size: u16::from_le_bytes([b[4], b[5]]),
            kind,
            big_endian: b[7] == 1,
        };
        f.check(record_size).map_err(SegmentError::Corrupt)?;
        Ok(f)
    }
}

/// Min and max order keys of one field over some records; `min > max` means no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    pub min: u64,
    pub max: u64,
}

impl Zone {
    /// The zone of no values.
    pub const EMPTY: Zone = Zone {
        min: u64::MAX,
        max: 0,
    };

    /// Whether the zone holds no value.
    pub fn is_empty(&self) -> bool {
        self.min > self.max
    }

    #[inline]
    pub(crate) fn add(&mut self, k: u64) {
        self.min = self.min.min(k);
        self.max = self.max.max(k);
    }

    /// Widens this zone to cover `other`.
    pub fn merge(&mut self, other: Zone) {
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.min.to_le_bytes());
        out.extend_from_slice(&self.max.to_le_bytes());
    }

    pub(crate) fn decode(b: &[u8]) -> Zone {
        let mut min = [0u8; 8];
        let mut max = [0u8; 8];
        min.copy_from_slice(&b[..8]);
        max.copy_from_slice(&b[8..16]);
        Zone {
            min: u64::from_le_bytes(min),
            max: u64::from_le_bytes(max),
        }
    }
}

/// Widens `zones` (one per field) by every record of `records` (whole records only).
pub(crate) fn accumulate(
    fields: &[ZoneField],
    zones: &mut [Zone],
    records: &[u8],
    record_size: usize,
) {
    for (f, z) in fields.iter().zip(zones.iter_mut()) {
        for rec in records.chunks_exact(record_size) {
            if let Some(k) = f.key(rec) {
                z.add(k);
            }
        }
    }
}

/// Zone fields for every scalar field of a schema that compares as a number or byte string:
/// integers and decimals up to 64 bits, timestamps, floats, booleans, and text/bytes/blob keys
/// (arrays, wide integers, addresses and chess values are left out).
pub fn zone_fields_from_schema(schema: &Schema) -> Vec<ZoneField> {
    let big_endian = schema.byte_order == ByteOrder::Big;
    let mut out = Vec::new();
    for f in &schema.fields {
        let kind = match (&f.ty, f.size) {
            (_, s) if s == 0 || s > usize::from(u16::MAX) => None,
            (_, _) if f.array.is_some() => None,
            (FieldType::UInt(_) | FieldType::Boolean, 1 | 2 | 4 | 8) => Some(ZoneKind::Unsigned),
            (FieldType::Int(_) | FieldType::Numeric { .. }, 1 | 2 | 4 | 8) => {
                Some(ZoneKind::Signed)
            }
            (FieldType::Timestamp, 4) => Some(ZoneKind::Unsigned),
            (FieldType::Timestamp, 8) => Some(ZoneKind::Signed),
            (FieldType::Float | FieldType::Double, 4 | 8) => Some(ZoneKind::Float),
            (FieldType::String | FieldType::Bytes | FieldType::Blob, _) => Some(ZoneKind::Bytes),
            _ => None,
        };
        if let Some(kind) = kind {
            if out.len() < MAX_ZONE_FIELDS {
                out.push(ZoneField {
                    offset: f.offset as u32,
                    size: f.size as u16,
                    kind,
                    big_endian,
                });
            }
        }
    }
    out
}
