//! `ScanFilter`: the sub-queries of one query compiled against the dataset schema, simplified
//! (constant filters folded away) and ordered (cheap filters first within each sub-query).

use super::compile::compile_filter;
use super::error::QueryError;
use super::json::parse_sub_queries;
use super::pred::{CompiledFilter, Pred};
use crate::schema::Schema;

/// A compiled filter program: records match when any sub-query matches, and a sub-query matches
/// when all of its filters do. No sub-queries at all means every record matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanFilter {
    record_size: usize,
    written: usize,
    match_all: bool,
    subs: Vec<Vec<CompiledFilter>>,
}

impl ScanFilter {
    /// Parses `sub_queries` JSON (an array of `{ "filters": [...] }`) and compiles every filter
    /// against `schema`. The first problem found is returned, naming its JSON path.
    pub fn compile(schema: &Schema, sub_queries_json: &str) -> Result<Self, QueryError> {
        let specs = parse_sub_queries(sub_queries_json)?;
        let written = specs.len();
        let mut match_all = specs.is_empty();
        let mut subs = Vec::with_capacity(specs.len());
        for sub in &specs {
            let mut filters = Vec::with_capacity(sub.len());
            let mut never = false;
            for spec in sub {
                let c = compile_filter(schema, spec)?;
                match c.pred {
                    Pred::Const(true) => {}
                    Pred::Const(false) => never = true,
                    _ => filters.push(c),
                }
            }
            if never {
                continue;
            }
            if filters.is_empty() {
                match_all = true;
            }
            filters.sort_by_key(|f| f.pred.cost());
            subs.push(filters);
        }
        if match_all {
            subs.clear();
        }
        Ok(ScanFilter {
            record_size: schema.record_size,
            written,
            match_all,
            subs,
        })
    }

    /// Bytes per record of the dataset the filter was compiled for.
    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// Sub-queries as written in the query.
    pub fn sub_queries(&self) -> usize {
        self.written
    }

    /// Whether every record matches (no sub-queries, or one whose filters all hold always).
    pub fn matches_all(&self) -> bool {
        self.match_all
    }

    /// Whether no record can match (every sub-query holds a filter that never does).
    pub fn matches_none(&self) -> bool {
        !self.match_all && self.subs.is_empty()
    }

    /// The sub-queries left after folding constants, filters in evaluation order.
    pub fn subs(&self) -> &[Vec<CompiledFilter>] {
        &self.subs
    }
}
