//! Which Arrow types each field takes: the presentation type `decodeRecords` produces, and the
//! natural alternatives a caller holds (any integer width, text, Timestamp for time, Decimal or
//! text for numeric, List / FixedSizeList for arrays). Checked once per chunk, before any value is
//! read, so a wrong column type is one clear error rather than a failure at some row.

use super::plan::TypeDesc;
use super::source::{Chunk, Dict, Layout};
use crate::encode::Kind;

/// What a column fills.
pub(super) enum Target<'k> {
    /// A scalar field (or, inside an array, one element).
    Scalar(&'k Kind),
    /// A delta time field: the column holds the absolute time.
    Delta,
    /// An array field of elements of `Kind`.
    Array(&'k Kind),
}

/// True when a value of Arrow type `ty` can be written as `kind`.
fn takes(kind: &Kind, ty: &TypeDesc) -> bool {
    use TypeDesc as T;
    let text = matches!(ty, T::Utf8 | T::LargeUtf8);
    let int = matches!(ty, T::Int { .. });
    let bin = matches!(ty, T::Binary | T::LargeBinary | T::FixedSizeBinary { .. });
    let whole_decimal = matches!(ty, T::Decimal { scale: 0, .. });
    match kind {
        _ if matches!(ty, T::Null) => true,
        Kind::UInt | Kind::Int | Kind::Enum(_) => int || text || whole_decimal,
        Kind::Numeric { .. } => int || text || matches!(ty, T::Decimal { .. } | T::Float { .. }),
        Kind::Float => int || text || matches!(ty, T::Float { .. }),
        Kind::Bool => int || text || matches!(ty, T::Bool),
        Kind::Bytes | Kind::Text => text || bin,
        Kind::Timestamp => int || text || matches!(ty, T::Timestamp { .. } | T::Date { .. }),
        Kind::Ipv4 | Kind::ChessMove => int || text,
        Kind::Ipv6 => {
            text || matches!(
                ty,
                T::Binary | T::LargeBinary | T::FixedSizeBinary { byte_width: 16 }
            )
        }
        Kind::ChessFen => text,
    }
}

/// The Arrow types `kind` takes, in words.
fn takes_text(kind: &Kind) -> &'static str {
    match kind {
        Kind::UInt | Kind::Int => {
            "an integer column (Int8..Int64, Uint8..Uint64), Decimal with scale 0, or Utf8 text"
        }
        Kind::Enum(_) => "Utf8 or Dictionary<_, Utf8> labels, or integer codes",
        Kind::Numeric { .. } => "Decimal, an integer, Float32/Float64, or Utf8 text",
        Kind::Float => "Float16/Float32/Float64, an integer, or Utf8 text",
        Kind::Bool => "Bool, integers 0/1, or Utf8 text",
        Kind::Bytes => {
            "Binary, LargeBinary, FixedSizeBinary, or Utf8 (hex, or base64 after 'base64:')"
        }
        Kind::Text => "Utf8, LargeUtf8 or Binary",
        Kind::Timestamp => {
            "Timestamp, Date32/Date64, integer seconds, or Utf8 (RFC 3339 or seconds)"
        }
        Kind::Ipv4 => "Utf8 addresses or integers (the address as a number)",
        Kind::Ipv6 => "Utf8 addresses or FixedSizeBinary(16) in network order",
        Kind::ChessMove => "Utf8 SAN or integer move codes",
        Kind::ChessFen => "Utf8 FEN",
    }
}

/// The type of the values a chunk holds (a Dictionary's value type for a dictionary chunk).
fn value_type<'c>(c: &'c Chunk, dicts: &'c [Dict]) -> Result<&'c TypeDesc, String> {
    match &c.layout {
        Layout::Dictionary { dict, .. } => match dicts.get(*dict).map(|d| d.value_type()) {
            Some(Some(t)) => Ok(t),
            // An empty dictionary: every index is out of range, which reading reports per row.
            Some(None) => Ok(&TypeDesc::Null),
            None => Err("the dictionary chunk names no dictionary".into()),
        },
        _ => Ok(&c.ty),
    }
}

/// Checks that chunk `c` can fill `target`; the error says what the field takes instead.
pub(super) fn check(
    target: &Target,
    hd_type: &str,
    c: &Chunk,
    dicts: &[Dict],
) -> Result<(), String> {
    let shown = match &c.layout {
        Layout::Dictionary { .. } => format!("{}<{}>", c.ty, value_type(c, dicts)?),
        _ => c.ty.to_string(),
    };
    let ty = value_type(c, dicts)?;
    let refuse = |takes: String| Err(format!("is {shown}; a {hd_type} field takes {takes}"));
    match target {
        Target::Scalar(kind) if takes(kind, ty) => Ok(()),
        Target::Scalar(kind) => refuse(takes_text(kind).to_string()),
        Target::Delta => match ty {
            TypeDesc::Null | TypeDesc::Int { .. } | TypeDesc::Timestamp { .. } | TypeDesc::Date { .. } => Ok(()),
            _ => refuse("the absolute time as an integer, Timestamp or Date column".into()),
        },
        Target::Array(kind) => match (ty, &c.layout) {
            (TypeDesc::Null | TypeDesc::Utf8 | TypeDesc::LargeUtf8, _) => Ok(()),
            (TypeDesc::Binary | TypeDesc::LargeBinary | TypeDesc::FixedSizeBinary { .. }, _) => Ok(()),
            (_, Layout::List { child, .. } | Layout::FixedList { child, .. }) => {
                let ety = value_type(child, dicts)?;
                if takes(kind, ety) {
                    Ok(())
                } else {
                    Err(format!(
                        "is a list of {ety}; its elements take {}",
                        takes_text(kind)
                    ))
                }
            }
            _ => refuse(format!(
                "List, LargeList or FixedSizeList (elements: {}), Utf8 (the text form) or Binary (the raw bytes)",
                takes_text(kind)
            )),
        },
    }
}
