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

    /// The program without the filters `drop` names (each proven to hold for every record the
    /// result will see); a sub-query left with none matches every record, and so does the whole.
    /// `None` when `drop` names none.
    pub(crate) fn without(&self, drop: impl Fn(&CompiledFilter) -> bool) -> Option<ScanFilter> {
        let mut dropped = false;
        let mut match_all = self.match_all;
        let mut subs = Vec::with_capacity(self.subs.len());
        for sub in &self.subs {
            let kept: Vec<CompiledFilter> = sub.iter().filter(|f| !drop(f)).cloned().collect();
            dropped |= kept.len() < sub.len();
            match_all |= kept.is_empty();
            subs.push(kept);
        }
        if !dropped {
            return None;
        }
        if match_all {
            subs.clear();
        }
        Some(ScanFilter {
            record_size: self.record_size,
            written: self.written,
            match_all,
            subs,
        })
    }

    /// The same program over records of `record_size` bytes whose every load sits at
    /// `map(offset)` (narrow copies, `projection.rs`). Zone hints keep the stored layout's offsets:
    /// blocks are still ruled out with the filter as compiled.
    pub(crate) fn remapped(&self, record_size: usize, map: impl Fn(usize) -> usize) -> ScanFilter {
        let subs = self
            .subs
            .iter()
            .map(|sub| {
                sub.iter()
                    .map(|f| CompiledFilter {
                        pred: f.pred.remapped(&map),
                        zone: f.zone.clone(),
                    })
                    .collect()
            })
            .collect();
        ScanFilter {
            record_size,
            written: self.written,
            match_all: self.match_all,
            subs,
        }
    }
}
