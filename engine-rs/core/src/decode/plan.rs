//! The presentation of each field (reference: "Type mapping" and "Column presentation rules") and
//! the builder that produces it. The TypeScript side builds its Arrow schema from `plan`'s output,
//! so the mapping lives here only.

use std::collections::BTreeMap;

use serde::Serialize;

use super::buf::Slots;
use super::{
    chess, enums, inet, list, numbers, text, wide, Addresses, Builder, DecodeError, DecodeOptions,
};
use crate::schema::{Field, FieldType, Schema, TimeUnit};

/// The Arrow type a column is presented as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ArrowType {
    Int {
        bit_width: u8,
        signed: bool,
    },
    Float {
        bit_width: u8,
    },
    Bool,
    /// Decimal128 (`bit_width` 128) or Decimal256 (256).
    Decimal {
        precision: u8,
        scale: u8,
        bit_width: u16,
    },
    Utf8,
    Binary,
    FixedSizeBinary {
        byte_width: usize,
    },
    /// Dictionary<Int32, Utf8> over `labels`: the enumeration's labels in code order, then its
    /// default label (each label once).
    Dictionary {
        labels: Vec<String>,
    },
    List {
        element: Box<ArrowType>,
    },
}

/// One column of the decoded table: name, Arrow type, and field metadata naming the HD type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnPlan {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ArrowType,
    pub metadata: BTreeMap<String, String>,
}

/// The columns a dataset decodes to with `opts`, in field order.
pub fn plan(schema: &Schema, opts: &DecodeOptions) -> Result<Vec<ColumnPlan>, DecodeError> {
    let mut out = Vec::with_capacity(schema.fields.len());
    for f in &schema.fields {
        let (ty, _) = column(schema, f, opts, 0)?;
        out.push(ColumnPlan {
            name: f.name.clone(),
            ty,
            metadata: metadata(schema, f, opts),
        });
    }
    Ok(out)
}

/// `plan` as JSON (an array of `{ name, type, metadata }`), the form the Neon bridge hands to
/// TypeScript.
pub fn plan_json(schema: &Schema, opts: &DecodeOptions) -> Result<String, DecodeError> {
    let p = plan(schema, opts)?;
    serde_json::to_string(&p).map_err(|e| DecodeError::Schema {
        field: String::new(),
        message: e.to_string(),
    })
}

/// One builder per field (or per field of `fields`, by index, in that order), sized for `rows`
/// records.
pub(crate) fn builders(
    schema: &Schema,
    opts: &DecodeOptions,
    rows: usize,
    fields: Option<&[usize]>,
) -> Result<Vec<Box<dyn Builder>>, DecodeError> {
    let build = |f: &Field| column(schema, f, opts, rows).map(|(_, b)| b);
    match fields {
        None => schema.fields.iter().map(build).collect(),
        Some(ix) => ix
            .iter()
            .map(|&i| {
                let f = schema.fields.get(i).ok_or_else(|| {
                    bad(
                        "",
                        format!(
                            "field index {i} is out of range ({} fields)",
                            schema.fields.len()
                        ),
                    )
                })?;
                build(f)
            })
            .collect(),
    }
}

/// The HD type name of a field type, as the schema JSON spells it.
pub fn type_name(ty: &FieldType) -> String {
    ty.name()
}

pub(crate) fn unit_name(u: TimeUnit) -> &'static str {
    match u {
        TimeUnit::Seconds => "s",
        TimeUnit::Milliseconds => "ms",
        TimeUnit::Microseconds => "us",
        TimeUnit::Nanoseconds => "ns",
    }
}

fn metadata(schema: &Schema, f: &Field, opts: &DecodeOptions) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("hd.type".into(), type_name(&f.ty));
    if let FieldType::Numeric { precision, scale } = f.ty {
        m.insert("hd.precision".into(), precision.to_string());
        m.insert("hd.scale".into(), scale.to_string());
    }
    if let Some(e) = f.enumeration.and_then(|i| schema.enums.get(i)) {
        m.insert("hd.enum".into(), e.name.clone());
    }
    if let Some(t) = &f.time_reference {
        if let Some(src) = schema.fields.get(t.field) {
            m.insert("hd.time_reference".into(), src.name.clone());
        }
        m.insert("hd.time_unit".into(), unit_name(t.unit).into());
    }
    if let Some(a) = &f.array {
        m.insert("hd.array.element".into(), type_name(&a.element));
        m.insert("hd.array.count".into(), a.count.to_string());
        if let Some(e) = a.enumeration.and_then(|i| schema.enums.get(i)) {
            m.insert("hd.enum".into(), e.name.clone());
        }
    }
    let is_addr = |t: &FieldType| matches!(t, FieldType::Ipv4 | FieldType::Ipv6);
    if is_addr(&f.ty) || f.array.as_ref().is_some_and(|a| is_addr(&a.element)) {
        let a = if opts.addresses == Addresses::Raw {
            "raw"
        } else {
            "text"
        };
        m.insert("hd.addresses".into(), a.into());
    }
    m
}

fn bad(field: &str, message: impl Into<String>) -> DecodeError {
    DecodeError::Schema {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Bytes a value of `ty` occupies, given the byte range it was declared with.
pub(crate) fn value_width(ty: &FieldType, size: usize) -> Option<usize> {
    Some(match ty {
        FieldType::UInt(b) | FieldType::Int(b) if matches!(b, 8 | 16 | 32 | 64 | 128 | 256) => {
            *b as usize / 8
        }
        FieldType::UInt(_) | FieldType::Int(_) => return None,
        FieldType::Numeric { .. } if matches!(size, 4 | 8 | 16 | 32) => size,
        FieldType::Numeric { .. } => return None,
        FieldType::Timestamp if size == 4 || size == 8 => size,
        FieldType::Timestamp => return None,
        FieldType::Float => 4,
        FieldType::Double => 8,
        FieldType::Boolean => 1,
        FieldType::Bytes | FieldType::String | FieldType::Blob => size,
        FieldType::Ipv4 => 4,
        FieldType::Ipv6 => 16,
        FieldType::ChessMove => chess::MOVE_WIDTH,
        FieldType::ChessFen => chess::FEN_WIDTH,
    })
}

/// What one value (a scalar field, or one array element) is and where it sits.
pub(crate) struct Value<'a> {
    pub name: &'a str,
    pub ty: &'a FieldType,
    pub enumeration: Option<usize>,
    pub slots: Slots,
}

fn column(
    schema: &Schema,
    f: &Field,
    opts: &DecodeOptions,
    rows: usize,
) -> Result<(ArrowType, Box<dyn Builder>), DecodeError> {
    let rs = schema.record_size;
    if f.offset.checked_add(f.size).is_none_or(|end| end > rs) {
        return Err(bad(
            &f.name,
            format!(
                "byte range {}..{} lies outside the {rs}-byte record",
                f.offset,
                f.offset.saturating_add(f.size)
            ),
        ));
    }
    let big = schema.byte_order == crate::schema::ByteOrder::Big;
    if let Some(a) = &f.array {
        let width = value_width(&a.element, a.element_size)
            .ok_or_else(|| bad(&f.name, "array element type has no fixed size"))?;
        if width > a.element_size
            || a.element_size
                .checked_mul(a.count)
                .is_none_or(|span| span > f.size)
        {
            return Err(bad(
                &f.name,
                format!(
                    "{} elements of {} bytes do not fit the {}-byte range",
                    a.count, a.element_size, f.size
                ),
            ));
        }
        let slots = Slots {
            offset: f.offset,
            width: a.element_size,
            count: a.count,
            record_size: rs,
        };
        let v = Value {
            name: &f.name,
            ty: &a.element,
            enumeration: a.enumeration,
            slots,
        };
        let (ety, child) = value(schema, &v, opts, big, rows.saturating_mul(a.count))?;
        let b = list::List::new(&f.name, child, a.count, rows)?;
        return Ok((
            ArrowType::List {
                element: Box::new(ety),
            },
            Box::new(b),
        ));
    }
    let width = value_width(&f.ty, f.size).ok_or_else(|| {
        bad(
            &f.name,
            format!("a {} field cannot be {} bytes", type_name(&f.ty), f.size),
        )
    })?;
    if width > f.size {
        return Err(bad(
            &f.name,
            format!(
                "a {} needs {width} bytes, the range has {}",
                type_name(&f.ty),
                f.size
            ),
        ));
    }
    let slots = Slots {
        offset: f.offset,
        width: f.size,
        count: 1,
        record_size: rs,
    };
    if let Some(t) = &f.time_reference {
        let src = schema
            .fields
            .get(t.field)
            .ok_or_else(|| bad(&f.name, "time_reference names no field"))?;
        let b = numbers::delta(&f.name, &f.ty, slots, src, t.unit, big, rows)?;
        return Ok((
            ArrowType::Int {
                bit_width: 64,
                signed: true,
            },
            b,
        ));
    }
    let v = Value {
        name: &f.name,
        ty: &f.ty,
        enumeration: f.enumeration,
        slots,
    };
    value(schema, &v, opts, big, rows)
}

/// The presentation and builder of scalar values (fields or array elements); `n` values in all.
fn value(
    schema: &Schema,
    v: &Value,
    opts: &DecodeOptions,
    big: bool,
    n: usize,
) -> Result<(ArrowType, Box<dyn Builder>), DecodeError> {
    if let Some(e) = v.enumeration {
        let def = schema
            .enums
            .get(e)
            .ok_or_else(|| bad(v.name, "enum names no enumeration"))?;
        let FieldType::UInt(bits) = v.ty else {
            return Err(bad(
                v.name,
                "an enumeration needs an unsigned integer field",
            ));
        };
        let (labels, b) = enums::builder(def, *bits as usize / 8, v.slots, big, n);
        return Ok((ArrowType::Dictionary { labels }, b));
    }
    let int = |bit_width: u8, signed: bool| ArrowType::Int { bit_width, signed };
    Ok(match v.ty {
        FieldType::UInt(8) => (int(16, true), numbers::num::<u8, i16>(v.slots, big, n)),
        FieldType::Int(8) => (int(16, true), numbers::num::<i8, i16>(v.slots, big, n)),
        FieldType::Int(16) => (int(16, true), numbers::num::<i16, i16>(v.slots, big, n)),
        FieldType::UInt(16) => (int(32, true), numbers::num::<u16, i32>(v.slots, big, n)),
        FieldType::Int(32) => (int(32, true), numbers::num::<i32, i32>(v.slots, big, n)),
        FieldType::UInt(32) => (int(64, true), numbers::num::<u32, i64>(v.slots, big, n)),
        FieldType::Int(64) => (int(64, true), numbers::num::<i64, i64>(v.slots, big, n)),
        FieldType::UInt(64) => (int(64, false), numbers::num::<u64, u64>(v.slots, big, n)),
        // A timestamp's size says its storage: 8 bytes signed, 4 bytes unsigned.
        FieldType::Timestamp if v.slots.width == 8 => {
            (int(64, true), numbers::num::<i64, i64>(v.slots, big, n))
        }
        FieldType::Timestamp => (int(64, true), numbers::num::<u32, i64>(v.slots, big, n)),
        FieldType::UInt(128) | FieldType::Int(128) => {
            let signed = matches!(v.ty, FieldType::Int(_));
            (
                ArrowType::Decimal {
                    precision: 39,
                    scale: 0,
                    bit_width: 256,
                },
                wide::int128(signed, v.slots, big, n),
            )
        }
        FieldType::UInt(_) | FieldType::Int(_) => {
            let signed = matches!(v.ty, FieldType::Int(_));
            (
                ArrowType::Utf8,
                wide::text256(v.name, signed, v.slots, big, n),
            )
        }
        FieldType::Numeric { precision, scale } => {
            let bit_width = if *precision <= 38 { 128 } else { 256 };
            let b = wide::numeric(*precision, v.slots.width, bit_width, v.slots, big, n);
            (
                ArrowType::Decimal {
                    precision: *precision,
                    scale: *scale,
                    bit_width,
                },
                b,
            )
        }
        FieldType::Float => (
            ArrowType::Float { bit_width: 32 },
            numbers::num::<f32, f32>(v.slots, big, n),
        ),
        FieldType::Double => (
            ArrowType::Float { bit_width: 64 },
            numbers::num::<f64, f64>(v.slots, big, n),
        ),
        FieldType::Boolean => (ArrowType::Bool, numbers::bools(v.slots, n)),
        FieldType::Bytes => (ArrowType::Binary, text::binary(v.name, v.slots, n)),
        FieldType::String | FieldType::Blob => (ArrowType::Utf8, text::utf8(v.name, v.slots, n)),
        FieldType::Ipv4 if opts.addresses == Addresses::Raw => {
            (int(32, false), numbers::num::<u32, u32>(v.slots, big, n))
        }
        FieldType::Ipv4 => (ArrowType::Utf8, inet::ipv4_text(v.name, v.slots, big, n)),
        FieldType::Ipv6 if opts.addresses == Addresses::Raw => (
            ArrowType::FixedSizeBinary { byte_width: 16 },
            inet::ipv6_raw(v.slots, n),
        ),
        FieldType::Ipv6 => (ArrowType::Utf8, inet::ipv6_text(v.name, v.slots, n)),
        FieldType::ChessMove => (ArrowType::Utf8, chess::san(v.name, v.slots, n)),
        FieldType::ChessFen => (ArrowType::Utf8, chess::fen(v.name, v.slots, n)),
    })
}
