//! Fuzzes the HDWP decoders with arbitrary bytes: `decode_frame`, `decode_datagram` and the
//! streaming `FrameDecoder` fed in chunks whose sizes come from the input itself. Beyond "never
//! panics", it checks that every frame that decodes re-encodes to exactly the bytes it came from,
//! and that chunking never changes what the stream decoder yields.

use hd_engine_core::hdwp::header::frame_checksum;
use hd_engine_core::hdwp::HEADER_LEN;
use hd_engine_core::hdwp::{
    decode_datagram, decode_frame, encode_frame, FrameDecoder, HdwpError, MTU_JUMBO, MTU_STANDARD,
};

/// Rewrites the checksum of every whole frame in `data`, so mutations reach the payload parsers
/// instead of stopping at the CRC (a fuzzer cannot guess a CRC-32C).
fn reseal(data: &mut [u8]) {
    let mut pos = 0;
    while data.len() - pos >= HEADER_LEN {
        let len = u32::from_be_bytes([data[pos + 8], data[pos + 9], data[pos + 10], data[pos + 11]])
            as usize;
        let end = match (pos + HEADER_LEN).checked_add(len) {
            Some(end) if end <= data.len() => end,
            _ => return,
        };
        let crc = frame_checksum(&data[pos..pos + 12], &data[pos + HEADER_LEN..end]);
        data[pos + 12..pos + 16].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

/// Frames (re-encoded) and the final error of `data` fed to a decoder in chunks of `chunk` bytes.
fn stream(data: &[u8], chunk: usize, max_payload: u32) -> (Vec<Vec<u8>>, Option<HdwpError>) {
    let mut d = FrameDecoder::with_max_payload(max_payload).expect("valid limit");
    let mut frames = Vec::new();
    for part in data.chunks(chunk.max(1)) {
        d.push(part);
        loop {
            match d.next_frame() {
                Ok(Some(f)) => {
                    let mut out = Vec::new();
                    encode_frame(&f, &mut out, max_payload).expect("a decoded frame re-encodes");
                    frames.push(out);
                }
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    (frames, d.finish().err())
}

/// The target: never panics on any input, and holds the properties above.
pub fn run(input: &[u8]) {
    // The first byte picks the mode (odd: re-seal checksums) and the chunk size.
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let mut owned = rest.to_vec();
    if mode & 1 == 1 {
        reseal(&mut owned);
    }
    let data = &owned[..];
    let max_payload = 1 << 16;
    if let Ok(Some((frame, n))) = decode_frame(data, max_payload) {
        let mut out = Vec::new();
        encode_frame(&frame, &mut out, max_payload).expect("a decoded frame re-encodes");
        assert_eq!(out, &data[..n], "re-encoding reproduces the bytes");
    }
    let _ = decode_datagram(data, MTU_STANDARD);
    let _ = decode_datagram(data, MTU_JUMBO);
    let chunk = (mode >> 1) as usize % 64 + 1;
    let whole = stream(data, data.len().max(1), max_payload);
    let split = stream(data, chunk, max_payload);
    assert_eq!(whole.0, split.0, "chunking does not change the frames");
    assert_eq!(
        whole.1.map(|e| e.code()),
        split.1.map(|e| e.code()),
        "chunking does not change the error"
    );
    let joined: Vec<u8> = whole.0.concat();
    assert_eq!(
        &data[..joined.len()],
        &joined[..],
        "frames are the stream's own bytes"
    );
}
