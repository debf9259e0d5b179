//! The footer cache: validated segment headers and footers (block index, zones, batch filter,
//! summary) kept per process, so queries that open the same batches again skip reading,
//! checksumming and decoding their footers. A segment file never changes once complete; an entry
//! is used only while the file is the same one (device, inode, length, modification and change
//! times), so a file replaced, repaired or rewritten is read and validated afresh. Least recently
//! used entries go first once the cache holds more than [`FOOTER_CACHE_BYTES`].

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use super::reader::SegmentMeta;

/// Header and footer bytes the cache keeps at most (about 200 one-minute batches of 60 000
/// 150-byte records with sha512 blocks of 64 records).
pub const FOOTER_CACHE_BYTES: usize = 64 << 20;

/// Which file an entry was read from: its path (the name is checked against the batch) and what
/// changes when the file is replaced or written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct FileIdentity {
    path: PathBuf,
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileIdentity {
    /// The identity of the file at `path` whose metadata is `m`.
    pub(super) fn of(path: &Path, m: &Metadata) -> FileIdentity {
        FileIdentity {
            path: path.to_path_buf(),
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

struct Entry {
    meta: Arc<SegmentMeta>,
    used: u64,
}

/// A byte-bounded LRU map of segment metadata.
pub(super) struct FooterCache {
    inner: Mutex<Inner>,
    limit: usize,
}

struct Inner {
    map: HashMap<FileIdentity, Entry>,
    bytes: usize,
    tick: u64,
}

/// The process's cache.
pub(super) static FOOTER_CACHE: LazyLock<FooterCache> =
    LazyLock::new(|| FooterCache::new(FOOTER_CACHE_BYTES));

impl FooterCache {
    pub(super) fn new(limit: usize) -> FooterCache {
        FooterCache {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
            limit,
        }
    }

    /// The metadata read from this very file before, if kept.
    pub(super) fn get(&self, id: &FileIdentity) -> Option<Arc<SegmentMeta>> {
        let mut g = self.inner.lock().ok()?;
        g.tick += 1;
        let tick = g.tick;
        let e = g.map.get_mut(id)?;
        e.used = tick;
        Some(Arc::clone(&e.meta))
    }

    /// Keeps `meta` for `id`; drops other entries of the same path (older versions of the
    /// file) and the least recently used ones beyond the byte limit. A footer larger than the
    /// whole cache is not kept.
    pub(super) fn put(&self, id: FileIdentity, meta: Arc<SegmentMeta>) {
        if meta.bytes > self.limit {
            return;
        }
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        let stale: Vec<FileIdentity> = g
            .map
            .keys()
            .filter(|k| k.path == id.path && **k != id)
            .cloned()
            .collect();
        for k in stale {
            if let Some(e) = g.map.remove(&k) {
                g.bytes -= e.meta.bytes;
            }
        }
        g.tick += 1;
        let used = g.tick;
        g.bytes += meta.bytes;
        if let Some(old) = g.map.insert(id, Entry { meta, used }) {
            g.bytes -= old.meta.bytes;
        }
        while g.bytes > self.limit {
            let Some(oldest) = g
                .map
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = g.map.remove(&oldest) {
                g.bytes -= e.meta.bytes;
            }
        }
    }

    /// Entries and bytes kept (tests).
    #[cfg(test)]
    pub(super) fn usage(&self) -> (usize, usize) {
        self.inner
            .lock()
            .map(|g| (g.map.len(), g.bytes))
            .unwrap_or((0, 0))
    }
}
