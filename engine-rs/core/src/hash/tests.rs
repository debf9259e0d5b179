use sha2::{Digest as _, Sha256, Sha512};

use super::*;

fn id(n: u8) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[63] = n;
    b[0] = 0xa5;
    b
}

fn data(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn chain(alg: HashAlgorithm, r: u32, b: u32, batch: &[u8; 64], chunks: &[&[u8]]) -> ChainResult {
    let mut c = ChainState::new(alg, r, b, batch).expect("valid chain");
    for ch in chunks {
        c.update(ch);
    }
    c.finish()
}

/// The definition written out directly with the sha2 crate, independent of `ChainState`.
fn by_hand_sha512(r: usize, b: usize, batch: &[u8; 64], bytes: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut prev = Sha512::digest(batch).to_vec();
    let rec_hashes: Vec<Vec<u8>> = bytes
        .chunks(r)
        .map(|rec| Sha512::digest(rec).to_vec())
        .collect();
    let mut blocks = Vec::new();
    for group in rec_hashes.chunks(b) {
        let mut h = Sha512::new();
        h.update(&prev);
        for rh in group {
            h.update(rh);
        }
        prev = h.finalize().to_vec();
        blocks.push(prev.clone());
    }
    (prev, blocks)
}

#[test]
fn known_answer_sha512_matches_the_definition_by_hand() {
    let batch = id(7);
    for (len, r, b) in [
        (150 * 64 * 3, 150, 64),
        (150 * 130, 150, 64),
        (150 * 5 + 20, 150, 2),
        (10, 150, 64),
        (150, 150, 1),
    ] {
        let bytes = data(len, len as u32);
        let (closing, blocks) = by_hand_sha512(r, b, &batch, &bytes);
        let got = chain(HashAlgorithm::Sha512, r as u32, b as u32, &batch, &[&bytes]);
        assert_eq!(got.closing_hash.as_bytes(), &closing[..], "len {len}");
        assert_eq!(got.records, len.div_ceil(r) as u64);
        assert_eq!(got.tail_bytes, len % r);
        assert_eq!(got.block_hashes, blocks.concat());
        assert_eq!(got.blocks(), blocks.len() as u64);
    }
}

#[test]
fn known_answer_sha256_two_records_one_block() {
    let batch = id(1);
    let bytes = data(8, 3);
    let got = chain(HashAlgorithm::Sha256, 4, 64, &batch, &[&bytes]);
    let mut h = Sha256::new();
    h.update(Sha256::digest(batch));
    h.update(Sha256::digest(&bytes[..4]));
    h.update(Sha256::digest(&bytes[4..]));
    assert_eq!(got.closing_hash.as_bytes(), &h.finalize()[..]);
}

#[test]
fn known_answer_blake3_matches_the_definition() {
    let batch = id(2);
    let bytes = data(30, 5);
    let got = chain(HashAlgorithm::Blake3, 10, 2, &batch, &[&bytes]);
    let seed = blake3::hash(&batch);
    let r: Vec<_> = bytes.chunks(10).map(blake3::hash).collect();
    let mut b0 = blake3::Hasher::new();
    b0.update(seed.as_bytes())
        .update(r[0].as_bytes())
        .update(r[1].as_bytes());
    let b0 = b0.finalize();
    let mut b1 = blake3::Hasher::new();
    b1.update(b0.as_bytes()).update(r[2].as_bytes());
    assert_eq!(got.closing_hash.as_bytes(), b1.finalize().as_bytes());
    assert_eq!(got.blocks(), 2);
}

#[test]
fn empty_batch_closes_with_the_hash_of_its_id() {
    let batch = id(9);
    for alg in [
        HashAlgorithm::Sha512,
        HashAlgorithm::Sha256,
        HashAlgorithm::Blake3,
    ] {
        let got = chain(alg, 150, 64, &batch, &[]);
        assert_eq!(got.closing_hash, alg.hash(&batch));
        assert_eq!((got.records, got.blocks()), (0, 0));
    }
}

#[test]
fn every_split_point_gives_the_same_hash_for_each_algorithm() {
    let batch = id(4);
    let bytes = data(13 * 7 + 5, 11);
    for alg in [
        HashAlgorithm::Sha512,
        HashAlgorithm::Sha256,
        HashAlgorithm::Blake3,
    ] {
        let whole = chain(alg, 13, 3, &batch, &[&bytes]);
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(
                chain(alg, 13, 3, &batch, &[a, b]),
                whole,
                "{} cut {cut}",
                alg.name()
            );
        }
        for size in [1, 2, 5, 13, 14, 64] {
            let parts: Vec<&[u8]> = bytes.chunks(size).collect();
            assert_eq!(
                chain(alg, 13, 3, &batch, &parts),
                whole,
                "{} chunks of {size}",
                alg.name()
            );
        }
    }
}

#[test]
fn algorithms_batch_ids_and_bytes_all_change_the_hash() {
    let bytes = data(600, 1);
    let base = chain(HashAlgorithm::Sha512, 150, 64, &id(1), &[&bytes]).closing_hash;
    assert_ne!(
        chain(HashAlgorithm::Sha512, 150, 64, &id(2), &[&bytes]).closing_hash,
        base
    );
    assert_ne!(
        chain(HashAlgorithm::Sha512, 150, 2, &id(1), &[&bytes]).closing_hash,
        base
    );
    let mut flipped = bytes.clone();
    flipped[599] ^= 1;
    assert_ne!(
        chain(HashAlgorithm::Sha512, 150, 64, &id(1), &[&flipped]).closing_hash,
        base
    );
    assert_eq!(
        chain(HashAlgorithm::Sha256, 150, 64, &id(1), &[&bytes])
            .closing_hash
            .as_bytes()
            .len(),
        32
    );
}

#[test]
fn bad_sizes_are_rejected() {
    let batch = id(0);
    assert_eq!(
        ChainState::new(HashAlgorithm::Sha512, 0, 64, &batch).err(),
        Some(ChainError::RecordSize(0))
    );
    assert_eq!(
        ChainState::new(HashAlgorithm::Sha512, MAX_RECORD_SIZE + 1, 64, &batch).err(),
        Some(ChainError::RecordSize(u64::from(MAX_RECORD_SIZE) + 1))
    );
    assert_eq!(
        ChainState::new(HashAlgorithm::Sha512, 150, 0, &batch).err(),
        Some(ChainError::BlockSize(0))
    );
    assert_eq!(
        ChainState::new(HashAlgorithm::Sha512, 150, MAX_BLOCK_SIZE + 1, &batch).err(),
        Some(ChainError::BlockSize(u64::from(MAX_BLOCK_SIZE) + 1))
    );
}

#[test]
fn names_and_codes_round_trip() {
    for alg in [
        HashAlgorithm::Sha512,
        HashAlgorithm::Sha256,
        HashAlgorithm::Blake3,
    ] {
        assert_eq!(HashAlgorithm::from_name(alg.name()), Some(alg));
        assert_eq!(HashAlgorithm::from_code(alg.code()), Some(alg));
    }
    assert_eq!(
        HashAlgorithm::from_name("SHA512"),
        Some(HashAlgorithm::Sha512)
    );
    assert_eq!(HashAlgorithm::from_name("md5"), None);
    assert_eq!(HashAlgorithm::from_code(0), None);
}
