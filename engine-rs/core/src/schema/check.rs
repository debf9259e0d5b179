//! The checking context shared by the schema validators: collects issues and reads typed values
//! out of the JSON tree, reporting wrong kinds, unknown keys, duplicates and missing keys.

use super::issue::{suggest, SchemaIssue};
use super::json::J;

/// Collects every problem found; validation goes on after each one.
#[derive(Default)]
pub struct Checker {
    pub issues: Vec<SchemaIssue>,
}

/// An object's entries after the key checks (first occurrence of each key).
pub struct Obj<'a> {
    pub path: String,
    entries: Vec<(&'a str, &'a J)>,
}

impl<'a> Obj<'a> {
    /// The value of a key.
    pub fn get(&self, key: &str) -> Option<&'a J> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// Path of a key inside this object.
    pub fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

/// `parent.key`, or `key` at the root.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl Checker {
    /// Records one problem.
    pub fn issue(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.issues.push(SchemaIssue {
            path: path.into(),
            message: message.into(),
        });
    }

    /// Reads an object, reporting unknown, duplicate and missing keys.
    pub fn object<'a>(
        &mut self,
        v: &'a J,
        path: &str,
        allowed: &[&str],
        required: &[&str],
    ) -> Option<Obj<'a>> {
        let J::Obj(entries) = v else {
            self.issue(path, format!("expected an object, got {}", v.kind()));
            return None;
        };
        let mut out: Vec<(&str, &J)> = Vec::with_capacity(entries.len());
        for (k, val) in entries {
            if out.iter().any(|(seen, _)| seen == k) {
                self.issue(join(path, k), "duplicate key");
            } else if !allowed.contains(&k.as_str()) {
                self.issue(
                    join(path, k),
                    format!("unknown key{}", suggest(k, allowed.iter().copied())),
                );
            } else {
                out.push((k, val));
            }
        }
        for r in required {
            if !out.iter().any(|(k, _)| k == r) {
                self.issue(join(path, r), "missing required key");
            }
        }
        Some(Obj {
            path: path.to_string(),
            entries: out,
        })
    }

    /// A string value, reporting any other kind.
    pub fn string<'a>(&mut self, o: &Obj<'a>, key: &str) -> Option<&'a str> {
        match o.get(key)? {
            J::Str(s) => Some(s),
            other => {
                self.issue(
                    o.at(key),
                    format!("expected a string, got {}", other.kind()),
                );
                None
            }
        }
    }

    /// A non-negative integer no larger than `max`.
    pub fn uint(&mut self, o: &Obj, key: &str, max: u64) -> Option<u64> {
        match o.get(key)? {
            J::U64(n) if *n <= max => Some(*n),
            J::U64(n) => {
                self.issue(o.at(key), format!("{n} is too large (at most {max})"));
                None
            }
            other => {
                self.issue(
                    o.at(key),
                    format!("expected a non-negative integer, got {}", other.kind()),
                );
                None
            }
        }
    }

    /// A boolean value (absent = false).
    pub fn boolean(&mut self, o: &Obj, key: &str) -> bool {
        match o.get(key) {
            None => false,
            Some(J::Bool(b)) => *b,
            Some(other) => {
                self.issue(
                    o.at(key),
                    format!("expected a boolean, got {}", other.kind()),
                );
                false
            }
        }
    }
}
