//! Hash chain exports: a boxed `ChainHandle` fed chunks off the event loop.
//!
//! `chainUpdate` copies the chunk into the handle's queue on the JS thread, then a Neon task
//! (libuv's pool) drains the queue while holding the chain. Tasks may run in any order, but each
//! drains every queued chunk in arrival order, so the chain sees the bytes in the order JS sent
//! them, and a task's Promise resolves only once its own chunk has been hashed.
//!
//! The queue and the chain have separate locks, and the queue's is held only to push or pop a
//! chunk: the JS thread never waits for hashing (with one lock it blocked the event loop for as
//! long as the chunks before it took to hash).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};

use hd_engine_core::batch_id::BATCH_ID_LEN;
use hd_engine_core::hash::{self as core_hash, BatchDigest, ChainState, HashAlgorithm};
use neon::prelude::*;
use neon::types::buffer::TypedArray;

use crate::util::throw_coded;

/// What one handle hashes: a batch's chain, its sender digest (docs/hdwp.md, eob), or both.
pub struct Hashers {
    chain: Option<ChainState>,
    digest: Option<BatchDigest>,
}

/// Chunk bytes from which a chain's batch digest is computed on the hashing pool beside the chain
/// rather than after it (below, handing it out costs about what it saves).
const DIGEST_BESIDE_BYTES: usize = 64 << 10;

impl Hashers {
    fn update(&mut self, bytes: &[u8]) {
        match (self.chain.as_mut(), self.digest.as_mut()) {
            (Some(c), Some(d)) if bytes.len() >= DIGEST_BESIDE_BYTES => {
                core_hash::run_beside(|| c.update(bytes), || d.update(bytes));
            }
            (c, d) => {
                if let Some(c) = c {
                    c.update(bytes);
                }
                if let Some(d) = d {
                    d.update(bytes);
                }
            }
        }
    }
}

/// The boxed state behind a `ChainHandle`: the hashers (held while hashing) and the chunks
/// waiting for them (held only to push or pop).
pub struct ChainBox {
    chain: Mutex<Option<Hashers>>,
    pending: Mutex<VecDeque<Vec<u8>>>,
    /// Set by `chainFinish`, so a later update is refused at once without touching the chain.
    finished: AtomicBool,
}

impl Finalize for ChainBox {}

impl ChainBox {
    /// The oldest queued chunk, if any (the queue's lock is released before it is hashed).
    fn next_chunk(&self) -> Option<Vec<u8>> {
        self.pending.lock().ok()?.pop_front()
    }

    /// Hashes every queued chunk, in order, into `chain` (which the caller holds).
    fn drain(&self, chain: &mut Option<Hashers>) {
        while let Some(chunk) = self.next_chunk() {
            if let Some(c) = chain.as_mut() {
                c.update(&chunk);
            }
        }
    }
}

fn unbox<'cx, C: Context<'cx>>(
    cx: &mut C,
    handle: Handle<'cx, JsValue>,
) -> NeonResult<Arc<ChainBox>> {
    match handle.downcast::<JsBox<Arc<ChainBox>>, _>(cx) {
        Ok(b) => Ok(Arc::clone(&b)),
        Err(_) => throw_coded(
            cx,
            "ERR_HASH_CHAIN_HANDLE",
            "expected a ChainHandle from chainNew",
        ),
    }
}

/// A positive whole number that fits in u32.
pub fn whole_u32<'cx, C: Context<'cx>>(cx: &mut C, v: f64, what: &str) -> NeonResult<u32> {
    if v.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&v) {
        return throw_coded(
            cx,
            "ERR_RANGE",
            &format!("{what} must be a whole number 0..2^32-1, got {v}"),
        );
    }
    Ok(v as u32)
}

/// Parses a HASH_ALGORITHM name.
pub fn algorithm<'cx, C: Context<'cx>>(cx: &mut C, name: &str) -> NeonResult<HashAlgorithm> {
    match HashAlgorithm::from_name(name) {
        Some(a) => Ok(a),
        None => throw_coded(
            cx,
            "ERR_HASH_ALGORITHM",
            &format!("unknown hash algorithm {name:?} (sha512, sha256, blake3)"),
        ),
    }
}

/// A 64-byte batch id.
pub fn batch_id<'cx, C: Context<'cx>>(cx: &mut C, bytes: &[u8]) -> NeonResult<[u8; BATCH_ID_LEN]> {
    match <[u8; BATCH_ID_LEN]>::try_from(bytes) {
        Ok(a) => Ok(a),
        Err(_) => throw_coded(
            cx,
            "ERR_RANGE",
            &format!("a batch id is {BATCH_ID_LEN} bytes, got {}", bytes.len()),
        ),
    }
}

fn boxed<'cx>(
    cx: &mut FunctionContext<'cx>,
    hashers: Hashers,
) -> JsResult<'cx, JsBox<Arc<ChainBox>>> {
    Ok(cx.boxed(Arc::new(ChainBox {
        chain: Mutex::new(Some(hashers)),
        pending: Mutex::new(VecDeque::new()),
        finished: AtomicBool::new(false),
    })))
}

/// Starts the chain of one batch; with `withDigest` the same bytes also feed the sender's batch
/// digest, returned by `chainFinish` as `digest`.
#[neon::export(name = "chainNew")]
fn chain_new<'cx>(
    cx: &mut FunctionContext<'cx>,
    algorithm_name: String,
    record_size: f64,
    block_size: f64,
    id: Handle<'cx, JsTypedArray<u8>>,
    with_digest: bool,
) -> JsResult<'cx, JsBox<Arc<ChainBox>>> {
    let alg = algorithm(cx, &algorithm_name)?;
    let r = whole_u32(cx, record_size, "record size")?;
    let b = whole_u32(cx, block_size, "block size")?;
    let id = id.as_slice(cx).to_vec();
    let id = batch_id(cx, &id)?;
    match ChainState::new(alg, r, b, &id) {
        Ok(chain) => boxed(
            cx,
            Hashers {
                chain: Some(chain),
                digest: with_digest.then(BatchDigest::new),
            },
        ),
        Err(e) => throw_coded(cx, e.code(), &e.to_string()),
    }
}

/// Starts a sender's batch digest alone (no chain): fed with `chainUpdate`, read by `digestFinish`.
#[neon::export(name = "digestNew")]
fn digest_new<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsBox<Arc<ChainBox>>> {
    boxed(
        cx,
        Hashers {
            chain: None,
            digest: Some(BatchDigest::new()),
        },
    )
}

/// Takes the hashers out of a handle once every queued chunk is hashed (the handle is finished).
fn take_hashers<'cx>(cx: &mut FunctionContext<'cx>, slot: &ChainBox) -> NeonResult<Hashers> {
    let taken = match slot.chain.try_lock() {
        Ok(mut chain) => {
            slot.drain(&mut chain);
            slot.finished.store(true, Ordering::Release);
            chain.take()
        }
        Err(TryLockError::WouldBlock) => {
            return throw_coded(
                cx,
                "ERR_HASH_CHAIN_BUSY",
                "an update is still hashing; await every update() before finish()",
            )
        }
        Err(TryLockError::Poisoned(_)) => {
            return throw_coded(cx, "ERR_HASH_CHAIN_POISONED", "the chain failed earlier")
        }
    };
    match taken {
        Some(h) => Ok(h),
        None => throw_coded(
            cx,
            "ERR_HASH_CHAIN_FINISHED",
            "the chain is already finished",
        ),
    }
}

/// Closes a digest made by `digestNew` (or a chain's digest): the 32-byte BLAKE3 batch digest.
#[neon::export(name = "digestFinish")]
fn digest_finish<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsBuffer> {
    let slot = unbox(cx, handle)?;
    let h = take_hashers(cx, &slot)?;
    match h.digest {
        Some(d) => JsBuffer::from_slice(cx, &d.finish()),
        None => throw_coded(cx, "ERR_HASH_CHAIN_HANDLE", "this handle keeps no digest"),
    }
}

/// Queues a copy of `buf` and hashes the queue on libuv's pool; resolves once `buf` is hashed.
#[neon::export(name = "chainUpdate")]
fn chain_update<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
    buf: Handle<'cx, JsTypedArray<u8>>,
) -> JsResult<'cx, JsPromise> {
    let slot = unbox(cx, handle)?;
    let chunk = buf.as_slice(cx).to_vec();
    if slot.finished.load(Ordering::Acquire) {
        return throw_coded(
            cx,
            "ERR_HASH_CHAIN_FINISHED",
            "the chain is already finished",
        );
    }
    match slot.pending.lock() {
        Ok(mut q) => q.push_back(chunk),
        Err(_) => return throw_coded(cx, "ERR_HASH_CHAIN_POISONED", "the chain failed earlier"),
    }
    Ok(cx
        .task(move || match slot.chain.lock() {
            Ok(mut chain) if chain.is_some() => {
                slot.drain(&mut chain);
                Ok(())
            }
            Ok(_) => Err("the chain is already finished"),
            Err(_) => Err("the chain failed earlier"),
        })
        .promise(|mut cx, r| match r {
            Ok(()) => Ok(cx.undefined()),
            Err(msg) => throw_coded(&mut cx, "ERR_HASH_CHAIN_FINISHED", msg),
        }))
}

/// Closes the chain: `{ closingHash, blocks, records, tailBytes, blockHashes }`. Throws
/// `ERR_HASH_CHAIN_BUSY` rather than block the event loop while an update is still hashing.
#[neon::export(name = "chainFinish")]
fn chain_finish<'cx>(
    cx: &mut FunctionContext<'cx>,
    handle: Handle<'cx, JsValue>,
) -> JsResult<'cx, JsObject> {
    let slot = unbox(cx, handle)?;
    let hashers = take_hashers(cx, &slot)?;
    let Some(chain) = hashers.chain else {
        return throw_coded(
            cx,
            "ERR_HASH_CHAIN_HANDLE",
            "this handle is a digest, not a chain",
        );
    };
    let r = chain.finish();
    let obj = cx.empty_object();
    let h = JsBuffer::from_slice(cx, r.closing_hash.as_bytes())?;
    obj.set(cx, "closingHash", h)?;
    let blocks = cx.number(r.blocks() as f64);
    obj.set(cx, "blocks", blocks)?;
    let records = cx.number(r.records as f64);
    obj.set(cx, "records", records)?;
    let tail = cx.number(r.tail_bytes as f64);
    obj.set(cx, "tailBytes", tail)?;
    let bh = JsBuffer::from_slice(cx, &r.block_hashes)?;
    obj.set(cx, "blockHashes", bh)?;
    if let Some(d) = hashers.digest {
        let d = JsBuffer::from_slice(cx, &d.finish())?;
        obj.set(cx, "digest", d)?;
    }
    Ok(obj)
}

/// Sets how many threads hash records in this process (HASH_THREADS; 0: one per core it may
/// use); returns the count now in force. Chains hashing now finish on the pool they started with.
#[neon::export(name = "setHashThreads")]
fn set_hash_threads<'cx>(cx: &mut FunctionContext<'cx>, threads: f64) -> JsResult<'cx, JsNumber> {
    let n = whole_u32(cx, threads, "hash threads")?;
    match core_hash::set_hash_threads(n as usize) {
        Ok(t) => Ok(cx.number(t as f64)),
        Err(e) => throw_coded(cx, e.code(), &e.to_string()),
    }
}

/// Threads hashing records in this process (one per core it may use until `setHashThreads`).
#[neon::export(name = "hashThreads")]
fn hash_threads<'cx>(cx: &mut FunctionContext<'cx>) -> JsResult<'cx, JsNumber> {
    Ok(cx.number(core_hash::hash_threads() as f64))
}
