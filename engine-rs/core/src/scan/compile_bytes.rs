//! Filters on byte strings (string, bytes, blob, chess_fen): masked word comparisons for
//! equality, null and prefix tests; lexicographic ranges; sorted sets. Zone tests use the
//! segment's byte-string keys (the first 8 bytes, big-endian).

use super::compile::Ctx;
use super::error::QueryError;
use super::op::FilterOp;
use super::pred::{CompiledFilter, MaskWord, Pred, ZoneCheck};
use crate::schema::FieldType;
use crate::segment::ZoneKind;

/// The zone-map key of a byte string: its first 8 bytes, big-endian, zero-padded.
pub(super) fn bytes_key(b: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    let n = b.len().min(8);
    k[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(k)
}

/// Masked comparison of `len` field bytes at `off`: whole 8-byte windows inside the record,
/// windows with an all-zero mask left out.
pub(super) fn mask_words(
    off: usize,
    value: &[u8],
    mask: &[u8],
    record_size: usize,
) -> Vec<MaskWord> {
    let len = value.len();
    let mut words = Vec::new();
    let mut start = 0;
    while start < len {
        let (at, wlen) = if record_size >= 8 {
            ((off + start).min(record_size - 8), 8)
        } else {
            (0, record_size)
        };
        let (mut m, mut w) = (0u64, 0u64);
        for j in 0..wlen {
            let pos = at + j; // record offset of this window byte
            if pos < off + start || pos >= off + len || pos >= off + start + 8 {
                continue;
            }
            let i = pos - off;
            m |= u64::from(mask[i]) << (8 * j);
            w |= u64::from(value[i] & mask[i]) << (8 * j);
        }
        if m != 0 {
            words.push(MaskWord {
                at,
                len: wlen,
                mask: m,
                want: w,
            });
        }
        start += 8;
    }
    words
}

impl Ctx<'_> {
    pub(super) fn bytes(
        &self,
        vals: Vec<Vec<u8>>,
        negate: bool,
    ) -> Result<CompiledFilter, QueryError> {
        let f = self.field;
        let (off, len) = (f.offset, f.size);
        let small = len <= 8;
        let hint = |check| self.hint(ZoneKind::Bytes, false, check);
        let ff = vec![0xffu8; len];
        match self.spec.op {
            FilterOp::Eq | FilterOp::Ne | FilterOp::IsNull | FilterOp::IsNotNull => {
                let v = &vals[0];
                let k = bytes_key(v);
                let zone = match negate {
                    false => hint(ZoneCheck::Within { lo: k, hi: k }),
                    true if small => hint(ZoneCheck::Outside { lo: k, hi: k }),
                    true => None,
                };
                let words = mask_words(off, v, &ff, self.record_size);
                Self::done(Pred::Masked { words, negate }, zone)
            }
            FilterOp::Prefix => {
                let text = &self.spec.values[0];
                let n = match f.ty {
                    FieldType::Bytes => {
                        let digits = text.strip_prefix("0x").or(text.strip_prefix("0X"));
                        digits.unwrap_or(text).len() / 2
                    }
                    _ => text.len(),
                };
                if n == 0 {
                    return Self::done(Pred::Const(true), None);
                }
                let mut mask = vec![0u8; len];
                mask[..n].fill(0xff);
                let v = &vals[0];
                let lo = bytes_key(v);
                let mut top = v[..n.min(8)].to_vec();
                top.resize(8, 0xff);
                let zone = hint(ZoneCheck::Within {
                    lo,
                    hi: bytes_key(&top),
                });
                let words = mask_words(off, v, &mask, self.record_size);
                Self::done(Pred::Masked { words, negate }, zone)
            }
            FilterOp::In => {
                let mut values = vals;
                values.sort_unstable();
                values.dedup();
                let keys: Vec<u64> = values.iter().map(|v| bytes_key(v)).collect();
                let mut sorted = keys.clone();
                sorted.dedup();
                let zone = hint(ZoneCheck::AnyOf(sorted));
                if values.len() == 1 {
                    let words = mask_words(off, &values[0], &ff, self.record_size);
                    return Self::done(Pred::Masked { words, negate }, zone);
                }
                Self::done(Pred::BytesSet { off, len, values }, zone)
            }
            op => {
                let v = vals[0].clone();
                let (lo, hi) = match op {
                    FilterOp::Lt => (None, Some((v, false))),
                    FilterOp::Le => (None, Some((v, true))),
                    FilterOp::Gt => (Some((v, false)), None),
                    FilterOp::Ge => (Some((v, true)), None),
                    _ => {
                        if vals[0] > vals[1] {
                            return Self::done(Pred::Const(false), None);
                        }
                        (Some((v, true)), Some((vals[1].clone(), true)))
                    }
                };
                let zone = hint(ZoneCheck::Within {
                    lo: lo.as_ref().map_or(0, |(b, _)| bytes_key(b)),
                    hi: hi.as_ref().map_or(u64::MAX, |(b, _)| bytes_key(b)),
                });
                Self::done(Pred::Bytes { off, len, lo, hi }, zone)
            }
        }
    }
}
