//! Record encoding: values (text, as the schema interprets it) → packed fixed-width records.
//!
//! `RecordEncoder` compiles a schema into per-field plans once; `convert_record_to_binary` is the
//! reference SDK's map → record call, and the `ndjson` and `csv` modules are the ingest fast path
//! that turns whole blocks of lines into records in one call. `windows` splits records by time
//! window for batching.

use std::collections::HashMap;

use crate::schema::{ByteOrder, FieldType, Schema};
use crate::types::chess::{fen_to_packed, san_to_code};
use crate::types::enums::EnumLookup;
use crate::types::{boolean, float, ints, ip, numeric, text, timestamp};

pub mod columns;
pub mod csv;
mod fast;
mod json_line;
pub mod ndjson;
pub mod windows;

#[cfg(test)]
mod tests;

/// A value that could not be encoded into a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

/// How one scalar is written.
#[derive(Clone, Debug)]
enum Kind {
    UInt,
    Int,
    Numeric {
        precision: u8,
        scale: u8,
    },
    Float,
    Bool,
    Bytes,
    Text,
    Timestamp,
    Ipv4,
    Ipv6,
    ChessMove,
    ChessFen,
    /// An unsigned integer carrying an enumeration (index into `lookups`).
    Enum(usize),
}

fn kind_of(t: &FieldType, enumeration: Option<usize>) -> Kind {
    if let Some(e) = enumeration {
        return Kind::Enum(e);
    }
    match t {
        FieldType::UInt(_) => Kind::UInt,
        FieldType::Int(_) => Kind::Int,
        FieldType::Numeric { precision, scale } => Kind::Numeric {
            precision: *precision,
            scale: *scale,
        },
        FieldType::Float | FieldType::Double => Kind::Float,
        FieldType::Boolean => Kind::Bool,
        FieldType::Bytes => Kind::Bytes,
        FieldType::String | FieldType::Blob => Kind::Text,
        FieldType::Timestamp => Kind::Timestamp,
        FieldType::Ipv4 => Kind::Ipv4,
        FieldType::Ipv6 => Kind::Ipv6,
        FieldType::ChessMove => Kind::ChessMove,
        FieldType::ChessFen => Kind::ChessFen,
    }
}

/// The compiled write plan of one field.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    kind: Kind,
    /// (element kind, element size, count) for array fields.
    array: Option<(Kind, usize, usize)>,
}

impl Plan {
    /// True when the field is an array declared on bytes.
    pub fn is_array(&self) -> bool {
        self.array.is_some()
    }
}

/// A schema compiled for encoding.
pub struct RecordEncoder {
    pub record_size: usize,
    order: ByteOrder,
    pub plans: Vec<Plan>,
    lookups: Vec<EnumLookup>,
    by_name: HashMap<Box<[u8]>, usize>,
}

impl RecordEncoder {
    /// Compiles a schema.
    pub fn new(schema: &Schema) -> Self {
        let plans = schema
            .fields
            .iter()
            .map(|f| Plan {
                name: f.name.clone(),
                offset: f.offset,
                size: f.size,
                kind: kind_of(&f.ty, f.enumeration),
                array: f
                    .array
                    .as_ref()
                    .map(|a| (kind_of(&a.element, a.enumeration), a.element_size, a.count)),
            })
            .collect();
        let by_name = schema
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_bytes().into(), i))
            .collect();
        Self {
            record_size: schema.record_size,
            order: schema.byte_order,
            plans,
            lookups: schema.enums.iter().map(EnumLookup::new).collect(),
            by_name,
        }
    }

    /// Index of the field named by `key`.
    #[inline]
    pub fn field_index(&self, key: &[u8]) -> Option<usize> {
        self.by_name.get(key).copied()
    }

    fn scalar(&self, kind: &Kind, text: &str, out: &mut [u8]) -> Result<(), String> {
        let order = self.order;
        match kind {
            Kind::UInt => ints::encode_int(text, out, false, order),
            Kind::Int => ints::encode_int(text, out, true, order),
            Kind::Numeric { precision, scale } => {
                numeric::encode_numeric(text, out, *precision, *scale, order)
            }
            Kind::Float => float::encode_float(text, out, order),
            Kind::Bool => boolean::encode_bool(text, out),
            Kind::Bytes => text::encode_bytes(text, out),
            Kind::Text => text::encode_text(text, out),
            Kind::Timestamp => timestamp::encode_timestamp(text, out, order),
            Kind::Ipv4 => ip::encode_ipv4(text, out, order),
            Kind::Ipv6 => ip::encode_ipv6(text, out),
            Kind::ChessMove => {
                let code = san_to_code(text).map_err(|e| e.0)?;
                out.copy_from_slice(&code.to_be_bytes());
                Ok(())
            }
            Kind::ChessFen => fen_to_packed(text, out).map_err(|e| e.0),
            Kind::Enum(e) => self.lookups[*e].encode(text, out, order),
        }
    }

    /// Writes one value (text) into field `f` of `rec`. Array fields take their text form
    /// (`[1, 2, 3]` or `1,2,3`). An empty value leaves the field zero.
    pub fn encode_field(&self, f: usize, text: &str, rec: &mut [u8]) -> Result<(), String> {
        let p = &self.plans[f];
        let out = &mut rec[p.offset..p.offset + p.size];
        if text.is_empty() {
            out.fill(0);
            return Ok(());
        }
        if p.array.is_some() {
            out.fill(0);
            let inner = text.trim();
            let inner = inner
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .unwrap_or(inner);
            if inner.trim().is_empty() {
                return Ok(());
            }
            for (i, item) in inner.split(',').enumerate() {
                let item = item.trim();
                let item = item
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .unwrap_or(item);
                self.encode_element(f, i, item, rec)?;
            }
            return Ok(());
        }
        self.scalar(&p.kind, text, out)
    }

    /// Writes element `i` of array field `f`. An empty value leaves the slot zero.
    pub fn encode_element(
        &self,
        f: usize,
        i: usize,
        text: &str,
        rec: &mut [u8],
    ) -> Result<(), String> {
        let p = &self.plans[f];
        let Some((kind, esize, count)) = &p.array else {
            return Err("not an array field".into());
        };
        if i >= *count {
            return Err(format!("more than {count} elements"));
        }
        let start = p.offset + i * esize;
        let out = &mut rec[start..start + esize];
        if text.is_empty() {
            out.fill(0);
            return Ok(());
        }
        self.scalar(kind, text, out)
            .map_err(|e| format!("element {i}: {e}"))
    }

    /// Zeroes field `f` of `rec` (a JSON null, or an array about to be refilled).
    pub fn clear_field(&self, f: usize, rec: &mut [u8]) {
        let p = &self.plans[f];
        rec[p.offset..p.offset + p.size].fill(0);
    }

    /// The reference SDK's `convert_record_to_binary`: each value is written into its field's byte
    /// range; keys the schema does not name are skipped silently. A value that cannot be encoded
    /// leaves its field zero and is reported in the returned list; the record is still returned.
    pub fn convert_record_to_binary<'a, I>(&self, map: I) -> (Vec<u8>, Vec<FieldError>)
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut rec = vec![0u8; self.record_size];
        let mut errors = Vec::new();
        for (k, v) in map {
            if let Some(f) = self.field_index(k.as_bytes()) {
                if let Err(reason) = self.encode_field(f, v, &mut rec) {
                    self.clear_field(f, &mut rec);
                    errors.push(FieldError {
                        field: k.to_string(),
                        reason,
                    });
                }
            }
        }
        (rec, errors)
    }
}

/// One rejected input line (NDJSON) or row (CSV): its number, the field when one is to blame, and
/// why. The line's record is left out; the lines around it are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: u64,
    pub field: Option<String>,
    pub reason: String,
}

/// The result of parsing one block of lines.
#[derive(Debug, Default)]
pub struct Parsed {
    /// `count` packed records, back to back.
    pub records: Vec<u8>,
    pub count: usize,
    pub errors: Vec<LineError>,
    /// Lines the block held (blank and rejected ones included), so a streaming caller numbers the
    /// next block's lines right without scanning the text again.
    pub lines: u64,
    /// CSV only: the column names, when this block's first row was read as the header. A streaming
    /// caller passes them as the header of the following blocks.
    pub header: Option<Vec<String>>,
}
