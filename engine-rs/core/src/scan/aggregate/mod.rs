//! Aggregates computed where the data is (docs/query.md, "Aggregates"): the HDQuery `aggregate`
//! compiled against the schema and the caller's field mask (`spec`), accumulated over the
//! records the filter selects in the same pass (`state`, exact wide sums in `wide`), and written
//! as the partial JSON of an HDWP aggregate frame (`partial`). Partials of many batches of one
//! query merge exactly into one (`merge`), so a node can send one frame for them all.

mod merge;
mod partial;
mod spec;
mod state;
mod summary;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fold;
#[cfg(test)]
mod tests_group;
#[cfg(test)]
mod tests_merge;
#[cfg(test)]
mod tests_summaries;
mod wide;

pub use merge::{AggregateAccumulator, MergeError};
pub use partial::key_text;
pub use spec::{
    k64_text, AggFn, AggregatePlan, GroupKey, Measure, Read, ReadKind, AGGREGATE_VERSION,
    DEFAULT_MAX_GROUPS, MAX_GROUPS_LIMIT, MAX_GROUP_KEYS, MAX_MEASURES,
};
pub use state::AggregateState;
pub(crate) use state::{order_key, visible};
pub use summary::partial_from_stats;
pub use wide::Wide;

/// The partial of a batch with no matching record.
pub const EMPTY_PARTIAL: &str = r#"{"v":1,"groups":[]}"#;
