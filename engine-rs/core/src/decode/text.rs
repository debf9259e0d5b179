//! Strings and blob keys (Utf8) and raw bytes (Binary).

use super::buf::{Slots, VarBuf};
use super::{Builder, Column, DecodeError};

/// string / blob → Utf8: trailing zero padding stripped; a value that is not valid UTF-8 has each
/// invalid sequence replaced by U+FFFD (only that value allocates, valid values are copied as is).
struct Utf8 {
    name: String,
    slots: Slots,
    out: VarBuf,
    len: usize,
}

impl Builder for Utf8 {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let out = &mut self.out;
        self.slots.each(records, |v| {
            let end = v.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            let s = &v[..end];
            if std::str::from_utf8(s).is_ok() {
                out.data.extend_from_slice(s);
            } else {
                out.data
                    .extend_from_slice(String::from_utf8_lossy(s).as_bytes());
            }
            out.end_value();
        });
        self.out.check(&self.name)
    }

    fn finish(self: Box<Self>) -> Column {
        Column::var_width(self.len, self.out.finish())
    }
}

pub(crate) fn utf8(name: &str, slots: Slots, n: usize) -> Box<dyn Builder> {
    // Text is usually shorter than its padded range; half of it is a fair first reservation.
    let out = VarBuf::new(n, n * slots.width / 2);
    Box::new(Utf8 {
        name: name.to_string(),
        slots,
        out,
        len: n,
    })
}

/// bytes → Binary: the whole byte range, as stored (zero bytes included: they may be data).
struct Binary {
    name: String,
    slots: Slots,
    out: VarBuf,
    len: usize,
}

impl Builder for Binary {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let out = &mut self.out;
        self.slots.each(records, |v| {
            out.data.extend_from_slice(v);
            out.end_value();
        });
        self.out.check(&self.name)
    }

    fn finish(self: Box<Self>) -> Column {
        Column::var_width(self.len, self.out.finish())
    }
}

pub(crate) fn binary(name: &str, slots: Slots, n: usize) -> Box<dyn Builder> {
    let out = VarBuf::new(n, n * slots.width);
    Box::new(Binary {
        name: name.to_string(),
        slots,
        out,
        len: n,
    })
}
