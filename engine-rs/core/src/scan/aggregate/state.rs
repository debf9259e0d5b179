//! Accumulating a compiled aggregate over the records a filter selected: per chunk, each selected
//! record's group is found once (a direct table for one small key, else a hash map), then each
//! measure runs one loop over the selection (exact i128 / 384-bit sums, order-key min/max).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::spec::{AggFn, AggregatePlan, Read, ReadKind, MAX_GROUP_KEYS};
use super::wide::Wide;
use crate::scan::key::{key128, key256, Load64, K256};

const SIGN: u64 = 1 << 63;
/// An unused slot of a `Direct` table.
pub(super) const NONE: u32 = u32::MAX;

/// A small multiplicative hasher for group keys (integers, not attacker-chosen strings; the
/// group count is bounded by `max_groups`).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A group's key tuple (unused slots 0).
pub(super) type Keys = [u64; MAX_GROUP_KEYS];

/// How a record's key tuple finds its group.
pub(super) enum Index {
    /// No group keys: one group.
    Global,
    /// One visible unsigned key of at most 16 bits (or a boolean): key → group (`NONE`: none yet).
    Direct(Vec<u32>),
    Hash(HashMap<Keys, u32, BuildHasherDefault<KeyHasher>>),
}

/// One measure's values, one per group.
pub(super) enum Acc {
    Count(Vec<u64>),
    Sum(Vec<i128>),
    Wide(Vec<Wide>),
    Min(Vec<K256>),
    Max(Vec<K256>),
}

/// The partial aggregate of one batch in progress.
pub struct AggregateState {
    pub(super) plan: Arc<AggregatePlan>,
    pub(super) index: Index,
    /// Per group, its key tuple (group ids are indices into `keys` and each `Acc`).
    pub(super) keys: Vec<Keys>,
    pub(super) accs: Vec<Acc>,
    pub(super) overflow: bool,
    gidx: Vec<u32>,
}

/// The field's bytes as the caller reads them: `stored & mask` when part of it is hidden.
#[inline(always)]
pub(crate) fn visible<'a>(r: &Read, d: &'a [u8], at: usize, tmp: &'a mut [u8; 32]) -> &'a [u8] {
    let s = &d[at + r.off..at + r.off + r.size];
    match &r.mask {
        None => s,
        Some(m) => {
            for (i, (b, k)) in s.iter().zip(m.iter()).enumerate() {
                tmp[i] = b & k;
            }
            &tmp[..r.size]
        }
    }
}

fn k64_at(r: &Read, load: Load64, d: &[u8], at: usize) -> u64 {
    let mut tmp = [0u8; 32];
    load.key(visible(r, d, at, &mut tmp), 0)
}

/// A float key with NaN moved above every number (the order SQL engines give NaN).
#[inline(always)]
fn float_order(k: u64, float: Option<bool>) -> u64 {
    const INF: u64 = 0xfff0_0000_0000_0000;
    const NEG_INF: u64 = 0x000f_ffff_ffff_ffff;
    if float.is_some() && !(NEG_INF..=INF).contains(&k) {
        u64::MAX
    } else {
        k
    }
}

fn key_of(r: &Read, d: &[u8], at: usize) -> u64 {
    let mut tmp = [0u8; 32];
    match r.kind {
        ReadKind::Bool => u64::from(visible(r, d, at, &mut tmp).iter().any(|&b| b != 0)),
        ReadKind::K64 { load, .. } => load.key(visible(r, d, at, &mut tmp), 0),
        // Group keys are at most 64 bits (spec::compile).
        ReadKind::K128 { .. } | ReadKind::K256 { .. } => 0,
    }
}

/// A timestamp key floored to its bucket the way SQL's `ts - ts % n` does (truncating `%`).
fn bucketed(k: u64, signed: bool, n: i64) -> u64 {
    let v = if signed { (k ^ SIGN) as i64 } else { k as i64 };
    let b = v - v % n;
    if signed {
        (b as u64) ^ SIGN
    } else {
        b as u64
    }
}

impl AggregateState {
    /// An empty partial for `plan`.
    pub fn new(plan: Arc<AggregatePlan>) -> Self {
        let index = match plan.keys.as_slice() {
            [] => Index::Global,
            [k] if k.bucket.is_none()
                && k.read.visible()
                && matches!(
                    k.read.kind,
                    ReadKind::Bool
                        | ReadKind::K64 {
                            load: Load64::U8 | Load64::U16Le | Load64::U16Be,
                            ..
                        }
                ) =>
            {
                // Sized to the key's width: a batch's state is built per batch, so a 2^16 table
                // for an 8-bit enum code would be 256 KiB to fill for a few groups.
                let slots = match k.read.kind {
                    ReadKind::Bool => 2,
                    ReadKind::K64 {
                        load: Load64::U8, ..
                    } => 1 << 8,
                    _ => 1 << 16,
                };
                Index::Direct(vec![NONE; slots])
            }
            _ => Index::Hash(HashMap::default()),
        };
        let accs = plan
            .measures
            .iter()
            .map(|m| match (m.func, &m.read) {
                (AggFn::Count, _) | (_, None) => Acc::Count(Vec::new()),
                (AggFn::Sum, Some(r)) if matches!(r.kind, ReadKind::K64 { .. }) => {
                    Acc::Sum(Vec::new())
                }
                (AggFn::Sum, Some(_)) => Acc::Wide(Vec::new()),
                (AggFn::Min, Some(_)) => Acc::Min(Vec::new()),
                (AggFn::Max, Some(_)) => Acc::Max(Vec::new()),
            })
            .collect();
        AggregateState {
            plan,
            index,
            keys: Vec::new(),
            accs,
            overflow: false,
            gidx: Vec::new(),
        }
    }

    /// The plan this partial accumulates.
    pub fn plan(&self) -> &AggregatePlan {
        &self.plan
    }

    /// Whether more groups appeared than the plan's `max_groups` (the partial is then void).
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// The plan's `max_groups`.
    pub fn max_groups(&self) -> usize {
        self.plan.max_groups
    }

    /// Groups so far.
    pub fn groups(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn new_group(&mut self, k: Keys) -> u32 {
        let g = self.keys.len() as u32;
        self.keys.push(k);
        for a in &mut self.accs {
            match a {
                Acc::Count(v) => v.push(0),
                Acc::Sum(v) => v.push(0),
                Acc::Wide(v) => v.push(Wide::default()),
                Acc::Min(v) => v.push(K256::MAX_KEY),
                Acc::Max(v) => v.push(K256::MIN_KEY),
            }
        }
        g
    }

    fn group_keys(plan: &AggregatePlan, d: &[u8], at: usize) -> Keys {
        let mut k = [0u64; MAX_GROUP_KEYS];
        for (slot, key) in k.iter_mut().zip(&plan.keys) {
            let mut v = key_of(&key.read, d, at);
            if let (Some(n), ReadKind::K64 { signed, .. }) = (key.bucket, key.read.kind) {
                v = bucketed(v, signed, n);
            }
            *slot = v;
        }
        k
    }

    /// Adds the records `sel` (indices into `chunk`, whole records of the plan's size).
    pub fn add(&mut self, chunk: &[u8], sel: &[u32]) {
        let plan = Arc::clone(&self.plan);
        self.add_as(&plan, chunk, sel);
    }

    /// [`Self::add`] over narrow copies of the records: `plan` is this state's plan reading the
    /// copies' layout ([`AggregatePlan::remapped`]), `chunk` holds `plan.record_size`-byte copies.
    pub fn add_narrow(&mut self, plan: &AggregatePlan, chunk: &[u8], sel: &[u32]) {
        debug_assert_eq!(plan.keys.len(), self.plan.keys.len());
        debug_assert_eq!(plan.measures.len(), self.plan.measures.len());
        self.add_as(plan, chunk, sel);
    }

    fn add_as(&mut self, plan: &AggregatePlan, chunk: &[u8], sel: &[u32]) {
        if sel.is_empty() || self.overflow {
            return;
        }
        let rs = plan.record_size;
        let max = plan.max_groups;
        let mut gidx = std::mem::take(&mut self.gidx);
        gidx.clear();
        match &self.index {
            Index::Global => {
                if self.keys.is_empty() {
                    self.new_group([0; MAX_GROUP_KEYS]);
                }
                gidx.resize(sel.len(), 0);
            }
            Index::Direct(_) => {
                let r = plan.keys[0].read.clone();
                for &i in sel {
                    let k = key_of(&r, chunk, i as usize * rs) as usize;
                    let Index::Direct(t) = &self.index else {
                        unreachable!()
                    };
                    let mut g = t[k];
                    if g == NONE {
                        if self.keys.len() >= max {
                            self.overflow = true;
                            self.gidx = gidx;
                            return;
                        }
                        g = self.new_group([k as u64, 0, 0, 0]);
                        if let Index::Direct(t) = &mut self.index {
                            t[k] = g;
                        }
                    }
                    gidx.push(g);
                }
            }
            Index::Hash(_) => {
                for &i in sel {
                    let k = Self::group_keys(plan, chunk, i as usize * rs);
                    let Index::Hash(m) = &self.index else {
                        unreachable!()
                    };
                    let g = match m.get(&k) {
                        Some(&g) => g,
                        None => {
                            if self.keys.len() >= max {
                                self.overflow = true;
                                self.gidx = gidx;
                                return;
                            }
                            let g = self.new_group(k);
                            if let Index::Hash(m) = &mut self.index {
                                m.insert(k, g);
                            }
                            g
                        }
                    };
                    gidx.push(g);
                }
            }
        }
        for (acc, m) in self.accs.iter_mut().zip(&plan.measures) {
            accumulate(acc, m.read.as_ref(), chunk, rs, sel, &gidx);
        }
        self.gidx = gidx;
    }
}

impl K256 {
    const MIN_KEY: K256 = K256 { hi: 0, lo: 0 };
    const MAX_KEY: K256 = K256 {
        hi: u128::MAX,
        lo: u128::MAX,
    };
}

/// The sum value of a K64 key.
#[inline(always)]
fn signed_value(k: u64, signed: bool) -> i128 {
    if signed {
        i128::from((k ^ SIGN) as i64)
    } else {
        i128::from(k)
    }
}

fn wide_value(r: &Read, d: &[u8], at: usize) -> Wide {
    let mut tmp = [0u8; 32];
    let b = visible(r, d, at, &mut tmp);
    match r.kind {
        ReadKind::K128 { be, signed } => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[..16]);
            let u = if be {
                u128::from_be_bytes(a)
            } else {
                u128::from_le_bytes(a)
            };
            if signed {
                Wide::from_i128(u as i128)
            } else {
                Wide::from_u128(u)
            }
        }
        ReadKind::K256 { signed, .. } => {
            let k = order_key(r, b);
            let hi = if signed { k.hi ^ (1 << 127) } else { k.hi };
            Wide::from_256(hi, k.lo, signed)
        }
        ReadKind::K64 { .. } | ReadKind::Bool => Wide::default(),
    }
}

/// The order key (as a 256-bit key) of a field's visible bytes `b` (already masked).
pub(crate) fn order_key(r: &Read, b: &[u8]) -> K256 {
    match r.kind {
        ReadKind::K64 { load, float, .. } => K256 {
            hi: 0,
            lo: u128::from(float_order(load.key(b, 0), float)),
        },
        ReadKind::Bool => K256 {
            hi: 0,
            lo: u128::from(b.iter().any(|&x| x != 0)),
        },
        ReadKind::K128 { be, signed } => {
            let lo = match (be, signed) {
                (false, false) => key128::<false, false>(b, 0),
                (false, true) => key128::<false, true>(b, 0),
                (true, false) => key128::<true, false>(b, 0),
                (true, true) => key128::<true, true>(b, 0),
            };
            K256 { hi: 0, lo }
        }
        ReadKind::K256 { be, signed } => match (be, signed) {
            (false, false) => key256::<false, false>(b, 0),
            (false, true) => key256::<false, true>(b, 0),
            (true, false) => key256::<true, false>(b, 0),
            (true, true) => key256::<true, true>(b, 0),
        },
    }
}

fn accumulate(acc: &mut Acc, read: Option<&Read>, d: &[u8], rs: usize, sel: &[u32], gidx: &[u32]) {
    let pairs = sel.iter().zip(gidx.iter());
    match (acc, read) {
        (Acc::Count(v), _) => {
            for &g in gidx {
                v[g as usize] += 1;
            }
        }
        (
            Acc::Sum(v),
            Some(
                r @ Read {
                    kind: ReadKind::K64 { load, signed, .. },
                    ..
                },
            ),
        ) => {
            let (load, signed) = (*load, *signed);
            if r.visible() {
                let off = r.off;
                crate::scan::key::with_load64!(load, f => {
                    for (&i, &g) in pairs {
                        let k = f(d, i as usize * rs + off);
                        v[g as usize] = v[g as usize].wrapping_add(signed_value(k, signed));
                    }
                })
            } else {
                for (&i, &g) in pairs {
                    let k = k64_at(r, load, d, i as usize * rs);
                    v[g as usize] = v[g as usize].wrapping_add(signed_value(k, signed));
                }
            }
        }
        (Acc::Wide(v), Some(r)) => {
            for (&i, &g) in pairs {
                let w = wide_value(r, d, i as usize * rs);
                v[g as usize].add(&w);
            }
        }
        (Acc::Min(v), Some(r)) => {
            let mut tmp = [0u8; 32];
            for (&i, &g) in pairs {
                let k = order_key(r, visible(r, d, i as usize * rs, &mut tmp));
                let slot = &mut v[g as usize];
                if k < *slot {
                    *slot = k;
                }
            }
        }
        (Acc::Max(v), Some(r)) => {
            let mut tmp = [0u8; 32];
            for (&i, &g) in pairs {
                let k = order_key(r, visible(r, d, i as usize * rs, &mut tmp));
                let slot = &mut v[g as usize];
                if k > *slot {
                    *slot = k;
                }
            }
        }
        // Sum, min and max always have a read (spec::compile).
        _ => {}
    }
}
