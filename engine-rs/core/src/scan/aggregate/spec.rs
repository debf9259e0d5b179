//! The HDQuery `aggregate` JSON (docs/query.md, "Aggregates"): parsed, checked against the dataset
//! schema and the caller's `field_mask`, and compiled into an [`AggregatePlan`]. Every refusal
//! names its JSON path (`aggregate.measures[1].field`); a Storage Node answers it with error 11.

use crate::scan::error::QueryError;
use crate::scan::json::{err, get, object};
use crate::scan::key::{shape_of, Load64, Shape};
use crate::schema::issue::suggest;
use crate::schema::json::{parse_tree, J};
use crate::schema::{Field, FieldType, Schema};

/// Most group-by keys.
pub const MAX_GROUP_KEYS: usize = 4;
/// Most measures.
pub const MAX_MEASURES: usize = 32;
/// Groups per batch when the query does not say.
pub const DEFAULT_MAX_GROUPS: usize = 65_536;
/// The largest `max_groups` a query may ask for.
pub const MAX_GROUPS_LIMIT: usize = 1 << 20;
/// The version of the `aggregate` object this build reads.
pub const AGGREGATE_VERSION: u64 = 1;

const ROOT: &str = "aggregate";
const TOP_KEYS: [&str; 4] = ["version", "group_by", "measures", "max_groups"];
const KEY_KEYS: [&str; 2] = ["field", "bucket"];
const MEASURE_KEYS: [&str; 2] = ["fn", "field"];
const SIGN: u64 = 1 << 63;

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFn {
    Count,
    Sum,
    Min,
    Max,
}

impl AggFn {
    fn from_name(s: &str) -> Option<AggFn> {
        match s {
            "count" => Some(AggFn::Count),
            "sum" => Some(AggFn::Sum),
            "min" => Some(AggFn::Min),
            "max" => Some(AggFn::Max),
            _ => None,
        }
    }
}

/// How a field's bytes read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    /// An integer, numeric or timestamp of up to 8 bytes, or a float: its u64 order key.
    K64 {
        load: Load64,
        signed: bool,
        /// `Some(true)` float (binary32), `Some(false)` double, `None` an integer.
        float: Option<bool>,
    },
    /// A boolean: 1 when any byte is non-zero.
    Bool,
    /// A 16-byte integer or numeric.
    K128 { be: bool, signed: bool },
    /// A 32-byte integer or numeric.
    K256 { be: bool, signed: bool },
}

/// Where and how the aggregate reads one field, with the part of it the caller may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub off: usize,
    pub size: usize,
    pub kind: ReadKind,
    /// The field's bytes of `field_mask` when any bit is hidden (`None`: the whole field is
    /// visible). The aggregate reads `stored & mask`, exactly what the caller would read.
    pub mask: Option<Vec<u8>>,
}

impl Read {
    /// Whether the caller sees every byte of the field.
    pub fn visible(&self) -> bool {
        self.mask.is_none()
    }
}

/// One group-by key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupKey {
    pub field: usize,
    pub read: Read,
    /// Timestamp buckets of this many seconds: key = ts - ts % bucket.
    pub bucket: Option<i64>,
}

/// One measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub func: AggFn,
    /// `None` for count(*); count(field) reads nothing either.
    pub field: Option<usize>,
    pub read: Option<Read>,
}

/// A compiled `aggregate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregatePlan {
    pub record_size: usize,
    pub keys: Vec<GroupKey>,
    pub measures: Vec<Measure>,
    pub max_groups: usize,
}

fn uint(j: &J, path: &str) -> Result<u64, QueryError> {
    match j {
        J::U64(v) => Ok(*v),
        other => err(
            path,
            format!("expected a non-negative integer, got {}", other.kind()),
        ),
    }
}

fn field_index(schema: &Schema, j: Option<&J>, path: &str) -> Result<usize, QueryError> {
    let Some(j) = j else {
        return err(path, "missing");
    };
    let J::Str(name) = j else {
        return err(path, format!("expected a field name, got {}", j.kind()));
    };
    match schema.by_name.get(name) {
        Some(&i) => Ok(i),
        None => {
            let hint = suggest(name, schema.fields.iter().map(|f| f.name.as_str()));
            err(
                path,
                format!("unknown field {}{hint}", crate::types::quote(name)),
            )
        }
    }
}

/// How field `i` reads, if it is a number the aggregate can read; `mask` is the whole record's.
fn read_of(schema: &Schema, i: usize, mask: Option<&[u8]>) -> Option<Read> {
    let f = &schema.fields[i];
    if f.time_reference.is_some() || f.array.is_some() {
        return None;
    }
    let kind = match (&f.ty, shape_of(&f.ty, f.size, schema.byte_order)) {
        (FieldType::Boolean, _) => ReadKind::Bool,
        (
            FieldType::UInt(_)
            | FieldType::Int(_)
            | FieldType::Numeric { .. }
            | FieldType::Timestamp
            | FieldType::Float
            | FieldType::Double,
            Shape::K64(load),
        ) => ReadKind::K64 {
            load,
            signed: matches!(
                load,
                Load64::I8
                    | Load64::I16Le
                    | Load64::I16Be
                    | Load64::I32Le
                    | Load64::I32Be
                    | Load64::I64Le
                    | Load64::I64Be
            ),
            float: match f.ty {
                FieldType::Float => Some(true),
                FieldType::Double => Some(false),
                _ => None,
            },
        },
        (
            FieldType::UInt(_) | FieldType::Int(_) | FieldType::Numeric { .. },
            Shape::K128 { big_endian, signed },
        ) => ReadKind::K128 {
            be: big_endian,
            signed,
        },
        (
            FieldType::UInt(_) | FieldType::Int(_) | FieldType::Numeric { .. },
            Shape::K256 { big_endian, signed },
        ) => ReadKind::K256 {
            be: big_endian,
            signed,
        },
        _ => return None,
    };
    Some(Read {
        off: f.offset,
        size: f.size,
        kind,
        mask: field_mask_of(f, mask),
    })
}

/// The field's bytes of the record's `mask`, when any bit of them is hidden.
fn field_mask_of(f: &Field, mask: Option<&[u8]>) -> Option<Vec<u8>> {
    mask.map(|m| m[f.offset..f.offset + f.size].to_vec())
        .filter(|m| m.iter().any(|&b| b != 0xff))
}

/// How group key field `i` reads: integers up to 64 bits, booleans and timestamps as their value
/// ([`read_of`]); bytes (arrays too), strings, blobs and chess moves of 1, 2, 4 or 8 bytes as their
/// visible bytes read big-endian, and ipv4 as its address, so that equal bytes are equal keys.
/// The client decodes such a key by writing it back into the field's bytes (hd_sql does, then
/// decodes the field as a record would). Floats, doubles and numerics are numbers whose raw bytes
/// are not their value (-0 and 0, NaNs): not keys; nor is a delta time (`time_reference`), whose
/// value needs another field.
fn key_read(schema: &Schema, i: usize, mask: Option<&[u8]>) -> Option<Read> {
    let f = &schema.fields[i];
    match f.ty {
        FieldType::Boolean | FieldType::Timestamp => return read_of(schema, i, mask),
        FieldType::UInt(b) | FieldType::Int(b) if b <= 64 => return read_of(schema, i, mask),
        _ => {}
    }
    if f.time_reference.is_some() {
        return None;
    }
    let raw = matches!(
        f.ty,
        FieldType::Bytes | FieldType::String | FieldType::Blob | FieldType::ChessMove
    );
    let load = match (raw, f.size, shape_of(&f.ty, f.size, schema.byte_order)) {
        (false, _, Shape::K64(load)) if f.ty == FieldType::Ipv4 => load,
        (true, 1, _) => Load64::U8,
        (true, 2, _) => Load64::U16Be,
        (true, 4, _) => Load64::U32Be,
        (true, 8, _) => Load64::U64Be,
        _ => return None,
    };
    Some(Read {
        off: f.offset,
        size: f.size,
        kind: ReadKind::K64 {
            load,
            signed: false,
            float: None,
        },
        mask: field_mask_of(f, mask),
    })
}

impl AggregatePlan {
    /// What the plan's keys and measures read of each record.
    pub fn reads(&self) -> impl Iterator<Item = &Read> {
        let keys = self.keys.iter().map(|k| &k.read);
        keys.chain(self.measures.iter().filter_map(|m| m.read.as_ref()))
    }

    /// This plan reading records of `record_size` bytes with each field at `map(offset)` (a
    /// narrow copy's layout, `scan::projection`).
    pub fn remapped(&self, record_size: usize, map: impl Fn(usize) -> usize) -> AggregatePlan {
        let mut p = self.clone();
        p.record_size = record_size;
        for k in &mut p.keys {
            k.read.off = map(k.read.off);
        }
        for r in p.measures.iter_mut().filter_map(|m| m.read.as_mut()) {
            r.off = map(r.off);
        }
        p
    }

    /// Parses `aggregate` JSON and compiles it against `schema`. `field_mask`, when given, is one
    /// record long (the caller checks its length): hidden bits read as zeros.
    pub fn compile(
        schema: &Schema,
        json: &str,
        field_mask: Option<&[u8]>,
    ) -> Result<AggregatePlan, QueryError> {
        if let Some(m) = field_mask {
            if m.len() != schema.record_size {
                return err(
                    "field_mask",
                    format!(
                        "{} bytes, the records are {} bytes",
                        m.len(),
                        schema.record_size
                    ),
                );
            }
        }
        let tree = parse_tree(json).map_err(|e| QueryError::new(ROOT, format!("not JSON: {e}")))?;
        let top = object(&tree, ROOT, &TOP_KEYS)?;
        let vpath = format!("{ROOT}.version");
        match get(top, "version") {
            None => return err(vpath, "missing (this node reads version 1)"),
            Some(v) => {
                let v = uint(v, &vpath)?;
                if v != AGGREGATE_VERSION {
                    return err(vpath, format!("version {v} is not served here (1 is)"));
                }
            }
        }
        let max_groups = match get(top, "max_groups") {
            None => DEFAULT_MAX_GROUPS,
            Some(v) => {
                let p = format!("{ROOT}.max_groups");
                let n = uint(v, &p)?;
                if n == 0 || n > MAX_GROUPS_LIMIT as u64 {
                    return err(p, format!("must be 1..={MAX_GROUPS_LIMIT}, got {n}"));
                }
                n as usize
            }
        };
        let mut keys = Vec::new();
        if let Some(g) = get(top, "group_by") {
            let gpath = format!("{ROOT}.group_by");
            let J::Arr(items) = g else {
                return err(gpath, format!("expected an array, got {}", g.kind()));
            };
            if items.len() > MAX_GROUP_KEYS {
                return err(
                    gpath,
                    format!(
                        "{} keys, at most {MAX_GROUP_KEYS} are pushed down",
                        items.len()
                    ),
                );
            }
            for (k, item) in items.iter().enumerate() {
                let path = format!("{gpath}[{k}]");
                let e = object(item, &path, &KEY_KEYS)?;
                let fpath = format!("{path}.field");
                let i = field_index(schema, get(e, "field"), &fpath)?;
                let f = &schema.fields[i];
                let Some(read) = key_read(schema, i, field_mask) else {
                    return err(
                        fpath,
                        format!(
                            "cannot group by '{}' ({}): group keys are integers up to 64 bits, enumerations, booleans, timestamps, ipv4, and bytes, arrays, strings, blobs and chess moves of 1, 2, 4 or 8 bytes",
                            f.name,
                            f.ty.name()
                        ),
                    );
                };
                let bucket = match get(e, "bucket") {
                    None => None,
                    Some(b) => {
                        let bp = format!("{path}.bucket");
                        if f.ty != FieldType::Timestamp {
                            return err(
                                bp,
                                format!(
                                    "buckets are for timestamps; '{}' is {}",
                                    f.name,
                                    f.ty.name()
                                ),
                            );
                        }
                        let n = uint(b, &bp)?;
                        if n == 0 || n > i64::MAX as u64 {
                            return err(bp, format!("must be 1..=2^63-1 seconds, got {n}"));
                        }
                        Some(n as i64)
                    }
                };
                keys.push(GroupKey {
                    field: i,
                    read,
                    bucket,
                });
            }
        }
        let mpath = format!("{ROOT}.measures");
        let Some(ms) = get(top, "measures") else {
            return err(mpath, "missing (1 to 32 measures)");
        };
        let J::Arr(ms) = ms else {
            return err(mpath, format!("expected an array, got {}", ms.kind()));
        };
        if ms.is_empty() || ms.len() > MAX_MEASURES {
            return err(
                mpath,
                format!("1 to {MAX_MEASURES} measures, got {}", ms.len()),
            );
        }
        let mut measures = Vec::with_capacity(ms.len());
        for (m, item) in ms.iter().enumerate() {
            let path = format!("{mpath}[{m}]");
            let e = object(item, &path, &MEASURE_KEYS)?;
            let fnpath = format!("{path}.fn");
            let func = match get(e, "fn") {
                Some(J::Str(s)) => match AggFn::from_name(s) {
                    Some(f) => f,
                    None => {
                        let hint = suggest(s, ["count", "sum", "min", "max"]);
                        return err(
                            fnpath,
                            format!("unknown fn {}{hint}", crate::types::quote(s)),
                        );
                    }
                },
                Some(other) => {
                    return err(fnpath, format!("expected a string, got {}", other.kind()))
                }
                None => return err(fnpath, "missing"),
            };
            let fpath = format!("{path}.field");
            let field = match get(e, "field") {
                None if func == AggFn::Count => None,
                None => return err(fpath, "missing (only count takes no field)"),
                Some(j) => Some(field_index(schema, Some(j), &fpath)?),
            };
            let read = match (func, field) {
                (AggFn::Count, _) | (_, None) => None,
                (_, Some(i)) => {
                    let f = &schema.fields[i];
                    let r = read_of(schema, i, field_mask);
                    let why = match (&r, func) {
                        (None, _)
                        | (
                            Some(Read {
                                kind: ReadKind::Bool,
                                ..
                            }),
                            _,
                        ) => {
                            Some("min, max and sum take integers, numerics, floats and timestamps")
                        }
                        (
                            Some(Read {
                                kind: ReadKind::K64 { float: Some(_), .. },
                                ..
                            }),
                            AggFn::Sum,
                        ) => Some("a sum of floats is not exact, so it is not pushed down"),
                        _ if func == AggFn::Sum && f.ty == FieldType::Timestamp => {
                            Some("timestamps take min and max, not sum")
                        }
                        _ => None,
                    };
                    if let Some(why) = why {
                        return err(
                            fpath,
                            format!(
                                "cannot push down this fn over '{}' ({}): {why}",
                                f.name,
                                f.ty.name()
                            ),
                        );
                    }
                    r
                }
            };
            measures.push(Measure { func, field, read });
        }
        Ok(AggregatePlan {
            record_size: schema.record_size,
            keys,
            measures,
            max_groups,
        })
    }
}

/// The decimal text of a u64 group key or K64 value as the field reads.
pub fn k64_text(k: u64, kind: ReadKind) -> String {
    match kind {
        ReadKind::K64 {
            float: Some(single),
            ..
        } => {
            let bits = if k & SIGN != 0 { k & !SIGN } else { !k };
            let v = f64::from_bits(bits);
            if single {
                format!("{}", v as f32)
            } else {
                format!("{v}")
            }
        }
        ReadKind::K64 { signed: true, .. } => ((k ^ SIGN) as i64).to_string(),
        _ => k.to_string(),
    }
}

// Declared here rather than in mod.rs: these tests cover the keys this file compiles.
#[cfg(test)]
#[path = "tests_keys.rs"]
mod tests_keys;
