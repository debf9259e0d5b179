//! A naive reference for the tests: values parsed from the texts the records were written from,
//! compared with plain Rust operators (no order keys, no masks); the seeded generator is the crate's
//! (`crate::test_rng`).

use std::cmp::Ordering;

use crate::scan::FilterOp;
use crate::types::ints::parse_magnitude;

pub use crate::test_rng::Rng;

/// A value as the reference sees it.
#[derive(Clone, Debug)]
pub enum V {
    /// Sign and magnitude of an integer (numerics scaled), so 256-bit values compare exactly.
    I(bool, [u64; 4]),
    F(f64),
    B(bool),
    /// Text with its padding removed (string, blob), or the whole padded field (bytes, fen).
    Bytes(Vec<u8>),
}

fn cmp_mag(a: &[u64; 4], b: &[u64; 4]) -> Ordering {
    a.iter().rev().cmp(b.iter().rev())
}

impl V {
    pub fn cmp(&self, o: &V) -> Option<Ordering> {
        match (self, o) {
            (V::I(an, am), V::I(bn, bm)) => {
                let az = *am == [0; 4];
                let bz = *bm == [0; 4];
                let an = *an && !az;
                let bn = *bn && !bz;
                Some(match (an, bn) {
                    (false, false) => cmp_mag(am, bm),
                    (true, true) => cmp_mag(bm, am),
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                })
            }
            (V::F(a), V::F(b)) => a.partial_cmp(b),
            (V::B(a), V::B(b)) => Some(a.cmp(b)),
            (V::Bytes(a), V::Bytes(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
    fn eq(&self, o: &V) -> bool {
        self.cmp(o) == Some(Ordering::Equal)
    }
    pub fn is_null(&self) -> bool {
        match self {
            V::I(_, m) => *m == [0; 4],
            V::Bytes(b) => b.iter().all(|&c| c == 0),
            _ => false,
        }
    }
}

/// Integer text → V (decimal or hex, signed).
pub fn int(text: &str) -> V {
    let (neg, m) = parse_magnitude(text).expect("test integer");
    V::I(neg, m)
}

/// Decimal text scaled by `scale` → V (the test texts never have more digits than the scale).
pub fn numeric(text: &str, scale: usize) -> V {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut frac = frac.to_string();
    while frac.len() < scale {
        frac.push('0');
    }
    int(&format!("{whole}{frac}"))
}

/// Hex → bytes, zero-padded to `size`.
pub fn hex(text: &str, size: usize) -> Vec<u8> {
    let mut out = vec![0u8; size];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).expect("ascii");
        out[i] = u8::from_str_radix(s, 16).expect("hex");
    }
    out
}

/// The reference result of `op` with operands `vals` on a record value `x`.
pub fn holds(op: FilterOp, x: &V, vals: &[V]) -> bool {
    use FilterOp::*;
    let c = |v: &V| x.cmp(v);
    match op {
        Eq => x.eq(&vals[0]),
        Ne => !x.eq(&vals[0]),
        Lt => c(&vals[0]) == Some(Ordering::Less),
        Le => matches!(c(&vals[0]), Some(Ordering::Less | Ordering::Equal)),
        Gt => c(&vals[0]) == Some(Ordering::Greater),
        Ge => matches!(c(&vals[0]), Some(Ordering::Greater | Ordering::Equal)),
        Between => {
            matches!(c(&vals[0]), Some(Ordering::Greater | Ordering::Equal))
                && matches!(c(&vals[1]), Some(Ordering::Less | Ordering::Equal))
        }
        In => vals.iter().any(|v| x.eq(v)),
        IsNull => x.is_null(),
        IsNotNull => !x.is_null(),
        Prefix => match (x, &vals[0]) {
            (V::Bytes(a), V::Bytes(p)) => a.starts_with(p),
            _ => false,
        },
        MaskedEq | ListContains | NotListContains => unreachable!("tested elsewhere"),
    }
}
