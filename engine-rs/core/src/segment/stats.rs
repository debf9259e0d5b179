//! Per-batch summaries kept at ingest (segment format 2, docs/segment.md "Batch summary"): the sum of
//! every integer zone field (exact, i128), and for every 1-byte unsigned zone field (enumerations,
//! small codes) the record count and those sums per code. With the tail's record count and the
//! batch filter's min/max they answer whole-batch aggregates without reading records. The section
//! lies inside the footer checksum; its layout is checked exactly on read.

use super::error::SegmentError;
use super::zone::{ZoneField, ZoneKind};

/// Version of the summary section.
pub const STATS_VERSION: u16 = 1;
/// Most 1-byte fields with per-code summaries.
pub const MAX_CODE_FIELDS: usize = 8;
const SIGN: u64 = 1 << 63;

/// One code of a code field: how many records hold it and the integer sums over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeStats {
    pub code: u8,
    pub count: u64,
    /// Per zone field, as [`BatchStats::sums`].
    pub sums: Vec<i128>,
}

/// Per-code summaries of one 1-byte unsigned zone field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeField {
    /// Index into the header's zone fields.
    pub field: usize,
    /// Codes present, ascending.
    pub codes: Vec<CodeStats>,
}

/// The summary of one batch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Per zone field: the sum of its values over every record (0 for floats and bytes).
    pub sums: Vec<i128>,
    pub code_fields: Vec<CodeField>,
}

/// The value of an integer zone field's order key.
#[inline]
fn value(f: &ZoneField, k: u64) -> i128 {
    match f.kind {
        ZoneKind::Signed => i128::from((k ^ SIGN) as i64),
        _ => i128::from(k),
    }
}

fn is_int(f: &ZoneField) -> bool {
    matches!(f.kind, ZoneKind::Unsigned | ZoneKind::Signed)
}

/// Accumulates [`BatchStats`] as records are written.
pub struct StatsBuilder {
    fields: Vec<ZoneField>,
    ints: Vec<usize>,
    sums: Vec<i128>,
    code_fields: Vec<usize>,
    /// Per code field: 256 counts.
    counts: Vec<Vec<u64>>,
    /// Per code field: 256 × fields sums (allocated on first use).
    code_sums: Vec<Vec<i128>>,
}

impl StatsBuilder {
    /// A builder for records with these zone fields.
    pub fn new(fields: &[ZoneField]) -> Self {
        let ints: Vec<usize> = (0..fields.len()).filter(|&i| is_int(&fields[i])).collect();
        let code_fields: Vec<usize> = (0..fields.len())
            .filter(|&i| fields[i].kind == ZoneKind::Unsigned && fields[i].size == 1)
            .take(MAX_CODE_FIELDS)
            .collect();
        StatsBuilder {
            fields: fields.to_vec(),
            sums: vec![0; fields.len()],
            counts: vec![Vec::new(); code_fields.len()],
            code_sums: vec![Vec::new(); code_fields.len()],
            ints,
            code_fields,
        }
    }

    /// Adds whole records of `r` bytes.
    pub fn add(&mut self, recs: &[u8], r: usize) {
        let nf = self.fields.len();
        let mut vals = vec![0i128; nf];
        for rec in recs.chunks_exact(r) {
            for &i in &self.ints {
                let f = &self.fields[i];
                let v = f.key(rec).map_or(0, |k| value(f, k));
                vals[i] = v;
                self.sums[i] = self.sums[i].wrapping_add(v);
            }
            for (g, &fi) in self.code_fields.iter().enumerate() {
                let code = rec[self.fields[fi].offset as usize] as usize;
                if self.counts[g].is_empty() {
                    self.counts[g] = vec![0; 256];
                    self.code_sums[g] = vec![0; 256 * nf];
                }
                self.counts[g][code] += 1;
                let s = &mut self.code_sums[g][code * nf..(code + 1) * nf];
                for &i in &self.ints {
                    s[i] = s[i].wrapping_add(vals[i]);
                }
            }
        }
    }

    /// The summary so far.
    pub fn finish(&self) -> BatchStats {
        let nf = self.fields.len();
        let code_fields = self
            .code_fields
            .iter()
            .enumerate()
            .map(|(g, &field)| CodeField {
                field,
                codes: (0..256usize)
                    .filter(|&c| self.counts[g].get(c).copied().unwrap_or(0) > 0)
                    .map(|c| CodeStats {
                        code: c as u8,
                        count: self.counts[g][c],
                        sums: self.code_sums[g][c * nf..(c + 1) * nf].to_vec(),
                    })
                    .collect(),
            })
            .collect();
        BatchStats {
            sums: self.sums.clone(),
            code_fields,
        }
    }
}

impl BatchStats {
    /// Appends the section: version u16, code field count u16, 4 zero bytes; per zone field its sum
    /// (i128); per code field: field index u16, 2 zero bytes, code count u32, then per code: code
    /// u8, 7 zero bytes, count u64, per zone field its sum (i128). Little-endian.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&STATS_VERSION.to_le_bytes());
        out.extend_from_slice(&(self.code_fields.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for s in &self.sums {
            out.extend_from_slice(&s.to_le_bytes());
        }
        for cf in &self.code_fields {
            out.extend_from_slice(&(cf.field as u16).to_le_bytes());
            out.extend_from_slice(&[0; 2]);
            out.extend_from_slice(&(cf.codes.len() as u32).to_le_bytes());
            for c in &cf.codes {
                out.push(c.code);
                out.extend_from_slice(&[0; 7]);
                out.extend_from_slice(&c.count.to_le_bytes());
                for s in &c.sums {
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
        }
    }

    /// Reads a section written for `fields` and `records` records: every length, index, order and
    /// count must agree (the per-code counts add up to the record count).
    pub fn decode(
        b: &[u8],
        fields: &[ZoneField],
        records: u64,
    ) -> Result<BatchStats, SegmentError> {
        let bad = |why: &str| SegmentError::Corrupt(format!("batch summary: {why}"));
        let nf = fields.len();
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], SegmentError> {
            let s = b
                .get(at..at.checked_add(n).ok_or_else(|| bad("length"))?)
                .ok_or_else(|| bad("truncated"))?;
            at += n;
            Ok(s)
        };
        let u16_at = |s: &[u8]| u16::from_le_bytes([s[0], s[1]]);
        let i128_of = |s: &[u8]| {
            let mut a = [0u8; 16];
            a.copy_from_slice(s);
            i128::from_le_bytes(a)
        };
        let head = take(8)?;
        if u16_at(&head[0..2]) != STATS_VERSION || head[4..8] != [0; 4] {
            return Err(bad("version"));
        }
        let ng = usize::from(u16_at(&head[2..4]));
        if ng > MAX_CODE_FIELDS {
            return Err(bad("too many code fields"));
        }
        let sums = (0..nf)
            .map(|_| take(16).map(i128_of))
            .collect::<Result<Vec<_>, _>>()?;
        let mut code_fields = Vec::with_capacity(ng);
        for _ in 0..ng {
            let h = take(8)?;
            let field = usize::from(u16_at(&h[0..2]));
            let n = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
            let ok_field = fields
                .get(field)
                .is_some_and(|f| f.kind == ZoneKind::Unsigned && f.size == 1);
            if !ok_field || h[2..4] != [0; 2] || n > 256 {
                return Err(bad("code field"));
            }
            let mut codes: Vec<CodeStats> = Vec::with_capacity(n);
            let mut total = 0u64;
            for _ in 0..n {
                let e = take(16)?;
                let code = e[0];
                let count = u64::from_le_bytes(e[8..16].try_into().map_err(|_| bad("count"))?);
                if e[1..8] != [0; 7] || count == 0 || codes.last().is_some_and(|c| c.code >= code) {
                    return Err(bad("code entry"));
                }
                total = total.checked_add(count).ok_or_else(|| bad("count"))?;
                let sums = (0..nf)
                    .map(|_| take(16).map(i128_of))
                    .collect::<Result<Vec<_>, _>>()?;
                codes.push(CodeStats { code, count, sums });
            }
            if total != records {
                return Err(bad("code counts do not add up to the record count"));
            }
            code_fields.push(CodeField { field, codes });
        }
        if at != b.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(BatchStats { sums, code_fields })
    }
}
