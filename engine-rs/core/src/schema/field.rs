//! Validation of the `fields` array: names, byte ranges, types and sizes, enums, numeric precision,
//! time references, arrays, and overlapping byte ranges.

use super::check::Checker;
use super::issue::suggest;
use super::json::J;
use super::model::{ArraySpec, EnumDef, Field, FieldType, TimeReference, TimeUnit};
use super::types::{fixed_size, size_problem, type_name, type_of, ELEMENT_NAMES, TYPE_NAMES};
use crate::types::numeric::max_precision;

const FIELD_KEYS: &[&str] = &[
    "name",
    "offset",
    "size",
    "type",
    "enum",
    "precision",
    "scale",
    "time_reference",
    "array",
    "overlay",
    "description",
];

/// A checked field plus what is resolved once all fields are known.
pub struct RawField {
    pub field: Field,
    /// Name of the time_reference source field, resolved to an index later.
    pub time_source: Option<String>,
    /// Declared `"overlay": true`: may share bytes with other fields.
    pub overlay: bool,
}

fn resolve_enum(
    c: &mut Checker,
    v: &J,
    path: &str,
    enums: &[EnumDef],
    ty: &FieldType,
    bits: usize,
) -> Option<usize> {
    let J::Str(name) = v else {
        c.issue(path, format!("expected an enum name, got {}", v.kind()));
        return None;
    };
    if !matches!(ty, FieldType::UInt(_)) {
        c.issue(
            path,
            format!(
                "enum on a non-integer field (type {}): enums go on unsigned integer fields",
                type_name(ty)
            ),
        );
        return None;
    }
    let Some(i) = enums.iter().position(|e| &e.name == name) else {
        c.issue(
            path,
            format!(
                "unknown enum {name:?}{}",
                suggest(name, enums.iter().map(|e| e.name.as_str()))
            ),
        );
        return None;
    };
    if bits < 64 {
        if let Some((code, label)) = enums[i].labels.iter().find(|(code, _)| code >> bits != 0) {
            c.issue(
                path,
                format!("enum {name:?} has code {code} (label {label:?}), too big for uint{bits}"),
            );
        }
    }
    Some(i)
}

fn check_array(
    c: &mut Checker,
    v: &J,
    path: &str,
    size: usize,
    enums: &[EnumDef],
) -> Option<ArraySpec> {
    let o = c.object(
        v,
        path,
        &["element", "count", "enum"],
        &["element", "count"],
    )?;
    let element = c.string(&o, "element");
    let count = c.uint(&o, "count", u32::MAX as u64).map(|n| n as usize);
    let ty = match element {
        Some(e) if ELEMENT_NAMES.contains(&e) => type_of(e),
        Some(e) => {
            let why = if TYPE_NAMES.contains(&e) {
                " (elements are fixed-size scalars)".to_string()
            } else {
                suggest(e, ELEMENT_NAMES.iter().copied())
            };
            c.issue(
                o.at("element"),
                format!("{e:?} cannot be an array element{why}"),
            );
            None
        }
        None => None,
    }?;
    let esize = fixed_size(&ty)?;
    let count = count?;
    if count == 0 {
        c.issue(o.at("count"), "must be at least 1");
        return None;
    }
    if count.saturating_mul(esize) > size {
        c.issue(
            o.at("count"),
            format!(
                "{count} × {} bytes does not fit in the field's {size} bytes",
                esize
            ),
        );
    }
    let enumeration = o
        .get("enum")
        .and_then(|e| resolve_enum(c, e, &o.at("enum"), enums, &ty, esize * 8));
    Some(ArraySpec {
        element: ty,
        element_size: esize,
        count,
        enumeration,
    })
}

fn check_time_reference(
    c: &mut Checker,
    v: &J,
    path: &str,
) -> (Option<String>, Option<TimeReference>) {
    let Some(t) = c.object(v, path, &["field", "unit"], &["field", "unit"]) else {
        return (None, None);
    };
    let source = c.string(&t, "field").map(str::to_string);
    let unit = match c.string(&t, "unit") {
        Some("s") => Some(TimeUnit::Seconds),
        Some("ms") => Some(TimeUnit::Milliseconds),
        Some("us") => Some(TimeUnit::Microseconds),
        Some("ns") => Some(TimeUnit::Nanoseconds),
        Some(u) => {
            c.issue(t.at("unit"), format!("unknown unit {u:?}: s, ms, us or ns"));
            None
        }
        None => None,
    };
    (source, unit.map(|unit| TimeReference { field: 0, unit }))
}

fn check_field(
    c: &mut Checker,
    i: usize,
    v: &J,
    record_size: Option<usize>,
    enums: &[EnumDef],
) -> Option<RawField> {
    let path = format!("fields[{i}]");
    let o = c.object(v, &path, FIELD_KEYS, &["name", "offset", "size", "type"])?;
    let name = c.string(&o, "name");
    if let Some(n) = name {
        if n.is_empty() || n.len() > 128 || n.chars().any(char::is_control) {
            c.issue(
                o.at("name"),
                "field names are 1 to 128 bytes of text without control characters",
            );
        }
    }
    let offset = c.uint(&o, "offset", u32::MAX as u64).map(|n| n as usize);
    let size = match c.uint(&o, "size", u32::MAX as u64) {
        Some(0) => {
            c.issue(o.at("size"), "must be at least 1");
            None
        }
        other => other.map(|n| n as usize),
    };
    if let (Some(off), Some(sz), Some(rs)) = (offset, size, record_size) {
        if off + sz > rs {
            c.issue(
                o.at("offset"),
                format!(
                    "bytes {off}..{} lie outside the record (record_size {rs})",
                    off + sz
                ),
            );
        }
    }
    let mut ty = match c.string(&o, "type") {
        Some(t) => match type_of(t) {
            Some(ty) => Some(ty),
            None => {
                c.issue(
                    o.at("type"),
                    format!(
                        "unknown type {t:?}{}",
                        suggest(t, TYPE_NAMES.iter().copied())
                    ),
                );
                None
            }
        },
        None => None,
    };
    if let (Some(t), Some(sz)) = (&ty, size) {
        if let Some(p) = size_problem(t, sz) {
            c.issue(o.at("size"), p);
        }
    }
    let is_numeric = matches!(ty, Some(FieldType::Numeric { .. }));
    for key in ["precision", "scale"] {
        if o.get(key).is_some() && ty.is_some() && !is_numeric {
            c.issue(o.at(key), format!("{key} applies only to numeric fields"));
        }
    }
    if is_numeric {
        let max = size.and_then(max_precision).unwrap_or(76);
        let precision = match o.get("precision") {
            None => {
                c.issue(o.at("precision"), "numeric fields need a precision");
                None
            }
            Some(_) => match c.uint(&o, "precision", 255) {
                Some(p) if p == 0 || p > max as u64 => {
                    c.issue(
                        o.at("precision"),
                        format!(
                            "precision {p} is out of range: 1..{max} for a {}-byte numeric",
                            size.unwrap_or(32)
                        ),
                    );
                    None
                }
                other => other.map(|p| p as u8),
            },
        };
        let scale = if o.get("scale").is_some() {
            c.uint(&o, "scale", 255).map(|s| s as u8)
        } else {
            Some(0)
        };
        if let (Some(p), Some(s)) = (precision, scale) {
            if s > p {
                c.issue(
                    o.at("scale"),
                    format!("scale {s} is larger than precision {p}"),
                );
            }
            ty = Some(FieldType::Numeric {
                precision: p,
                scale: s,
            });
        }
    }
    let ty = ty?;
    let enumeration = o
        .get("enum")
        .and_then(|e| resolve_enum(c, e, &o.at("enum"), enums, &ty, size.unwrap_or(8) * 8));
    let mut time_source = None;
    let time_reference = match o.get("time_reference") {
        None => None,
        Some(tr) => {
            let tpath = o.at("time_reference");
            if !matches!(ty, FieldType::UInt(_) | FieldType::Int(_)) {
                c.issue(
                    &tpath,
                    format!(
                        "time_reference on a non-integer field (type {}): deltas are integers",
                        type_name(&ty)
                    ),
                );
            }
            let (source, tref) = check_time_reference(c, tr, &tpath);
            time_source = source;
            tref
        }
    };
    let array = match o.get("array") {
        None => None,
        Some(a) => {
            if ty != FieldType::Bytes {
                c.issue(
                    o.at("array"),
                    format!(
                        "array on a non-bytes field (type {}): declare arrays on bytes fields",
                        type_name(&ty)
                    ),
                );
                None
            } else {
                check_array(c, a, &o.at("array"), size.unwrap_or(0), enums)
            }
        }
    };
    let overlay = c.boolean(&o, "overlay");
    if o.get("description").is_some() {
        c.string(&o, "description");
    }
    let field = Field {
        name: name?.to_string(),
        offset: offset?,
        size: size?,
        ty,
        enumeration,
        time_reference,
        array,
    };
    Some(RawField {
        field,
        time_source,
        overlay,
    })
}

/// Checks every field, then names, then overlaps. Returns the fields that passed their own checks.
pub fn check_fields(
    c: &mut Checker,
    arr: &[J],
    record_size: Option<usize>,
    enums: &[EnumDef],
) -> Vec<RawField> {
    let mut out: Vec<(usize, RawField)> = Vec::new();
    for (i, v) in arr.iter().enumerate() {
        if let Some(f) = check_field(c, i, v, record_size, enums) {
            out.push((i, f));
        }
    }
    for (k, (i, f)) in out.iter().enumerate() {
        if let Some((j, _)) = out[..k].iter().find(|(_, g)| g.field.name == f.field.name) {
            c.issue(
                format!("fields[{i}].name"),
                format!("duplicate field name {:?} (also fields[{j}])", f.field.name),
            );
        }
    }
    // Fields not declared overlay must not share bytes; sweep them in offset order.
    let mut solid: Vec<&(usize, RawField)> = out.iter().filter(|(_, f)| !f.overlay).collect();
    solid.sort_by_key(|(i, f)| (f.field.offset, *i));
    let mut widest: Option<&(usize, RawField)> = None;
    for cur in solid {
        if let Some(prev) = widest {
            let (pf, cf) = (&prev.1.field, &cur.1.field);
            if cf.offset < pf.offset + pf.size {
                c.issue(
                    format!("fields[{}].offset", cur.0),
                    format!(
                        "bytes {}..{} of {:?} overlap {:?} (fields[{}], bytes {}..{}); declare \"overlay\": true if that is deliberate",
                        cf.offset,
                        cf.offset + cf.size,
                        cf.name,
                        pf.name,
                        prev.0,
                        pf.offset,
                        pf.offset + pf.size
                    ),
                );
            }
            if cf.offset + cf.size <= pf.offset + pf.size {
                continue;
            }
        }
        widest = Some(cur);
    }
    out.into_iter().map(|(_, f)| f).collect()
}
