//! Wide and exact numbers: numeric(p,s) as Decimal128/256, 128-bit integers as Decimal256(39,0),
//! 256-bit integers as decimal text (their 78 digits exceed Decimal256's 76).

use super::buf::{arr, Prim, Slots, Validity, VarBuf};
use super::{Builder, Column, DecodeError};

/// A 256-bit two's-complement integer as four little-endian u64 limbs.
type U256 = [u64; 4];

fn read256<const BIG: bool>(v: &[u8]) -> U256 {
    let mut le: [u8; 32] = arr(v);
    if BIG {
        le.reverse();
    }
    let mut limbs = [0u64; 4];
    for (l, c) in limbs.iter_mut().zip(le.chunks_exact(8)) {
        *l = u64::from_le_bytes(arr(c));
    }
    limbs
}

fn from_i128(v: i128) -> U256 {
    let ext = if v < 0 { u64::MAX } else { 0 };
    [v as u64, (v as u128 >> 64) as u64, ext, ext]
}

fn from_u128(v: u128) -> U256 {
    [v as u64, (v >> 64) as u64, 0, 0]
}

fn is_negative(v: &U256) -> bool {
    v[3] >> 63 == 1
}

/// Two's-complement negation (|v| for a negative v; i256::MIN maps to itself, read as unsigned).
fn negate(v: &U256) -> U256 {
    let mut out = [0u64; 4];
    let mut carry = true;
    for (o, l) in out.iter_mut().zip(v.iter()) {
        let (s, c) = (!l).overflowing_add(u64::from(carry));
        *o = s;
        carry = c;
    }
    out
}

/// Magnitude comparison `a < b` of unsigned 256-bit values.
fn less(a: &U256, b: &U256) -> bool {
    for i in (0..4).rev() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
    }
    false
}

/// 10^p as a 256-bit value, or `None` when it does not fit (p > 77).
fn pow10(p: u32) -> Option<U256> {
    let mut v: U256 = [1, 0, 0, 0];
    for _ in 0..p {
        let mut carry = 0u128;
        for l in v.iter_mut() {
            let x = *l as u128 * 10 + carry;
            *l = x as u64;
            carry = x >> 64;
        }
        if carry != 0 {
            return None;
        }
    }
    Some(v)
}

/// Appends the decimal digits of `v` (signed when `signed`).
fn push_decimal(out: &mut Vec<u8>, v: &U256, signed: bool) {
    let mut mag = *v;
    if signed && is_negative(v) {
        out.push(b'-');
        mag = negate(v);
    }
    // Divide by 10^19 repeatedly; each remainder is 19 digits (the last one unpadded).
    const TEN19: u64 = 10_000_000_000_000_000_000;
    let mut parts = [0u64; 5];
    let mut n = 0;
    while mag != [0; 4] || n == 0 {
        let mut rem = 0u128;
        for l in mag.iter_mut().rev() {
            let cur = (rem << 64) | *l as u128;
            *l = (cur / TEN19 as u128) as u64;
            rem = cur % TEN19 as u128;
        }
        parts[n] = rem as u64;
        n += 1;
    }
    push_u64(out, parts[n - 1], 1);
    for p in parts[..n - 1].iter().rev() {
        push_u64(out, *p, 19);
    }
}

/// Appends `v` in decimal, zero-padded on the left to at least `min_digits`.
fn push_u64(out: &mut Vec<u8>, mut v: u64, min_digits: usize) {
    let mut buf = [b'0'; 20];
    let mut at = buf.len();
    while v > 0 {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    at = at.min(buf.len() - min_digits);
    out.extend_from_slice(&buf[at..]);
}

/// Writes the low `words` 32-bit words of `v`, least significant first (Arrow's decimal layout).
#[inline(always)]
fn put_words(dst: &mut [u8], v: &U256, words: usize) {
    for (w, d) in dst.chunks_exact_mut(4).take(words).enumerate() {
        let limb = v[w / 2];
        let word = if w % 2 == 0 {
            limb as u32
        } else {
            (limb >> 32) as u32
        };
        d.copy_from_slice(&word.to_ne_bytes());
    }
}

/// uint128 / int128 → Decimal256(39, 0): every 128-bit value, exactly.
struct Int128<const BIG: bool> {
    slots: Slots,
    signed: bool,
    data: Vec<u8>,
    pos: usize,
    len: usize,
}

impl<const BIG: bool> Builder for Int128<BIG> {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let end = self.pos + self.slots.values_in(records) * 32;
        let mut out = self.data[self.pos..end].chunks_exact_mut(32);
        let signed = self.signed;
        self.slots.each(records, |v| {
            let x = if signed {
                from_i128(i128::read::<BIG>(v))
            } else {
                from_u128(u128::read::<BIG>(v))
            };
            if let Some(dst) = out.next() {
                put_words(dst, &x, 8);
            }
        });
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

pub(crate) fn int128(signed: bool, slots: Slots, big: bool, n: usize) -> Box<dyn Builder> {
    let data = vec![0u8; n * 32];
    if big {
        Box::new(Int128::<true> {
            slots,
            signed,
            data,
            pos: 0,
            len: n,
        })
    } else {
        Box::new(Int128::<false> {
            slots,
            signed,
            data,
            pos: 0,
            len: n,
        })
    }
}

/// uint256 / int256 → Utf8 decimal text.
struct Text256<const BIG: bool> {
    name: String,
    slots: Slots,
    signed: bool,
    out: VarBuf,
    len: usize,
}

impl<const BIG: bool> Builder for Text256<BIG> {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let (out, signed) = (&mut self.out, self.signed);
        self.slots.each(records, |v| {
            push_decimal(&mut out.data, &read256::<BIG>(v), signed);
            out.end_value();
        });
        self.out.check(&self.name)
    }

    fn finish(self: Box<Self>) -> Column {
        Column::var_width(self.len, self.out.finish())
    }
}

pub(crate) fn text256(
    name: &str,
    signed: bool,
    slots: Slots,
    big: bool,
    n: usize,
) -> Box<dyn Builder> {
    let out = VarBuf::new(n, n * 24);
    let name = name.to_string();
    if big {
        Box::new(Text256::<true> {
            name,
            slots,
            signed,
            out,
            len: n,
        })
    } else {
        Box::new(Text256::<false> {
            name,
            slots,
            signed,
            out,
            len: n,
        })
    }
}

/// numeric(p,s) stored in `width` bytes → Decimal(p,s) of `bit_width` bits. The stored integer is
/// the unscaled value; one whose magnitude reaches 10^p does not fit the declared type and reads as
/// null (the encoder never writes one).
struct Numeric<const BIG: bool> {
    slots: Slots,
    width: usize,
    /// 10^p, or `None` when every storable value fits.
    limit: Option<U256>,
    words: usize,
    data: Vec<u8>,
    validity: Validity,
    i: usize,
    len: usize,
}

impl<const BIG: bool> Builder for Numeric<BIG> {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let (width, limit, words) = (self.width, self.limit, self.words);
        let (data, validity, mut i) = (&mut self.data, &mut self.validity, self.i);
        let stride = words * 4;
        self.slots.each(records, |v| {
            let x = match width {
                4 => from_i128(i32::read::<BIG>(v).into()),
                8 => from_i128(i64::read::<BIG>(v).into()),
                16 => from_i128(i128::read::<BIG>(v)),
                _ => read256::<BIG>(v),
            };
            let fits = match &limit {
                // |i256::MIN| negates to itself, 2^255 read unsigned: above every 10^p that fits.
                Some(l) => less(&if is_negative(&x) { negate(&x) } else { x }, l),
                None => true,
            };
            if fits {
                put_words(&mut data[i * stride..(i + 1) * stride], &x, words);
            } else {
                validity.null_at(i);
            }
            i += 1;
        });
        self.i = i;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Column {
        let (validity, null_count) = self.validity.finish();
        Column {
            len: self.len,
            null_count,
            validity,
            offsets: None,
            data: self.data,
            child: None,
        }
    }
}

pub(crate) fn numeric(
    precision: u8,
    width: usize,
    bit_width: u16,
    slots: Slots,
    big: bool,
    n: usize,
) -> Box<dyn Builder> {
    // Storage of 16 bytes or fewer cannot exceed 10^39; a precision above that needs no check.
    let needs_check = width == 32 || precision <= 38;
    let limit = if needs_check {
        pow10(precision as u32)
    } else {
        None
    };
    let words = bit_width as usize / 32;
    let data = vec![0u8; n * words * 4];
    let validity = Validity::new(n);
    if big {
        Box::new(Numeric::<true> {
            slots,
            width,
            limit,
            words,
            data,
            validity,
            i: 0,
            len: n,
        })
    } else {
        Box::new(Numeric::<false> {
            slots,
            width,
            limit,
            words,
            data,
            validity,
            i: 0,
            len: n,
        })
    }
}

#[cfg(test)]
pub(crate) fn decimal_text(v: &[u8], signed: bool) -> String {
    let mut out = Vec::new();
    let mut limbs = [0u64; 4];
    for (l, c) in limbs.iter_mut().zip(v.chunks_exact(8)) {
        *l = u64::from_le_bytes(arr(c));
    }
    push_decimal(&mut out, &limbs, signed);
    String::from_utf8_lossy(&out).into_owned()
}
