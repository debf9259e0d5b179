//! Storage Node pushdown scan: the `sub_queries` of an HDQuery compiled against the dataset
//! schema into a filter program (`ScanFilter`), the kernel that evaluates it over records at
//! memory speed, zone-map skipping, and the segment scanner (docs/query.md, "Storage Node scan").
//!
//! - `json`: the sub-query JSON → filter specs (shape, limits, operands), errors with paths;
//! - `op`: FilterOp and which types take which op; `value`: value text → stored bytes;
//! - `key`: order keys of stored bytes; `compile` (+ `ranges`, `compile_bytes`): spec →
//!   predicate + zone test (`pred`);
//! - `filter`: the compiled program; `kernel`: its evaluation; `zones`: block skipping;
//! - `projection`: the byte ranges a filter loads (and its aggregate reads), kept as narrow
//!   copies the scan runs over;
//! - `scanner`: a segment read block range by block range, with optional hash verification;
//! - `top`: a batch's best k records by one field's order (HDQuery `top`).

pub mod aggregate;
mod compile;
mod compile_bytes;
mod error;
mod filter;
mod json;
mod kernel;
pub(crate) mod key;
mod op;
mod pred;
mod projection;
mod ranges;
mod scanner;
#[cfg(test)]
mod tests;
pub mod top;
mod value;
mod zones;

pub use error::{QueryError, MAX_BRANCHES, MAX_FILTERS, MAX_IN_VALUES, MAX_JSON_BYTES};
pub use filter::ScanFilter;
pub use json::{parse_sub_queries, FilterSpec};
pub use kernel::{read_baseline, CHUNK};
pub use op::FilterOp;
pub use pred::{CompiledFilter, Elem, MaskWord, Pred, Test, ZoneCheck, ZoneHint};
pub use projection::{Narrowed, Projection};
pub use scanner::{
    GroupAnswer, GroupBudget, GroupFold, ScanError, ScanStep, SegmentScanner, MAX_STEP_BYTES,
};
pub use top::{TopLengthError, TopPlan, MAX_TOP_K};
pub use zones::{reduced_for_segment, ZonePlan};
