//! The record cache: pieces of segment records kept per process after they were read and every
//! block in them passed its CRC-32C, so a query that scans the same batches again reads them from
//! memory: no read call, no copy out of the page cache, no checksum (issue #17: these were two
//! thirds of a warm filtered aggregate's scan). Like the footer cache, an entry belongs to one
//! unchanged file (device, inode, length, modification and change times): a file replaced,
//! repaired or rewritten is read and checked afresh. Least recently used pieces go first once the
//! cache holds more than its limit (`record_cache_bytes` of the Storage Node's scan stage, 0 turns
//! it off). A piece is kept on its second read while the cache still remembers the first (the
//! keys of recent first reads, no bytes): a scan that passes over more data than the cache holds,
//! once, reads as it would without a cache instead of paying for keeping what is never read again.
//! Audits (`verify_hash`) never use it: they read the file.
//!
//! Beside the pieces it keeps their narrow copies (`scan::Projection`: only the bytes a filter
//! loads, and a filtered aggregate reads, a quarter of the record or less), within an eighth of
//! the limit, so a scan runs over them and reads whole records only where it must.

use std::fs::Metadata;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use lru::LruCache;

/// The cache's limit until the process sets one ([`set_record_cache_bytes`]).
pub const DEFAULT_RECORD_CACHE_BYTES: usize = 512 << 20;

/// Which unchanged file a piece was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct FileKey {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    /// The key of the file whose metadata is `m`.
    pub(super) fn of(m: &Metadata) -> FileKey {
        FileKey {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// One piece: blocks `first .. end` of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PieceKey {
    pub(super) file: FileKey,
    pub(super) first: u64,
    pub(super) end: u64,
}

impl Hash for PieceKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.file.ino.hash(h);
        self.file.mtime.hash(h);
        self.first.hash(h);
    }
}

/// What the cache holds and how it has served (the Storage Node's /health `recordCache`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCacheStats {
    /// Most bytes kept (0: off).
    pub limit: usize,
    /// Record bytes kept now.
    pub bytes: usize,
    /// Pieces kept now.
    pub pieces: usize,
    /// Pieces found in the cache since the process started.
    pub hits: u64,
    /// Pieces read from a file (and then kept, if they fit) since the process started.
    pub misses: u64,
    /// Bytes of narrow copies kept now (within an eighth of the limit, beside the pieces).
    pub narrow_bytes: usize,
    /// Narrow copies kept now.
    pub narrow_pieces: usize,
}

struct Inner {
    map: LruCache<PieceKey, Arc<Vec<u8>>>,
    bytes: usize,
    /// Pieces read once recently and not kept (keys only).
    seen: LruCache<PieceKey, ()>,
    /// Narrow copies of kept pieces, by piece and the projection's key (`scan::Projection::key`).
    narrow: LruCache<(PieceKey, Vec<u32>), Arc<Vec<u8>>>,
    narrow_bytes: usize,
}

/// Narrow copies are kept within the limit divided by this.
const NARROW_SHARE: usize = 8;

/// What the cache says of a piece.
#[derive(Debug)]
pub enum PieceLookup {
    /// Kept: its records, checked when read.
    Hit(Arc<Vec<u8>>),
    /// Read before, recently: read it whole and keep it.
    Admit,
    /// Not kept (first read, or the cache is off): read what the scan needs.
    Miss,
}

/// Keys of pieces read once that the cache remembers per byte of its limit (one per 64 KiB).
const SEEN_PER_BYTES: usize = 64 << 10;

/// A byte-bounded LRU map of checked record pieces.
pub(super) struct RecordCache {
    inner: Mutex<Inner>,
    limit: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// The process's cache.
pub(super) static RECORD_CACHE: LazyLock<RecordCache> =
    LazyLock::new(|| RecordCache::new(DEFAULT_RECORD_CACHE_BYTES));

impl RecordCache {
    pub(super) fn new(limit: usize) -> RecordCache {
        RecordCache {
            inner: Mutex::new(Inner {
                map: LruCache::unbounded(),
                bytes: 0,
                seen: LruCache::unbounded(),
                narrow: LruCache::unbounded(),
                narrow_bytes: 0,
            }),
            limit: AtomicUsize::new(limit),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Whether pieces are kept at all.
    pub(super) fn enabled(&self) -> bool {
        self.limit.load(Ordering::Relaxed) > 0
    }

    /// The piece at `key` if kept (it becomes the most recently used), else whether to keep it
    /// once read: yes when it was read recently before.
    pub(super) fn lookup(&self, key: &PieceKey) -> PieceLookup {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == 0 {
            return PieceLookup::Miss;
        }
        let Ok(mut g) = self.inner.lock() else {
            return PieceLookup::Miss;
        };
        if let Some(p) = g.map.get(key) {
            let p = Arc::clone(p);
            drop(g);
            self.hits.fetch_add(1, Ordering::Relaxed);
            return PieceLookup::Hit(p);
        }
        let again = g.seen.pop(key).is_some();
        if !again {
            g.seen.put(*key, ());
            let most = (limit / SEEN_PER_BYTES).max(64);
            while g.seen.len() > most {
                g.seen.pop_lru();
            }
        }
        drop(g);
        self.misses.fetch_add(1, Ordering::Relaxed);
        if again {
            PieceLookup::Admit
        } else {
            PieceLookup::Miss
        }
    }

    /// Keeps `piece` (checked) at `key`, dropping the least recently used pieces beyond the
    /// limit; a piece larger than the whole limit is not kept.
    pub(super) fn put(&self, key: PieceKey, piece: Arc<Vec<u8>>) {
        let limit = self.limit.load(Ordering::Relaxed);
        if piece.len() > limit {
            return;
        }
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        g.bytes += piece.len();
        if let Some(old) = g.map.put(key, piece) {
            g.bytes -= old.len();
        }
        evict(&mut g, limit);
    }

    /// The narrow copy of the piece at `key` made for projection `projection`, if kept.
    pub(super) fn narrow(&self, key: &PieceKey, projection: &[u32]) -> Option<Arc<Vec<u8>>> {
        let mut g = self.inner.lock().ok()?;
        g.narrow.get(&(*key, projection.to_vec())).map(Arc::clone)
    }

    /// Keeps a narrow copy of the piece at `key` (within an eighth of the limit, least recently
    /// used first out).
    pub(super) fn put_narrow(&self, key: PieceKey, projection: &[u32], copy: Arc<Vec<u8>>) {
        let most = self.limit.load(Ordering::Relaxed) / NARROW_SHARE;
        if copy.len() > most {
            return;
        }
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        g.narrow_bytes += copy.len();
        if let Some(old) = g.narrow.put((key, projection.to_vec()), copy) {
            g.narrow_bytes -= old.len();
        }
        evict_narrow(&mut g, most);
    }

    /// Sets the limit (0: off, and everything kept or remembered is dropped).
    pub(super) fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
        if let Ok(mut g) = self.inner.lock() {
            evict(&mut g, limit);
            evict_narrow(&mut g, limit / NARROW_SHARE);
            if limit == 0 {
                g.seen.clear();
            }
        }
    }

    pub(super) fn stats(&self) -> RecordCacheStats {
        let (bytes, pieces, narrow_bytes, narrow_pieces) = self
            .inner
            .lock()
            .map(|g| (g.bytes, g.map.len(), g.narrow_bytes, g.narrow.len()))
            .unwrap_or((0, 0, 0, 0));
        RecordCacheStats {
            limit: self.limit.load(Ordering::Relaxed),
            bytes,
            pieces,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            narrow_bytes,
            narrow_pieces,
        }
    }
}

fn evict(g: &mut Inner, limit: usize) {
    while g.bytes > limit {
        match g.map.pop_lru() {
            Some((_, p)) => g.bytes -= p.len(),
            None => break,
        }
    }
}

fn evict_narrow(g: &mut Inner, most: usize) {
    while g.narrow_bytes > most {
        match g.narrow.pop_lru() {
            Some((_, p)) => g.narrow_bytes -= p.len(),
            None => break,
        }
    }
}

/// Sets how many record bytes this process keeps checked in memory (0: none; reads then always
/// go to the file). Returns the limit in force.
pub fn set_record_cache_bytes(bytes: usize) -> usize {
    RECORD_CACHE.set_limit(bytes);
    bytes
}

/// The process's record cache: limit, use, hits and misses.
pub fn record_cache_stats() -> RecordCacheStats {
    RECORD_CACHE.stats()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64, first: u64) -> PieceKey {
        PieceKey {
            file: FileKey {
                dev: 1,
                ino,
                len: 100,
                mtime: (1, 0),
                ctime: (1, 0),
            },
            first,
            end: first + 1,
        }
    }

    fn first(c: &RecordCache, k: &PieceKey) -> Option<u8> {
        match c.lookup(k) {
            PieceLookup::Hit(p) => p.first().copied(),
            _ => None,
        }
    }

    #[test]
    fn keeps_within_its_limit_least_recently_used_first() {
        let c = RecordCache::new(300);
        c.put(key(1, 0), Arc::new(vec![1; 100]));
        c.put(key(1, 1), Arc::new(vec![2; 100]));
        c.put(key(1, 2), Arc::new(vec![3; 100]));
        // Used: piece 0 is now the most recent, so piece 1 goes when a fourth comes.
        assert_eq!(first(&c, &key(1, 0)), Some(1));
        c.put(key(1, 3), Arc::new(vec![4; 100]));
        assert_eq!(first(&c, &key(1, 1)), None);
        assert_eq!(first(&c, &key(1, 0)), Some(1));
        assert_eq!(first(&c, &key(1, 3)), Some(4));
        let s = c.stats();
        assert_eq!((s.bytes, s.pieces, s.limit), (300, 3, 300));
        assert_eq!((s.hits, s.misses), (3, 1));
    }

    #[test]
    fn a_piece_is_kept_on_its_second_read() {
        let c = RecordCache::new(1000);
        assert!(matches!(c.lookup(&key(1, 0)), PieceLookup::Miss));
        assert!(matches!(c.lookup(&key(1, 0)), PieceLookup::Admit));
        // Admitted once: a third read without a put is a first read again.
        assert!(matches!(c.lookup(&key(1, 0)), PieceLookup::Miss));
        // Only so many first reads are remembered (64 at least): the oldest are forgotten.
        for i in 1..=64 {
            assert!(matches!(c.lookup(&key(2, i)), PieceLookup::Miss));
        }
        assert!(matches!(c.lookup(&key(1, 0)), PieceLookup::Miss));
        assert!(matches!(c.lookup(&key(2, 64)), PieceLookup::Admit));
        c.set_limit(0);
        assert!(matches!(c.lookup(&key(2, 63)), PieceLookup::Miss), "off");
    }

    #[test]
    fn another_version_of_the_file_misses() {
        let c = RecordCache::new(1000);
        c.put(key(1, 0), Arc::new(vec![1; 10]));
        let mut changed = key(1, 0);
        changed.file.ctime = (2, 0);
        assert_eq!(first(&c, &changed), None);
        changed = key(1, 0);
        changed.end = 2;
        assert_eq!(first(&c, &changed), None);
        assert_eq!(first(&c, &key(1, 0)), Some(1));
    }

    #[test]
    fn narrow_copies_stay_within_an_eighth_of_the_limit() {
        let c = RecordCache::new(800);
        c.put_narrow(key(1, 0), &[7], Arc::new(vec![1; 60]));
        c.put_narrow(key(1, 1), &[7], Arc::new(vec![2; 60]));
        // 100 bytes for narrow copies: the least recently used goes.
        assert_eq!(c.narrow(&key(1, 0), &[7]).map(|p| p[0]), None);
        assert_eq!(c.narrow(&key(1, 1), &[7]).map(|p| p[0]), Some(2));
        // Another projection of the same piece is another copy; a copy above the share is not kept.
        assert_eq!(c.narrow(&key(1, 1), &[8]), None);
        let s = c.stats();
        assert_eq!((s.narrow_bytes, s.narrow_pieces, s.bytes), (60, 1, 0));
        c.put_narrow(key(1, 2), &[7], Arc::new(vec![3; 101]));
        assert_eq!(c.narrow(&key(1, 2), &[7]), None);
        c.set_limit(0);
        assert_eq!(c.narrow(&key(1, 1), &[7]), None, "off");
    }

    #[test]
    fn too_large_pieces_are_not_kept_and_zero_turns_it_off() {
        let c = RecordCache::new(50);
        c.put(key(1, 0), Arc::new(vec![1; 51]));
        assert_eq!(c.stats().pieces, 0);
        c.put(key(1, 0), Arc::new(vec![1; 50]));
        assert!(c.enabled());
        c.set_limit(0);
        assert!(!c.enabled());
        let s = c.stats();
        assert_eq!((s.bytes, s.pieces), (0, 0));
    }
}
