//! Aggregates computed where the data is (docs/query.md, "Aggregates"): the HDQuery `aggregate`
//! compiled against the schema and the caller's field mask (`spec`), accumulated over the
//! records the filter selects in the same pass (`state`, exact wide sums in `wide`), and written
//! as the partial JSON of an HDWP aggregate frame.

mod spec;
mod state;
mod summary;
#[cfg(test)]
mod tests;
mod wide;

pub use spec::{
    k64_text, AggFn, AggregatePlan, GroupKey, Measure, Read, ReadKind, AGGREGATE_VERSION,
    DEFAULT_MAX_GROUPS, MAX_GROUPS_LIMIT, MAX_GROUP_KEYS, MAX_MEASURES,
};
pub use state::{key_text, AggregateState};
pub use summary::partial_from_stats;
pub use wide::Wide;

/// The partial of a batch with no matching record.
pub const EMPTY_PARTIAL: &str = r#"{"v":1,"groups":[]}"#;
