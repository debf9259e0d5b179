//! Reads the `sub_queries` JSON of an HDQuery into filter specs, checking its shape, the limits
//! and each operator's operands. Types are checked later against the schema (`compile`). Every
//! error names the JSON path of the value at fault.

use super::error::{QueryError, MAX_BRANCHES, MAX_FILTERS, MAX_IN_VALUES, MAX_JSON_BYTES};
use super::op::{FilterOp, Operands};
use crate::schema::issue::suggest;
use crate::schema::json::{parse_tree, J};

/// One filter as written, with the path it was read from (`sub_queries[0].filters[2]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterSpec {
    pub path: String,
    pub field: String,
    pub op: FilterOp,
    /// `value` (eq .. ge, prefix, masked_eq, list ops); `values` (between: two, in: 1..1024).
    pub values: Vec<String>,
    /// `mask` (masked_eq only).
    pub mask: Option<String>,
}

impl FilterSpec {
    /// Path of operand `i`: `.value`, or `.values[i]` for between / in.
    pub fn value_path(&self, i: usize) -> String {
        match self.op.operands() {
            Operands::Pair | Operands::List => format!("{}.values[{i}]", self.path),
            _ => format!("{}.value", self.path),
        }
    }
}

/// The root of every path.
pub const ROOT: &str = "sub_queries";
const SUB_KEYS: [&str; 1] = ["filters"];
const FILTER_KEYS: [&str; 5] = ["field", "op", "value", "values", "mask"];

/// A [`QueryError`] at `path`, as an `Err`.
pub(crate) fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, QueryError> {
    Err(QueryError::new(path, message))
}

/// Entries of an object, refusing other kinds, unknown and repeated keys.
pub(crate) fn object<'a>(
    j: &'a J,
    path: &str,
    keys: &[&'static str],
) -> Result<&'a [(String, J)], QueryError> {
    let J::Obj(entries) = j else {
        return err(path, format!("expected an object, got {}", j.kind()));
    };
    for (i, (k, _)) in entries.iter().enumerate() {
        if !keys.contains(&k.as_str()) {
            let hint = suggest(k, keys.iter().copied());
            return err(format!("{path}.{k}"), format!("unknown key{hint}"));
        }
        if entries[..i].iter().any(|(p, _)| p == k) {
            return err(format!("{path}.{k}"), "duplicate key");
        }
    }
    Ok(entries)
}

/// The value of `key` among an object's entries.
pub(crate) fn get<'a>(entries: &'a [(String, J)], key: &str) -> Option<&'a J> {
    entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn string(j: &J, path: &str) -> Result<String, QueryError> {
    match j {
        J::Str(s) => Ok(s.clone()),
        other => err(
            path,
            format!(
                "expected a string, got {} (values are strings whatever the field's type)",
                other.kind()
            ),
        ),
    }
}

/// Parses `sub_queries` JSON text (an array of `{ "filters": [...] }`).
pub fn parse_sub_queries(text: &str) -> Result<Vec<Vec<FilterSpec>>, QueryError> {
    if text.len() > MAX_JSON_BYTES {
        return err(
            ROOT,
            format!(
                "{} bytes of JSON, the limit is {MAX_JSON_BYTES}",
                text.len()
            ),
        );
    }
    let tree = parse_tree(text).map_err(|e| QueryError::new(ROOT, format!("not JSON: {e}")))?;
    let J::Arr(subs) = &tree else {
        return err(
            ROOT,
            format!("expected an array of sub-queries, got {}", tree.kind()),
        );
    };
    if subs.len() > MAX_BRANCHES {
        return err(
            ROOT,
            format!(
                "too many branches: {} sub-queries, the limit is {MAX_BRANCHES}",
                subs.len()
            ),
        );
    }
    let mut out = Vec::with_capacity(subs.len());
    for (s, sub) in subs.iter().enumerate() {
        let path = format!("{ROOT}[{s}]");
        let entries = object(sub, &path, &SUB_KEYS)?;
        let fpath = format!("{path}.filters");
        let Some(filters) = get(entries, "filters") else {
            return err(fpath, "missing (a sub-query is { \"filters\": [...] })");
        };
        let J::Arr(filters) = filters else {
            return err(
                fpath,
                format!("expected an array of filters, got {}", filters.kind()),
            );
        };
        if filters.is_empty() {
            return err(
                fpath,
                "an empty sub-query is refused (inside an OR it would match every record)",
            );
        }
        if filters.len() > MAX_FILTERS {
            return err(
                fpath,
                format!(
                    "{} filters in one sub-query, the limit is {MAX_FILTERS}",
                    filters.len()
                ),
            );
        }
        let specs = filters
            .iter()
            .enumerate()
            .map(|(f, j)| filter(j, format!("{fpath}[{f}]")))
            .collect::<Result<Vec<_>, _>>()?;
        out.push(specs);
    }
    Ok(out)
}

fn filter(j: &J, path: String) -> Result<FilterSpec, QueryError> {
    let e = object(j, &path, &FILTER_KEYS)?;
    let field = match get(e, "field") {
        Some(v) => string(v, &format!("{path}.field"))?,
        None => return err(format!("{path}.field"), "missing"),
    };
    let op_name = match get(e, "op") {
        Some(v) => string(v, &format!("{path}.op"))?,
        None => return err(format!("{path}.op"), "missing"),
    };
    let Some(op) = FilterOp::from_name(&op_name) else {
        let hint = suggest(&op_name, FilterOp::ALL.iter().map(|o| o.name()));
        return err(
            format!("{path}.op"),
            format!("unknown op {}{hint}", crate::types::quote(&op_name)),
        );
    };
    let (value, values, mask) = (get(e, "value"), get(e, "values"), get(e, "mask"));
    let name = op.name();
    let operands = op.operands();
    let wants_value = matches!(operands, Operands::Value | Operands::ValueMask);
    let wants_values = matches!(operands, Operands::Pair | Operands::List);
    if value.is_some() && !wants_value {
        let why = if wants_values {
            format!("{name} takes values, not value")
        } else {
            format!("{name} takes no value")
        };
        return err(format!("{path}.value"), why);
    }
    if values.is_some() && !wants_values {
        let why = if wants_value {
            format!("{name} takes value, not values")
        } else {
            format!("{name} takes no values")
        };
        return err(format!("{path}.values"), why);
    }
    if mask.is_some() && operands != Operands::ValueMask {
        return err(
            format!("{path}.mask"),
            format!("{name} takes no mask (only masked_eq does)"),
        );
    }
    let mut list = Vec::new();
    if wants_value {
        match value {
            Some(v) => list.push(string(v, &format!("{path}.value"))?),
            None => return err(format!("{path}.value"), format!("{name} needs a value")),
        }
    }
    if wants_values {
        let vpath = format!("{path}.values");
        let Some(v) = values else {
            return err(vpath, format!("{name} needs values"));
        };
        let J::Arr(items) = v else {
            return err(
                vpath,
                format!("expected an array of strings, got {}", v.kind()),
            );
        };
        let count_ok = match operands {
            Operands::Pair => items.len() == 2,
            _ => (1..=MAX_IN_VALUES).contains(&items.len()),
        };
        if !count_ok {
            let want = if operands == Operands::Pair {
                "between takes exactly 2 values [lo, hi]".to_string()
            } else {
                format!("in takes 1 to {MAX_IN_VALUES} values")
            };
            return err(vpath, format!("{want}, got {}", items.len()));
        }
        for (i, item) in items.iter().enumerate() {
            list.push(string(item, &format!("{vpath}[{i}]"))?);
        }
    }
    let mask = match (operands, mask) {
        (Operands::ValueMask, Some(m)) => Some(string(m, &format!("{path}.mask"))?),
        (Operands::ValueMask, None) => {
            return err(format!("{path}.mask"), "masked_eq needs a mask")
        }
        _ => None,
    };
    Ok(FilterSpec {
        path,
        field,
        op,
        values: list,
        mask,
    })
}
