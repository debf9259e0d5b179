//! Reading Arrow chunks from raw buffers. `Chunk::new` checks a chunk's description against the
//! buffers once (every buffer long enough for the chunk's length), so reading value `j` afterwards
//! cannot run past a buffer; offsets, which are data, are checked as each value is read.

use super::plan::{ChunkDesc, TypeDesc};
pub(super) use super::raw::Unit;
use super::raw::{
    bits, buffer, half_to_f32, int_width, need, read_i32, read_i64, read_int, Bits, Offsets,
};
use crate::types::ints::U256;

/// How a chunk's values are laid out.
pub(super) enum Layout<'a> {
    Null,
    Int {
        width: usize,
        signed: bool,
        values: &'a [u8],
    },
    Float {
        width: usize,
        values: &'a [u8],
    },
    Bool(Bits<'a>),
    /// Decimal128 (4 words) or Decimal256 (8 words), little-endian 32-bit words.
    Decimal {
        words: usize,
        scale: u8,
        values: &'a [u8],
    },
    /// Utf8 / LargeUtf8 (`utf8`) or Binary / LargeBinary.
    Var {
        utf8: bool,
        offsets: Offsets<'a>,
        data: &'a [u8],
    },
    FixedBinary {
        width: usize,
        values: &'a [u8],
    },
    /// Timestamp (8-byte values in `unit`), Date64 (8-byte ms) or Date32 (4-byte days).
    Time {
        days: bool,
        unit: Unit,
        values: &'a [u8],
    },
    Dictionary {
        width: usize,
        signed: bool,
        indices: &'a [u8],
        dict: usize,
    },
    List {
        offsets: Offsets<'a>,
        child: Box<Chunk<'a>>,
    },
    FixedList {
        size: usize,
        child: Box<Chunk<'a>>,
    },
}

/// One chunk of a column, checked against its buffers.
pub(super) struct Chunk<'a> {
    pub len: usize,
    pub ty: TypeDesc,
    validity: Option<Bits<'a>>,
    pub layout: Layout<'a>,
}

/// One value read from a chunk.
pub(super) enum Val<'v> {
    Null,
    Int(i128),
    F32(f32),
    F64(f64),
    Bool(bool),
    /// A decimal's unscaled value (two's complement, sign-extended to 256 bits) and its scale.
    Dec(U256, u8),
    Utf8(&'v [u8]),
    Bin(&'v [u8]),
    Time(i128, Unit),
    /// Elements `start..end` of a list's element chunk.
    List(&'v Chunk<'v>, usize, usize),
}

/// A dictionary: the chunks of the dictionary vector, values numbered across them.
pub(super) struct Dict<'a> {
    chunks: Vec<Chunk<'a>>,
    starts: Vec<usize>,
    len: usize,
}

impl<'a> Dict<'a> {
    pub fn new(chunks: Vec<Chunk<'a>>) -> Result<Self, String> {
        let mut starts = Vec::with_capacity(chunks.len());
        let mut len = 0usize;
        for c in &chunks {
            if matches!(
                c.layout,
                Layout::Dictionary { .. } | Layout::List { .. } | Layout::FixedList { .. }
            ) {
                return Err(format!("a dictionary of {} values is not supported", c.ty));
            }
            if chunks[0].ty != c.ty {
                return Err(format!(
                    "dictionary chunks mix {} and {}",
                    chunks[0].ty, c.ty
                ));
            }
            starts.push(len);
            len += c.len;
        }
        Ok(Dict {
            chunks,
            starts,
            len,
        })
    }

    /// The Arrow type of the dictionary's values (None when it has no chunks).
    pub fn value_type(&self) -> Option<&TypeDesc> {
        self.chunks.first().map(|c| &c.ty)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Value `i` (an error past the end).
    pub fn get(&self, i: usize) -> Result<Val<'_>, String> {
        if i >= self.len {
            return Err(format!(
                "dictionary index {i} is past the dictionary's {} values",
                self.len
            ));
        }
        let c = self.starts.partition_point(|&s| s <= i) - 1;
        self.chunks[c].get(i - self.starts[c], &[])
    }
}

impl<'a> Chunk<'a> {
    /// Checks `d` against `buffers` (and `dicts`, the number of dictionaries there are).
    pub fn new(d: &ChunkDesc, buffers: &[&'a [u8]], dicts: usize) -> Result<Self, String> {
        let len = d.length;
        let validity = match d.validity {
            Some(_) => Some(bits(
                buffer(buffers, d.validity, "validity")?,
                d.offset,
                len,
                "validity",
            )?),
            None => None,
        };
        let fixed = |width: usize, what: &str| -> Result<&'a [u8], String> {
            if len == 0 && d.values.is_none() {
                return Ok(&[]);
            }
            let v = buffer(buffers, d.values, what)?;
            need(v, len.checked_mul(width), what)?;
            Ok(v)
        };
        let offsets = |large: bool| -> Result<Offsets<'a>, String> {
            // No values: nothing to read, whatever the buffer (apache-arrow leaves it empty).
            if len == 0 {
                return Ok(Offsets::Small(&[0, 0, 0, 0]));
            }
            let o = buffer(buffers, d.offsets, "offsets")?;
            let w = if large { 8 } else { 4 };
            need(
                o,
                len.checked_add(1).and_then(|n| n.checked_mul(w)),
                "offsets",
            )?;
            Ok(if large {
                Offsets::Large(o)
            } else {
                Offsets::Small(o)
            })
        };
        let child = |min: Option<usize>| -> Result<Box<Chunk<'a>>, String> {
            let c = d
                .child
                .as_ref()
                .ok_or("the list's element chunk is missing")?;
            let c = Chunk::new(c, buffers, dicts).map_err(|e| format!("list elements: {e}"))?;
            if min.is_none_or(|m| c.len < m) {
                return Err(format!(
                    "the list's element chunk holds {} values, too few",
                    c.len
                ));
            }
            Ok(Box::new(c))
        };
        let layout = match &d.ty {
            TypeDesc::Null => Layout::Null,
            TypeDesc::Int { bit_width, signed } => {
                let width = int_width(*bit_width)?;
                Layout::Int {
                    width,
                    signed: *signed,
                    values: fixed(width, "values")?,
                }
            }
            TypeDesc::Float { bit_width } => {
                let width = match bit_width {
                    16 | 32 | 64 => *bit_width as usize / 8,
                    _ => return Err(format!("floats of {bit_width} bits are not supported")),
                };
                Layout::Float {
                    width,
                    values: fixed(width, "values")?,
                }
            }
            TypeDesc::Bool => {
                let v = if len == 0 {
                    &[][..]
                } else {
                    buffer(buffers, d.values, "values")?
                };
                Layout::Bool(bits(v, d.offset, len, "values")?)
            }
            TypeDesc::Decimal {
                bit_width, scale, ..
            } => {
                let words = match bit_width {
                    128 => 4,
                    256 => 8,
                    _ => return Err(format!("decimals of {bit_width} bits are not supported")),
                };
                let scale = u8::try_from(*scale)
                    .ok()
                    .filter(|s| *s <= 76)
                    .ok_or_else(|| format!("decimal scale {scale} is not supported (0..76)"))?;
                Layout::Decimal {
                    words,
                    scale,
                    values: fixed(words * 4, "values")?,
                }
            }
            TypeDesc::Utf8 | TypeDesc::LargeUtf8 | TypeDesc::Binary | TypeDesc::LargeBinary => {
                let large = matches!(d.ty, TypeDesc::LargeUtf8 | TypeDesc::LargeBinary);
                let data = match d.values {
                    None if len == 0 => &[][..],
                    at => buffer(buffers, at, "data")?,
                };
                Layout::Var {
                    utf8: matches!(d.ty, TypeDesc::Utf8 | TypeDesc::LargeUtf8),
                    offsets: offsets(large)?,
                    data,
                }
            }
            TypeDesc::FixedSizeBinary { byte_width } => Layout::FixedBinary {
                width: *byte_width,
                values: fixed(*byte_width, "values")?,
            },
            TypeDesc::Timestamp { unit } => {
                let unit =
                    Unit::parse(unit).ok_or_else(|| format!("unknown time unit {unit:?}"))?;
                Layout::Time {
                    days: false,
                    unit,
                    values: fixed(8, "values")?,
                }
            }
            TypeDesc::Date { unit } => {
                let days = unit == "day";
                if !days && unit != "ms" {
                    return Err(format!("unknown date unit {unit:?}"));
                }
                let values = fixed(if days { 4 } else { 8 }, "values")?;
                Layout::Time {
                    days,
                    unit: Unit::Millis,
                    values,
                }
            }
            TypeDesc::Dictionary { bit_width, signed } => {
                let width = int_width(*bit_width)?;
                let dict = d
                    .dictionary
                    .filter(|&i| i < dicts)
                    .ok_or("the dictionary chunk names no dictionary")?;
                Layout::Dictionary {
                    width,
                    signed: *signed,
                    indices: fixed(width, "indices")?,
                    dict,
                }
            }
            TypeDesc::List | TypeDesc::LargeList => {
                let offsets = offsets(d.ty == TypeDesc::LargeList)?;
                Layout::List {
                    offsets,
                    child: child(Some(0))?,
                }
            }
            TypeDesc::FixedSizeList { list_size } => Layout::FixedList {
                size: *list_size,
                child: child(len.checked_mul(*list_size))?,
            },
            TypeDesc::Other { .. } => Layout::Null,
        };
        Ok(Chunk {
            len,
            ty: d.ty.clone(),
            validity,
            layout,
        })
    }

    /// False when value `j` is null by the validity bitmap.
    #[inline(always)]
    pub fn valid(&self, j: usize) -> bool {
        self.validity.is_none_or(|v| v.get(j))
    }

    /// Value `j` (`j < len`); `dicts` resolves a Dictionary chunk's indices.
    #[inline]
    pub fn get<'v>(&'v self, j: usize, dicts: &'v [Dict<'a>]) -> Result<Val<'v>, String> {
        if self.validity.is_some_and(|v| !v.get(j)) {
            return Ok(Val::Null);
        }
        Ok(match &self.layout {
            Layout::Null => Val::Null,
            Layout::Int {
                width,
                signed,
                values,
            } => Val::Int(read_int(values, j, *width, *signed)),
            Layout::Float { width: 4, values } => {
                Val::F32(f32::from_bits(read_i32(values, j) as u32))
            }
            Layout::Float { width: 8, values } => {
                Val::F64(f64::from_bits(read_i64(values, j) as u64))
            }
            Layout::Float { values, .. } => Val::F32(half_to_f32(u16::from_ne_bytes([
                values[2 * j],
                values[2 * j + 1],
            ]))),
            Layout::Bool(b) => Val::Bool(b.get(j)),
            Layout::Decimal {
                words,
                scale,
                values,
            } => {
                let mut v: U256 = [0; 4];
                for (k, limb) in v.iter_mut().enumerate().take(words / 2) {
                    *limb = read_i64(values, j * words / 2 + k) as u64;
                }
                if *words == 4 && (v[1] as i64) < 0 {
                    v[2] = u64::MAX;
                    v[3] = u64::MAX;
                }
                Val::Dec(v, *scale)
            }
            Layout::Var {
                utf8,
                offsets,
                data,
            } => {
                let (a, b) = offsets
                    .range(j, data.len())
                    .ok_or("the offsets point outside the data buffer")?;
                if *utf8 {
                    Val::Utf8(&data[a..b])
                } else {
                    Val::Bin(&data[a..b])
                }
            }
            Layout::FixedBinary { width, values } => Val::Bin(&values[j * width..(j + 1) * width]),
            Layout::Time {
                days: true, values, ..
            } => Val::Time(i128::from(read_i32(values, j)) * 86_400, Unit::Seconds),
            Layout::Time { unit, values, .. } => Val::Time(i128::from(read_i64(values, j)), *unit),
            Layout::Dictionary {
                width,
                signed,
                indices,
                dict,
            } => {
                let i = read_int(indices, j, *width, *signed);
                let d = &dicts[*dict];
                let i =
                    usize::try_from(i).map_err(|_| format!("dictionary index {i} is negative"))?;
                return d.get(i);
            }
            Layout::List { offsets, child } => {
                let (a, b) = offsets
                    .range(j, child.len)
                    .ok_or("the list offsets point outside the element chunk")?;
                Val::List(child, a, b)
            }
            Layout::FixedList { size, child } => Val::List(child, j * size, (j + 1) * size),
        })
    }
}
