//! Filling one field of a block of records from one column: a scalar field, a delta time field
//! (absolute time in, the delta from its source field out), or an array field (one list per row).

use super::fast::{self, DictTable, Segment};
use super::scalar::{self, time_in};
use super::source::{Chunk, Dict, Layout, Unit, Val};
use super::ColumnError;
use crate::encode::{Kind, RecordEncoder};
use crate::schema::{ByteOrder, FieldType, TimeUnit};

/// How a column's values become its field's bytes.
pub(super) enum Shape {
    Scalar,
    /// The column holds absolute times in `unit`; the field stores `absolute − source × factor`,
    /// with `source` read from the record's own source field (`source_layout`: bytes, signed).
    Delta {
        source: usize,
        source_name: String,
        source_layout: (usize, bool),
        unit: Unit,
    },
    /// `count` elements of `kind`, `size` bytes each, from the field's first byte.
    Array {
        kind: Kind,
        size: usize,
        count: usize,
    },
}

/// Width and signedness of an integer (or timestamp) field of `size` bytes, as decode reads a
/// delta's source.
pub(super) fn int_layout(ty: &FieldType, size: usize) -> Option<(usize, bool)> {
    match ty {
        FieldType::UInt(b) if *b <= 128 => Some((*b as usize / 8, false)),
        FieldType::Int(b) if *b <= 128 => Some((*b as usize / 8, true)),
        FieldType::Timestamp => Some((size, size == 8)),
        _ => None,
    }
}

/// The unit of a delta field.
pub(super) fn delta_unit(u: TimeUnit) -> Unit {
    match u {
        TimeUnit::Seconds => Unit::Seconds,
        TimeUnit::Milliseconds => Unit::Millis,
        TimeUnit::Microseconds => Unit::Micros,
        TimeUnit::Nanoseconds => Unit::Nanos,
    }
}

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Seconds => "s",
        Unit::Millis => "ms",
        Unit::Micros => "us",
        Unit::Nanos => "ns",
    }
}

/// A stored integer of up to 16 bytes in `order`.
fn read_stored(b: &[u8], signed: bool, order: ByteOrder) -> i128 {
    let mut le = [0u8; 16];
    match order {
        ByteOrder::Little => le[..b.len()].copy_from_slice(b),
        ByteOrder::Big => b.iter().rev().enumerate().for_each(|(i, &x)| le[i] = x),
    }
    if signed && b.len() < 16 && le[b.len() - 1] & 0x80 != 0 {
        le[b.len()..].fill(0xff);
    }
    i128::from_le_bytes(le)
}

/// One column's chunks and where they go.
pub(super) struct ColumnWriter<'a> {
    pub name: String,
    pub field: usize,
    pub offset: usize,
    pub size: usize,
    pub kind: Kind,
    pub shape: Shape,
    pub chunks: Vec<Chunk<'a>>,
    /// The batch row each chunk starts at.
    pub starts: Vec<usize>,
    /// By dictionary id: the entries of the dictionaries this column uses, encoded for its field
    /// (or array element).
    pub tables: Vec<Option<DictTable>>,
}

impl<'a> ColumnWriter<'a> {
    /// The encoded entries of `c`'s dictionary, when `c` is a dictionary chunk.
    fn table(&self, c: &Chunk) -> Option<&DictTable> {
        match &c.layout {
            Layout::Dictionary { dict, .. } => self.tables.get(*dict).and_then(Option::as_ref),
            _ => None,
        }
    }

    /// Fills this column's field of `recs`, whole records from batch row `first_row` on.
    pub fn write(
        &self,
        enc: &RecordEncoder,
        dicts: &[Dict<'a>],
        first_row: usize,
        recs: &mut [u8],
    ) -> Result<(), ColumnError> {
        let rs = enc.record_size;
        let n = recs.len() / rs;
        // The chunk holding `first_row` (the last one starting at or before it: empty chunks
        // before it start at the same row).
        let mut c = self
            .starts
            .partition_point(|&s| s <= first_row)
            .saturating_sub(1);
        let mut done = 0;
        while done < n && c < self.chunks.len() {
            let (chunk, row) = (&self.chunks[c], first_row + done);
            let j0 = row - self.starts[c];
            let take = chunk.len.saturating_sub(j0).min(n - done);
            self.segment(
                enc,
                dicts,
                chunk,
                j0,
                row,
                &mut recs[done * rs..(done + take) * rs],
            )?;
            done += take;
            c += 1;
        }
        Ok(())
    }

    /// Values `j0..` of `chunk` into the records of `seg` (batch rows from `row0`).
    fn segment(
        &self,
        enc: &RecordEncoder,
        dicts: &[Dict<'a>],
        chunk: &Chunk<'a>,
        j0: usize,
        row0: usize,
        seg: &mut [u8],
    ) -> Result<(), ColumnError> {
        let (off, size) = (self.offset, self.size);
        if matches!(self.shape, Shape::Scalar) && fast::enabled() {
            let (rs, table) = (enc.record_size, self.table(chunk));
            let s = Segment {
                seg: &mut *seg,
                rs,
                off,
                size,
                j0,
            };
            if fast::scalar(enc, &self.kind, chunk, table, s) {
                return Ok(());
            }
        }
        for (k, rec) in seg.chunks_exact_mut(enc.record_size).enumerate() {
            let row = row0 + k;
            let v = chunk.get(j0 + k, dicts).map_err(|m| ColumnError::Shape {
                column: self.name.clone(),
                message: format!("row {row}: {m}"),
            })?;
            let done = match &self.shape {
                Shape::Scalar => scalar::put(enc, &self.kind, &v, &mut rec[off..off + size]),
                Shape::Delta {
                    source,
                    source_name,
                    source_layout,
                    unit,
                } => {
                    let src = read_stored(
                        &rec[*source..*source + source_layout.0],
                        source_layout.1,
                        enc.order,
                    );
                    self.delta(enc, &v, src, source_name, *unit, &mut rec[off..off + size])
                }
                Shape::Array { kind, size, count } => {
                    self.array(enc, dicts, &v, (kind, *size, *count), rec)
                }
            };
            done.map_err(|message| ColumnError::Value {
                column: self.name.clone(),
                row,
                message,
            })?;
        }
        Ok(())
    }

    /// An absolute time → its delta from the source field's value `src`.
    fn delta(
        &self,
        enc: &RecordEncoder,
        v: &Val,
        src: i128,
        source_name: &str,
        unit: Unit,
        out: &mut [u8],
    ) -> Result<(), String> {
        let u = unit_name(unit);
        let abs = match v {
            Val::Null => {
                out.fill(0);
                return Ok(());
            }
            Val::Int(i) => *i,
            Val::Time(t, from) => time_in(*t, *from, unit)
                .ok_or_else(|| format!("time {t} {} does not fit in {u}", unit_name(*from)))?,
            _ => return Err("a delta time field takes integers or times".into()),
        };
        let d = src
            .checked_mul(unit.per_second())
            .and_then(|base| abs.checked_sub(base))
            .ok_or_else(|| {
                format!("time {abs} {u} is too far from field '{source_name}' ({src})")
            })?;
        scalar::integer(d, &self.kind, out, enc.order).map_err(|e| {
            format!("time {abs} {u} lies {d} {u} from field '{source_name}' ({src}): {e}")
        })
    }

    /// A list (or the array's text form, or its raw bytes) → the array field's element slots.
    fn array(
        &self,
        enc: &RecordEncoder,
        dicts: &[Dict<'a>],
        v: &Val,
        (kind, esize, count): (&Kind, usize, usize),
        rec: &mut [u8],
    ) -> Result<(), String> {
        let out = &mut rec[self.offset..self.offset + self.size];
        match v {
            Val::Null => out.fill(0),
            Val::Bin(b) => scalar::put(enc, &Kind::Bytes, &Val::Bin(b), out)?,
            Val::Utf8([]) => out.fill(0),
            Val::Utf8(b) => {
                let s = std::str::from_utf8(b)
                    .map_err(|_| "the text is not valid UTF-8".to_string())?;
                enc.encode_field(self.field, s, rec)?;
            }
            Val::List(child, a, b) => {
                let n = b - a;
                if n > count {
                    return Err(format!(
                        "the list has {n} elements, the field holds {count}"
                    ));
                }
                let table = self.table(child);
                for k in 0..n {
                    let slot = &mut out[k * esize..(k + 1) * esize];
                    if fast::enabled() && fast::dict_element(child, a + k, table, slot) {
                        continue;
                    }
                    let e = child
                        .get(a + k, dicts)
                        .map_err(|m| format!("element {k}: {m}"))?;
                    scalar::put(enc, kind, &e, slot).map_err(|m| format!("element {k}: {m}"))?;
                }
                out[n * esize..].fill(0);
            }
            _ => return Err("an array field takes lists, text or bytes".into()),
        }
        Ok(())
    }
}
