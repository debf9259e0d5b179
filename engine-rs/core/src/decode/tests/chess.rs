//! chess_move → SAN, chess_fen → FEN, through the schema's packed layouts.

use super::*;
use crate::types::chess::{fen_to_packed, san_to_code, FEN_PACKED_LEN};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const LATER: &str = "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/2N2N2/PPPP1PPP/R1BQK2R w KQkq - 6 5";

fn packed(fen: &str) -> Vec<u8> {
    let mut out = vec![0u8; FEN_PACKED_LEN];
    fen_to_packed(fen, &mut out).expect("fen");
    out
}

#[test]
fn moves_decode_to_san_with_zero_as_null() {
    let sans = ["e4", "Nf3", "O-O", "exd8=Q+", "Qxf7#", "R1e2"];
    // The move code is big-endian in both byte orders.
    for o in ORDERS {
        let mut r: Vec<u8> = sans
            .iter()
            .flat_map(|s| san_to_code(s).expect("san").to_be_bytes())
            .collect();
        r.extend_from_slice(&[0, 0]);
        let c = decode1(&one(FieldType::ChessMove, 2, o), &r);
        assert_eq!(c.len, 7);
        assert_eq!(strs(&c)[..6], sans.map(String::from));
        assert!(!valid(&c, 6) && c.null_count == 1);
    }
}

#[test]
fn positions_decode_to_fen_with_bad_and_empty_as_null() {
    let mut r = packed(START);
    r.extend(packed(LATER));
    r.extend(vec![0u8; FEN_PACKED_LEN]);
    r.extend(vec![0xffu8; FEN_PACKED_LEN]);
    let c = decode1(
        &one(FieldType::ChessFen, FEN_PACKED_LEN, ByteOrder::Little),
        &r,
    );
    assert_eq!(strs(&c)[..2], [START.to_string(), LATER.to_string()]);
    assert_eq!(
        (valid(&c, 2), valid(&c, 3), c.null_count),
        (false, false, 2)
    );
}

#[test]
fn chess_arrays_are_lists_of_text() {
    let mut f = field("line", 0, 6, FieldType::Bytes);
    f.array = Some(ArraySpec {
        element: FieldType::ChessMove,
        element_size: 2,
        count: 3,
        enumeration: None,
    });
    let s = schema(6, ByteOrder::Little, vec![f], vec![]);
    let r: Vec<u8> = ["e4", "e5", "Nf3"]
        .iter()
        .flat_map(|m| san_to_code(m).expect("san").to_be_bytes())
        .collect();
    let cols = decode_columns(&s, &r).expect("decode");
    let child = cols.columns[0].child.as_deref().expect("child");
    assert_eq!(strs(child), vec!["e4", "e5", "Nf3"]);
}
