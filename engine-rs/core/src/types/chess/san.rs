//! chess_move: a SAN move as a 16-bit code, stored big-endian in 2 bytes.
//!
//! ```text
//! bits 0-5   destination square (a1 = 0 ... h8 = 63)
//! bits 6-7   check suffix: 0 none, 1 '+', 2 '#'
//! bits 8-15  form: 0 = no move (only as the all-zero code), 1..=245 = index (+1) into the
//!            destination's form list, 255 = castling (destination g1: O-O, c1: O-O-O)
//! ```
//!
//! A destination's form list enumerates every legal-looking SAN that ends on that square, in a
//! fixed order: pawn pushes (promotions N, B, R, Q on ranks 1 and 8), pawn captures from the file
//! to the left then the right; then for N, B, R, Q: quiet then capturing, each with no
//! disambiguation, then each origin file, each origin rank, each origin square from which the
//! piece reaches the destination on an empty board; then the king, quiet then capturing. At most
//! 245 forms end on any square, so disambiguation round-trips losslessly in 2 bytes.

use std::sync::OnceLock;

use super::{parse_square, square_name, ChessError};

/// Bytes of a stored move code.
pub const MOVE_CODE_LEN: usize = 2;

const CASTLE_FORM: u16 = 255;
const PROMOS: [u8; 4] = [b'N', b'B', b'R', b'Q'];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disambig {
    None,
    File(u8),
    Rank(u8),
    Square(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Form {
    /// b'P', b'N', b'B', b'R', b'Q' or b'K'.
    piece: u8,
    capture: bool,
    disambig: Disambig,
    /// Promotion piece (0 = none).
    promo: u8,
}

fn reaches(piece: u8, from: u8, to: u8) -> bool {
    if from == to {
        return false;
    }
    let df = (from % 8).abs_diff(to % 8);
    let dr = (from / 8).abs_diff(to / 8);
    match piece {
        b'N' => (df, dr) == (1, 2) || (df, dr) == (2, 1),
        b'B' => df == dr,
        b'R' => df == 0 || dr == 0,
        b'Q' => df == dr || df == 0 || dr == 0,
        _ => false,
    }
}

fn forms_for(dest: u8) -> Vec<Form> {
    let mut out = Vec::new();
    let (file, rank) = (dest % 8, dest / 8);
    let promos: &[u8] = if rank == 0 || rank == 7 {
        &PROMOS
    } else {
        &[0]
    };
    for &promo in promos {
        out.push(Form {
            piece: b'P',
            capture: false,
            disambig: Disambig::None,
            promo,
        });
    }
    for from_file in [file.wrapping_sub(1), file + 1] {
        if from_file < 8 {
            for &promo in promos {
                out.push(Form {
                    piece: b'P',
                    capture: true,
                    disambig: Disambig::File(from_file),
                    promo,
                });
            }
        }
    }
    for piece in [b'N', b'B', b'R', b'Q'] {
        let origins: Vec<u8> = (0..64).filter(|&o| reaches(piece, o, dest)).collect();
        for capture in [false, true] {
            out.push(Form {
                piece,
                capture,
                disambig: Disambig::None,
                promo: 0,
            });
            for f in 0..8u8 {
                if origins.iter().any(|o| o % 8 == f) {
                    out.push(Form {
                        piece,
                        capture,
                        disambig: Disambig::File(f),
                        promo: 0,
                    });
                }
            }
            for r in 0..8u8 {
                if origins.iter().any(|o| o / 8 == r) {
                    out.push(Form {
                        piece,
                        capture,
                        disambig: Disambig::Rank(r),
                        promo: 0,
                    });
                }
            }
            for &o in &origins {
                out.push(Form {
                    piece,
                    capture,
                    disambig: Disambig::Square(o),
                    promo: 0,
                });
            }
        }
    }
    for capture in [false, true] {
        out.push(Form {
            piece: b'K',
            capture,
            disambig: Disambig::None,
            promo: 0,
        });
    }
    out
}

fn tables() -> &'static [Vec<Form>] {
    static T: OnceLock<Vec<Vec<Form>>> = OnceLock::new();
    T.get_or_init(|| (0..64).map(forms_for).collect())
}

fn err(san: &str, why: &str) -> ChessError {
    ChessError(format!("not a SAN move: {san:?} ({why})"))
}

/// Encodes a SAN move (`e4`, `Nbd7`, `exd8=Q+`, `O-O-O#`) as its code.
pub fn san_to_code(san: &str) -> Result<u16, ChessError> {
    let (body, check) = match san.as_bytes().last() {
        Some(b'+') => (&san[..san.len() - 1], 1u16),
        Some(b'#') => (&san[..san.len() - 1], 2u16),
        _ => (san, 0u16),
    };
    match body {
        "O-O" | "0-0" => return Ok(CASTLE_FORM << 8 | check << 6 | 6),
        "O-O-O" | "0-0-0" => return Ok(CASTLE_FORM << 8 | check << 6 | 2),
        _ => {}
    }
    let b = body.as_bytes();
    let (piece, rest) = match b.first() {
        Some(&p @ (b'N' | b'B' | b'R' | b'Q' | b'K')) => (p, &body[1..]),
        Some(b'a'..=b'h') => (b'P', body),
        _ => return Err(err(san, "expected a piece letter, a file or castling")),
    };
    let (rest, promo) = match rest.as_bytes() {
        [.., b'=', p @ (b'N' | b'B' | b'R' | b'Q')] if piece == b'P' => {
            (&rest[..rest.len() - 2], *p)
        }
        _ => (rest, 0),
    };
    if rest.len() < 2 {
        return Err(err(san, "no destination square"));
    }
    let dest =
        parse_square(&rest[rest.len() - 2..]).ok_or_else(|| err(san, "bad destination square"))?;
    let mut pre = &rest[..rest.len() - 2];
    let capture = pre.ends_with('x');
    if capture {
        pre = &pre[..pre.len() - 1];
    }
    let disambig = match pre.as_bytes() {
        [] => Disambig::None,
        [f @ b'a'..=b'h'] => Disambig::File(f - b'a'),
        [r @ b'1'..=b'8'] => Disambig::Rank(r - b'1'),
        [b'a'..=b'h', b'1'..=b'8'] => {
            Disambig::Square(parse_square(pre).ok_or_else(|| err(san, "bad origin"))?)
        }
        _ => return Err(err(san, "bad disambiguation")),
    };
    let form = Form {
        piece,
        capture,
        disambig,
        promo,
    };
    let idx = tables()[dest as usize]
        .iter()
        .position(|f| *f == form)
        .ok_or_else(|| err(san, "no such move on an empty board"))?;
    Ok(((idx as u16 + 1) << 8) | check << 6 | dest as u16)
}

/// Decodes a move code back to SAN. The zero code is the empty string (no move); a code that no
/// SAN encodes to gives `None`.
pub fn code_to_san_checked(code: u16) -> Option<String> {
    if code == 0 {
        return Some(String::new());
    }
    let dest = (code & 63) as u8;
    let check = (code >> 6) & 3;
    let form = code >> 8;
    let mut s = String::with_capacity(8);
    if form == CASTLE_FORM {
        match dest {
            6 => s.push_str("O-O"),
            2 => s.push_str("O-O-O"),
            _ => return None,
        }
    } else {
        let f = tables()[dest as usize].get((form as usize).checked_sub(1)?)?;
        if f.piece != b'P' {
            s.push(f.piece as char);
        }
        match f.disambig {
            Disambig::None => {}
            Disambig::File(x) => s.push((b'a' + x) as char),
            Disambig::Rank(x) => s.push((b'1' + x) as char),
            Disambig::Square(x) => s.push_str(&square_name(x)),
        }
        if f.capture {
            s.push('x');
        }
        s.push_str(&square_name(dest));
        if f.promo != 0 {
            s.push('=');
            s.push(f.promo as char);
        }
    }
    match check {
        0 => {}
        1 => s.push('+'),
        2 => s.push('#'),
        _ => return None,
    }
    Some(s)
}

/// Decodes a move code back to SAN; codes no SAN encodes to read as `?`.
pub fn code_to_san(code: u16) -> String {
    code_to_san_checked(code).unwrap_or_else(|| "?".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_real_moves() {
        for san in [
            "e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1", "b5", "Bb3",
            "d6", "c3", "O-O-O", "exd5", "Nbd7", "R1e2", "Qh4e1", "exd8=Q+", "bxa1=N#", "e8=R",
            "Kxf7", "Qxf7#", "O-O+", "O-O-O#", "Nxe5", "Raxd1", "gxh3", "a1=Q",
        ] {
            let code = san_to_code(san).unwrap_or_else(|e| panic!("{san}: {e}"));
            assert_eq!(code_to_san(code), san, "code {code:#06x}");
        }
        assert_eq!(code_to_san(san_to_code("0-0").unwrap()), "O-O");
        assert_eq!(code_to_san(0), "");
    }

    #[test]
    fn every_code_round_trips() {
        let mut n = 0;
        for code in 1..=u16::MAX {
            if let Some(san) = code_to_san_checked(code) {
                assert_eq!(san_to_code(&san).unwrap(), code, "{san}");
                n += 1;
            }
        }
        assert!(n > 40_000, "{n} codes");
        assert!(tables().iter().all(|t| t.len() <= 245));
    }

    #[test]
    fn rejects_impossible_moves() {
        for bad in [
            "", "e9", "Nb1b3", "exe5", "axc3", "e8", "e4=Q", "Zf3", "Kbe2", "O-O-O-O", "Nf3!", "f",
            "Bxe", "Pe4", "e4++",
        ] {
            assert!(san_to_code(bad).is_err(), "{bad}");
        }
        assert_eq!(code_to_san(CASTLE_FORM << 8 | 5), "?");
        assert_eq!(code_to_san(250 << 8), "?");
        assert_eq!(code_to_san(1 << 8 | 3 << 6 | 28), "?");
    }
}
