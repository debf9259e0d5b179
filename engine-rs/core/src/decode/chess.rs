//! Chess columns as text: chess_move → SAN, chess_fen → FEN (the schema's pure decoders in
//! `types::chess`). A zero move code ("no move"), an all-zero position ("no position") and a packed
//! position that does not decode read as null; a move code no SAN encodes to reads as `?` (as `code_to_san` presents it).

use super::buf::{Slots, Validity, VarBuf};
use super::{Builder, Column, DecodeError};
use crate::types::chess::{code_to_san, packed_to_fen, FEN_PACKED_LEN, MOVE_CODE_LEN};

/// Bytes of a stored chess_move value.
pub(crate) const MOVE_WIDTH: usize = MOVE_CODE_LEN;
/// Bytes of a stored chess_fen value.
pub(crate) const FEN_WIDTH: usize = FEN_PACKED_LEN;

#[derive(Clone, Copy)]
enum Notation {
    San,
    Fen,
}

struct Chess {
    name: String,
    notation: Notation,
    slots: Slots,
    out: VarBuf,
    validity: Validity,
    i: usize,
    len: usize,
}

impl Builder for Chess {
    fn extend(&mut self, records: &[u8]) -> Result<(), DecodeError> {
        let (out, validity, mut i, notation) =
            (&mut self.out, &mut self.validity, self.i, self.notation);
        self.slots.each(records, |v| {
            let text = match notation {
                // The move code is big-endian whatever the dataset's byte order (docs/schema.md).
                Notation::San => match u16::from_be_bytes([v[0], v[1]]) {
                    0 => None,
                    code => Some(code_to_san(code)),
                },
                // All zero bytes are "no position" (decodes to empty text).
                Notation::Fen => packed_to_fen(&v[..FEN_PACKED_LEN])
                    .ok()
                    .filter(|f| !f.is_empty()),
            };
            match text {
                Some(t) => out.data.extend_from_slice(t.as_bytes()),
                None => validity.null_at(i),
            }
            out.end_value();
            i += 1;
        });
        self.i = i;
        self.out.check(&self.name)
    }

    fn finish(self: Box<Self>) -> Column {
        let (offsets, data) = self.out.finish();
        let (validity, null_count) = self.validity.finish();
        Column {
            len: self.len,
            null_count,
            validity,
            offsets: Some(offsets),
            data,
            child: None,
        }
    }
}

fn chess(name: &str, notation: Notation, slots: Slots, n: usize, avg: usize) -> Box<dyn Builder> {
    let out = VarBuf::new(n, n * avg);
    Box::new(Chess {
        name: name.to_string(),
        notation,
        slots,
        out,
        validity: Validity::new(n),
        i: 0,
        len: n,
    })
}

/// chess_move → SAN text.
pub(crate) fn san(name: &str, slots: Slots, n: usize) -> Box<dyn Builder> {
    chess(name, Notation::San, slots, n, 5)
}

/// chess_fen → FEN text.
pub(crate) fn fen(name: &str, slots: Slots, n: usize) -> Box<dyn Builder> {
    chess(name, Notation::Fen, slots, n, 60)
}
