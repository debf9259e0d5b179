//! Fuzzes the end-of-batch payload, with the sender's batch digest added by reliability issue #15
//! (docs/hdwp.md, "eob"): the input is an eob frame's payload (after one flags byte: bit 0 sets
//! the auth flag), put behind a valid header with a correct CRC so every input reaches the eob
//! parser. Beyond "never panics": an eob that decodes has a closing hash of the length it names,
//! a digest that is absent or exactly 32 bytes, re-encodes to the same bytes, and decodes the same
//! through the streaming decoder fed one byte at a time.

use hd_engine_core::hdwp::header::frame_checksum;
use hd_engine_core::hdwp::{
    decode_frame, encode_frame, Frame, FrameDecoder, FrameKind, BATCH_DIGEST_LEN, FLAG_AUTH,
    HEADER_LEN, MAGIC, VERSION,
};

const MAX_PAYLOAD: u32 = 1 << 16;

/// The target: never panics on any input, and holds the properties above.
pub fn run(input: &[u8]) {
    let Some((&flags, payload)) = input.split_first() else {
        return;
    };
    let Ok(len) = u32::try_from(payload.len()) else {
        return;
    };
    let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
    frame.extend_from_slice(&MAGIC);
    frame.push(VERSION);
    frame.push(FrameKind::Eob as u8);
    let f = if flags & 1 == 1 { FLAG_AUTH } else { 0 };
    frame.extend_from_slice(&f.to_be_bytes());
    frame.extend_from_slice(&len.to_be_bytes());
    let crc = frame_checksum(&frame[..12], payload);
    frame.extend_from_slice(&crc.to_be_bytes());
    frame.extend_from_slice(payload);
    let whole = decode_frame(&frame, MAX_PAYLOAD);
    let mut d = FrameDecoder::with_max_payload(MAX_PAYLOAD).expect("valid limit");
    let mut streamed = None;
    for b in &frame {
        d.push(std::slice::from_ref(b));
        match d.next_frame() {
            Ok(Some(f)) => {
                let mut out = Vec::new();
                encode_frame(&f, &mut out, MAX_PAYLOAD).expect("a decoded frame re-encodes");
                streamed = Some(Ok(out));
                break;
            }
            Ok(None) => {}
            Err(e) => {
                streamed = Some(Err(e.code()));
                break;
            }
        }
    }
    match whole {
        Ok(Some((Frame::Eob(e), n))) => {
            assert_eq!(n, frame.len(), "one frame, all of it");
            assert!(e.digest.is_empty() || e.digest.len() == BATCH_DIGEST_LEN);
            let mut out = Vec::new();
            encode_frame(&Frame::Eob(e), &mut out, MAX_PAYLOAD).expect("a decoded eob re-encodes");
            assert_eq!(out, frame, "re-encoding reproduces the bytes");
            assert_eq!(streamed, Some(Ok(out)), "the stream decoder agrees");
        }
        Ok(Some(_)) => panic!("an eob header decoded as another kind"),
        Ok(None) => panic!("a whole frame reported as incomplete"),
        Err(e) => assert_eq!(streamed, Some(Err(e.code())), "the stream decoder agrees"),
    }
}
