//! Narrow copies of records (issue #17, a filtered aggregate's scan): a filter reads a few bytes
//! of each 150-byte record (`proto`, `dport`, `ts`), yet over whole records it strides through all
//! of them: each load brings in a cache line, and the staging copy before the kernel moves every
//! byte once more. A [`Projection`] lists the byte ranges the filter's predicates load — and, for
//! a filtered aggregate, those its keys and measures read, when all of them still fit in a quarter
//! of the record; the record cache keeps each piece's records cut down to those ranges
//! (`segment::record_cache`), the filter is evaluated over them with its offsets mapped
//! ([`Narrowed::filter`]), and the matches are aggregated from the copies
//! ([`Narrowed::aggregate`]) or read whole (rows sent, or an aggregate the copies do not hold).
//! The zone maps still use the filter as compiled: blocks are skipped as before.

use super::aggregate::{AggregatePlan, Read, ReadKind};
use super::filter::ScanFilter;
use super::key::Load64;
use super::pred::{Elem, Pred};

/// A filter whose loads cover at most this share of a record (1 / `WORTH`) runs over narrow
/// copies; a wider one gains too little for the copy it needs.
const WORTH: usize = 4;

/// One byte range of a record kept in the narrow copy, and where it lands there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    raw: usize,
    len: usize,
    at: usize,
}

/// The byte ranges of a record that a narrow copy keeps, back to back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    spans: Vec<Span>,
    width: usize,
    record_size: usize,
    /// The record size, then each span's offset and length: names the copy exactly.
    key: Vec<u32>,
}

/// A filter over narrow copies: the projection and the filter with its offsets mapped into it.
#[derive(Clone, Debug)]
pub struct Narrowed {
    pub projection: Projection,
    pub filter: ScanFilter,
    /// The query's aggregate reading the copies, when they hold every byte it reads: then the
    /// matches are aggregated from the copies too, and no whole record is read.
    pub aggregate: Option<AggregatePlan>,
}

impl Projection {
    /// The narrow form of `filter`: `None` when every record matches or none can (nothing to
    /// evaluate), or when its loads cover more than a quarter of the record.
    pub fn of(filter: &ScanFilter) -> Option<Narrowed> {
        Self::narrowed(filter, None, true)
    }

    /// [`Projection::of`] for a scan that aggregates the matches with `aggregate`: the copies
    /// also keep the bytes the aggregate reads when they still fit in a quarter of the record
    /// (then [`Narrowed::aggregate`] is set), else they are the filter's alone.
    pub fn of_scan(filter: &ScanFilter, aggregate: Option<&AggregatePlan>) -> Option<Narrowed> {
        aggregate
            .and_then(|a| Self::narrowed(filter, Some(a), true))
            .or_else(|| Self::narrowed(filter, None, true))
    }

    /// [`Projection::of_scan`] however wide the loads are (the tests' way to reach every
    /// predicate and aggregate).
    #[cfg(test)]
    pub(crate) fn of_any(
        filter: &ScanFilter,
        aggregate: Option<&AggregatePlan>,
    ) -> Option<Narrowed> {
        Self::narrowed(filter, aggregate, false)
    }

    fn narrowed(
        filter: &ScanFilter,
        aggregate: Option<&AggregatePlan>,
        worth: bool,
    ) -> Option<Narrowed> {
        if filter.matches_all() || filter.matches_none() {
            return None;
        }
        let rs = filter.record_size();
        let mut windows: Vec<(usize, usize)> = Vec::new();
        for sub in filter.subs() {
            for f in sub {
                windows.extend(loads_of(&f.pred));
            }
        }
        if let Some(a) = aggregate {
            if a.record_size != rs {
                return None;
            }
            windows.extend(a.reads().map(read_window));
        }
        let projection = Projection::over(&mut windows, rs)?;
        if worth && projection.width * WORTH > rs {
            return None;
        }
        let map = |off| projection.map(off);
        let filter = filter.remapped(projection.width, map);
        let aggregate = aggregate.map(|a| a.remapped(projection.width, map));
        Some(Narrowed {
            projection,
            filter,
            aggregate,
        })
    }

    /// Spans covering `windows` (offset, length), overlapping or touching ones merged.
    fn over(windows: &mut [(usize, usize)], record_size: usize) -> Option<Projection> {
        windows.sort_unstable();
        let mut spans: Vec<Span> = Vec::new();
        for &(off, len) in windows.iter() {
            if len == 0 || off + len > record_size {
                return None;
            }
            match spans.last_mut() {
                Some(s) if off <= s.raw + s.len => s.len = s.len.max(off + len - s.raw),
                _ => spans.push(Span {
                    raw: off,
                    len,
                    at: 0,
                }),
            }
        }
        let mut width = 0;
        for s in &mut spans {
            s.at = width;
            width += s.len;
        }
        if width == 0 {
            return None;
        }
        let mut key = vec![record_size as u32];
        key.extend(spans.iter().flat_map(|s| [s.raw as u32, s.len as u32]));
        Some(Projection {
            spans,
            width,
            record_size,
            key,
        })
    }

    /// Bytes per narrow record.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Names the byte ranges kept, exactly (with the piece, the record cache's key for a copy).
    pub fn key(&self) -> &[u32] {
        &self.key
    }

    /// Where a record's byte `off` (inside a kept range) lands in its narrow copy.
    fn map(&self, off: usize) -> usize {
        let i = self.spans.partition_point(|s| s.raw + s.len <= off);
        match self.spans.get(i) {
            Some(s) if s.raw <= off => s.at + (off - s.raw),
            // Every offset mapped is the start of a load the spans were made from.
            _ => unreachable!("offset {off} is outside the projection's spans"),
        }
    }

    /// The narrow copies of the whole records of `raw`, back to back.
    pub fn project(&self, raw: &[u8]) -> Vec<u8> {
        let n = raw.len() / self.record_size;
        let mut out = vec![0u8; n * self.width];
        for (rec, dst) in raw
            .chunks_exact(self.record_size)
            .zip(out.chunks_exact_mut(self.width))
        {
            for s in &self.spans {
                dst[s.at..s.at + s.len].copy_from_slice(&rec[s.raw..s.raw + s.len]);
            }
        }
        out
    }
}

/// Bytes a 64-bit key load reads.
fn load_width(l: Load64) -> usize {
    match l {
        Load64::U8 | Load64::I8 => 1,
        Load64::U16Le | Load64::U16Be | Load64::I16Le | Load64::I16Be => 2,
        Load64::U32Le | Load64::U32Be | Load64::I32Le | Load64::I32Be => 4,
        Load64::F32Le | Load64::F32Be => 4,
        Load64::U64Le | Load64::U64Be | Load64::I64Le | Load64::I64Be => 8,
        Load64::F64Le | Load64::F64Be => 8,
    }
}

/// The byte range (offset, length) of a record that an aggregate's read loads: its field, or
/// its 64-bit key load where that is wider.
fn read_window(r: &Read) -> (usize, usize) {
    match r.kind {
        ReadKind::K64 { load, .. } => (r.off, r.size.max(load_width(load))),
        _ => (r.off, r.size),
    }
}

/// The byte ranges (offset, length) of a record that `p` reads.
fn loads_of(p: &Pred) -> Vec<(usize, usize)> {
    match p {
        Pred::Const(_) => Vec::new(),
        Pred::K64 { off, load, .. } => vec![(*off, load_width(*load))],
        Pred::K128 { off, .. } => vec![(*off, 16)],
        Pred::K256 { off, .. } => vec![(*off, 32)],
        Pred::Masked { words, .. } => words.iter().map(|w| (w.at, w.len)).collect(),
        Pred::Bytes { off, len, .. } | Pred::BytesSet { off, len, .. } => vec![(*off, *len)],
        Pred::List {
            off,
            stride,
            count,
            elem,
            ..
        } => {
            let last = match elem {
                Elem::K64 { load, .. } => load_width(*load),
                Elem::K128 { .. } => 16,
                Elem::K256 { .. } => 32,
            };
            vec![(*off, stride * count.saturating_sub(1) + last)]
        }
    }
}

impl Pred {
    /// This predicate reading its bytes at `map(offset)` instead (a narrow copy's layout).
    pub(crate) fn remapped(&self, map: &impl Fn(usize) -> usize) -> Pred {
        let mut p = self.clone();
        match &mut p {
            Pred::Const(_) => {}
            Pred::K64 { off, .. }
            | Pred::K128 { off, .. }
            | Pred::K256 { off, .. }
            | Pred::Bytes { off, .. }
            | Pred::BytesSet { off, .. }
            | Pred::List { off, .. } => *off = map(*off),
            Pred::Masked { words, .. } => {
                for w in words {
                    w.at = map(w.at);
                }
            }
        }
        p
    }
}

/// Asserts that `f` over the narrow copies of `data` matches exactly what it matches over
/// `data` (rows, and the selections aggregates take); false when `f` has no narrow form.
#[cfg(test)]
pub(crate) fn assert_narrow_agrees(f: &ScanFilter, data: &[u8]) -> bool {
    let Some(nw) = Projection::of_any(f, None) else {
        return false;
    };
    let rs = f.record_size();
    let data = &data[..data.len() / rs * rs];
    let narrow = nw.projection.project(data);
    assert_eq!(narrow.len(), data.len() / rs * nw.projection.width());
    let mut rows = Vec::new();
    let n = nw.filter.filter_into_narrow(&narrow, data, rs, &mut rows);
    assert!(rows == f.filter(data), "narrow rows differ");
    assert_eq!(n as usize, rows.len() / rs);
    let selections = |narrow_form: bool| {
        let mut got: Vec<(usize, Vec<u32>)> = Vec::new();
        let mut visit = |c: &[u8], sel: &[u32]| {
            got.push((c.as_ptr() as usize - data.as_ptr() as usize, sel.to_vec()))
        };
        if narrow_form {
            nw.filter
                .select_chunks_narrow(&narrow, data, rs, &mut visit);
        } else {
            f.select_chunks(data, &mut visit);
        }
        got
    };
    assert_eq!(
        selections(true),
        selections(false),
        "narrow selections differ"
    );
    true
}

#[cfg(test)]
mod tests;
