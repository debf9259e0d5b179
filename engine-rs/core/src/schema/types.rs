//! Type names of the schema JSON and the sizes each type allows.

use super::model::FieldType;
use crate::types::chess::{FEN_PACKED_LEN, MOVE_CODE_LEN};
use crate::types::numeric::max_precision;

/// Every type name the schema accepts.
pub const TYPE_NAMES: &[&str] = &[
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uint128",
    "uint256",
    "int8",
    "int16",
    "int32",
    "int64",
    "int128",
    "int256",
    "numeric",
    "float",
    "double",
    "boolean",
    "bytes",
    "string",
    "timestamp",
    "ipv4",
    "ipv6",
    "blob",
    "chess_move",
    "chess_fen",
];

/// Type names allowed as array elements (fixed-size scalars).
pub const ELEMENT_NAMES: &[&str] = &[
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uint128",
    "uint256",
    "int8",
    "int16",
    "int32",
    "int64",
    "int128",
    "int256",
    "float",
    "double",
    "boolean",
    "ipv4",
    "ipv6",
    "chess_move",
];

/// The type of a name; numeric gets its precision and scale later.
pub fn type_of(name: &str) -> Option<FieldType> {
    let bits = |s: &str| {
        s.parse::<u16>()
            .ok()
            .filter(|b| [8, 16, 32, 64, 128, 256].contains(b))
    };
    Some(match name {
        "numeric" => FieldType::Numeric {
            precision: 0,
            scale: 0,
        },
        "float" => FieldType::Float,
        "double" => FieldType::Double,
        "boolean" => FieldType::Boolean,
        "bytes" => FieldType::Bytes,
        "string" => FieldType::String,
        "timestamp" => FieldType::Timestamp,
        "ipv4" => FieldType::Ipv4,
        "ipv6" => FieldType::Ipv6,
        "blob" => FieldType::Blob,
        "chess_move" => FieldType::ChessMove,
        "chess_fen" => FieldType::ChessFen,
        _ => {
            if let Some(b) = name.strip_prefix("uint").and_then(bits) {
                FieldType::UInt(b)
            } else if let Some(b) = name.strip_prefix("int").and_then(bits) {
                FieldType::Int(b)
            } else {
                return None;
            }
        }
    })
}

/// The schema name of a type.
pub fn type_name(ty: &FieldType) -> String {
    ty.name()
}

/// The fixed size of a type, when it has one.
pub fn fixed_size(t: &FieldType) -> Option<usize> {
    match t {
        FieldType::UInt(b) | FieldType::Int(b) => Some(*b as usize / 8),
        FieldType::Float | FieldType::Ipv4 => Some(4),
        FieldType::Double => Some(8),
        FieldType::Boolean => Some(1),
        FieldType::Ipv6 => Some(16),
        FieldType::ChessMove => Some(MOVE_CODE_LEN),
        FieldType::ChessFen => Some(FEN_PACKED_LEN),
        _ => None,
    }
}

/// Why `size` does not suit the type, if it does not.
pub fn size_problem(t: &FieldType, size: usize) -> Option<String> {
    let name = type_name(t);
    if let Some(want) = fixed_size(t) {
        return (size != want)
            .then(|| format!("size {size} is wrong for {name}: it is always {want} bytes"));
    }
    match t {
        FieldType::Timestamp => (size != 4 && size != 8)
            .then(|| format!("size {size} is wrong for timestamp: 4 (uint32) or 8 (int64)")),
        FieldType::Numeric { .. } => max_precision(size)
            .is_none()
            .then(|| format!("size {size} is wrong for numeric: 4, 8, 16 or 32 bytes")),
        _ => None,
    }
}
