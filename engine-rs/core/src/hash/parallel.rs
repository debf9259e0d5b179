//! Record hashes on several threads (issue #22, "Hashing on every core").
//!
//! Record hashes do not depend on each other; only the block hashes chain in order. So when one
//! update holds enough whole records, [`ChainState`](super::ChainState) cuts them into pieces that
//! the hashing pool's threads hash while the calling thread chains the finished pieces' hashes into
//! blocks, in order, as they arrive (and hashes pieces itself while the next is not finished). The
//! result is bit-identical to hashing one record after the other (the tests compare both for every
//! chunking).
//!
//! The pool is one per process, sized by [`set_hash_threads`] (HASH_THREADS): `n` hashing threads
//! are a pool of `n - 1` plus the chain's own thread. Until it is called, `n` is the cores the
//! process may use. With one thread, every chain hashes on its calling thread alone, as before.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use rayon::ThreadPool;
use thiserror::Error;

/// Most hashing threads a process may ask for.
pub const MAX_HASH_THREADS: usize = 1024;

/// Record bytes one pool task hashes at most: small enough that the calling thread starts
/// chaining soon and every thread gets work, large enough that a task's cost (a few µs) is noise
/// next to hashing it (about 0.5 ms of SHA-512 on one core).
pub(crate) const PIECE_BYTES: usize = 64 << 10;

/// Whole-record bytes an update needs before it is hashed on the pool: below this the hashing
/// (under 0.1 ms at 150-byte records) costs little more than handing it out.
pub(crate) const MIN_PARALLEL_BYTES: usize = 2 * PIECE_BYTES;

/// Tests only: pieces hashed by pool tasks so far (each task adds one), so a test can tell the
/// pool did the hashing.
#[cfg(test)]
pub(crate) static POOL_PIECES: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// The hashing thread count could not be set.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum HashThreadsError {
    #[error("hash threads must be 1..={MAX_HASH_THREADS} (0: one per core), got {0}")]
    Range(usize),
    #[error("could not start {threads} hashing threads: {message}")]
    Start { threads: usize, message: String },
}

impl HashThreadsError {
    /// Stable error code for the bridge.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Range(_) => "ERR_RANGE",
            Self::Start { .. } => "ERR_HASH_THREADS",
        }
    }
}

/// The process's hashing pool: `None` until first set or used; `Some(None)` means one thread
/// (every chain hashes on its calling thread).
static POOL: RwLock<Option<Pool>> = RwLock::new(None);

#[derive(Clone)]
struct Pool {
    threads: usize,
    pool: Option<Arc<ThreadPool>>,
}

/// The cores this process may use (its CPU affinity and quota), at least 1; with KV_CORES pinning
/// the engine's workers (crate::affinity), the CPUs given to them.
pub fn available_threads() -> usize {
    let pinned = crate::affinity::worker_cpus().len();
    if pinned > 0 {
        return pinned;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn build(threads: usize) -> Result<Pool, HashThreadsError> {
    if threads <= 1 {
        return Ok(Pool {
            threads: 1,
            pool: None,
        });
    }
    // The chain's own thread hashes too (super::chain), so the pool has one thread less.
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads - 1)
        .thread_name(|i| format!("hd-hash-{i}"))
        // KV_CORES: hashing threads start on the engine's worker CPUs when set (crate::affinity).
        .start_handler(|_| crate::affinity::enter_worker_cpus())
        .build()
        .map(|p| Pool {
            threads,
            pool: Some(Arc::new(p)),
        })
        .map_err(|e| HashThreadsError::Start {
            threads,
            message: e.to_string(),
        })
}

/// Sets how many threads hash records in this process (0: one per core it may use) and returns
/// the count now in force. Chains already hashing finish on the pool they started with.
pub fn set_hash_threads(threads: usize) -> Result<usize, HashThreadsError> {
    if threads > MAX_HASH_THREADS {
        return Err(HashThreadsError::Range(threads));
    }
    let threads = if threads == 0 {
        available_threads()
    } else {
        threads
    };
    let next = build(threads)?;
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(next);
    Ok(threads)
}

/// Threads hashing records in this process (the default, one per core, until set).
pub fn hash_threads() -> usize {
    current().threads
}

/// The pool in force, made with the default size on first use. A pool that cannot start leaves
/// hashing on the calling thread rather than failing the chain.
fn current() -> Pool {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.clone();
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert_with(|| {
        build(available_threads()).unwrap_or(Pool {
            threads: 1,
            pool: None,
        })
    })
    .clone()
}

/// Runs `beside` on the hashing pool while `main` runs on this thread, and returns once both are
/// done (both on this thread, one after the other, when hashing has one thread). For work that
/// goes along with a chain's update, such as the sender's batch digest of the same bytes, which
/// would otherwise wait for the chain.
pub fn run_beside<A: FnOnce(), B: FnOnce() + Send>(main: A, beside: B) {
    match current().pool {
        Some(pool) => pool.in_place_scope(|s| {
            s.spawn(|_| beside());
            main();
        }),
        None => {
            main();
            beside();
        }
    }
}

/// How one update's whole records are hashed on the pool.
pub(crate) struct Plan {
    pub pool: Arc<ThreadPool>,
    /// Records per piece (what one thread claims at a time).
    pub piece_records: usize,
    /// Pieces claimed ahead of the chaining at most, so finished hashes waiting to be chained
    /// stay bounded whatever the update's size.
    pub window: usize,
    /// Whether the chain's own thread hashes pieces while the next is not finished (tests turn it
    /// off to see the pool do the work).
    pub caller_hashes: bool,
}

/// The plan for `whole_bytes` of whole `record_size`-byte records, or `None` to hash them on the
/// calling thread (one hashing thread, or too few bytes to be worth handing out).
pub(crate) fn plan(whole_bytes: usize, record_size: usize) -> Option<Plan> {
    if whole_bytes < MIN_PARALLEL_BYTES || whole_bytes < 2 * record_size {
        return None;
    }
    let p = current();
    let pool = p.pool?;
    Some(plan_on(
        pool,
        p.threads,
        whole_bytes,
        record_size,
        PIECE_BYTES,
    ))
}

/// The plan on a given pool: pieces of about `piece_bytes`, smaller when that leaves a thread
/// without work.
pub(crate) fn plan_on(
    pool: Arc<ThreadPool>,
    threads: usize,
    whole_bytes: usize,
    record_size: usize,
    piece_bytes: usize,
) -> Plan {
    let records = whole_bytes / record_size;
    let by_bytes = piece_bytes.div_ceil(record_size);
    let by_threads = records.div_ceil(threads.max(1));
    Plan {
        pool,
        piece_records: by_bytes.min(by_threads).max(1),
        window: threads.max(1) * 4,
        caller_hashes: true,
    }
}

/// The pieces of one update, claimed in order by whichever thread is free: a pool task that
/// starts late finds nothing left rather than holding up the chain with a piece it has not begun
/// (on a busy machine a queued task may wait for a core for milliseconds).
pub(crate) struct Claims {
    next: AtomicUsize,
    chained: AtomicUsize,
    /// Pool tasks claiming now.
    pub live: AtomicUsize,
    pieces: usize,
    window: usize,
}

impl Claims {
    pub fn new(pieces: usize, window: usize) -> Self {
        Claims {
            next: AtomicUsize::new(0),
            chained: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            pieces,
            window,
        }
    }

    /// The next piece not claimed yet, unless every piece is claimed or `window` pieces past the
    /// last one chained already are.
    pub fn take(&self) -> Option<usize> {
        let mut c = self.next.load(Ordering::Relaxed);
        loop {
            if !self.open(c) {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(c, c + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Some(c),
                Err(now) => c = now,
            }
        }
    }

    /// Whether a piece can be claimed now.
    pub fn has_work(&self) -> bool {
        self.open(self.next.load(Ordering::Relaxed))
    }

    fn open(&self, c: usize) -> bool {
        c < self.pieces && c < self.chained.load(Ordering::Acquire) + self.window
    }

    /// Pieces chained so far (frees room in the window).
    pub fn chained(&self, n: usize) {
        self.chained.store(n, Ordering::Release);
    }
}
