//! Raw Arrow buffers: bitmaps, offsets, integers in host order, half floats, and the length
//! checks `Chunk::new` makes before any value is read.

/// A bitmap (validity, or Bool values): bit `offset + i` is value `i`, LSB first.
#[derive(Clone, Copy)]
pub(super) struct Bits<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl Bits<'_> {
    #[inline(always)]
    pub fn get(&self, i: usize) -> bool {
        let p = self.offset + i;
        self.bytes[p >> 3] >> (p & 7) & 1 == 1
    }
}

/// The offsets of a variable-width or List chunk: i32 (`Small`) or i64 (`Large`), one per value
/// plus one.
#[derive(Clone, Copy)]
pub(super) enum Offsets<'a> {
    Small(&'a [u8]),
    Large(&'a [u8]),
}

impl Offsets<'_> {
    /// Start and end of value `i`, or `None` when they are negative, decreasing or past `limit`.
    #[inline(always)]
    pub fn range(&self, i: usize, limit: usize) -> Option<(usize, usize)> {
        let (a, b) = match self {
            Offsets::Small(o) => (i64::from(read_i32(o, i)), i64::from(read_i32(o, i + 1))),
            Offsets::Large(o) => (read_i64(o, i), read_i64(o, i + 1)),
        };
        let (a, b) = (usize::try_from(a).ok()?, usize::try_from(b).ok()?);
        (a <= b && b <= limit).then_some((a, b))
    }
}

#[inline(always)]
pub(super) fn read_i32(b: &[u8], i: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[i * 4..i * 4 + 4]);
    i32::from_ne_bytes(a)
}

#[inline(always)]
pub(super) fn read_i64(b: &[u8], i: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i * 8..i * 8 + 8]);
    i64::from_ne_bytes(a)
}

/// Integer `i` of `width` bytes (1, 2, 4, 8), host order, widened to i128.
#[inline(always)]
pub(super) fn read_int(b: &[u8], i: usize, width: usize, signed: bool) -> i128 {
    let v = &b[i * width..i * width + width];
    match (width, signed) {
        (1, true) => i128::from(v[0] as i8),
        (1, false) => i128::from(v[0]),
        (2, true) => i128::from(i16::from_ne_bytes([v[0], v[1]])),
        (2, false) => i128::from(u16::from_ne_bytes([v[0], v[1]])),
        (4, true) => i128::from(read_i32(b, i)),
        (4, false) => i128::from(read_i32(b, i) as u32),
        (8, true) => i128::from(read_i64(b, i)),
        _ => i128::from(read_i64(b, i) as u64),
    }
}

/// Unit of a Timestamp or Date value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unit {
    Seconds,
    Millis,
    Micros,
    Nanos,
}

impl Unit {
    /// How many of this unit one second holds.
    pub fn per_second(self) -> i128 {
        match self {
            Unit::Seconds => 1,
            Unit::Millis => 1_000,
            Unit::Micros => 1_000_000,
            Unit::Nanos => 1_000_000_000,
        }
    }

    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s {
            "s" => Unit::Seconds,
            "ms" => Unit::Millis,
            "us" => Unit::Micros,
            "ns" => Unit::Nanos,
            _ => return None,
        })
    }
}

pub(super) fn buffer<'a>(
    buffers: &[&'a [u8]],
    at: Option<usize>,
    what: &str,
) -> Result<&'a [u8], String> {
    match at {
        Some(i) => buffers
            .get(i)
            .copied()
            .ok_or_else(|| format!("{what} buffer {i} was not passed")),
        None => Err(format!("the {what} buffer is missing")),
    }
}

pub(super) fn need(b: &[u8], bytes: Option<usize>, what: &str) -> Result<(), String> {
    match bytes {
        Some(n) if b.len() >= n => Ok(()),
        _ => Err(format!(
            "the {what} buffer holds {} bytes, too few for the chunk's length",
            b.len()
        )),
    }
}

pub(super) fn bits<'a>(
    b: &'a [u8],
    offset: usize,
    len: usize,
    what: &str,
) -> Result<Bits<'a>, String> {
    need(b, offset.checked_add(len).map(|n| n.div_ceil(8)), what)?;
    Ok(Bits { bytes: b, offset })
}

pub(super) fn int_width(bit_width: u8) -> Result<usize, String> {
    match bit_width {
        8 | 16 | 32 | 64 => Ok(bit_width as usize / 8),
        _ => Err(format!("integers of {bit_width} bits are not supported")),
    }
}

/// IEEE 754 binary16 → binary32 (exact).
pub(super) fn half_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from(h >> 10 & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value m · 2^-24, exact in f32.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | m << 13,
        (e, m) => sign | (e + 112) << 23 | m << 13,
    };
    f32::from_bits(bits)
}
