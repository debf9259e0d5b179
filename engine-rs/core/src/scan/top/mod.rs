//! Top-k selection (HDQuery `top`, docs/query.md): a batch's records reduced to its best `k` by
//! one field's order, every record tied with the k-th best key kept, in their original order.
//! hd_sql runs the `ORDER BY ... LIMIT k` again over the union of the batches, so the node sends a
//! superset of each batch's true top k.
//!
//! The field reads exactly as an aggregate `max` over it reads (the same `Read`: `stored & mask`,
//! both byte orders, 8..256-bit integers, numerics, floats, timestamps) and orders by the same
//! order key, except that a float's -0 keys as +0 (SQL's -0 = 0: the two tie).

use crate::scan::aggregate::{order_key, visible, AggregatePlan, Read, ReadKind};
use crate::scan::error::QueryError;
use crate::scan::key::K256;
use crate::schema::issue::suggest;
use crate::schema::Schema;

#[cfg(test)]
mod tests;

/// The largest `k` a query may ask for.
pub const MAX_TOP_K: u64 = 1_000_000;

/// The order key of a float -0 (`float_key(-0.0)`), and that of +0 it is read as.
const NEG_ZERO_KEY: u128 = 0x7fff_ffff_ffff_ffff;
const POS_ZERO_KEY: u128 = 0x8000_0000_0000_0000;

/// A compiled `top`: which field orders the records, how many to keep, which end is best.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopPlan {
    /// Where and how the field reads (an aggregate `max`'s read of it, mask included).
    pub read: Read,
    /// Records to keep (1..=`MAX_TOP_K`), ties at the boundary aside.
    pub k: usize,
    /// Best = largest when true, smallest otherwise.
    pub desc: bool,
    /// Bytes per record.
    pub record_size: usize,
}

/// `records` is not a whole number of records.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{len} bytes is not a whole number of {record_size}-byte records ({} left over)", len % record_size)]
pub struct TopLengthError {
    /// Bytes given.
    pub len: usize,
    /// Bytes per record.
    pub record_size: usize,
}

impl TopPlan {
    /// Compiles against `schema` and the caller's field mask (one record long, or `None`): the
    /// field must be one an aggregate `max` takes (integers, numerics, floats, timestamps).
    /// Errors name `top.field`, `top.k` or `field_mask`.
    pub fn compile(
        schema: &Schema,
        field: &str,
        k: u64,
        desc: bool,
        mask: Option<&[u8]>,
    ) -> Result<TopPlan, QueryError> {
        if k == 0 || k > MAX_TOP_K {
            return Err(QueryError::new(
                "top.k",
                format!("must be 1..={MAX_TOP_K}, got {k}"),
            ));
        }
        let Some(&i) = schema.by_name.get(field) else {
            let hint = suggest(field, schema.fields.iter().map(|f| f.name.as_str()));
            return Err(QueryError::new(
                "top.field",
                format!("unknown field {}{hint}", crate::types::quote(field)),
            ));
        };
        let f = &schema.fields[i];
        let refused = || {
            QueryError::new(
                "top.field",
                format!(
                    "cannot order by '{}' ({}): top takes integers, numerics, floats and timestamps",
                    f.name,
                    f.ty.name()
                ),
            )
        };
        let name = serde_json::to_string(field).map_err(|_| refused())?;
        let json = format!(r#"{{"version":1,"measures":[{{"fn":"max","field":{name}}}]}}"#);
        let plan = AggregatePlan::compile(schema, &json, mask).map_err(|e| {
            if e.path.starts_with("aggregate.measures") {
                refused()
            } else {
                e
            }
        })?;
        let read = plan
            .measures
            .into_iter()
            .next()
            .and_then(|m| m.read)
            .ok_or_else(refused)?;
        Ok(TopPlan {
            read,
            k: k as usize,
            desc,
            record_size: schema.record_size,
        })
    }

    /// The top key of the record at byte `at` of `d`.
    #[inline(always)]
    fn key(&self, d: &[u8], at: usize, tmp: &mut [u8; 32]) -> K256 {
        let mut k = order_key(&self.read, visible(&self.read, d, at, tmp));
        if let ReadKind::K64 { float: Some(_), .. } = self.read.kind {
            if k.lo == NEG_ZERO_KEY {
                k.lo = POS_ZERO_KEY;
            }
        }
        k
    }

    /// The records of `records` (whole records, back to back) whose key ranks within the best `k`,
    /// plus every record tied with the k-th best key, in their original order. `k` or fewer
    /// records: all of them.
    pub fn select(&self, records: &[u8]) -> Result<Vec<u8>, TopLengthError> {
        let rs = self.record_size;
        if rs == 0 || !records.len().is_multiple_of(rs) {
            return Err(TopLengthError {
                len: records.len(),
                record_size: rs.max(1),
            });
        }
        let n = records.len() / rs;
        if n <= self.k {
            return Ok(records.to_vec());
        }
        let mut tmp = [0u8; 32];
        match self.read.kind {
            // Keys of up to 64 bits select as u64: a quarter of the memory, a faster select.
            ReadKind::K64 { .. } | ReadKind::Bool => {
                Ok(self.select_by(records, n, |at| self.key(records, at, &mut tmp).lo as u64))
            }
            ReadKind::K128 { .. } => {
                Ok(self.select_by(records, n, |at| self.key(records, at, &mut tmp).lo))
            }
            ReadKind::K256 { .. } => {
                Ok(self.select_by(records, n, |at| self.key(records, at, &mut tmp)))
            }
        }
    }

    /// `select` of `n > k` records with `key_at(byte offset)` giving each record's key.
    fn select_by<K: Ord + Copy>(
        &self,
        records: &[u8],
        n: usize,
        mut key_at: impl FnMut(usize) -> K,
    ) -> Vec<u8> {
        let rs = self.record_size;
        let keys: Vec<K> = (0..n).map(|i| key_at(i * rs)).collect();
        let mut scratch = keys.clone();
        // The k-th best: the (n-k)-th smallest when the largest are best, the (k-1)-th otherwise.
        let nth = if self.desc { n - self.k } else { self.k - 1 };
        let (_, &mut threshold, _) = scratch.select_nth_unstable(nth);
        drop(scratch);
        let mut out = Vec::with_capacity(self.k * rs);
        for (i, key) in keys.iter().enumerate() {
            let keep = if self.desc {
                *key >= threshold
            } else {
                *key <= threshold
            };
            if keep {
                out.extend_from_slice(&records[i * rs..(i + 1) * rs]);
            }
        }
        out
    }
}
