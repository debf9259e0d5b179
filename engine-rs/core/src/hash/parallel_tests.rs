//! The chain with record hashes on a pool (super::parallel) against the chain one record after
//! the other: equal for every algorithm, record size, block size and chunking.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use sha2::{Digest as _, Sha512};

use super::parallel::{MIN_PARALLEL_BYTES, POOL_PIECES};
use super::*;
use crate::test_rng::Rng;

const ALGORITHMS: [HashAlgorithm; 3] = [
    HashAlgorithm::Sha512,
    HashAlgorithm::Sha256,
    HashAlgorithm::Blake3,
];

fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("test pool"),
    )
}

fn batch_id(n: u8) -> [u8; 64] {
    let mut b = [0x3cu8; 64];
    b[0] = n;
    b
}

/// The chain one record after the other: every update is below the pool's threshold.
fn sequential(alg: HashAlgorithm, r: u32, b: u32, id: &[u8; 64], bytes: &[u8]) -> ChainResult {
    let mut c = ChainState::new(alg, r, b, id).expect("valid chain");
    for part in bytes.chunks(MIN_PARALLEL_BYTES / 2) {
        c.update(part);
    }
    c.finish()
}

/// The chain on `pool` in pieces of about `piece_bytes`, fed in chunks cut at `cuts`; with
/// `caller_hashes` false only the pool hashes.
fn on_pool(
    alg: HashAlgorithm,
    (r, b): (u32, u32),
    id: &[u8; 64],
    bytes: &[u8],
    cuts: &[usize],
    (pool, threads, piece_bytes, caller_hashes): (&Arc<rayon::ThreadPool>, usize, usize, bool),
) -> ChainResult {
    let mut c = ChainState::new(alg, r, b, id)
        .expect("valid chain")
        .with_pool(Arc::clone(pool), threads, piece_bytes, caller_hashes);
    let mut at = 0;
    for &cut in cuts {
        c.update(&bytes[at..cut]);
        at = cut;
    }
    c.update(&bytes[at..]);
    c.finish()
}

#[test]
fn random_sizes_and_chunkings_equal_the_sequential_chain() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pools: Vec<(usize, Arc<rayon::ThreadPool>)> =
        [2, 3, 5].into_iter().map(|t| (t, pool(t))).collect();
    for case in 0..150 {
        let alg = ALGORITHMS[case % 3];
        let r = match rng.range(0, 9) {
            0 => rng.range(1, 4),
            1 => rng.range(1000, 5000),
            _ => rng.range(5, 300),
        };
        let b = match rng.range(0, 4) {
            0 => 1,
            1 => rng.range(100, 300),
            _ => rng.range(2, 70),
        };
        let len = rng.range(0, 60_000);
        let bytes = rng.bytes(len);
        let mut cuts: Vec<usize> = (0..rng.range(0, 6)).map(|_| rng.range(0, len)).collect();
        cuts.sort_unstable();
        let (threads, p) = &pools[case % pools.len()];
        let piece = rng.range(1, 3 * r);
        let id = batch_id(case as u8);
        let want = sequential(alg, r as u32, b as u32, &id, &bytes);
        let got = on_pool(
            alg,
            (r as u32, b as u32),
            &id,
            &bytes,
            &cuts,
            (p, *threads, piece, case % 4 != 0),
        );
        assert_eq!(
            got,
            want,
            "case {case}: {} r {r} b {b} len {len} cuts {cuts:?} piece {piece} threads {threads}",
            alg.name()
        );
    }
}

#[test]
fn every_split_point_on_the_pool_equals_the_whole() {
    let p = pool(3);
    let mut rng = Rng(7);
    let bytes = rng.bytes(17 * 40 + 9);
    for alg in ALGORITHMS {
        let want = sequential(alg, 17, 3, &batch_id(1), &bytes);
        for cut in 0..=bytes.len() {
            let got = on_pool(
                alg,
                (17, 3),
                &batch_id(1),
                &bytes,
                &[cut],
                (&p, 3, 17 * 2, cut % 2 == 0),
            );
            assert_eq!(got, want, "{} cut {cut}", alg.name());
        }
    }
}

#[test]
fn the_pool_hashes_the_pieces_and_matches_the_definition_by_hand() {
    let p = pool(4);
    let bytes = Rng(3).bytes(150 * 64 * 40 + 77);
    let before = POOL_PIECES.load(Ordering::Relaxed);
    let got = on_pool(
        HashAlgorithm::Sha512,
        (150, 64),
        &batch_id(2),
        &bytes,
        &[],
        (&p, 4, 150 * 100, false),
    );
    // 2 560 whole records in 26 pieces of 100, every one hashed by the pool.
    assert!(POOL_PIECES.load(Ordering::Relaxed) - before >= 26);
    let mut prev = Sha512::digest(batch_id(2)).to_vec();
    let recs: Vec<Vec<u8>> = bytes
        .chunks(150)
        .map(|r| Sha512::digest(r).to_vec())
        .collect();
    let mut blocks = Vec::new();
    for group in recs.chunks(64) {
        let mut h = Sha512::new();
        h.update(&prev);
        group.iter().for_each(|r| h.update(r));
        prev = h.finalize().to_vec();
        blocks.extend_from_slice(&prev);
    }
    assert_eq!(got.closing_hash.as_bytes(), &prev[..]);
    assert_eq!(got.block_hashes, blocks);
    assert_eq!((got.records, got.tail_bytes), (2561, 77));
}

#[test]
fn many_more_pieces_than_the_window_stay_in_order() {
    // 2 threads: 8 pieces out at a time, 3 000 pieces of one record.
    let p = pool(2);
    let bytes = Rng(11).bytes(40 * 3000);
    for alg in ALGORITHMS {
        let want = sequential(alg, 40, 7, &batch_id(3), &bytes);
        for caller_hashes in [true, false] {
            let got = on_pool(
                alg,
                (40, 7),
                &batch_id(3),
                &bytes,
                &[],
                (&p, 2, 1, caller_hashes),
            );
            assert_eq!(got, want, "{}", alg.name());
        }
    }
}

#[test]
fn the_process_pool_hashes_large_updates_and_its_size_can_be_set() {
    assert_eq!(
        set_hash_threads(MAX_HASH_THREADS + 1),
        Err(HashThreadsError::Range(MAX_HASH_THREADS + 1))
    );
    assert_eq!(set_hash_threads(0), Ok(available_threads()));
    assert_eq!(hash_threads(), available_threads());
    assert_eq!(set_hash_threads(3), Ok(3));
    assert_eq!(hash_threads(), 3);
    // Which thread hashes each piece depends on timing (the_pool_hashes_the_pieces... checks the
    // pool's share); the chain must not.
    let bytes = Rng(5).bytes(MIN_PARALLEL_BYTES * 3 + 50);
    for alg in ALGORITHMS {
        let mut c = ChainState::new(alg, 150, 64, &batch_id(4)).expect("chain");
        c.update(&bytes);
        assert_eq!(
            c.finish(),
            sequential(alg, 150, 64, &batch_id(4), &bytes),
            "{}",
            alg.name()
        );
    }
    assert_eq!(set_hash_threads(1), Ok(1));
    assert_eq!(hash_threads(), 1);
    let mut c = ChainState::new(HashAlgorithm::Sha512, 150, 64, &batch_id(4)).expect("chain");
    c.update(&bytes);
    assert_eq!(
        c.finish(),
        sequential(HashAlgorithm::Sha512, 150, 64, &batch_id(4), &bytes)
    );
    assert_eq!(set_hash_threads(0), Ok(available_threads()));
}

#[test]
fn run_beside_runs_both_and_returns_once_both_are_done() {
    let bytes = Rng(9).bytes(MIN_PARALLEL_BYTES * 2);
    let (mut chain, mut digest) = (None, None);
    run_beside(
        || {
            let mut c =
                ChainState::new(HashAlgorithm::Sha512, 150, 64, &batch_id(5)).expect("chain");
            c.update(&bytes);
            chain = Some(c.finish());
        },
        || {
            let mut d = BatchDigest::new();
            d.update(&bytes);
            digest = Some(d.finish());
        },
    );
    assert_eq!(
        chain,
        Some(sequential(
            HashAlgorithm::Sha512,
            150,
            64,
            &batch_id(5),
            &bytes
        ))
    );
    assert_eq!(digest, Some(*blake3::hash(&bytes).as_bytes()));
}
