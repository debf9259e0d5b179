//! The plan TypeScript hands over with the column buffers (`engine-rs/encodeArrow.ts` builds it):
//! which columns there are, and for every chunk of every column its Arrow type, length, bit offset
//! and which of the passed buffers hold its validity bitmap, values and offsets. It arrives as JSON
//! and is trusted for nothing: every index and length is checked against the buffers before a value
//! is read (`source.rs`).

use std::fmt;

use serde::Deserialize;

/// Everything one encode call needs besides the buffers themselves.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncodePlan {
    /// Records to write: every column's chunks hold exactly this many values together.
    pub rows: usize,
    pub columns: Vec<ColumnDesc>,
    /// Dictionaries of dictionary-encoded chunks, each one a list of chunks (an Arrow Vector).
    #[serde(default)]
    pub dictionaries: Vec<Vec<ChunkDesc>>,
}

/// One column of the batch.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnDesc {
    /// The schema field the column fills.
    pub name: String,
    /// The column's chunks in row order (one for a RecordBatch, one per batch for a Table).
    pub chunks: Vec<ChunkDesc>,
}

/// One contiguous piece of a column: an Arrow `Data` in apache-arrow's (JavaScript) conventions.
/// Fixed-width values and offsets start at the chunk's first row; bitmaps (validity, Bool values)
/// start at bit `offset`; variable-width data is indexed by the offsets as they are.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChunkDesc {
    #[serde(rename = "type")]
    pub ty: TypeDesc,
    pub length: usize,
    /// Bit offset into `validity` and into the values of a Bool chunk.
    #[serde(default)]
    pub offset: usize,
    /// Buffer index of the validity bitmap (LSB first, 1 = valid); absent when nothing is null.
    #[serde(default)]
    pub validity: Option<usize>,
    /// Buffer index of the values (for a Dictionary chunk: its indices).
    #[serde(default)]
    pub values: Option<usize>,
    /// Buffer index of the offsets of a variable-width or List chunk.
    #[serde(default)]
    pub offsets: Option<usize>,
    /// The element chunk of a List, LargeList or FixedSizeList.
    #[serde(default)]
    pub child: Option<Box<ChunkDesc>>,
    /// Index into `EncodePlan::dictionaries` of a Dictionary chunk's dictionary.
    #[serde(default)]
    pub dictionary: Option<usize>,
}

/// A chunk's Arrow type, as far as the encoder distinguishes types.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum TypeDesc {
    Null,
    Int {
        bit_width: u8,
        signed: bool,
    },
    Float {
        bit_width: u8,
    },
    Bool,
    Decimal {
        bit_width: u16,
        precision: u8,
        scale: i32,
    },
    Utf8,
    LargeUtf8,
    Binary,
    LargeBinary,
    FixedSizeBinary {
        byte_width: usize,
    },
    /// A Timestamp of unit `s`, `ms`, `us` or `ns` (any time zone: the values are UTC anyway).
    Timestamp {
        unit: String,
    },
    /// Date32 (`day`) or Date64 (`ms`).
    Date {
        unit: String,
    },
    /// Dictionary-encoded values: integer indices of this width into the chunk's dictionary.
    Dictionary {
        bit_width: u8,
        signed: bool,
    },
    List,
    LargeList,
    FixedSizeList {
        list_size: usize,
    },
    /// A type the encoder takes for no field (Struct, Map, Union, Time, Duration, views, ...).
    Other {
        name: String,
    },
}

impl fmt::Display for TypeDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeDesc::Null => f.write_str("Null"),
            TypeDesc::Int { bit_width, signed } => {
                write!(f, "{}{bit_width}", if *signed { "Int" } else { "Uint" })
            }
            TypeDesc::Float { bit_width } => write!(f, "Float{bit_width}"),
            TypeDesc::Bool => f.write_str("Bool"),
            TypeDesc::Decimal {
                bit_width,
                precision,
                scale,
            } => write!(f, "Decimal{bit_width}({precision}, {scale})"),
            TypeDesc::Utf8 => f.write_str("Utf8"),
            TypeDesc::LargeUtf8 => f.write_str("LargeUtf8"),
            TypeDesc::Binary => f.write_str("Binary"),
            TypeDesc::LargeBinary => f.write_str("LargeBinary"),
            TypeDesc::FixedSizeBinary { byte_width } => write!(f, "FixedSizeBinary({byte_width})"),
            TypeDesc::Timestamp { unit } => write!(f, "Timestamp({unit})"),
            TypeDesc::Date { unit } if unit == "day" => f.write_str("Date32"),
            TypeDesc::Date { .. } => f.write_str("Date64"),
            TypeDesc::Dictionary { bit_width, signed } => write!(
                f,
                "Dictionary<{}{bit_width}>",
                if *signed { "Int" } else { "Uint" }
            ),
            TypeDesc::List => f.write_str("List"),
            TypeDesc::LargeList => f.write_str("LargeList"),
            TypeDesc::FixedSizeList { list_size } => write!(f, "FixedSizeList({list_size})"),
            TypeDesc::Other { name } => f.write_str(name),
        }
    }
}

/// Parses the plan JSON.
pub fn parse_plan(json: &str) -> Result<EncodePlan, String> {
    serde_json::from_str(json).map_err(|e| format!("malformed encode plan: {e}"))
}
