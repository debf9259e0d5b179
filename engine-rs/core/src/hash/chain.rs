//! Incremental hash chain over the bytes of one batch.
//!
//! Definition (docs/segment.md, "Hash chain"), with `H` the algorithm, `R` the record size and `B`
//! the block size:
//!
//! - the batch's bytes are split into records of `R` bytes; the last may be shorter;
//! - `record_hash[j] = H(record_j)`;
//! - `block_hash[-1] = H(batch_id)` (the 64-byte id);
//! - block `i` holds record hashes `i*B .. min((i+1)*B, n)` and
//!   `block_hash[i] = H(block_hash[i-1] || record_hash[i*B] || ... )`;
//! - the closing hash is the last block hash, or `H(batch_id)` when the batch has no records.
//!
//! [`ChainState`] is fed chunks of any size (a record may span chunks) and never buffers record
//! bytes: a split record goes through a streaming hasher. An update holding many whole records
//! has their hashes computed on the process's hashing pool while the calling thread chains them
//! (super::parallel); the result is the same as hashing them one after the other.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
#[cfg(test)]
use std::sync::Arc;

use thiserror::Error;

use super::algorithm::{ChainHasher, Digest, HashAlgorithm, Sha512};
use super::parallel::{self, Claims, Plan};
use crate::batch_id::BATCH_ID_LEN;

/// Largest record size a chain accepts (16 MiB).
pub const MAX_RECORD_SIZE: u32 = 16 << 20;
/// Largest block size (record hashes per block) a chain accepts.
pub const MAX_BLOCK_SIZE: u32 = 1 << 20;

/// A chain could not be set up.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ChainError {
    #[error("record size must be 1..={MAX_RECORD_SIZE} bytes, got {0}")]
    RecordSize(u64),
    #[error("hash chain block size must be 1..={MAX_BLOCK_SIZE} record hashes, got {0}")]
    BlockSize(u64),
}

impl ChainError {
    /// Stable error code for the bridge.
    pub fn code(&self) -> &'static str {
        "ERR_HASH_CHAIN_CONFIG"
    }
}

/// The outcome of a finished chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainResult {
    /// The closing hash of the batch.
    pub closing_hash: Digest,
    /// Records hashed, the short final one included.
    pub records: u64,
    /// Length of the short final record (0: every record was whole).
    pub tail_bytes: usize,
    /// Every block hash in order, `digest_len` bytes each.
    pub block_hashes: Vec<u8>,
}

impl ChainResult {
    /// Number of blocks.
    pub fn blocks(&self) -> u64 {
        (self.block_hashes.len() / self.closing_hash.as_bytes().len()) as u64
    }
}

/// The running state of one batch's chain, generic over the hash so the loop has no dispatch.
struct Core<H: ChainHasher> {
    record_size: usize,
    block_size: usize,
    /// Streaming hasher of a record split across chunks.
    record: H,
    record_fill: usize,
    /// Hasher of the open block, already fed the previous block hash.
    block: H,
    in_block: usize,
    records: u64,
    last: Digest,
    block_hashes: Vec<u8>,
    /// Tests only: a pool and piece size of their own instead of the process's pool.
    #[cfg(test)]
    pool: Option<(Arc<rayon::ThreadPool>, usize, usize, bool)>,
}

/// The hashes of `piece`'s whole records, one after the other.
fn hash_records<H: ChainHasher>(piece: &[u8], record_size: usize, digest_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(piece.len() / record_size * digest_len);
    for rec in piece.chunks_exact(record_size) {
        out.extend_from_slice(H::one_shot(rec).as_bytes());
    }
    out
}

impl<H: ChainHasher> Core<H> {
    fn new(record_size: usize, block_size: usize, batch_id: &[u8; BATCH_ID_LEN]) -> Self {
        let mut seed = H::fresh();
        seed.feed(batch_id);
        let last = seed.close();
        let mut block = H::fresh();
        block.feed(last.as_bytes());
        Core {
            record_size,
            block_size,
            record: H::fresh(),
            record_fill: 0,
            block,
            in_block: 0,
            records: 0,
            last,
            block_hashes: Vec::new(),
            #[cfg(test)]
            pool: None,
        }
    }

    #[inline]
    fn push(&mut self, record_hash: Digest) {
        self.block.feed(record_hash.as_bytes());
        self.in_block += 1;
        self.records += 1;
        if self.in_block == self.block_size {
            self.close_block();
        }
    }

    /// Chains a run of record hashes (`digest_len` bytes each), a block's worth per feed.
    fn push_hashes(&mut self, mut hashes: &[u8]) {
        let dl = self.last.as_bytes().len();
        while !hashes.is_empty() {
            let take = ((self.block_size - self.in_block) * dl).min(hashes.len());
            self.block.feed(&hashes[..take]);
            let n = take / dl;
            self.in_block += n;
            self.records += n as u64;
            hashes = &hashes[take..];
            if self.in_block == self.block_size {
                self.close_block();
            }
        }
    }

    fn close_block(&mut self) {
        let h = self.block.close_reset();
        self.block.feed(h.as_bytes());
        self.block_hashes.extend_from_slice(h.as_bytes());
        self.last = h;
        self.in_block = 0;
    }

    fn update(&mut self, mut data: &[u8]) {
        if self.record_fill > 0 {
            let take = (self.record_size - self.record_fill).min(data.len());
            self.record.feed(&data[..take]);
            self.record_fill += take;
            data = &data[take..];
            if self.record_fill < self.record_size {
                return;
            }
            let d = self.record.close_reset();
            self.record_fill = 0;
            self.push(d);
        }
        let (whole, rest) = data.split_at(data.len() - data.len() % self.record_size);
        match self.plan(whole.len()) {
            Some(plan) => self.hash_on_pool(whole, &plan),
            None => {
                for rec in whole.chunks_exact(self.record_size) {
                    self.push(H::one_shot(rec));
                }
            }
        }
        if !rest.is_empty() {
            self.record.feed(rest);
            self.record_fill = rest.len();
        }
    }

    #[cfg(not(test))]
    fn plan(&self, whole_bytes: usize) -> Option<Plan> {
        parallel::plan(whole_bytes, self.record_size)
    }

    #[cfg(test)]
    fn plan(&self, whole_bytes: usize) -> Option<Plan> {
        match &self.pool {
            Some((pool, threads, piece_bytes, caller_hashes)) => {
                (whole_bytes >= 2 * self.record_size).then(|| Plan {
                    caller_hashes: *caller_hashes,
                    ..parallel::plan_on(
                        Arc::clone(pool),
                        *threads,
                        whole_bytes,
                        self.record_size,
                        *piece_bytes,
                    )
                })
            }
            None => parallel::plan(whole_bytes, self.record_size),
        }
    }

    /// Hashes `whole` (whole records only) in pieces on the pool and chains the pieces' hashes in
    /// order on this thread as they finish. Pieces are claimed in order by whichever thread is
    /// free (super::parallel::Claims): the pool's tasks and, while the next piece is not finished,
    /// this thread too rather than wait. At most `plan.window` pieces are claimed past the last
    /// one chained, so the hashes waiting to be chained stay bounded whatever the update's size.
    fn hash_on_pool(&mut self, whole: &[u8], plan: &Plan) {
        let (r, dl) = (self.record_size, self.last.as_bytes().len());
        let pieces: Vec<&[u8]> = whole.chunks(plan.piece_records * r).collect();
        let n = pieces.len();
        let claims = Claims::new(n, plan.window);
        let workers = plan.pool.current_num_threads();
        let mut ready: Vec<Option<Vec<u8>>> = vec![None; n];
        let (tx, rx) = mpsc::channel::<(usize, Option<Vec<u8>>)>();
        let mut next = 0;
        plan.pool.in_place_scope(|s| {
            let (pieces, claims) = (&pieces, &claims);
            // Pool tasks up to one per pool thread while pieces can be claimed; each claims
            // pieces until none can, then ends.
            let start_tasks = || {
                while claims.live.load(Ordering::Acquire) < workers && claims.has_work() {
                    claims.live.fetch_add(1, Ordering::AcqRel);
                    let tx = tx.clone();
                    s.spawn(move |_| {
                        while let Some(i) = claims.take() {
                            // A piece whose hashing panicked is hashed again below, on this thread.
                            let out = catch_unwind(AssertUnwindSafe(|| {
                                hash_records::<H>(pieces[i], r, dl)
                            }));
                            #[cfg(test)]
                            parallel::POOL_PIECES.fetch_add(1, Ordering::Relaxed);
                            let _ = tx.send((i, out.ok()));
                        }
                        claims.live.fetch_sub(1, Ordering::AcqRel);
                    });
                }
            };
            let received = |ready: &mut [Option<Vec<u8>>], (i, out): (usize, Option<Vec<u8>>)| {
                ready[i] = Some(out.unwrap_or_else(|| hash_records::<H>(pieces[i], r, dl)));
            };
            start_tasks();
            while next < n {
                if let Some(hashes) = ready[next].take() {
                    self.push_hashes(&hashes);
                    next += 1;
                    claims.chained(next);
                    start_tasks();
                    continue;
                }
                match rx.try_recv() {
                    Ok(done) => received(&mut ready, done),
                    Err(mpsc::TryRecvError::Disconnected) => break,
                    Err(mpsc::TryRecvError::Empty) => {
                        // Claim a piece and hash it here; when none can be claimed, the next
                        // piece is being hashed by a pool task (this thread hashes what it claims
                        // at once), so wait for it.
                        let mine = if plan.caller_hashes {
                            claims.take()
                        } else {
                            None
                        };
                        match mine {
                            Some(i) => ready[i] = Some(hash_records::<H>(pieces[i], r, dl)),
                            None if plan.caller_hashes => match rx.recv() {
                                Ok(done) => received(&mut ready, done),
                                Err(_) => break,
                            },
                            // Tests only: a task may have ended just as room opened; start another.
                            None => match rx.recv_timeout(std::time::Duration::from_millis(1)) {
                                Ok(done) => received(&mut ready, done),
                                Err(mpsc::RecvTimeoutError::Timeout) => start_tasks(),
                                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                            },
                        }
                    }
                }
            }
        });
        // Only when the channel failed: the rest on this thread, in order.
        for (i, piece) in pieces.iter().enumerate().skip(next) {
            let hashes = ready[i]
                .take()
                .unwrap_or_else(|| hash_records::<H>(piece, r, dl));
            self.push_hashes(&hashes);
        }
    }

    fn finish(mut self) -> ChainResult {
        let tail_bytes = self.record_fill;
        if tail_bytes > 0 {
            let d = self.record.close_reset();
            self.push(d);
        }
        if self.in_block > 0 {
            self.close_block();
        }
        ChainResult {
            closing_hash: self.last,
            records: self.records,
            tail_bytes,
            block_hashes: self.block_hashes,
        }
    }
}

/// One boxed core per algorithm: the hashers differ a lot in size, and a chain is set up once per
/// batch, so the allocation costs nothing that matters.
enum Inner {
    Sha512(Box<Core<Sha512>>),
    Sha256(Box<Core<sha2::Sha256>>),
    Blake3(Box<Core<blake3::Hasher>>),
}

/// Incremental hash chain of one batch. Feed it the batch's bytes with [`ChainState::update`] in
/// chunks of any size, then [`ChainState::finish`].
pub struct ChainState {
    algorithm: HashAlgorithm,
    record_size: u32,
    block_size: u32,
    inner: Inner,
}

impl ChainState {
    /// Starts the chain of the batch `batch_id`.
    pub fn new(
        algorithm: HashAlgorithm,
        record_size: u32,
        block_size: u32,
        batch_id: &[u8; BATCH_ID_LEN],
    ) -> Result<Self, ChainError> {
        if record_size == 0 || record_size > MAX_RECORD_SIZE {
            return Err(ChainError::RecordSize(record_size.into()));
        }
        if block_size == 0 || block_size > MAX_BLOCK_SIZE {
            return Err(ChainError::BlockSize(block_size.into()));
        }
        let (r, b) = (record_size as usize, block_size as usize);
        let inner = match algorithm {
            HashAlgorithm::Sha512 => Inner::Sha512(Box::new(Core::new(r, b, batch_id))),
            HashAlgorithm::Sha256 => Inner::Sha256(Box::new(Core::new(r, b, batch_id))),
            HashAlgorithm::Blake3 => Inner::Blake3(Box::new(Core::new(r, b, batch_id))),
        };
        Ok(ChainState {
            algorithm,
            record_size,
            block_size,
            inner,
        })
    }

    /// The chain's algorithm.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.algorithm
    }

    /// Record size the chain splits at.
    pub fn record_size(&self) -> u32 {
        self.record_size
    }

    /// Record hashes per block.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Whole records hashed so far.
    pub fn records(&self) -> u64 {
        match &self.inner {
            Inner::Sha512(c) => c.records,
            Inner::Sha256(c) => c.records,
            Inner::Blake3(c) => c.records,
        }
    }

    /// Tests only: hash on `pool` (`threads` threads) in pieces of about `piece_bytes`, whatever
    /// the update's size, instead of on the process's pool; with `caller_hashes` false, the pool
    /// hashes every piece.
    #[cfg(test)]
    pub(crate) fn with_pool(
        mut self,
        pool: Arc<rayon::ThreadPool>,
        threads: usize,
        piece_bytes: usize,
        caller_hashes: bool,
    ) -> Self {
        let p = Some((pool, threads, piece_bytes, caller_hashes));
        match &mut self.inner {
            Inner::Sha512(c) => c.pool = p,
            Inner::Sha256(c) => c.pool = p,
            Inner::Blake3(c) => c.pool = p,
        }
        self
    }

    /// Feeds the next bytes of the batch. Many whole records at once are hashed on the process's
    /// hashing pool (super::parallel), the same result as one by one.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.inner {
            Inner::Sha512(c) => c.update(data),
            Inner::Sha256(c) => c.update(data),
            Inner::Blake3(c) => c.update(data),
        }
    }

    /// Closes the batch: hashes a short final record if one is pending, closes the last block and
    /// returns the closing hash with every block hash.
    pub fn finish(self) -> ChainResult {
        match self.inner {
            Inner::Sha512(c) => (*c).finish(),
            Inner::Sha256(c) => (*c).finish(),
            Inner::Blake3(c) => (*c).finish(),
        }
    }
}
