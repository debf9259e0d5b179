//! Schema JSON → validated `Schema`. Every problem is reported (not just the first), each with the
//! path of the value it concerns. The rules are listed in docs/schema.md.

use std::collections::HashMap;

use super::check::{Checker, Obj};
use super::field::{check_fields, RawField};
use super::issue::{suggest, SchemaIssue};
use super::json::{parse_tree, J};
use super::model::{ByteOrder, EnumDef, Schema};
use super::model::{Field, FieldType};

/// Largest record the schema allows (1 MiB): records travel in bounded frames.
pub const MAX_RECORD_SIZE: u64 = 1 << 20;
/// Default batch width in seconds.
pub const DEFAULT_INTERVAL: u64 = 60;
/// Label shown for an undefined code when the schema names none.
pub const DEFAULT_ENUM_LABEL: &str = "unknown";

const TOP_KEYS: &[&str] = &[
    "$schema",
    "id",
    "name",
    "description",
    "record_size",
    "byte_order",
    "time_field",
    "time_index_interval",
    "enums",
    "fields",
];

/// True for an SQL-friendly identifier: a letter or `_`, then letters, digits or `_`.
pub fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && s.len() <= 128
}

/// Parses and validates schema JSON.
pub fn parse(json: &str) -> Result<Schema, Vec<SchemaIssue>> {
    let tree = match parse_tree(json) {
        Ok(t) => t,
        Err(e) => {
            return Err(vec![SchemaIssue {
                path: String::new(),
                message: format!("not valid JSON: {e}"),
            }])
        }
    };
    let mut c = Checker::default();
    let schema = check_schema(&mut c, &tree);
    match schema {
        Some(s) if c.issues.is_empty() => Ok(s),
        _ => Err(c.issues),
    }
}

fn check_schema(c: &mut Checker, tree: &J) -> Option<Schema> {
    let root = c.object(
        tree,
        "",
        TOP_KEYS,
        &["id", "record_size", "time_field", "fields"],
    )?;
    let id = c.string(&root, "id");
    if let Some(id) = id {
        if !is_identifier(id) {
            c.issue("id", format!("{id:?} is not an identifier (a letter or _, then letters, digits or _; at most 128)"));
        }
    }
    let name = match c.string(&root, "name") {
        Some("") => {
            c.issue("name", "must not be empty");
            None
        }
        other => other,
    };
    if root.get("description").is_some() {
        c.string(&root, "description");
    }
    if root.get("$schema").is_some() {
        c.string(&root, "$schema");
    }
    let record_size = match c.uint(&root, "record_size", MAX_RECORD_SIZE) {
        Some(0) => {
            c.issue("record_size", "must be at least 1");
            None
        }
        other => other.map(|n| n as usize),
    };
    let byte_order = match c.string(&root, "byte_order") {
        None | Some("little") => ByteOrder::Little,
        Some("big") => ByteOrder::Big,
        Some(other) => {
            c.issue(
                "byte_order",
                format!("{other:?} is not a byte order: \"little\" or \"big\""),
            );
            ByteOrder::Little
        }
    };
    let interval = match root.get("time_index_interval") {
        None => Some(DEFAULT_INTERVAL),
        Some(_) => match c.uint(&root, "time_index_interval", u32::MAX as u64) {
            Some(0) => {
                c.issue(
                    "time_index_interval",
                    "interval 0: must be at least 1 second",
                );
                None
            }
            other => other,
        },
    };
    let enums = root
        .get("enums")
        .map(|e| check_enums(c, e))
        .unwrap_or_default();
    let raw_fields = match root.get("fields") {
        Some(J::Arr(a)) if a.is_empty() => {
            c.issue("fields", "a schema needs at least one field");
            Vec::new()
        }
        Some(J::Arr(a)) => check_fields(c, a, record_size, &enums),
        Some(other) => {
            c.issue("fields", format!("expected an array, got {}", other.kind()));
            Vec::new()
        }
        None => Vec::new(),
    };
    let time_field = check_time_field(c, &root, &raw_fields);
    let fields = link_fields(c, &raw_fields);
    let (id, record_size, interval, time_field) = (id?, record_size?, interval?, time_field?);
    if !c.issues.is_empty() {
        return None;
    }
    let by_name = fields
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.clone(), i))
        .collect();
    Some(Schema {
        id: id.to_string(),
        name: name.unwrap_or(id).to_string(),
        record_size,
        byte_order,
        time_field,
        time_index_interval: interval as u32,
        enums,
        fields,
        by_name,
    })
}

fn check_time_field(c: &mut Checker, root: &Obj, fields: &[RawField]) -> Option<usize> {
    let name = c.string(root, "time_field")?;
    match fields.iter().position(|f| f.field.name == name) {
        Some(i) if fields[i].field.ty == FieldType::Timestamp => Some(i),
        Some(i) => {
            c.issue(
                "time_field",
                format!("field {name:?} (fields[{i}]) is not a timestamp"),
            );
            None
        }
        None => {
            c.issue(
                "time_field",
                format!(
                    "no field named {name:?}{}",
                    suggest(name, fields.iter().map(|f| f.field.name.as_str()))
                ),
            );
            None
        }
    }
}

/// Resolves time_reference sources (by name) now that every field is known.
fn link_fields(c: &mut Checker, raw: &[RawField]) -> Vec<Field> {
    let mut out = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let mut f = r.field.clone();
        if let (Some(src), Some(tr)) = (&r.time_source, f.time_reference.as_mut()) {
            let path = format!("fields[{i}].time_reference.field");
            match raw.iter().position(|o| &o.field.name == src) {
                Some(j) if raw[j].field.ty == FieldType::Timestamp => tr.field = j,
                Some(j) => c.issue(
                    path,
                    format!("field {src:?} (fields[{j}]) is not a timestamp"),
                ),
                None => c.issue(
                    path,
                    format!(
                        "no field named {src:?}{}",
                        suggest(src, raw.iter().map(|f| f.field.name.as_str()))
                    ),
                ),
            }
        }
        out.push(f);
    }
    out
}

/// Reads an enum code: a JSON integer, or a string of decimal digits for codes past 2^53.
fn code_of(c: &mut Checker, v: &J, path: &str) -> Option<u64> {
    match v {
        J::U64(n) => Some(*n),
        J::Str(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            match s.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    c.issue(path, format!("code {s} does not fit in 64 bits"));
                    None
                }
            }
        }
        J::F64(f) if *f > 0.0 && f.fract() == 0.0 => {
            c.issue(path, "code does not fit in 64 bits");
            None
        }
        other => {
            c.issue(
                path,
                format!(
                    "expected a code (an integer 0..2^64-1), got {}",
                    other.kind()
                ),
            );
            None
        }
    }
}

fn check_enums(c: &mut Checker, v: &J) -> Vec<EnumDef> {
    let J::Obj(entries) = v else {
        c.issue("enums", format!("expected an object, got {}", v.kind()));
        return Vec::new();
    };
    let mut out: Vec<EnumDef> = Vec::new();
    for (name, def) in entries {
        let path = format!("enums.{name}");
        if out.iter().any(|e| &e.name == name) {
            c.issue(path, "duplicate enum name");
            continue;
        }
        if !is_identifier(name) {
            c.issue(
                &path,
                "enum names are identifiers (a letter or _, then letters, digits or _)",
            );
        }
        let Some(o) = c.object(
            def,
            &path,
            &["values", "default_label", "description"],
            &["values"],
        ) else {
            continue;
        };
        let default_label = c
            .string(&o, "default_label")
            .unwrap_or(DEFAULT_ENUM_LABEL)
            .to_string();
        let mut labels: Vec<(u64, String)> = Vec::new();
        match o.get("values") {
            Some(J::Obj(vals)) if vals.is_empty() => {
                c.issue(o.at("values"), "an enum needs at least one label")
            }
            Some(J::Obj(vals)) => {
                let mut by_code: HashMap<u64, &str> = HashMap::new();
                for (label, code) in vals {
                    let lpath = format!("{path}.values.{label}");
                    if label.is_empty() {
                        c.issue(&lpath, "labels must not be empty");
                    }
                    if labels.iter().any(|(_, l)| l == label) {
                        c.issue(&lpath, format!("duplicate label {label:?}"));
                        continue;
                    }
                    let Some(code) = code_of(c, code, &lpath) else {
                        continue;
                    };
                    if let Some(prev) = by_code.get(&code) {
                        c.issue(
                            &lpath,
                            format!("duplicate code {code} (also label {prev:?})"),
                        );
                        continue;
                    }
                    by_code.insert(code, label);
                    labels.push((code, label.clone()));
                }
            }
            Some(other) => c.issue(
                o.at("values"),
                format!("expected an object of label: code, got {}", other.kind()),
            ),
            None => {}
        }
        labels.sort();
        out.push(EnumDef {
            name: name.clone(),
            labels,
            default_label,
        });
    }
    out
}
