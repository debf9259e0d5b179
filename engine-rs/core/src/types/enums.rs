//! Enumerations: a label is stored as its code in the field's unsigned integer. Text is a label of
//! the enumeration; failing that, a decimal code (so a JSON number works too). Codes must fit the
//! field.

use std::collections::HashMap;

use super::ints::{parse_u64_dec, write_u64};
use super::quote;
use crate::schema::{ByteOrder, EnumDef};

/// Label → code lookup for one enumeration.
#[derive(Clone, Debug)]
pub struct EnumLookup {
    name: String,
    by_label: HashMap<String, u64>,
    small: Vec<SmallLabel>,
}

/// A label of a small enumeration, with its first 8 bytes packed into a word so most labels are
/// matched by one compare of length and word.
#[derive(Clone, Debug)]
struct SmallLabel {
    len: usize,
    head: u64,
    label: Box<[u8]>,
    code: u64,
}

/// The first (up to) 8 bytes of `b`, zero padded, as one word. Built in a register: a copy into
/// a buffer of variable length is a memcpy call, and the load after it stalls.
#[inline]
fn head_word(b: &[u8]) -> u64 {
    b.iter()
        .take(8)
        .enumerate()
        .fold(0u64, |w, (k, &c)| w | (c as u64) << (8 * k))
}

/// Enumerations up to this many labels are looked up by a linear scan.
const SMALL: usize = 16;

impl EnumLookup {
    /// Builds the lookup of an enumeration.
    pub fn new(def: &EnumDef) -> Self {
        let by_label = def.labels.iter().map(|(c, l)| (l.clone(), *c)).collect();
        let small = def
            .labels
            .iter()
            .map(|(c, l)| SmallLabel {
                len: l.len(),
                head: head_word(l.as_bytes()),
                label: l.as_bytes().into(),
                code: *c,
            })
            .collect();
        Self {
            name: def.name.clone(),
            by_label,
            small,
        }
    }

    /// The code of a label, or of a decimal code given directly.
    pub fn code(&self, text: &str) -> Result<u64, String> {
        if let Some(c) = self.label_code(text.as_bytes()) {
            return Ok(c);
        }
        parse_u64_dec(text.as_bytes())
            .ok_or_else(|| format!("unknown label {} for enum {}", quote(text), self.name))
    }

    /// The code of a label (labels only, no decimal codes).
    #[inline]
    pub fn label_code(&self, text: &[u8]) -> Option<u64> {
        // Most enumerations are small: a scan beats hashing the label.
        if self.small.len() <= SMALL {
            let (len, head) = (text.len(), head_word(text));
            self.small
                .iter()
                .find(|l| l.len == len && l.head == head && (len <= 8 || *l.label == *text))
                .map(|l| l.code)
        } else {
            // Labels are UTF-8 (schema JSON); other bytes name no label.
            let text = std::str::from_utf8(text).ok()?;
            self.by_label.get(text).copied()
        }
    }

    /// Encodes a label (or code) into an unsigned integer field of 1, 2, 4 or 8 bytes.
    pub fn encode(&self, text: &str, out: &mut [u8], order: ByteOrder) -> Result<(), String> {
        let c = self.code(text)?;
        let bits = out.len() * 8;
        if bits < 64 && c >> bits != 0 {
            return Err(format!("code {c} does not fit in uint{bits}"));
        }
        if out.len() > 8 {
            out.fill(0);
            let n = out.len();
            match order {
                ByteOrder::Little => write_u64(&mut out[..8], c, order),
                ByteOrder::Big => write_u64(&mut out[n - 8..], c, order),
            }
        } else {
            write_u64(out, c, order);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_codes() {
        let def = EnumDef {
            name: "proto".into(),
            labels: vec![(6, "tcp".into()), (17, "udp".into())],
            default_label: "other".into(),
        };
        let l = EnumLookup::new(&def);
        let mut o = [0u8; 1];
        l.encode("udp", &mut o, ByteOrder::Little).unwrap();
        assert_eq!(o, [17]);
        l.encode("99", &mut o, ByteOrder::Little).unwrap();
        assert_eq!(o, [99]);
        assert!(l
            .encode("300", &mut o, ByteOrder::Little)
            .unwrap_err()
            .contains("does not fit"));
        assert!(l
            .encode("sctp", &mut o, ByteOrder::Little)
            .unwrap_err()
            .contains("unknown label \"sctp\" for enum proto"));
        let mut w = [0u8; 16];
        l.encode("tcp", &mut w, ByteOrder::Big).unwrap();
        assert_eq!(w[15], 6);
    }
}
