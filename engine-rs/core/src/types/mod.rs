//! Value encoders, one file per type family: text (as the schema interprets a value) → the bytes of
//! a field. Every encoder writes the field's whole byte range (zero padding included), so a later
//! write to the same field fully replaces an earlier one. Errors are short reasons meant for a
//! person ("value 300 is out of range for uint8"); the caller adds the line and field.
//!
//! The accepted text forms are documented per type in docs/schema.md.

pub mod boolean;
pub mod chess;
pub mod enums;
pub mod float;
pub mod ints;
pub mod ip;
pub mod numeric;
pub mod text;
pub mod timestamp;

/// Longest stretch of a bad value quoted back in an error message.
const QUOTE_MAX: usize = 40;

/// Quotes a bad value for an error message, shortened so one huge value cannot flood the report.
pub fn quote(text: &str) -> String {
    if text.len() <= QUOTE_MAX {
        return format!("{text:?}");
    }
    let mut end = QUOTE_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}…", &text[..end])
}
