//! The ingest hash chain: records split at a fixed size are hashed one by one, and every
//! `block_size` record hashes are chained into a block hash that also covers the previous block's
//! hash. The last block hash closes the batch. The exact definition is in docs/segment.md, section
//! "Hash chain"; [`ChainState`] computes it incrementally over chunks of any size.

mod algorithm;
mod chain;
mod digest;
mod parallel;
#[cfg(test)]
mod parallel_tests;
#[cfg(test)]
mod tests;

pub use algorithm::{Digest, HashAlgorithm, MAX_DIGEST_LEN};
pub use chain::{ChainError, ChainResult, ChainState, MAX_BLOCK_SIZE, MAX_RECORD_SIZE};
pub use digest::{BatchDigest, BATCH_DIGEST_LEN};
pub use parallel::{
    available_threads, hash_threads, run_beside, set_hash_threads, HashThreadsError,
    MAX_HASH_THREADS,
};

/// Default number of record hashes per chain block (the reference's HASH_CHAIN_BLOCK_SIZE).
pub const DEFAULT_BLOCK_SIZE: u32 = 64;

/// Default record size the chain splits at (the reference's RECORD_SIZE).
pub const DEFAULT_RECORD_SIZE: u32 = 150;
