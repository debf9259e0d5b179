//! Enumerated columns → Dictionary<Int32, Utf8>: indices computed here, labels in the dictionary.

use super::buf::{read_int, Prim, Slots};
use super::{Builder, Column, DecodeError};
use crate::schema::EnumDef;

/// Codes below this get a dense code → index table; larger code spaces use a sorted list.
const DENSE_CODES: u64 = 1 << 16;

/// Code → dictionary index; unknown codes map to the default label's index.
enum Lookup {
    Dense(Vec<i32>),
    Sparse(Vec<(u64, i32)>),
}

impl Lookup {
    #[inline(always)]
    fn index(&self, code: Option<u64>, default: i32) -> i32 {
        let Some(code) = code else { return default };
        match self {
            Lookup::Dense(t) => usize::try_from(code)
                .ok()
                .and_then(|c| t.get(c))
                .copied()
                .unwrap_or(default),
            Lookup::Sparse(s) => s
                .binary_search_by_key(&code, |&(c, _)| c)
                .map_or(default, |i| s[i].1),
        }
    }
}

/// The dictionary of `def` (labels in code order, each once, then the default label unless it is
/// already one of them), the code → index lookup, and the default label's index.
fn dictionary(def: &EnumDef) -> (Vec<String>, Lookup, i32) {
    let mut labels: Vec<String> = Vec::with_capacity(def.labels.len() + 1);
    let mut pairs: Vec<(u64, i32)> = Vec::with_capacity(def.labels.len());
    let mut sorted = def.labels.clone();
    sorted.sort_by_key(|(c, _)| *c);
    for (code, label) in &sorted {
        let idx = match labels.iter().position(|l| l == label) {
            Some(i) => i,
            None => {
                labels.push(label.clone());
                labels.len() - 1
            }
        };
        pairs.push((*code, idx as i32));
    }
    let default = match labels.iter().position(|l| *l == def.default_label) {
        Some(i) => i as i32,
        None => {
            labels.push(def.default_label.clone());
            labels.len() as i32 - 1
        }
    };
    pairs.dedup_by_key(|p| p.0);
    let max = pairs.last().map_or(0, |p| p.0);
    let lookup = if max < DENSE_CODES {
        let mut t = vec![default; max as usize + 1];
        for (c, i) in &pairs {
            t[*c as usize] = *i;
        }
        Lookup::Dense(t)
    } else {
        Lookup::Sparse(pairs)
    };
    (labels, lookup, default)
}

/// Reads an unsigned code of `width` bytes; `None` when it exceeds 64 bits (no label has it).
#[inline(always)]
fn code<const BIG: bool>(v: &[u8], width: usize) -> Option<u64> {
    match width {
        1 => Some(v[0] as u64),
        2 => Some(u16::read::<BIG>(v) as u64),
        4 => Some(u32::read::<BIG>(v) as u64),
        8 => Some(u64::read::<BIG>(v)),
        _ => {
            // 128/256-bit codes: the value must fit in the low 64 bits.
            let (high, low) = if BIG {
                v[..width].split_at(width - 8)
            } else {
                let (l, h) = v[..width].split_at(8);
                (h, l)
            };
            if high.iter().any(|&b| b != 0) {
                return None;
            }
            read_int(low, 8, false, BIG).map(|x| x as u64)
        }
    }
}

struct Enum<const BIG: bool> {
    slots: Slots,
    width: usize,
    lookup: Lookup,
    default: i32,
    data: Vec<u8>,
    pos: usize,
    len: usize,
}

impl<const BIG: bool> Builder for Enum<BIG> {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let end = self.pos + self.slots.values_in(records) * 4;
        let mut out = self.data[self.pos..end].chunks_exact_mut(4);
        let (lookup, width, default) = (&self.lookup, self.width, self.default);
        if width == 1 {
            // One-byte codes (most enumerations): a 256-entry index table, one load per value.
            let table: [i32; 256] = std::array::from_fn(|c| lookup.index(Some(c as u64), default));
            self.slots.each(records, |v| {
                if let Some(dst) = out.next() {
                    dst.copy_from_slice(&table[v[0] as usize].to_ne_bytes());
                }
            });
        } else {
            self.slots.each(records, |v| {
                if let Some(dst) = out.next() {
                    dst.copy_from_slice(
                        &lookup.index(code::<BIG>(v, width), default).to_ne_bytes(),
                    );
                }
            });
        }
        self.pos = end;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Column {
        Column {
            len: self.len,
            null_count: 0,
            validity: None,
            offsets: None,
            data: self.data,
            child: None,
        }
    }
}

/// The dictionary labels and the index builder of an enumerated value of `width` bytes.
pub(crate) fn builder(
    def: &EnumDef,
    width: usize,
    slots: Slots,
    big: bool,
    n: usize,
) -> (Vec<String>, Box<dyn Builder>) {
    let (labels, lookup, default) = dictionary(def);
    let data = vec![0u8; n * 4];
    let b: Box<dyn Builder> = if big {
        Box::new(Enum::<true> {
            slots,
            width,
            lookup,
            default,
            data,
            pos: 0,
            len: n,
        })
    } else {
        Box::new(Enum::<false> {
            slots,
            width,
            lookup,
            default,
            data,
            pos: 0,
            len: n,
        })
    };
    (labels, b)
}
