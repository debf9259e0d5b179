//! The encoder mirrors the decoder's rules; a bad frame closes a stream at any split point.

use super::tests::{enc, samples, AUTH};
use super::tests_errors::{cat, ID};
use super::*;
use crate::batch_id::BatchId;

#[test]
fn encoder_refuses_what_the_decoder_would_reject() {
    let id = BatchId(ID);
    let bad = [
        Frame::Records(Records {
            auth: None,
            batch_id: id,
            record_size: 4,
            count: 2,
            payload: &[0; 7],
        }),
        Frame::Hello(Hello {
            auth: None,
            version: 1,
            role: Role::Scc,
            record_size: 0,
            dataset_id: "d",
        }),
        Frame::Query(Query {
            auth: AUTH,
            json: "[]",
        }),
        Frame::Credit(Credit {
            auth: None,
            bytes: 0,
        }),
        Frame::Bbn(BadBatch {
            auth: None,
            batch_id: id,
            reason: &"r".repeat(MAX_TEXT_LEN + 1),
        }),
        Frame::Eob(EndOfBatch {
            auth: None,
            batch_id: id,
            record_count: 1,
            closing_hash: &[0; 65],
            digest: &[],
        }),
        Frame::Eob(EndOfBatch {
            auth: None,
            batch_id: id,
            record_count: 1,
            closing_hash: &[],
            digest: &[0; 31],
        }),
    ];
    for f in &bad {
        let mut out = vec![1, 2];
        assert!(
            encode_frame(f, &mut out, DEFAULT_MAX_PAYLOAD).is_err(),
            "{f:?}"
        );
        assert_eq!(out, vec![1, 2]);
    }
    let big = Frame::Records(Records {
        auth: None,
        batch_id: id,
        record_size: 1,
        count: 200,
        payload: &[0; 200],
    });
    let mut out = vec![1, 2];
    assert_eq!(
        encode_frame(&big, &mut out, 100).unwrap_err().code(),
        "ERR_HDWP_TOO_LARGE"
    );
    assert_eq!(out, vec![1, 2], "an oversized frame is rolled back");
}

#[test]
fn a_bad_frame_closes_the_stream_and_keeps_the_frames_before_it_at_every_split() {
    let good: Vec<Vec<u8>> = samples(&[1, 2, 3, 4, 5, 6], &[])
        .iter()
        .take(4)
        .map(enc)
        .collect();
    let mut bad = enc(&Frame::Credit(Credit {
        auth: None,
        bytes: 5,
    }));
    bad[20] ^= 0xff;
    let good_len: usize = good.iter().map(Vec::len).sum();
    let stream = cat(&[&good.concat(), &bad, &good[0]]);
    for cut in 0..=stream.len() {
        let mut d = FrameDecoder::new();
        let mut got = Vec::new();
        let mut error = None;
        for part in [&stream[..cut], &stream[cut..]] {
            d.push(part);
            loop {
                match d.next_frame() {
                    Ok(Some(f)) => got.push(enc(&f)),
                    Ok(None) => break,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
        }
        assert_eq!(got, good, "cut at {cut}");
        assert_eq!(
            error.map(|e| e.code()),
            Some("ERR_HDWP_CHECKSUM_MISMATCH"),
            "cut at {cut}"
        );
        assert_eq!(d.position(), good_len as u64);
        assert_eq!(
            d.next_frame().unwrap_err().code(),
            "ERR_HDWP_CHECKSUM_MISMATCH",
            "the error sticks"
        );
        assert_eq!(d.finish().unwrap_err().code(), "ERR_HDWP_CHECKSUM_MISMATCH");
    }
}

#[test]
fn header_errors_are_the_same_at_every_split() {
    let mut bad = enc(&Frame::Cancel(Cancel { auth: AUTH }));
    bad[6] = 0x80;
    for cut in 0..=bad.len() {
        let mut d = FrameDecoder::new();
        d.push(&bad[..cut]);
        let early = d.next_frame().map(|f| f.is_some());
        d.push(&bad[cut..]);
        let code = match early {
            Err(e) => e.code(),
            Ok(_) => d.next_frame().unwrap_err().code(),
        };
        assert_eq!(code, "ERR_HDWP_BAD_FLAGS", "cut at {cut}");
    }
}
