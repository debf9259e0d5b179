//! The result-stream kinds eobs (several batches ended at once) and trace_context: layout, round
//! trips, bounds, every malformed form, and every split point of a stream that carries them.

use super::tests::{enc, AUTH};
use super::tests_errors::raw;
use super::*;
use crate::batch_id::BatchId;

const EOBS: u8 = FrameKind::Eobs as u8;
const TRACE: u8 = FrameKind::TraceContext as u8;
const TRACEPARENT: &str = r#"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"hd=1"}"#;

fn end(n: u64, record_count: u64) -> BatchEnd {
    BatchEnd {
        batch_id: BatchId::from_number(n),
        record_count,
    }
}

fn eobs(auth: Option<QueryAuth>, batches: Vec<BatchEnd>) -> Frame<'static> {
    Frame::Eobs(EndOfBatches { auth, batches })
}

/// An eobs payload with any count field and any entries (no query block).
fn eobs_payload(count: u32, entries: &[(BatchId, u64)]) -> Vec<u8> {
    let mut p = count.to_be_bytes().to_vec();
    for (id, n) in entries {
        p.extend_from_slice(&id.0);
        p.extend_from_slice(&n.to_be_bytes());
    }
    p
}

fn code_of(bytes: &[u8]) -> &'static str {
    decode_frame(bytes, DEFAULT_MAX_PAYLOAD)
        .expect_err("malformed input must fail")
        .code()
}

fn ids(n: u64) -> Vec<(BatchId, u64)> {
    (0..n).map(|i| (BatchId::from_number(i), i * 3)).collect()
}

/// Every malformed eobs or trace_context frame (checksum right), with the code it must give.
fn malformed() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let a = BatchId::from_number(1);
    let b = BatchId::from_number(2);
    let mut auth_zero = 5u32.to_be_bytes().to_vec();
    auth_zero.extend_from_slice(&[0; TOKEN_LEN]);
    auth_zero.extend_from_slice(&eobs_payload(1, &[(a, 1)]));
    vec![
        ("no count", raw(1, EOBS, 0, &[]), "ERR_HDWP_TRUNCATED_FIELD"),
        (
            "3 count bytes",
            raw(1, EOBS, 0, &[0, 0, 1]),
            "ERR_HDWP_TRUNCATED_FIELD",
        ),
        (
            "count 0",
            raw(1, EOBS, 0, &eobs_payload(0, &[])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "count 0, an entry",
            raw(1, EOBS, 0, &eobs_payload(0, &[(a, 1)])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "count 65536, no entries",
            raw(1, EOBS, 0, &eobs_payload(65_536, &[])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "count u32::MAX",
            raw(1, EOBS, 0, &eobs_payload(u32::MAX, &[(a, 1)])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "count 2, one entry",
            raw(1, EOBS, 0, &eobs_payload(2, &[(a, 1)])),
            "ERR_HDWP_INCONSISTENT_LENGTH",
        ),
        (
            "count 1, two entries",
            raw(1, EOBS, 0, &eobs_payload(1, &[(a, 1), (b, 1)])),
            "ERR_HDWP_INCONSISTENT_LENGTH",
        ),
        (
            "a byte after the entries",
            raw(
                1,
                EOBS,
                0,
                &[&eobs_payload(1, &[(a, 1)])[..], &[0]].concat(),
            ),
            "ERR_HDWP_INCONSISTENT_LENGTH",
        ),
        (
            "an entry one byte short",
            raw(1, EOBS, 0, &eobs_payload(1, &[(a, 1)])[..4 + 71]),
            "ERR_HDWP_INCONSISTENT_LENGTH",
        ),
        (
            "record count 2^53",
            raw(1, EOBS, 0, &eobs_payload(2, &[(a, 1), (b, 1 << 53)])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "record count u64::MAX",
            raw(1, EOBS, 0, &eobs_payload(1, &[(a, u64::MAX)])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "a batch twice",
            raw(1, EOBS, 0, &eobs_payload(3, &[(a, 1), (b, 2), (a, 1)])),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "an all-zero token",
            raw(1, EOBS, FLAG_AUTH, &auth_zero),
            "ERR_HDWP_INVALID_VALUE",
        ),
        (
            "a query block cut short",
            raw(1, EOBS, FLAG_AUTH, &[0, 0, 0, 5, 1, 1]),
            "ERR_HDWP_TRUNCATED_FIELD",
        ),
        (
            "trace context: empty",
            raw(1, TRACE, 0, b""),
            "ERR_HDWP_BAD_JSON",
        ),
        (
            "trace context: an array",
            raw(1, TRACE, 0, br#"["00-aa"]"#),
            "ERR_HDWP_BAD_JSON",
        ),
        (
            "trace context: a string",
            raw(1, TRACE, 0, br#""traceparent""#),
            "ERR_HDWP_BAD_JSON",
        ),
        (
            "trace context: cut JSON",
            raw(1, TRACE, 0, br#"{"traceparent":"#),
            "ERR_HDWP_BAD_JSON",
        ),
        (
            "trace context: not UTF-8",
            raw(1, TRACE, 0, &[b'{', 0xff, b'}']),
            "ERR_HDWP_BAD_UTF8",
        ),
        (
            "trace context: 65 deep",
            raw(1, TRACE, 0, nest(65).as_bytes()),
            "ERR_HDWP_BAD_JSON",
        ),
    ]
}

/// A JSON object nested `n` deep.
fn nest(n: usize) -> String {
    format!("{}{{}}{}", "{\"a\":".repeat(n - 1), "}".repeat(n - 1))
}

#[test]
fn eobs_is_a_count_then_entries_big_endian_after_the_query_block() {
    let f = eobs(Some(AUTH), vec![end(1, 0x0102_0304_0506), end(2, 0)]);
    let bytes = enc(&f);
    assert_eq!((bytes[5], FrameKind::Eobs.name()), (0x0B, "eobs"));
    assert_eq!(u16::from_be_bytes([bytes[6], bytes[7]]), FLAG_AUTH);
    let p = &bytes[HEADER_LEN + AUTH_LEN..];
    assert_eq!(
        &p[..4],
        &[0, 0, 0, 2],
        "u32 count, big-endian like eob's fields"
    );
    assert_eq!(&p[4..68], &BatchId::from_number(1).0);
    assert_eq!(&p[68..76], &[0, 0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(&p[76..140], &BatchId::from_number(2).0);
    assert_eq!(
        &p[140..],
        &[0; 8],
        "no closing hash, nothing after the last entry"
    );
    assert_eq!(
        decode_frame(&bytes, DEFAULT_MAX_PAYLOAD),
        Ok(Some((f.clone(), bytes.len())))
    );
    assert_eq!(decode_datagram(&bytes, MTU_STANDARD), Ok(f));
}

#[test]
fn eobs_round_trips_up_to_65535_batches_and_refuses_more() {
    for n in [1, 2, 1000, MAX_EOBS_BATCHES as u64] {
        let f = eobs(None, (0..n).map(|i| end(i, i * 7)).collect());
        let bytes = enc(&f);
        assert_eq!(bytes.len(), HEADER_LEN + 4 + n as usize * EOBS_ENTRY_LEN);
        let (back, used) = decode_frame(&bytes, DEFAULT_MAX_PAYLOAD).unwrap().unwrap();
        assert_eq!((back, used), (f, bytes.len()), "{n} batches");
    }
    let over = raw(1, EOBS, 0, &eobs_payload(65_536, &ids(65_536)));
    assert_eq!(
        code_of(&over),
        "ERR_HDWP_INVALID_VALUE",
        "65536 entries with a matching length"
    );
}

#[test]
fn trace_context_round_trips_and_leaves_the_traceparent_layout_to_the_receiver() {
    for auth in [None, Some(AUTH)] {
        for json in [
            TRACEPARENT,
            r#"{"traceparent":"not checked here"}"#,
            "{}",
            " { } ",
        ] {
            let f = Frame::TraceContext(TraceContextFrame { auth, json });
            let bytes = enc(&f);
            assert_eq!(
                (bytes[5], FrameKind::TraceContext.name()),
                (0x0C, "trace_context")
            );
            let base = HEADER_LEN + if auth.is_some() { AUTH_LEN } else { 0 };
            assert_eq!(
                &bytes[base..],
                json.as_bytes(),
                "the JSON is the rest of the payload"
            );
            assert_eq!(decode_datagram(&bytes, MTU_STANDARD), Ok(f));
        }
    }
    let deepest = nest(MAX_JSON_DEPTH);
    assert!(decode_frame(&raw(1, TRACE, 0, deepest.as_bytes()), DEFAULT_MAX_PAYLOAD).is_ok());
}

#[test]
fn every_malformed_eobs_and_trace_context_gives_its_code() {
    for (what, bytes, code) in malformed() {
        assert_eq!(code_of(&bytes), code, "{what}");
        assert_eq!(
            decode_datagram(&bytes, MTU_STANDARD).unwrap_err().code(),
            code,
            "{what} (datagram)"
        );
    }
}

#[test]
fn the_encoder_refuses_what_the_decoder_would_reject() {
    let bad = [
        eobs(None, vec![]),
        eobs(
            None,
            (0..=MAX_EOBS_BATCHES as u64).map(|i| end(i, 1)).collect(),
        ),
        eobs(None, vec![end(1, 1), end(2, MAX_EXACT_INT + 1)]),
        eobs(None, vec![end(1, 1), end(2, 1), end(1, 2)]),
        eobs(
            Some(QueryAuth {
                query_id: 1,
                token: [0; TOKEN_LEN],
            }),
            vec![end(1, 1)],
        ),
        Frame::TraceContext(TraceContextFrame {
            auth: None,
            json: "[1]",
        }),
        Frame::TraceContext(TraceContextFrame {
            auth: None,
            json: "",
        }),
    ];
    let codes = [
        "ERR_HDWP_INVALID_VALUE",
        "ERR_HDWP_INVALID_VALUE",
        "ERR_HDWP_INVALID_VALUE",
        "ERR_HDWP_INVALID_VALUE",
        "ERR_HDWP_INVALID_VALUE",
        "ERR_HDWP_BAD_JSON",
        "ERR_HDWP_BAD_JSON",
    ];
    for (f, code) in bad.iter().zip(codes) {
        let mut out = vec![1, 2];
        let e = encode_frame(f, &mut out, DEFAULT_MAX_PAYLOAD).unwrap_err();
        assert_eq!(e.code(), code, "{:?}", f.kind());
        assert_eq!(out, vec![1, 2], "nothing written");
    }
    // 65535 entries need 4.7 MB: a smaller frame limit refuses the frame as a whole.
    let big = eobs(
        None,
        (0..MAX_EOBS_BATCHES as u64).map(|i| end(i, 1)).collect(),
    );
    let e = encode_frame(&big, &mut Vec::new(), 1 << 20).unwrap_err();
    assert_eq!(e.code(), "ERR_HDWP_TOO_LARGE");
}

/// A result stream: hello, trace_context, records, eobs (with and without the query block).
fn result_stream() -> (Vec<Vec<u8>>, Vec<u8>) {
    let frames = [
        Frame::Hello(Hello {
            auth: Some(AUTH),
            version: 1,
            role: Role::StorageNode,
            record_size: 2,
            dataset_id: "flows",
        }),
        Frame::TraceContext(TraceContextFrame {
            auth: Some(AUTH),
            json: TRACEPARENT,
        }),
        Frame::Records(Records {
            auth: Some(AUTH),
            batch_id: BatchId::from_number(1),
            record_size: 2,
            count: 2,
            payload: &[1, 2, 3, 4],
        }),
        eobs(Some(AUTH), (1..=5).map(|i| end(i, i)).collect()),
        eobs(None, vec![end(9, MAX_EXACT_INT)]),
    ];
    let each: Vec<Vec<u8>> = frames.iter().map(enc).collect();
    let stream = each.concat();
    (each, stream)
}

/// Re-encoded frames and the error (if any) of `parts` pushed one after another.
fn feed(parts: &[&[u8]]) -> (Vec<Vec<u8>>, Option<&'static str>, FrameDecoder) {
    let mut d = FrameDecoder::new();
    let (mut got, mut err) = (Vec::new(), None);
    'parts: for part in parts {
        d.push(part);
        loop {
            match d.next_frame() {
                Ok(Some(f)) => got.push(enc(&f)),
                Ok(None) => break,
                Err(e) => {
                    err = Some(e.code());
                    break 'parts;
                }
            }
        }
    }
    (got, err, d)
}

#[test]
fn a_result_stream_with_both_kinds_decodes_the_same_at_every_split_and_chunk_size() {
    let (want, stream) = result_stream();
    for cut in 0..=stream.len() {
        let (got, err, d) = feed(&[&stream[..cut], &stream[cut..]]);
        assert_eq!((got, err), (want.clone(), None), "cut at {cut}");
        assert_eq!(d.finish(), Ok(()));
        assert_eq!(d.position(), stream.len() as u64);
    }
    for size in [1, 3, 16, 17, 71, 72, 73, 500] {
        let chunks: Vec<&[u8]> = stream.chunks(size).collect();
        assert_eq!(feed(&chunks).0, want, "chunks of {size}");
    }
    let (_, partial, _) = feed(&[&stream[..stream.len() - 1]]);
    assert_eq!(partial, None);
    let mut d = FrameDecoder::new();
    d.push(&stream[..stream.len() - 1]);
    while let Ok(Some(_)) = d.next_frame() {}
    assert_eq!(d.finish().unwrap_err().code(), "ERR_HDWP_TRUNCATED_FRAME");
}

#[test]
fn a_malformed_frame_closes_the_stream_at_every_split_keeping_the_frames_before_it() {
    let (good, stream) = result_stream();
    for (what, bad, code) in malformed() {
        let all = [&stream[..], &bad, &good[0]].concat();
        for cut in 0..=all.len() {
            let (got, err, mut d) = feed(&[&all[..cut], &all[cut..]]);
            assert_eq!(got, good, "{what}: cut at {cut}");
            assert_eq!(err, Some(code), "{what}: cut at {cut}");
            assert_eq!(
                d.position(),
                stream.len() as u64,
                "{what}: at the bad frame"
            );
            assert_eq!(
                d.next_frame().unwrap_err().code(),
                code,
                "{what}: the error sticks"
            );
        }
    }
}
