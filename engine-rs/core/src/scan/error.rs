//! The typed error of filter compilation, and the query limits it enforces.

use thiserror::Error;

/// Most sub-queries (branches) one query may have.
pub const MAX_BRANCHES: usize = 16;
/// Most filters one sub-query may have.
pub const MAX_FILTERS: usize = 64;
/// Most values one `in` filter may list.
pub const MAX_IN_VALUES: usize = 1024;
/// Most bytes of sub-query JSON (the HDWP frame limit of a whole query).
pub const MAX_JSON_BYTES: usize = 1 << 20;

/// A filter that cannot be compiled against the dataset schema: `path` names the offending JSON
/// value (`sub_queries[1].filters[0].value`), `message` says what is wrong with it. A Storage Node
/// answers it with error code 11 (`bad query`) and this text.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{path}: {message}")]
pub struct QueryError {
    pub path: String,
    pub message: String,
}

impl QueryError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        QueryError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Stable code for the bridge (`err.code` in TypeScript).
    pub fn code(&self) -> &'static str {
        "ERR_QUERY"
    }
}
