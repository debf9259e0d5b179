//! Exact wide integers for aggregates: a 384-bit two's-complement accumulator (sums of up to
//! 2^64 values of 256 bits cannot overflow it) and its decimal text.

/// A signed 384-bit integer, little-endian 64-bit limbs, two's complement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wide(pub [u64; 6]);

impl Wide {
    /// `v` sign-extended.
    pub fn from_i128(v: i128) -> Wide {
        let ext = if v < 0 { u64::MAX } else { 0 };
        let u = v as u128;
        Wide([u as u64, (u >> 64) as u64, ext, ext, ext, ext])
    }

    /// `v` zero-extended.
    pub fn from_u128(v: u128) -> Wide {
        Wide([v as u64, (v >> 64) as u64, 0, 0, 0, 0])
    }

    /// A 256-bit value given as its high and low halves, sign-extended when `signed`.
    pub fn from_256(hi: u128, lo: u128, signed: bool) -> Wide {
        let ext = if signed && hi >> 127 == 1 {
            u64::MAX
        } else {
            0
        };
        Wide([
            lo as u64,
            (lo >> 64) as u64,
            hi as u64,
            (hi >> 64) as u64,
            ext,
            ext,
        ])
    }

    /// `self += other`, wrapping at 384 bits (unreachable for sums of fewer than 2^64 values).
    pub fn add(&mut self, other: &Wide) {
        let mut carry = 0u64;
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            let (s1, c1) = a.overflowing_add(*b);
            let (s2, c2) = s1.overflowing_add(carry);
            *a = s2;
            carry = u64::from(c1) + u64::from(c2);
        }
    }

    fn is_negative(&self) -> bool {
        self.0[5] >> 63 == 1
    }

    fn negated(&self) -> Wide {
        let mut out = Wide(self.0.map(|l| !l));
        out.add(&Wide([1, 0, 0, 0, 0, 0]));
        out
    }

    /// Divides the magnitude in place by `d`, returning the remainder.
    fn div_rem(&mut self, d: u64) -> u64 {
        let mut rem = 0u128;
        for l in self.0.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*l);
            *l = (cur / u128::from(d)) as u64;
            rem = cur % u128::from(d);
        }
        rem as u64
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&l| l == 0)
    }
}

impl std::fmt::Display for Wide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const BASE: u64 = 1_000_000_000_000_000_000;
        let neg = self.is_negative();
        let mut m = if neg { self.negated() } else { *self };
        let mut parts = Vec::new();
        loop {
            parts.push(m.div_rem(BASE));
            if m.is_zero() {
                break;
            }
        }
        if neg {
            f.write_str("-")?;
        }
        let mut it = parts.iter().rev();
        if let Some(first) = it.next() {
            write!(f, "{first}")?;
        }
        for p in it {
            write!(f, "{p:018}")?;
        }
        Ok(())
    }
}
