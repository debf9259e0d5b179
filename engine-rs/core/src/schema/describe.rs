//! A validated schema written back as canonical schema JSON: every default spelled out, keys in a
//! fixed order, enum codes past 2^53 as digit strings (so JavaScript reads them exactly). Parsing
//! the output gives the same `Schema`.

use serde_json::{json, Map, Value};

use super::model::{ByteOrder, FieldType, Schema, TimeUnit};
use super::types::type_name;

/// Largest integer JavaScript numbers hold exactly.
const JS_SAFE: u64 = (1 << 53) - 1;

fn unit_name(u: TimeUnit) -> &'static str {
    match u {
        TimeUnit::Seconds => "s",
        TimeUnit::Milliseconds => "ms",
        TimeUnit::Microseconds => "us",
        TimeUnit::Nanoseconds => "ns",
    }
}

/// Canonical JSON of a schema.
pub fn describe(s: &Schema) -> String {
    let mut enums = Map::new();
    for e in &s.enums {
        let mut values = Map::new();
        for (code, label) in &e.labels {
            let v = if *code <= JS_SAFE {
                json!(code)
            } else {
                json!(code.to_string())
            };
            values.insert(label.clone(), v);
        }
        enums.insert(
            e.name.clone(),
            json!({ "values": values, "default_label": e.default_label }),
        );
    }
    let fields: Vec<Value> = s
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut o = Map::new();
            o.insert("name".into(), json!(f.name));
            o.insert("offset".into(), json!(f.offset));
            o.insert("size".into(), json!(f.size));
            o.insert("type".into(), json!(type_name(&f.ty)));
            if let FieldType::Numeric { precision, scale } = f.ty {
                o.insert("precision".into(), json!(precision));
                o.insert("scale".into(), json!(scale));
            }
            if let Some(e) = f.enumeration {
                o.insert("enum".into(), json!(s.enums[e].name));
            }
            if let Some(tr) = &f.time_reference {
                o.insert(
                    "time_reference".into(),
                    json!({ "field": s.fields[tr.field].name, "unit": unit_name(tr.unit) }),
                );
            }
            if let Some(a) = &f.array {
                let mut ao = Map::new();
                ao.insert("element".into(), json!(type_name(&a.element)));
                ao.insert("count".into(), json!(a.count));
                if let Some(e) = a.enumeration {
                    ao.insert("enum".into(), json!(s.enums[e].name));
                }
                o.insert("array".into(), Value::Object(ao));
            }
            // Overlaps were validated, so any field sharing bytes is marked overlay on the way out.
            let overlaps = s.fields.iter().enumerate().any(|(j, g)| {
                j != i && g.offset < f.offset + f.size && f.offset < g.offset + g.size
            });
            if overlaps {
                o.insert("overlay".into(), json!(true));
            }
            Value::Object(o)
        })
        .collect();
    let order = match s.byte_order {
        ByteOrder::Little => "little",
        ByteOrder::Big => "big",
    };
    json!({
        "id": s.id,
        "name": s.name,
        "record_size": s.record_size,
        "byte_order": order,
        "time_field": s.fields[s.time_field].name,
        "time_index_interval": s.time_index_interval,
        "enums": enums,
        "fields": fields,
    })
    .to_string()
}
