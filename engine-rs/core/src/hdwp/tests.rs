//! Round trips, streaming, batching and MTU packing, and the pseudo-random garbage test.

use super::encode::encode_records_for_mtu;
use super::*;
use crate::batch_id::BatchId;

pub(super) const AUTH: QueryAuth = QueryAuth {
    query_id: 0xdead_beef,
    token: [7; TOKEN_LEN],
};

pub(super) fn enc(f: &Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(f, &mut out, DEFAULT_MAX_PAYLOAD).expect("valid frame encodes");
    out
}

/// One frame of every kind, with and without the query block where the kind allows it.
pub(super) fn samples(records: &[u8], hash: &[u8]) -> Vec<Frame<'static>> {
    let records: &'static [u8] = Vec::leak(records.to_vec());
    let hash: &'static [u8] = Vec::leak(hash.to_vec());
    let id = BatchId::from_number(42);
    let mut v = Vec::new();
    for auth in [None, Some(AUTH)] {
        v.push(Frame::Hello(Hello {
            auth,
            version: 1,
            role: Role::StorageNode,
            record_size: 3,
            dataset_id: "trades",
        }));
        v.push(Frame::Records(Records {
            auth,
            batch_id: id,
            record_size: 3,
            count: 2,
            payload: records,
        }));
        v.push(Frame::Eob(EndOfBatch {
            auth,
            batch_id: id,
            record_count: 1 << 40,
            closing_hash: hash,
            digest: &[],
        }));
        v.push(Frame::Eob(EndOfBatch {
            auth,
            batch_id: id,
            record_count: 7,
            closing_hash: hash,
            digest: &[0xab; BATCH_DIGEST_LEN],
        }));
        v.push(Frame::Eob(EndOfBatch {
            auth,
            batch_id: id,
            record_count: 0,
            closing_hash: &[],
            digest: &[],
        }));
        v.push(Frame::Bbn(BadBatch {
            auth,
            batch_id: id,
            reason: "hash mismatch at block 3 ✗",
        }));
        v.push(Frame::Error(ErrorFrame {
            auth,
            code: 503,
            message: "",
        }));
        v.push(Frame::Credit(Credit {
            auth,
            bytes: MAX_EXACT_INT,
        }));
        v.push(Frame::Aggregate(AggregatePartial {
            auth,
            batch_id: id,
            json: r#"{"v":1,"groups":[{"k":["6"],"m":["12","-340282366920938463463374607431768211456"]}]}"#,
        }));
        v.push(Frame::Columns(super::ColumnsFrame {
            auth,
            batch_id: id,
            rows: 2,
            body: records,
        }));
        v.push(Frame::Eobs(EndOfBatches {
            auth,
            batches: vec![
                BatchEnd {
                    batch_id: id,
                    record_count: MAX_EXACT_INT,
                },
                BatchEnd {
                    batch_id: BatchId::from_number(43),
                    record_count: 0,
                },
            ],
        }));
        v.push(Frame::TraceContext(TraceContextFrame {
            auth,
            json: r#"{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#,
        }));
    }
    v.push(Frame::Query(Query {
        auth: AUTH,
        json: r#"{"query_id":3735928559,"batch_ids":[]}"#,
    }));
    v.push(Frame::Cancel(Cancel { auth: AUTH }));
    v
}

#[test]
fn every_kind_round_trips() {
    let frames = samples(&[1, 2, 3, 4, 5, 6], &[0xab; 64]);
    let kinds: std::collections::HashSet<_> = frames.iter().map(|f| f.kind()).collect();
    assert_eq!(
        kinds.len(),
        FrameKind::ALL.len(),
        "samples cover every kind"
    );
    for f in &frames {
        let bytes = enc(f);
        assert_eq!(&bytes[..4], b"HDWP");
        assert_eq!(bytes[4], VERSION);
        assert_eq!(bytes[5], f.kind() as u8);
        assert_eq!(
            bytes.len() - HEADER_LEN,
            u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize
        );
        let (back, n) = decode_frame(&bytes, DEFAULT_MAX_PAYLOAD)
            .unwrap()
            .expect("whole frame");
        assert_eq!(n, bytes.len());
        assert_eq!(&back, f);
        assert_eq!(decode_datagram(&bytes, MTU_STANDARD).unwrap(), *f);
    }
}

#[test]
fn header_layout_is_big_endian_with_crc32c_over_header_and_payload() {
    let bytes = enc(&Frame::Credit(Credit {
        auth: None,
        bytes: 0x0102_0304_0506,
    }));
    assert_eq!(
        &bytes[..12],
        &[b'H', b'D', b'W', b'P', 1, 8, 0, 0, 0, 0, 0, 8]
    );
    assert_eq!(&bytes[16..], &[0, 0, 1, 2, 3, 4, 5, 6]);
    let mut covered = bytes[..12].to_vec();
    covered.extend_from_slice(&bytes[16..]);
    assert_eq!(
        u32::from_be_bytes(bytes[12..16].try_into().unwrap()),
        crc32c::crc32c(&covered)
    );
    // CRC-32C check value from the Castagnoli polynomial's reference table ("123456789").
    assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
}

#[test]
fn auth_block_opens_the_payload_and_sets_flag_bit_0() {
    let bytes = enc(&Frame::Credit(Credit {
        auth: Some(AUTH),
        bytes: 1,
    }));
    assert_eq!(u16::from_be_bytes([bytes[6], bytes[7]]), FLAG_AUTH);
    assert_eq!(&bytes[16..20], &0xdead_beef_u32.to_be_bytes());
    assert_eq!(&bytes[20..36], &[7; 16]);
}

#[test]
fn stream_split_at_every_point_and_in_chunks_yields_the_same_frames() {
    let frames = samples(&[9, 8, 7, 6, 5, 4], &[1, 2, 3]);
    let stream: Vec<u8> = frames.iter().flat_map(enc).collect();
    let collect = |chunks: &mut dyn Iterator<Item = &[u8]>| {
        let mut d = FrameDecoder::new();
        let mut got = Vec::new();
        for c in chunks {
            d.push(c);
            while let Some(f) = d.next_frame().unwrap() {
                got.push(enc(&f));
            }
        }
        d.finish().unwrap();
        assert_eq!(d.position(), stream.len() as u64);
        got
    };
    let want: Vec<Vec<u8>> = frames.iter().map(enc).collect();
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        assert_eq!(collect(&mut [a, b].into_iter()), want, "cut at {cut}");
    }
    for size in [1, 2, 3, 7, 16, 17, 64, 1000] {
        assert_eq!(collect(&mut stream.chunks(size)), want, "chunks of {size}");
    }
}

#[test]
fn finish_reports_a_partial_frame() {
    let bytes = enc(&Frame::Cancel(Cancel { auth: AUTH }));
    let mut d = FrameDecoder::new();
    d.push(&bytes[..10]);
    assert!(d.next_frame().unwrap().is_none());
    assert_eq!(
        d.finish().unwrap_err(),
        HdwpError::TruncatedFrame { have: 10, need: 16 }
    );
    d.push(&bytes[10..30]);
    assert_eq!(
        d.finish().unwrap_err(),
        HdwpError::TruncatedFrame {
            have: 30,
            need: bytes.len() as u64
        }
    );
    assert_eq!(d.buffered(), 30);
}

#[test]
fn batched_records_pack_whole_records_up_to_the_frame_limit() {
    let id = BatchId::from_number(7);
    let records: Vec<u8> = (0..150 * 1000).map(|i| (i % 251) as u8).collect();
    for (limit, auth) in [
        (MTU_STANDARD, None),
        (MTU_STANDARD, Some(AUTH)),
        (MTU_JUMBO, None),
        (1 << 20, Some(AUTH)),
    ] {
        let mut out = Vec::new();
        let n = encode_records(&mut out, auth, &id, 150, &records, limit).unwrap();
        let per = records_per_frame(150, limit, auth.is_some()).unwrap() as usize;
        assert_eq!(n, 1000usize.div_ceil(per));
        let mut d = FrameDecoder::new();
        d.push(&out);
        let mut joined = Vec::new();
        let mut frames = 0;
        let mut pos = 0usize;
        while let Some(f) = d.next_frame().unwrap() {
            let Frame::Records(r) = f else {
                panic!("records expected")
            };
            assert_eq!((r.auth, r.batch_id, r.record_size), (auth, id, 150));
            joined.extend_from_slice(r.payload);
            let len = d.position() as usize - pos;
            pos = d.position() as usize;
            assert!(len <= limit, "frame of {len} bytes over the limit {limit}");
            frames += 1;
        }
        assert_eq!((frames, joined), (n, records.clone()));
    }
}

#[test]
fn mtu_modes_fit_the_expected_record_counts() {
    // 1200 - 16 header - 70 fixed = 1114 bytes of records: 7 records of 150; with the query block 1094: 7.
    assert_eq!(records_per_frame(150, MTU_STANDARD, false).unwrap(), 7);
    assert_eq!(records_per_frame(150, MTU_STANDARD, true).unwrap(), 7);
    assert_eq!(records_per_frame(1114, MTU_STANDARD, false).unwrap(), 1);
    assert_eq!(records_per_frame(1094, MTU_STANDARD, true).unwrap(), 1);
    assert_eq!(records_per_frame(8414, MTU_JUMBO, false).unwrap(), 1);
    assert_eq!(records_per_frame(150, MTU_JUMBO, false).unwrap(), 56);
    let err = records_per_frame(1115, MTU_STANDARD, false).unwrap_err();
    assert_eq!(err.code(), "ERR_HDWP_TOO_LARGE");
    let mut out = vec![0xee];
    let err = encode_records_for_mtu(
        &mut out,
        None,
        &BatchId::from_number(1),
        1200,
        &[0; 2400],
        MTU_STANDARD,
    );
    assert_eq!(err.unwrap_err().code(), "ERR_HDWP_TOO_LARGE");
    assert_eq!(
        out,
        vec![0xee],
        "a failed encode leaves the output as it was"
    );
    let err = encode_records_for_mtu(
        &mut out,
        None,
        &BatchId::from_number(1),
        10,
        &[0; 10],
        70_000,
    );
    assert_eq!(err.unwrap_err().code(), "ERR_HDWP_INVALID_VALUE");
}

#[test]
fn batched_encoder_rejects_partial_records_and_writes_nothing_for_none() {
    let mut out = Vec::new();
    let id = BatchId::from_number(1);
    assert_eq!(
        encode_records(&mut out, None, &id, 10, &[], MTU_STANDARD),
        Ok(0)
    );
    assert!(out.is_empty());
    let e = encode_records(&mut out, None, &id, 10, &[0; 25], MTU_STANDARD).unwrap_err();
    assert_eq!(e.code(), "ERR_HDWP_INCONSISTENT_LENGTH");
    let e = encode_records(&mut out, None, &id, 0, &[], MTU_STANDARD).unwrap_err();
    assert_eq!(e.code(), "ERR_HDWP_INVALID_VALUE");
    let plan = RecordsPlan::new(None, 10, 30, MTU_STANDARD).unwrap();
    assert_eq!((plan.frames, plan.encoded_len), (1, 30 + HEADER_LEN + 70));
    let e = plan.encode_into(&mut [0; 115], &id, &[0; 30]).unwrap_err();
    assert_eq!(
        e.code(),
        "ERR_HDWP_INCONSISTENT_LENGTH",
        "output of the wrong size"
    );
    let e = plan.encode_into(&mut [0; 116], &id, &[0; 20]).unwrap_err();
    assert_eq!(
        e.code(),
        "ERR_HDWP_INCONSISTENT_LENGTH",
        "records of the wrong size"
    );
    let zero = QueryAuth {
        query_id: 1,
        token: [0; 16],
    };
    let e = encode_records(&mut out, Some(zero), &id, 1, &[1], MTU_STANDARD).unwrap_err();
    assert_eq!(e.code(), "ERR_HDWP_INVALID_VALUE");
}

/// xorshift64*: deterministic, so a failure reproduces exactly.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn pseudo_random_garbage_never_panics_and_valid_prefixes_survive() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let valid: Vec<Vec<u8>> = samples(&[1, 2, 3, 4, 5, 6], &[5; 20])
        .iter()
        .map(enc)
        .collect();
    for i in 0..4000 {
        // Half pure noise; half a valid frame with a few bytes flipped, truncated or extended,
        // which reaches the payload parsers instead of failing at the magic.
        let mut input: Vec<u8> = if i % 2 == 0 {
            (0..rng.next() % 300).map(|_| rng.next() as u8).collect()
        } else {
            let mut v = valid[(rng.next() as usize) % valid.len()].clone();
            for _ in 0..1 + rng.next() % 4 {
                let at = (rng.next() as usize) % v.len();
                v[at] = rng.next() as u8;
            }
            if i % 4 == 1 {
                // Re-seal so the mutation gets past the checksum into the payload parsers.
                let crc = super::header::frame_checksum(&v[..12], &v[HEADER_LEN..]);
                v[12..16].copy_from_slice(&crc.to_be_bytes());
            }
            v
        };
        if i % 3 == 0 {
            input.truncate((rng.next() as usize) % (input.len() + 1));
        }
        let _ = decode_frame(&input, DEFAULT_MAX_PAYLOAD);
        let _ = decode_datagram(&input, MTU_STANDARD);
        let mut d = FrameDecoder::with_max_payload(1 + (rng.next() % 4096) as u32).unwrap();
        let good = &valid[i % valid.len()];
        d.push(good);
        for chunk in input.chunks(1 + (rng.next() % 40) as usize) {
            d.push(chunk);
        }
        let first = d.next_frame().map(|f| f.map(|f| enc(&f)));
        if good.len() - HEADER_LEN <= d.max_payload() as usize {
            assert_eq!(
                first,
                Ok(Some(good.clone())),
                "a good frame before garbage is kept"
            );
        }
        while let Ok(Some(_)) = d.next_frame() {}
        let _ = d.finish();
    }
}

#[test]
fn encode_datagrams_gives_one_whole_frame_per_datagram() {
    let records: Vec<u8> = (0..150 * 100).map(|i| (i % 253) as u8).collect();
    for mtu in [MTU_STANDARD, MTU_JUMBO] {
        let grams = encode_datagrams(None, &BatchId::from_number(4), 150, &records, mtu).unwrap();
        assert_eq!(
            grams.len(),
            100usize.div_ceil(records_per_frame(150, mtu, false).unwrap() as usize)
        );
        let mut back = Vec::new();
        for g in &grams {
            assert!(g.len() <= mtu);
            match decode_datagram(g, mtu).unwrap() {
                Frame::Records(r) => back.extend_from_slice(r.payload),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(back, records);
    }
    let err = encode_datagrams(
        None,
        &BatchId::from_number(4),
        1200,
        &[0; 1200],
        MTU_STANDARD,
    );
    assert_eq!(err.unwrap_err().code(), "ERR_HDWP_TOO_LARGE");
}
