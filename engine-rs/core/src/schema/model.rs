//! The validated in-memory form of a dataset schema. Built only by `schema::parse`, so every value
//! here has passed validation: byte ranges lie inside the record, sizes fit their types, enum and
//! time references resolve.

use std::collections::HashMap;

/// Byte order of multi-byte scalar fields in a record. ipv6 addresses and chess values have a fixed
/// layout of their own regardless of this setting (see docs/schema.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

/// Unit of a delta-compressed time field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

/// The HD type of a field (the reference's type mapping table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// Unsigned integer of 8, 16, 32, 64, 128 or 256 bits.
    UInt(u16),
    /// Signed two's-complement integer of 8, 16, 32, 64, 128 or 256 bits.
    Int(u16),
    /// Exact decimal: a signed integer of the field's size holding value * 10^scale.
    Numeric {
        precision: u8,
        scale: u8,
    },
    Float,
    Double,
    Boolean,
    /// Raw bytes (the whole byte range).
    Bytes,
    /// UTF-8 text, zero-padded on the right.
    String,
    /// Unix seconds, unsigned (size 4) or signed (size 8).
    Timestamp,
    Ipv4,
    Ipv6,
    /// An object key (UTF-8, zero-padded), not the object.
    Blob,
    /// A chess move in Standard Algebraic Notation, stored as a code.
    ChessMove,
    /// A chess position (FEN), stored packed.
    ChessFen,
}

impl FieldType {
    /// The type's name as the schema JSON spells it (`uint32`, `numeric`, `chess_fen`, ...).
    pub fn name(&self) -> String {
        match self {
            FieldType::UInt(b) => format!("uint{b}"),
            FieldType::Int(b) => format!("int{b}"),
            FieldType::Numeric { .. } => "numeric".into(),
            FieldType::Float => "float".into(),
            FieldType::Double => "double".into(),
            FieldType::Boolean => "boolean".into(),
            FieldType::Bytes => "bytes".into(),
            FieldType::String => "string".into(),
            FieldType::Timestamp => "timestamp".into(),
            FieldType::Ipv4 => "ipv4".into(),
            FieldType::Ipv6 => "ipv6".into(),
            FieldType::Blob => "blob".into(),
            FieldType::ChessMove => "chess_move".into(),
            FieldType::ChessFen => "chess_fen".into(),
        }
    }
}

/// An enumeration: labels for codes of an unsigned integer field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnumDef {
    pub name: String,
    /// Code → label, in code order.
    pub labels: Vec<(u64, String)>,
    /// Label shown for a code the enumeration does not define.
    pub default_label: String,
}

/// A delta-compressed time field: the stored integer is an offset from another (source) field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeReference {
    /// Index of the source field in `Schema::fields`.
    pub field: usize,
    /// Unit of the stored delta.
    pub unit: TimeUnit,
}

/// An array declared on a bytes field: `count` elements of `element`, each `element_size` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArraySpec {
    pub element: FieldType,
    pub element_size: usize,
    /// Number of element slots in the byte range.
    pub count: usize,
    /// Name of the enumeration the elements carry, if any.
    pub enumeration: Option<usize>,
}

/// One field of the record layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// First byte of the field in the record.
    pub offset: usize,
    /// Length of the byte range.
    pub size: usize,
    pub ty: FieldType,
    /// Index into `Schema::enums` when the field carries an enumeration.
    pub enumeration: Option<usize>,
    pub time_reference: Option<TimeReference>,
    pub array: Option<ArraySpec>,
}

/// A validated dataset schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// Dataset id: the SQL table name.
    pub id: String,
    /// Human-readable name (also a table name).
    pub name: String,
    pub record_size: usize,
    pub byte_order: ByteOrder,
    /// Index of the timestamp field that time-indexes the dataset.
    pub time_field: usize,
    /// Batch width in seconds.
    pub time_index_interval: u32,
    pub enums: Vec<EnumDef>,
    pub fields: Vec<Field>,
    /// Field name → index.
    pub by_name: HashMap<String, usize>,
}

impl Schema {
    /// Looks a field up by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.by_name.get(name).map(|&i| &self.fields[i])
    }
}
