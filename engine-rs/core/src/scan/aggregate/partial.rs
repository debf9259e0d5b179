//! The partial of a batch (or of many, merged) as the JSON of an HDWP aggregate frame
//! (docs/query.md, "Aggregates"): groups in key order, keys and measures as decimal strings.

use super::spec::{k64_text, Read, ReadKind};
use super::state::{Acc, AggregateState};
use super::wide::Wide;
use crate::scan::key::K256;

impl AggregateState {
    /// The partial as the aggregate frame's JSON (groups in key order), or `None` after an overflow.
    pub fn to_json(&self) -> Option<String> {
        if self.overflow {
            return None;
        }
        let mut out = String::with_capacity(32 + self.keys.len() * 32);
        out.push_str("{\"v\":1,\"groups\":");
        self.write_groups(&mut out);
        out.push('}');
        Some(out)
    }

    /// The groups as the JSON array an aggregate frame's `groups` holds (what [`Self::to_json`]
    /// wraps: in key order, `[]` when there are none), or `None` after an overflow.
    pub fn groups_json(&self) -> Option<String> {
        if self.overflow {
            return None;
        }
        let mut out = String::with_capacity(16 + self.keys.len() * 32);
        self.write_groups(&mut out);
        Some(out)
    }

    fn write_groups(&self, out: &mut String) {
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_by_key(|&g| self.keys[g]);
        out.push('[');
        for (n, &g) in order.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str("{\"k\":[");
            for (j, key) in self.plan.keys.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push('"');
                out.push_str(&k64_text(self.keys[g][j], key.read.kind));
                out.push('"');
            }
            out.push_str("],\"m\":[");
            for (j, (acc, m)) in self.accs.iter().zip(&self.plan.measures).enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push('"');
                out.push_str(&acc_text(acc, m.read.as_ref(), g));
                out.push('"');
            }
            out.push_str("]}");
        }
        out.push(']');
    }
}

fn acc_text(acc: &Acc, read: Option<&Read>, g: usize) -> String {
    match (acc, read) {
        (Acc::Count(v), _) => v[g].to_string(),
        (Acc::Sum(v), _) => v[g].to_string(),
        (Acc::Wide(v), _) => v[g].to_string(),
        (Acc::Min(v) | Acc::Max(v), Some(r)) => key_text(v[g], r.kind),
        (Acc::Min(_) | Acc::Max(_), None) => String::new(),
    }
}

/// The decimal text of an order key as the field reads.
pub fn key_text(k: K256, kind: ReadKind) -> String {
    match kind {
        ReadKind::K64 { float, .. } if float.is_some() && k.lo as u64 == u64::MAX => "NaN".into(),
        ReadKind::K64 { .. } | ReadKind::Bool => k64_text(k.lo as u64, kind),
        ReadKind::K128 { signed, .. } => {
            if signed {
                ((k.lo ^ (1 << 127)) as i128).to_string()
            } else {
                k.lo.to_string()
            }
        }
        ReadKind::K256 { signed, .. } => {
            let hi = if signed { k.hi ^ (1 << 127) } else { k.hi };
            Wide::from_256(hi, k.lo, signed).to_string()
        }
    }
}
