//! A small deterministic byte mutator (no coverage feedback) for replaying the seed corpus with
//! variations inside `cargo test`: bit flips, interesting values, byte runs inserted, removed and
//! duplicated, splices with another seed. The coverage-guided runs are libFuzzer's.

/// xorshift64*: the same seed gives the same inputs on every machine.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced by a fixed odd value).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

const INTERESTING: [u8; 10] = [0, 1, 0x7f, 0x80, 0xff, b'"', b'{', b'[', b'\n', b','];

/// A mutation of `seed` (1 to 4 edits), splicing from `other` sometimes.
pub fn mutate(seed: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(8) {
            0 | 1 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            2 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            3 if !d.is_empty() => {
                let i = rng.below(d.len());
                let n = 1 + rng.below((d.len() - i).min(16));
                d.drain(i..i + n);
            }
            4 => {
                let i = rng.below(d.len() + 1);
                let b = INTERESTING[rng.below(INTERESTING.len())];
                d.splice(i..i, std::iter::repeat_n(b, 1 + rng.below(8)));
            }
            5 if !d.is_empty() => {
                let i = rng.below(d.len());
                let n = 1 + rng.below((d.len() - i).min(32));
                let chunk = d[i..i + n].to_vec();
                let at = rng.below(d.len() + 1);
                d.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                let cut = rng.below(d.len() + 1);
                let from = rng.below(other.len());
                d.truncate(cut);
                d.extend_from_slice(&other[from..]);
            }
            _ if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] = rng.next_u64() as u8;
            }
            _ => d.push(rng.next_u64() as u8),
        }
    }
    d
}
