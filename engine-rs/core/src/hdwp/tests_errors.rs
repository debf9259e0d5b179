//! Every error code, the bounds, and how a bad frame closes a stream.

use super::header::frame_checksum;
use super::tests::{enc, AUTH};
use super::*;
use crate::batch_id::BatchId;

/// A frame with a correct checksum around any header fields and payload, bypassing validation.
pub(super) fn raw(version: u8, kind: u8, flags: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = b"HDWP".to_vec();
    v.push(version);
    v.push(kind);
    v.extend_from_slice(&flags.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    let crc = frame_checksum(&v, payload);
    v.extend_from_slice(&crc.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn code_of(bytes: &[u8]) -> &'static str {
    decode_frame(bytes, DEFAULT_MAX_PAYLOAD)
        .expect_err("malformed input must fail")
        .code()
}

pub(super) fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

pub(super) const ID: [u8; 64] = [3; 64];

#[test]
fn header_errors() {
    assert_eq!(code_of(b"XDWP"), "ERR_HDWP_BAD_MAGIC");
    assert!(
        decode_frame(b"H", DEFAULT_MAX_PAYLOAD).unwrap().is_none(),
        "a correct magic prefix waits"
    );
    assert!(
        decode_frame(b"HD", DEFAULT_MAX_PAYLOAD).unwrap().is_none(),
        "a correct magic prefix waits"
    );
    assert_eq!(code_of(b"HX"), "ERR_HDWP_BAD_MAGIC");
    assert_eq!(
        code_of(&raw(2, 8, 0, &[0, 0, 0, 0, 0, 0, 0, 1])),
        "ERR_HDWP_UNSUPPORTED_VERSION"
    );
    assert_eq!(code_of(&raw(1, 0, 0, &[])), "ERR_HDWP_UNKNOWN_KIND");
    assert_eq!(code_of(&raw(1, 0xee, 0, &[])), "ERR_HDWP_UNKNOWN_KIND");
    assert_eq!(code_of(&raw(1, 8, 0x0002, &[0; 8])), "ERR_HDWP_BAD_FLAGS");
    assert_eq!(
        code_of(&raw(1, 5, FLAG_AUTH, &[0; 40])),
        "ERR_HDWP_BAD_FLAGS",
        "query carries its own auth"
    );
    assert_eq!(
        code_of(&raw(1, 6, FLAG_AUTH, &[0; 40])),
        "ERR_HDWP_BAD_FLAGS",
        "so does cancel"
    );
}

#[test]
fn too_large_payload_fails_from_the_header_alone() {
    let mut header = b"HDWP\x01\x02\x00\x00".to_vec();
    header.extend_from_slice(&(DEFAULT_MAX_PAYLOAD + 1).to_be_bytes());
    assert_eq!(code_of(&header), "ERR_HDWP_TOO_LARGE");
    let small = FrameDecoder::with_max_payload(7).unwrap().max_payload();
    assert_eq!(
        decode_frame(&raw(1, 8, 0, &[0, 0, 0, 0, 0, 0, 0, 1]), small)
            .unwrap_err()
            .code(),
        "ERR_HDWP_TOO_LARGE"
    );
    assert_eq!(
        FrameDecoder::with_max_payload(0).unwrap_err().code(),
        "ERR_HDWP_INVALID_VALUE"
    );
    assert_eq!(
        FrameDecoder::with_max_payload(MAX_PAYLOAD_CEILING + 1)
            .unwrap_err()
            .code(),
        "ERR_HDWP_INVALID_VALUE"
    );
}

#[test]
fn checksum_mismatch() {
    let mut bytes = enc(&Frame::Credit(Credit {
        auth: None,
        bytes: 9,
    }));
    *bytes.last_mut().unwrap() ^= 1;
    assert_eq!(code_of(&bytes), "ERR_HDWP_CHECKSUM_MISMATCH");
    let mut bytes = enc(&Frame::Credit(Credit {
        auth: None,
        bytes: 9,
    }));
    bytes[13] ^= 0x80;
    assert_eq!(code_of(&bytes), "ERR_HDWP_CHECKSUM_MISMATCH");
}

#[test]
fn truncated_fields() {
    assert_eq!(
        code_of(&raw(1, 2, 0, &[0; 10])),
        "ERR_HDWP_TRUNCATED_FIELD",
        "records without a batch id"
    );
    assert_eq!(
        code_of(&raw(1, 2, 0, &cat(&[&ID, &[0, 1, 0]]))),
        "ERR_HDWP_TRUNCATED_FIELD",
        "count cut short"
    );
    let eob = cat(&[&ID, &5u64.to_be_bytes(), &[10], &[1; 9]]);
    assert_eq!(
        code_of(&raw(1, 3, 0, &eob)),
        "ERR_HDWP_TRUNCATED_FIELD",
        "hash shorter than its length"
    );
    assert_eq!(
        code_of(&raw(1, 8, FLAG_AUTH, &[0; 5])),
        "ERR_HDWP_TRUNCATED_FIELD",
        "auth block cut short"
    );
    assert_eq!(
        code_of(&raw(1, 1, 0, &[1, 4])),
        "ERR_HDWP_TRUNCATED_FIELD",
        "hello without record size"
    );
    assert_eq!(
        code_of(&raw(1, 5, 0, &[0; 19])),
        "ERR_HDWP_TRUNCATED_FIELD",
        "query token cut short"
    );
    assert_eq!(
        code_of(&raw(1, 7, 0, &[1])),
        "ERR_HDWP_TRUNCATED_FIELD",
        "error code cut short"
    );
}

#[test]
fn inconsistent_lengths() {
    let recs = cat(&[&ID, &4u16.to_be_bytes(), &3u32.to_be_bytes(), &[0; 11]]);
    assert_eq!(
        code_of(&raw(1, 2, 0, &recs)),
        "ERR_HDWP_INCONSISTENT_LENGTH",
        "11 bytes for 3 x 4"
    );
    let recs = cat(&[
        &ID,
        &0xffffu16.to_be_bytes(),
        &u32::MAX.to_be_bytes(),
        &[0; 1],
    ]);
    assert_eq!(
        code_of(&raw(1, 2, 0, &recs)),
        "ERR_HDWP_INCONSISTENT_LENGTH",
        "no overflow on huge count"
    );
    let cancel = cat(&[&1u32.to_be_bytes(), &[1; 16], &[0]]);
    assert_eq!(
        code_of(&raw(1, 6, 0, &cancel)),
        "ERR_HDWP_INCONSISTENT_LENGTH"
    );
    assert_eq!(
        code_of(&raw(1, 8, 0, &[0, 0, 0, 0, 0, 0, 0, 1, 0])),
        "ERR_HDWP_INCONSISTENT_LENGTH"
    );
    // After the closing hash only the optional batch digest may follow: kind 1 and 32 bytes.
    let eob = cat(&[&ID, &5u64.to_be_bytes(), &[1], &[1], &[1], &[7; 33]]);
    assert_eq!(
        code_of(&raw(1, 3, 0, &eob)),
        "ERR_HDWP_INCONSISTENT_LENGTH",
        "bytes after the digest"
    );
    let eob = cat(&[&ID, &5u64.to_be_bytes(), &[1], &[1], &[1], &[7; 31]]);
    assert_eq!(
        code_of(&raw(1, 3, 0, &eob)),
        "ERR_HDWP_TRUNCATED_FIELD",
        "a truncated digest"
    );
    let eob = cat(&[&ID, &5u64.to_be_bytes(), &[1], &[1, 2]]);
    assert_eq!(
        code_of(&raw(1, 3, 0, &eob)),
        "ERR_HDWP_INVALID_VALUE",
        "an unknown digest kind after the hash"
    );
    let two = cat(&[
        &enc(&Frame::Cancel(Cancel { auth: AUTH })),
        &enc(&Frame::Cancel(Cancel { auth: AUTH })),
    ]);
    assert_eq!(
        decode_datagram(&two, MTU_STANDARD).unwrap_err().code(),
        "ERR_HDWP_INCONSISTENT_LENGTH"
    );
    let one = enc(&Frame::Cancel(Cancel { auth: AUTH }));
    assert_eq!(
        decode_datagram(&one[..20], MTU_STANDARD)
            .unwrap_err()
            .code(),
        "ERR_HDWP_TRUNCATED_FRAME"
    );
    let big = enc(&Frame::Bbn(BadBatch {
        auth: None,
        batch_id: BatchId(ID),
        reason: &"x".repeat(1200),
    }));
    assert_eq!(
        decode_datagram(&big, MTU_STANDARD).unwrap_err().code(),
        "ERR_HDWP_TOO_LARGE"
    );
    assert_eq!(
        decode_datagram(&big, 10).unwrap_err().code(),
        "ERR_HDWP_INVALID_VALUE"
    );
}

#[test]
fn invalid_values() {
    let hello = |version: u8, role: u8, rs: u16, id: &[u8]| {
        raw(1, 1, 0, &cat(&[&[version, role], &rs.to_be_bytes(), id]))
    };
    assert_eq!(
        code_of(&hello(1, 9, 10, b"d")),
        "ERR_HDWP_INVALID_VALUE",
        "unknown role"
    );
    assert_eq!(
        code_of(&hello(1, 1, 0, b"d")),
        "ERR_HDWP_INVALID_VALUE",
        "record size 0"
    );
    assert_eq!(
        code_of(&hello(1, 1, 10, b"")),
        "ERR_HDWP_INVALID_VALUE",
        "empty dataset id"
    );
    assert_eq!(
        code_of(&hello(2, 1, 10, b"d")),
        "ERR_HDWP_UNSUPPORTED_VERSION",
        "hello version"
    );
    assert_eq!(
        code_of(&hello(1, 1, 10, &[b'd'; 256])),
        "ERR_HDWP_TOO_LARGE",
        "dataset id over 255"
    );
    let recs = cat(&[&ID, &0u16.to_be_bytes(), &0u32.to_be_bytes()]);
    assert_eq!(
        code_of(&raw(1, 2, 0, &recs)),
        "ERR_HDWP_INVALID_VALUE",
        "record size 0"
    );
    let recs = cat(&[&ID, &5u16.to_be_bytes(), &0u32.to_be_bytes()]);
    assert_eq!(
        code_of(&raw(1, 2, 0, &recs)),
        "ERR_HDWP_INVALID_VALUE",
        "no records"
    );
    assert_eq!(
        code_of(&raw(1, 6, 0, &[0; 20])),
        "ERR_HDWP_INVALID_VALUE",
        "zero token"
    );
    assert_eq!(
        code_of(&raw(1, 8, FLAG_AUTH, &[0; 28])),
        "ERR_HDWP_INVALID_VALUE",
        "zero token in auth block"
    );
    assert_eq!(
        code_of(&raw(1, 8, 0, &[0; 8])),
        "ERR_HDWP_INVALID_VALUE",
        "zero credit"
    );
    assert_eq!(
        code_of(&raw(1, 8, 0, &(1u64 << 53).to_be_bytes())),
        "ERR_HDWP_INVALID_VALUE",
        "credit over 2^53-1"
    );
    let eob = cat(&[&ID, &(1u64 << 53).to_be_bytes(), &[0]]);
    assert_eq!(
        code_of(&raw(1, 3, 0, &eob)),
        "ERR_HDWP_INVALID_VALUE",
        "record count over 2^53-1"
    );
    let eob = cat(&[&ID, &1u64.to_be_bytes(), &[65], &[1; 65]]);
    assert_eq!(
        code_of(&raw(1, 3, 0, &eob)),
        "ERR_HDWP_TOO_LARGE",
        "hash over 64 bytes"
    );
}

#[test]
fn text_and_json_errors() {
    let bbn = |reason: &[u8]| raw(1, 4, 0, &cat(&[&ID, reason]));
    assert_eq!(code_of(&bbn(&[0xff, 0xfe])), "ERR_HDWP_BAD_UTF8");
    assert_eq!(
        code_of(&bbn(&[b'r'; MAX_TEXT_LEN + 1])),
        "ERR_HDWP_TOO_LARGE"
    );
    assert!(
        decode_frame(&bbn(&[b'r'; MAX_TEXT_LEN]), DEFAULT_MAX_PAYLOAD).is_ok(),
        "exactly at the limit"
    );
    let err = |msg: &[u8]| raw(1, 7, 0, &cat(&[&[0, 1], msg]));
    assert_eq!(code_of(&err(&[0xc3])), "ERR_HDWP_BAD_UTF8");
    assert_eq!(
        code_of(&err(&[b'm'; MAX_TEXT_LEN + 1])),
        "ERR_HDWP_TOO_LARGE"
    );
    let query = |json: &[u8]| raw(1, 5, 0, &cat(&[&1u32.to_be_bytes(), &[9; 16], json]));
    for bad in [
        &b""[..],
        b"[1]",
        b"{",
        b"{\"a\":1} x",
        b"  42",
        b"{\"a\":tru}",
    ] {
        assert_eq!(
            code_of(&query(bad)),
            "ERR_HDWP_BAD_JSON",
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        code_of(&query(deep.as_bytes())),
        "ERR_HDWP_BAD_JSON",
        "nesting is bounded"
    );
    let nest = |n: usize| format!("{}{{}}{}", "{\"a\":".repeat(n - 1), "}".repeat(n - 1));
    let at_limit = nest(MAX_JSON_DEPTH);
    assert_eq!(
        code_of(&query(nest(MAX_JSON_DEPTH + 1).as_bytes())),
        "ERR_HDWP_BAD_JSON"
    );
    assert!(
        decode_frame(&query(at_limit.as_bytes()), DEFAULT_MAX_PAYLOAD).is_ok(),
        "64 deep is fine"
    );
    let strings = format!("{{\"a\":\"[[[[\\\"{}\"}}", "{".repeat(100));
    assert!(
        decode_frame(&query(strings.as_bytes()), DEFAULT_MAX_PAYLOAD).is_ok(),
        "brackets in strings don't count"
    );
    assert_eq!(code_of(&query(&[0xff])), "ERR_HDWP_BAD_UTF8");
    let huge = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_JSON_LEN));
    assert_eq!(code_of(&query(huge.as_bytes())), "ERR_HDWP_TOO_LARGE");
    assert!(decode_frame(&query(b" {\"q\": [1, {}]} "), DEFAULT_MAX_PAYLOAD).is_ok());
}

#[test]
fn aggregate_frame_refuses_json_that_is_not_an_object() {
    let id = crate::batch_id::BatchId::from_number(1);
    for json in ["[1]", "{", "\"x\""] {
        let f = Frame::Aggregate(AggregatePartial {
            auth: None,
            batch_id: id,
            json,
        });
        let mut out = Vec::new();
        let e = encode_frame(&f, &mut out, DEFAULT_MAX_PAYLOAD).unwrap_err();
        assert_eq!(e.code(), "ERR_HDWP_BAD_JSON", "{json}");
    }
}
