//! The filter kernel: evaluates a `ScanFilter` over a buffer of back-to-back fixed-width records.
//!
//! Records are taken `CHUNK` at a time (small enough to stay in L2 while every filter reads it).
//! Within a chunk each sub-query narrows a selection vector of record indices one filter at a
//! time: the first filter fills it from every record, the next ones keep only the survivors.
//! Each filter is one tight loop compiled for its field layout and test (no dispatch, no
//! allocation per record). Sub-queries after the first see only the records no earlier one
//! matched. Matching records are copied out in their original order.

use super::filter::ScanFilter;
use super::key::{with_load64, with_wide};
use super::pred::{CompiledFilter, Elem, MaskWord, Pred, Test};

/// Records per chunk.
pub const CHUNK: usize = 1024;

/// Which records a filter looks at: all of the chunk's, or the current selection.
#[derive(Clone, Copy)]
enum Input {
    All(usize),
    Selected(usize),
}

/// Runs `t` (the test of the record at a byte offset) over the input, leaving the records that
/// pass at the front of `sel`; returns how many passed. Branch-free: every record is written
/// and the count only advances on a pass.
#[inline(always)]
fn run<F: Fn(usize) -> bool>(t: F, rs: usize, input: Input, sel: &mut [u32]) -> usize {
    let mut m = 0;
    match input {
        Input::All(n) => {
            for i in 0..n {
                sel[m] = i as u32;
                m += usize::from(t(i * rs));
            }
        }
        Input::Selected(len) => {
            for j in 0..len {
                let i = sel[j];
                sel[m] = i;
                m += usize::from(t(i as usize * rs));
            }
        }
    }
    m
}

#[inline(always)]
fn load8(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Little-endian load of fewer than 8 bytes (records shorter than 8 bytes only).
fn load_short(b: &[u8], at: usize, len: usize) -> u64 {
    let mut a = [0u8; 8];
    a[..len].copy_from_slice(&b[at..at + len]);
    u64::from_le_bytes(a)
}

fn masked(
    d: &[u8],
    rs: usize,
    input: Input,
    sel: &mut [u32],
    words: &[MaskWord],
    neg: bool,
) -> usize {
    match words {
        [w] if w.len == 8 => {
            let (at, mask, want) = (w.at, w.mask, w.want);
            run(
                |r| ((load8(d, r + at) & mask) == want) != neg,
                rs,
                input,
                sel,
            )
        }
        [a, b] if a.len == 8 && b.len == 8 => {
            let (a, b) = (*a, *b);
            run(
                |r| {
                    let x = (load8(d, r + a.at) & a.mask) ^ a.want;
                    let y = (load8(d, r + b.at) & b.mask) ^ b.want;
                    ((x | y) == 0) != neg
                },
                rs,
                input,
                sel,
            )
        }
        _ if words.iter().all(|w| w.len == 8) => run(
            |r| {
                let diff = words.iter().fold(0u64, |acc, w| {
                    acc | ((load8(d, r + w.at) & w.mask) ^ w.want)
                });
                (diff == 0) != neg
            },
            rs,
            input,
            sel,
        ),
        _ => run(
            |r| {
                let diff = words.iter().fold(0u64, |acc, w| {
                    acc | ((load_short(d, r + w.at, w.len) & w.mask) ^ w.want)
                });
                (diff == 0) != neg
            },
            rs,
            input,
            sel,
        ),
    }
}

/// Evaluates one predicate over the chunk `d`.
fn eval(p: &Pred, d: &[u8], rs: usize, input: Input, sel: &mut [u32]) -> usize {
    match p {
        Pred::Const(true) => run(|_| true, rs, input, sel),
        Pred::Const(false) => 0,
        Pred::K64 {
            off,
            load,
            test,
            negate,
        } => {
            let (off, neg) = (*off, *negate);
            with_load64!(*load, f => match test {
                Test::Range { lo, hi } => {
                    let (lo, span) = (*lo, hi - lo);
                    run(|r| (f(d, r + off).wrapping_sub(lo) <= span) != neg, rs, input, sel)
                }
                Test::Set(keys) => run(
                    |r| keys.binary_search(&f(d, r + off)).is_ok() != neg,
                    rs,
                    input,
                    sel,
                ),
            })
        }
        Pred::K128 {
            off,
            big_endian,
            signed,
            test,
            negate,
        } => {
            let (off, neg) = (*off, *negate);
            with_wide!(key128, *big_endian, *signed, f => match test {
                Test::Range { lo, hi } => {
                    let (lo, span) = (*lo, hi - lo);
                    run(|r| (f(d, r + off).wrapping_sub(lo) <= span) != neg, rs, input, sel)
                }
                Test::Set(keys) => run(
                    |r| keys.binary_search(&f(d, r + off)).is_ok() != neg,
                    rs,
                    input,
                    sel,
                ),
            })
        }
        Pred::K256 {
            off,
            big_endian,
            signed,
            test,
            negate,
        } => {
            let (off, neg) = (*off, *negate);
            with_wide!(key256, *big_endian, *signed, f => match test {
                Test::Range { lo, hi } => {
                    let (lo, hi) = (*lo, *hi);
                    run(|r| { let k = f(d, r + off); (lo <= k && k <= hi) != neg }, rs, input, sel)
                }
                Test::Set(keys) => run(
                    |r| keys.binary_search(&f(d, r + off)).is_ok() != neg,
                    rs,
                    input,
                    sel,
                ),
            })
        }
        Pred::Masked { words, negate } => masked(d, rs, input, sel, words, *negate),
        Pred::Bytes { off, len, lo, hi } => {
            let (off, len) = (*off, *len);
            let field = |r: usize| &d[r + off..r + off + len];
            let above = |s: &[u8]| match lo {
                None => true,
                Some((v, true)) => s >= v.as_slice(),
                Some((v, false)) => s > v.as_slice(),
            };
            let below = |s: &[u8]| match hi {
                None => true,
                Some((v, true)) => s <= v.as_slice(),
                Some((v, false)) => s < v.as_slice(),
            };
            run(
                |r| {
                    let s = field(r);
                    above(s) && below(s)
                },
                rs,
                input,
                sel,
            )
        }
        Pred::BytesSet { off, len, values } => {
            let (off, len) = (*off, *len);
            run(
                |r| {
                    let s = &d[r + off..r + off + len];
                    values.binary_search_by(|v| v.as_slice().cmp(s)).is_ok()
                },
                rs,
                input,
                sel,
            )
        }
        Pred::List {
            off,
            stride,
            count,
            elem,
            negate,
        } => {
            let (off, stride, count, neg) = (*off, *stride, *count, *negate);
            match elem {
                Elem::K64 { load, lo, hi } => {
                    let (lo, span) = (*lo, hi - lo);
                    with_load64!(*load, f => run(
                        |r| (0..count).any(|j| f(d, r + off + j * stride).wrapping_sub(lo) <= span) != neg,
                        rs,
                        input,
                        sel,
                    ))
                }
                Elem::K128 {
                    big_endian,
                    signed,
                    key,
                } => {
                    let key = *key;
                    with_wide!(key128, *big_endian, *signed, f => run(
                        |r| (0..count).any(|j| f(d, r + off + j * stride) == key) != neg,
                        rs,
                        input,
                        sel,
                    ))
                }
                Elem::K256 {
                    big_endian,
                    signed,
                    key,
                } => {
                    let key = *key;
                    with_wide!(key256, *big_endian, *signed, f => run(
                        |r| (0..count).any(|j| f(d, r + off + j * stride) == key) != neg,
                        rs,
                        input,
                        sel,
                    ))
                }
            }
        }
    }
}

/// Narrows the selection by every filter of one sub-query.
fn eval_sub(
    sub: &[CompiledFilter],
    d: &[u8],
    rs: usize,
    mut input: Input,
    sel: &mut [u32],
) -> usize {
    let mut len = match input {
        Input::All(n) => n,
        Input::Selected(n) => n,
    };
    for f in sub {
        len = eval(&f.pred, d, rs, input, sel);
        if len == 0 {
            break;
        }
        input = Input::Selected(len);
    }
    len
}

/// Per-scan scratch, `CHUNK` long each: the selection vector, the records an OR branch still has
/// to look at, and which records some branch matched.
struct Scratch {
    sel: Vec<u32>,
    cand: Vec<u32>,
    hit: Vec<bool>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            sel: vec![0u32; CHUNK],
            cand: vec![0u32; CHUNK],
            hit: vec![false; CHUNK],
        }
    }

    /// Sets `hit[..n]` to whether each of the `n` records of `chunk` matches any of `subs` (two or
    /// more); each branch after the first looks only at the records no earlier branch matched.
    #[inline]
    fn eval_or(&mut self, subs: &[Vec<CompiledFilter>], chunk: &[u8], rs: usize, n: usize) {
        let Scratch { sel, cand, hit } = self;
        hit[..n].fill(false);
        let mut left = n;
        for (s, sub) in subs.iter().enumerate() {
            let input = if s == 0 {
                Input::All(n)
            } else {
                sel[..left].copy_from_slice(&cand[..left]);
                Input::Selected(left)
            };
            let len = eval_sub(sub, chunk, rs, input, sel);
            for &i in &sel[..len] {
                hit[i as usize] = true;
            }
            if s + 1 < subs.len() {
                left = 0;
                for (i, &h) in hit[..n].iter().enumerate() {
                    cand[left] = i as u32;
                    left += usize::from(!h);
                }
                if left == 0 {
                    break;
                }
            }
        }
    }
}

impl ScanFilter {
    /// Appends the records of `data` that match to `out` (in their order) and returns how many
    /// matched. `data` holds whole records of `record_size` bytes; a trailing partial record is
    /// ignored.
    pub fn filter_into(&self, data: &[u8], out: &mut Vec<u8>) -> u64 {
        let rs = self.record_size();
        let n_all = data.len() / rs;
        let data = &data[..n_all * rs];
        if self.matches_all() {
            out.extend_from_slice(data);
            return n_all as u64;
        }
        let subs = self.subs();
        if subs.is_empty() {
            return 0;
        }
        let mut scratch = Scratch::new();
        let mut matched = 0u64;
        for chunk in data.chunks(CHUNK * rs) {
            let n = chunk.len() / rs;
            if let [only] = subs {
                let len = eval_sub(only, chunk, rs, Input::All(n), &mut scratch.sel);
                out.reserve(len * rs);
                for &i in &scratch.sel[..len] {
                    let at = i as usize * rs;
                    out.extend_from_slice(&chunk[at..at + rs]);
                }
                matched += len as u64;
                continue;
            }
            scratch.eval_or(subs, chunk, rs, n);
            for (i, _) in scratch.hit[..n].iter().enumerate().filter(|(_, &h)| h) {
                out.extend_from_slice(&chunk[i * rs..(i + 1) * rs]);
                matched += 1;
            }
        }
        matched
    }

    /// The records of `data` that match, back to back (see [`ScanFilter::filter_into`]).
    pub fn filter(&self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.filter_into(data, &mut out);
        out
    }
}

/// The plain memory read the kernel is measured against (bench/scan.bench.ts): every byte of
/// `data` loaded once, 32 bytes a step, folded so the loads cannot be optimised away.
pub fn read_baseline(data: &[u8]) -> u64 {
    let mut acc = [0u64; 4];
    let mut chunks = data.chunks_exact(32);
    for c in &mut chunks {
        for (k, a) in acc.iter_mut().enumerate() {
            *a ^= load8(c, k * 8);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(0u64, |x, &b| x.rotate_left(8) ^ u64::from(b));
    acc[0] ^ acc[1] ^ acc[2] ^ acc[3] ^ tail
}

impl ScanFilter {
    /// Calls `visit(chunk, selection)` for every chunk of up to `CHUNK` records of `data` that
    /// holds a match, `selection` the indices of its matching records in order (the selection
    /// vector the aggregates accumulate from). Returns how many records matched.
    pub fn select_chunks<F: FnMut(&[u8], &[u32])>(&self, data: &[u8], mut visit: F) -> u64 {
        let rs = self.record_size();
        self.selections(data, |k, n, sel| {
            let at = k * CHUNK * rs;
            visit(&data[at..at + n * rs], sel);
        })
    }

    /// [`ScanFilter::select_chunks`] evaluated over `narrow` (this filter is the narrow form,
    /// `projection.rs`) and visiting the same records of `raw`, whole records of `raw_size` bytes
    /// in the same order.
    pub fn select_chunks_narrow<F: FnMut(&[u8], &[u32])>(
        &self,
        narrow: &[u8],
        raw: &[u8],
        raw_size: usize,
        mut visit: F,
    ) -> u64 {
        self.selections(narrow, |k, n, sel| {
            let at = k * CHUNK * raw_size;
            visit(&raw[at..at + n * raw_size], sel);
        })
    }

    /// [`ScanFilter::filter_into`] evaluated over `narrow`, appending the matching records of
    /// `raw` (see [`ScanFilter::select_chunks_narrow`]).
    pub fn filter_into_narrow(
        &self,
        narrow: &[u8],
        raw: &[u8],
        raw_size: usize,
        out: &mut Vec<u8>,
    ) -> u64 {
        self.select_chunks_narrow(narrow, raw, raw_size, |chunk, sel| {
            out.reserve(sel.len() * raw_size);
            for &i in sel {
                let at = i as usize * raw_size;
                out.extend_from_slice(&chunk[at..at + raw_size]);
            }
        })
    }

    /// Calls `visit(k, n, selection)` for every chunk `k` of `data` (its `n` records) holding a
    /// match; returns how many records matched.
    fn selections<F: FnMut(usize, usize, &[u32])>(&self, data: &[u8], mut visit: F) -> u64 {
        let rs = self.record_size();
        let n_all = data.len() / rs;
        let data = &data[..n_all * rs];
        let subs = self.subs();
        if !self.matches_all() && subs.is_empty() {
            return 0;
        }
        let mut scratch = Scratch::new();
        let mut matched = 0u64;
        for (k, chunk) in data.chunks(CHUNK * rs).enumerate() {
            let n = chunk.len() / rs;
            let len = if self.matches_all() {
                for (i, s) in scratch.sel[..n].iter_mut().enumerate() {
                    *s = i as u32;
                }
                n
            } else if let [only] = subs {
                eval_sub(only, chunk, rs, Input::All(n), &mut scratch.sel)
            } else {
                scratch.eval_or(subs, chunk, rs, n);
                let mut m = 0;
                for (i, &h) in scratch.hit[..n].iter().enumerate() {
                    scratch.sel[m] = i as u32;
                    m += usize::from(h);
                }
                m
            };
            if len > 0 {
                visit(k, n, &scratch.sel[..len]);
                matched += len as u64;
            }
        }
        matched
    }
}
