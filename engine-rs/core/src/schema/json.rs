//! A small JSON tree for schema validation. Unlike `serde_json::Value` it keeps every object entry
//! in order, duplicates included (so a repeated enum label or key is reported, not silently
//! dropped), and keeps integers up to u64 exact (enum codes may use the whole u64 range).

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    /// A non-negative integer that fits u64.
    U64(u64),
    /// A negative integer that fits i64.
    I64(i64),
    /// Any other number.
    F64(f64),
    Str(String),
    Arr(Vec<J>),
    /// Entries in document order, duplicates kept.
    Obj(Vec<(String, J)>),
}

impl J {
    /// Name of the JSON kind, for messages ("expected a string, got an array").
    pub fn kind(&self) -> &'static str {
        match self {
            J::Null => "null",
            J::Bool(_) => "a boolean",
            J::U64(_) | J::I64(_) => "an integer",
            J::F64(_) => "a number",
            J::Str(_) => "a string",
            J::Arr(_) => "an array",
            J::Obj(_) => "an object",
        }
    }
}

struct JVisitor;

impl<'de> Visitor<'de> for JVisitor {
    type Value = J;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<J, E> {
        Ok(J::Bool(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<J, E> {
        Ok(J::U64(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<J, E> {
        Ok(if v >= 0 { J::U64(v as u64) } else { J::I64(v) })
    }
    fn visit_f64<E>(self, v: f64) -> Result<J, E> {
        Ok(J::F64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<J, E> {
        Ok(J::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<J, E> {
        Ok(J::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<J>()? {
            out.push(v);
        }
        Ok(J::Arr(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, J>()? {
            out.push((k, v));
        }
        Ok(J::Obj(out))
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        d.deserialize_any(JVisitor)
    }
}

/// Parses JSON text into a tree (serde_json's recursion limit bounds the depth).
pub fn parse_tree(text: &str) -> Result<J, serde_json::Error> {
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_duplicates_and_exact_u64() {
        let j =
            parse_tree(r#"{"a": 18446744073709551615, "a": -2, "b": [1.5, null, true]}"#).unwrap();
        let J::Obj(e) = j else { panic!() };
        assert_eq!(e[0], ("a".into(), J::U64(u64::MAX)));
        assert_eq!(e[1], ("a".into(), J::I64(-2)));
        assert_eq!(e[2].1, J::Arr(vec![J::F64(1.5), J::Null, J::Bool(true)]));
        assert!(parse_tree("{").is_err());
        assert!(parse_tree(&"[".repeat(10_000)).is_err());
    }
}
