//! Chess values: chess_move (SAN) as a 2-byte move code and chess_fen (FEN) as a 28-byte packed
//! position. Both layouts are fixed (independent of the dataset's byte order) and documented in
//! docs/schema.md; both directions are pure functions so the decoder and the query pushdown share
//! them.

mod fen;
mod san;

pub use fen::{fen_to_packed, packed_to_fen, FEN_BOARD_OFFSET, FEN_FLAGS_OFFSET, FEN_PACKED_LEN};
pub use san::{code_to_san, san_to_code, MOVE_CODE_LEN};

/// A chess value that cannot be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChessError(pub String);

/// Square index: a1 = 0, b1 = 1, ..., h1 = 7, a2 = 8, ..., h8 = 63.
pub fn square_index(file: u8, rank: u8) -> u8 {
    rank * 8 + file
}

/// Square name such as `e4`.
pub fn square_name(sq: u8) -> String {
    let mut s = String::with_capacity(2);
    s.push((b'a' + sq % 8) as char);
    s.push((b'1' + sq / 8) as char);
    s
}

/// Parses a square name such as `e4`.
pub fn parse_square(s: &str) -> Option<u8> {
    match s.as_bytes() {
        [f @ b'a'..=b'h', r @ b'1'..=b'8'] => Some(square_index(f - b'a', r - b'1')),
        _ => None,
    }
}
