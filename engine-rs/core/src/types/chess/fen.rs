//! chess_fen: a FEN position packed into 30 bytes, laid out so the pushed-down predicates are
//! masked byte comparisons:
//!
//! ```text
//! 0..8    occupancy bitboard: byte r holds rank r+1, bit f (1 << f) file f — fen_occupied(sq) is
//!         byte sq/8 & (1 << sq%8)
//! 8       flags: bit 0 side to move (0 white, 1 black) — fen_turn is byte 8 & 0x01;
//!         bits 1-4 castling rights K, Q, k, q
//! 9       en passant target: 0 none, else 0x80 | square
//! 10..12  halfmove clock, big-endian u16
//! 12..14  fullmove number, big-endian u16
//! 14..30  piece codes, 4 bits each, for the occupied squares in square order (a1, b1, ..., h8),
//!         high nibble first; P N B R Q K = 1..6, black adds 8; unused nibbles 0
//! ```

use super::{parse_square, square_name, ChessError};

/// Bytes of a packed position.
pub const FEN_PACKED_LEN: usize = 30;
/// Offset of the flags byte (side to move, castling).
pub const FEN_FLAGS_OFFSET: usize = 8;
/// Offset of the piece nibbles.
pub const FEN_BOARD_OFFSET: usize = 14;
const MAX_PIECES: usize = 32;
const PIECES: &[u8; 6] = b"PNBRQK";

fn err(fen: &str, why: &str) -> ChessError {
    ChessError(format!("not a FEN position: {fen:?} ({why})"))
}

fn piece_code(c: u8) -> Option<u8> {
    let i = PIECES.iter().position(|&p| p == c.to_ascii_uppercase())? as u8 + 1;
    Some(if c.is_ascii_lowercase() { i | 8 } else { i })
}

/// Packs a FEN (4 to 6 fields; missing clocks read as `0 1`) into `out[..FEN_PACKED_LEN]`.
pub fn fen_to_packed(fen: &str, out: &mut [u8]) -> Result<(), ChessError> {
    if out.len() < FEN_PACKED_LEN {
        return Err(ChessError(format!(
            "a packed position needs {FEN_PACKED_LEN} bytes"
        )));
    }
    let out = &mut out[..FEN_PACKED_LEN];
    out.fill(0);
    let parts: Vec<&str> = fen.split(' ').collect();
    if !(4..=6).contains(&parts.len()) {
        return Err(err(fen, "expected 4 to 6 space-separated fields"));
    }
    let ranks: Vec<&str> = parts[0].split('/').collect();
    if ranks.len() != 8 {
        return Err(err(fen, "piece placement needs 8 ranks"));
    }
    let mut board = [0u8; 64];
    for (i, row) in ranks.iter().enumerate() {
        let rank = 7 - i as u8;
        let mut file = 0u8;
        for &c in row.as_bytes() {
            if (b'1'..=b'8').contains(&c) {
                file += c - b'0';
            } else {
                let code = piece_code(c).ok_or_else(|| err(fen, "unknown piece letter"))?;
                if file >= 8 {
                    return Err(err(fen, "rank longer than 8 squares"));
                }
                board[(rank * 8 + file) as usize] = code;
                file += 1;
            }
            if file > 8 {
                return Err(err(fen, "rank longer than 8 squares"));
            }
        }
        if file != 8 {
            return Err(err(fen, "rank shorter than 8 squares"));
        }
    }
    let mut n = 0;
    for (sq, &code) in board.iter().enumerate() {
        if code != 0 {
            if n == MAX_PIECES {
                return Err(err(fen, "more than 32 pieces"));
            }
            out[sq / 8] |= 1 << (sq % 8);
            out[FEN_BOARD_OFFSET + n / 2] |= if n % 2 == 0 { code << 4 } else { code };
            n += 1;
        }
    }
    out[FEN_FLAGS_OFFSET] = match parts[1] {
        "w" => 0,
        "b" => 1,
        _ => return Err(err(fen, "side to move must be w or b")),
    };
    if parts[2] != "-" {
        let mut seen = 0u8;
        for c in parts[2].bytes() {
            let bit = match c {
                b'K' => 1,
                b'Q' => 2,
                b'k' => 4,
                b'q' => 8,
                _ => return Err(err(fen, "castling rights are KQkq or -")),
            };
            if seen & bit != 0 || seen > bit {
                return Err(err(
                    fen,
                    "castling rights must be in KQkq order without repeats",
                ));
            }
            seen |= bit;
        }
        out[FEN_FLAGS_OFFSET] |= seen << 1;
    }
    if parts[3] != "-" {
        let sq = parse_square(parts[3]).ok_or_else(|| err(fen, "bad en passant square"))?;
        out[9] = 0x80 | sq;
    }
    let clock = |s: Option<&&str>, default: u16, what: &str| -> Result<u16, ChessError> {
        match s {
            None => Ok(default),
            Some(t) if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) => {
                t.parse::<u16>().map_err(|_| err(fen, what))
            }
            Some(_) => Err(err(fen, what)),
        }
    };
    out[10..12]
        .copy_from_slice(&clock(parts.get(4), 0, "halfmove clock must be 0..65535")?.to_be_bytes());
    out[12..14].copy_from_slice(
        &clock(parts.get(5), 1, "fullmove number must be 0..65535")?.to_be_bytes(),
    );
    Ok(())
}

/// Unpacks a packed position into a 6-field FEN. An all-zero value (no position stored) reads as
/// the empty string.
pub fn packed_to_fen(packed: &[u8]) -> Result<String, ChessError> {
    if packed.len() < FEN_PACKED_LEN {
        return Err(ChessError(format!(
            "a packed position is {FEN_PACKED_LEN} bytes"
        )));
    }
    let p = &packed[..FEN_PACKED_LEN];
    if p.iter().all(|&b| b == 0) {
        return Ok(String::new());
    }
    let bad = |why: &str| ChessError(format!("corrupt packed position ({why})"));
    let mut board = [0u8; 64];
    let mut n = 0;
    for (sq, cell) in board.iter_mut().enumerate() {
        if p[sq / 8] & (1 << (sq % 8)) != 0 {
            if n == MAX_PIECES {
                return Err(bad("more than 32 pieces"));
            }
            let byte = p[FEN_BOARD_OFFSET + n / 2];
            let code = if n % 2 == 0 { byte >> 4 } else { byte & 15 };
            if !matches!(code & 7, 1..=6) {
                return Err(bad("unknown piece code"));
            }
            *cell = code;
            n += 1;
        }
    }
    let mut s = String::with_capacity(90);
    for rank in (0..8).rev() {
        let mut empty = 0;
        for file in 0..8 {
            let code = board[rank * 8 + file];
            if code == 0 {
                empty += 1;
                continue;
            }
            if empty > 0 {
                s.push((b'0' + empty) as char);
                empty = 0;
            }
            let letter = PIECES[(code & 7) as usize - 1];
            s.push(if code & 8 != 0 {
                letter.to_ascii_lowercase()
            } else {
                letter
            } as char);
        }
        if empty > 0 {
            s.push((b'0' + empty) as char);
        }
        if rank > 0 {
            s.push('/');
        }
    }
    let flags = p[FEN_FLAGS_OFFSET];
    s.push_str(if flags & 1 != 0 { " b " } else { " w " });
    if flags & 0x1e == 0 {
        s.push('-');
    }
    for (bit, c) in [(2, 'K'), (4, 'Q'), (8, 'k'), (16, 'q')] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s.push(' ');
    match p[9] {
        0 => s.push('-'),
        ep if ep & 0x80 != 0 && ep & 0x40 == 0 => s.push_str(&square_name(ep & 63)),
        _ => return Err(bad("bad en passant byte")),
    }
    let half = u16::from_be_bytes([p[10], p[11]]);
    let full = u16::from_be_bytes([p[12], p[13]]);
    s.push_str(&format!(" {half} {full}"));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

    fn rt(fen: &str) -> [u8; FEN_PACKED_LEN] {
        let mut out = [0u8; FEN_PACKED_LEN];
        fen_to_packed(fen, &mut out).unwrap();
        assert_eq!(packed_to_fen(&out).unwrap(), fen);
        out
    }

    #[test]
    fn start_position_layout() {
        let p = rt(START);
        assert_eq!(&p[0..8], &[0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff]);
        assert_eq!(p[8], 0b11110, "white to move, all castling rights");
        assert_eq!(p[9], 0);
        assert_eq!(&p[10..14], &[0, 0, 0, 1]);
        // a1 rook, b1 knight: R=4, N=2; black rook on a8 = 12
        assert_eq!(p[14], 0x42);
        assert_eq!(p[29] & 0x0f, 12);
    }

    #[test]
    fn real_positions_round_trip() {
        let p = rt("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1");
        assert_eq!(p[8] & 1, 1, "black to move");
        assert_eq!(p[3] & (1 << 4), 1 << 4, "e4 occupied");
        assert_eq!(p[9], 0x80 | 20);
        rt("r3k2r/8/8/3pP3/8/8/8/R3K2R w Kq d6 0 25");
        rt("8/8/8/8/8/8/8/4K2k w - - 99 65535");
        rt("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4");
        let mut out = [0u8; FEN_PACKED_LEN];
        fen_to_packed("8/8/8/8/8/8/8/4K2k b - -", &mut out).unwrap();
        assert_eq!(packed_to_fen(&out).unwrap(), "8/8/8/8/8/8/8/4K2k b - - 0 1");
        assert_eq!(packed_to_fen(&[0u8; FEN_PACKED_LEN]).unwrap(), "");
    }

    #[test]
    fn rejects_bad_fens() {
        let mut out = [0u8; FEN_PACKED_LEN];
        for bad in [
            "",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
            "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "rnbqkbnx/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w QK - 0 1",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 70000",
            "pppppppp/pppppppp/pppppppp/pppppppp/pppppppp/8/8/8 w - - 0 1",
        ] {
            assert!(fen_to_packed(bad, &mut out).is_err(), "{bad}");
        }
        let mut corrupt = [0u8; FEN_PACKED_LEN];
        corrupt[0] = 1;
        assert!(
            packed_to_fen(&corrupt).is_err(),
            "occupied square with piece code 0"
        );
        assert!(packed_to_fen(&[0u8; 3]).is_err());
    }
}
