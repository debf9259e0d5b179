//! Dataset schemas: the fixed-width record layout of one dataset.
//!
//! `model` holds the validated, in-memory form every codec works from; `parse` turns schema JSON into
//! it, reporting every problem with the field it concerns; `describe` writes the canonical JSON back
//! (see docs/schema.md).

mod check;
pub mod describe;
mod field;
pub mod issue;
pub mod json;
pub mod model;
mod parse;
pub mod types;

pub use describe::describe;
pub use issue::SchemaIssue;
pub use model::{ArraySpec, ByteOrder, EnumDef, Field, FieldType, Schema, TimeReference, TimeUnit};
pub use parse::{is_identifier, parse, DEFAULT_ENUM_LABEL, DEFAULT_INTERVAL, MAX_RECORD_SIZE};

#[cfg(test)]
mod tests;
