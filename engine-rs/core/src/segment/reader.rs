//! Opens a complete segment: validates header and footer against each other and the file length
//! (no length read from the file is trusted before it is checked), then serves block ranges with
//! their CRCs checked, zone maps and the batch filter. Reads use `pread`, so one reader can serve
//! several threads.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{io, SegmentError};
use super::footer_cache::{FileIdentity, FOOTER_CACHE};
use super::layout::{
    block_entry_len, BlockEntry, SegmentHeader, Tail, HEADER_FIXED_LEN, TAIL_CRC_AT, TAIL_LEN,
    TAIL_MAGIC_AT, TRAILER_MAGIC,
};
use super::record_cache::{FileKey, PieceKey, PieceLookup, RECORD_CACHE};
use super::stats::BatchStats;
use super::writer::segment_file_name;
use super::zone::{Zone, ZONE_LEN};
use super::SEGMENT_EXT;
use crate::batch_id::BATCH_ID_LEN;
use crate::hash::Digest;

/// Most record bytes one [`SegmentReader::read_blocks`] call returns (256 MiB).
pub const MAX_READ_BYTES: u64 = 256 << 20;

/// An open, structurally valid segment.
#[derive(Debug)]
pub struct SegmentReader {
    file: File,
    path: PathBuf,
    meta: Arc<SegmentMeta>,
    /// The unchanged file this is (pieces of its records in the record cache).
    key: FileKey,
}

/// What a segment's header and verified footer say: shared by readers of the same unchanged
/// file through the footer cache (`footer_cache.rs`).
#[derive(Debug)]
pub(super) struct SegmentMeta {
    header: SegmentHeader,
    records: u64,
    closing_hash: Digest,
    index: Vec<BlockEntry>,
    zones: Vec<Zone>,
    filter: Vec<Zone>,
    /// The batch summary (format 2; `None` for a format-1 segment).
    stats: Option<BatchStats>,
    /// Bytes of header and footer read to build it (the cache's measure of its size).
    pub(super) bytes: usize,
}

fn corrupt<T>(m: impl Into<String>) -> Result<T, SegmentError> {
    Err(SegmentError::Corrupt(m.into()))
}

/// A file named after a batch (`segment_file_name`: 128 hex digits and `.hdseg`) must hold that
/// batch. Without this check a whole, valid segment of another batch in its place — a misdirected
/// write or copy — would be served, and would even verify, as the batch its name claims: its own
/// chain starts from its own batch id and ends at its own closing hash.
fn check_name(path: &Path, header: &SegmentHeader) -> Result<(), SegmentError> {
    let Some(hex) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(SEGMENT_EXT))
    else {
        return Ok(());
    };
    if hex.len() != 2 * BATCH_ID_LEN || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Ok(());
    }
    let held = segment_file_name(&header.batch_id);
    if held[..hex.len()].eq_ignore_ascii_case(hex) {
        return Ok(());
    }
    corrupt(format!(
        "the file is named after batch {hex} but holds batch {}",
        &held[..hex.len()]
    ))
}

impl SegmentReader {
    /// Opens and validates `path` (header, footer checksum, every offset and count); record bytes
    /// are checked per block as they are read, and fully by `verify_segment`.
    pub fn open(path: &Path) -> Result<Self, SegmentError> {
        let file = File::open(path).map_err(io("open", path))?;
        let stat = file.metadata().map_err(io("stat", path))?;
        let meta = Arc::new(SegmentMeta::read(&file, path, stat.len())?);
        Ok(SegmentReader {
            file,
            path: path.to_path_buf(),
            meta,
            key: FileKey::of(&stat),
        })
    }

    /// Like [`SegmentReader::open`], but header and footer come from the process's footer cache
    /// when this path was opened before and the file is unchanged since (same device, inode,
    /// length, modification and change times): a query over many batches then pays the footer's
    /// read, CRC and decoding once. A changed file is read and validated again. Record blocks
    /// are read and CRC-checked as always.
    pub fn open_cached(path: &Path) -> Result<Self, SegmentError> {
        let file = File::open(path).map_err(io("open", path))?;
        let stat = file.metadata().map_err(io("stat", path))?;
        let id = FileIdentity::of(path, &stat);
        let meta = match FOOTER_CACHE.get(&id) {
            Some(m) => m,
            None => {
                let m = Arc::new(SegmentMeta::read(&file, path, stat.len())?);
                FOOTER_CACHE.put(id, Arc::clone(&m));
                m
            }
        };
        Ok(SegmentReader {
            file,
            path: path.to_path_buf(),
            meta,
            key: FileKey::of(&stat),
        })
    }

    /// [`SegmentReader::open_cached`] when the cache holds this unchanged file's footer, else
    /// `None` (nothing is read but the file's metadata).
    pub fn open_if_cached(path: &Path) -> Result<Option<Self>, SegmentError> {
        let file = File::open(path).map_err(io("open", path))?;
        let stat = file.metadata().map_err(io("stat", path))?;
        Ok(FOOTER_CACHE
            .get(&FileIdentity::of(path, &stat))
            .map(|meta| SegmentReader {
                file,
                path: path.to_path_buf(),
                meta,
                key: FileKey::of(&stat),
            }))
    }

    /// The open file (a scanner reads blocks through it).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The header and footer this reader shares (tests of the cache).
    #[cfg(test)]
    pub(super) fn meta_arc(&self) -> Arc<SegmentMeta> {
        Arc::clone(&self.meta)
    }

    /// Whether two readers share one cached footer (tests of the cache).
    #[cfg(test)]
    pub(super) fn shares_meta(&self, other: &SegmentReader) -> bool {
        Arc::ptr_eq(&self.meta, &other.meta)
    }
}

impl SegmentMeta {
    /// Reads and validates header and footer of `file` (`file_len` bytes long).
    fn read(file: &File, path: &Path, file_len: u64) -> Result<Self, SegmentError> {
        let read = |at: u64, buf: &mut [u8]| file.read_exact_at(buf, at).map_err(io("read", path));
        let min = (HEADER_FIXED_LEN + 4 + TAIL_LEN) as u64;
        if file_len < min {
            return Err(SegmentError::Truncated {
                what: "segment",
                need: min,
                have: file_len,
            });
        }
        let mut fixed = [0u8; HEADER_FIXED_LEN];
        read(0, &mut fixed)?;
        let hlen = SegmentHeader::total_len(&fixed, file_len)?;
        let mut hbuf = vec![0u8; hlen];
        read(0, &mut hbuf)?;
        let header = SegmentHeader::decode(&hbuf)?;
        check_name(path, &header)?;

        let mut tb = [0u8; TAIL_LEN];
        let tail_at = file_len - TAIL_LEN as u64;
        read(tail_at, &mut tb)?;
        if tb[TAIL_MAGIC_AT..] != TRAILER_MAGIC {
            return Err(SegmentError::Magic("trailer"));
        }
        let tail = Tail::decode(&tb)?;
        let dl = header.algorithm.digest_len();
        let nf = header.fields.len() as u64;
        let r = u64::from(header.record_size);
        let b = u64::from(header.block_size);
        // Every section's place follows from the header and the record count; a file that says
        // otherwise is damaged. Checked arithmetic: the counts are outside input.
        let expect = (|| {
            let data_len = tail.records.checked_mul(r)?;
            let index_offset = header.data_offset.checked_add(data_len)?;
            let blocks = tail.records.div_ceil(b);
            let zone_offset =
                index_offset.checked_add(blocks.checked_mul(block_entry_len(dl) as u64)?)?;
            let filter_offset =
                zone_offset.checked_add(blocks.checked_mul(nf)?.checked_mul(ZONE_LEN as u64)?)?;
            let tail_offset = filter_offset.checked_add(nf * ZONE_LEN as u64)?;
            Some((
                blocks,
                index_offset,
                zone_offset,
                filter_offset,
                tail_offset,
            ))
        })();
        let Some((blocks, index_offset, zone_offset, filter_offset, filter_end)) = expect else {
            return corrupt(format!("record count {} overflows", tail.records));
        };
        // Format 2: the batch summary lies between the batch filter and the tail (its own layout
        // is checked exactly below, and the footer checksum covers it).
        let tail_offset = if header.version >= 2 {
            filter_end.max(tail_at)
        } else {
            filter_end
        };
        if tail_offset != tail_at {
            return if tail_offset > tail_at {
                Err(SegmentError::Truncated {
                    what: "records and footer",
                    need: tail_offset + TAIL_LEN as u64,
                    have: file_len,
                })
            } else {
                corrupt(format!(
                    "footer ends at {} but the file has {file_len} bytes",
                    tail_offset + TAIL_LEN as u64
                ))
            };
        }
        if tail.blocks != blocks
            || tail.data_offset != header.data_offset
            || tail.index_offset != index_offset
            || tail.zone_offset != zone_offset
            || tail.filter_offset != filter_offset
        {
            return corrupt("footer offsets or counts do not match the header and record count");
        }
        if tail.closing_hash.as_bytes().len() != dl {
            return corrupt("closing hash length does not match the algorithm");
        }
        // The footer is bounded by the file length checked above.
        let mut footer = vec![0u8; (tail_at - index_offset) as usize + TAIL_LEN];
        read(index_offset, &mut footer)?;
        let crc_at = footer.len() - TAIL_LEN + TAIL_CRC_AT;
        let stored = u32::from_le_bytes([
            footer[crc_at],
            footer[crc_at + 1],
            footer[crc_at + 2],
            footer[crc_at + 3],
        ]);
        if crc32c::crc32c(&footer[..crc_at]) != stored {
            return Err(SegmentError::FooterChecksum);
        }
        let el = block_entry_len(dl);
        let zs = (zone_offset - index_offset) as usize;
        let fs = (filter_offset - index_offset) as usize;
        let mut index = Vec::with_capacity(blocks as usize);
        for (i, e) in footer[..zs].chunks_exact(el).enumerate() {
            let Some(entry) = BlockEntry::decode(e) else {
                return corrupt("block index entry");
            };
            let first = i as u64 * b;
            if entry.offset != header.data_offset + first * r
                || u64::from(entry.records) != b.min(tail.records - first)
            {
                return corrupt(format!("block index entry {i} does not match the layout"));
            }
            index.push(entry);
        }
        if let Some(last) = index.last() {
            if last.hash != tail.closing_hash {
                return corrupt("the last block hash is not the closing hash");
            }
        }
        let zones = footer[zs..fs]
            .chunks_exact(ZONE_LEN)
            .map(Zone::decode)
            .collect();
        let ss = (filter_end - index_offset) as usize;
        let filter = footer[fs..ss]
            .chunks_exact(ZONE_LEN)
            .map(Zone::decode)
            .collect();
        let stats = if header.version >= 2 {
            Some(BatchStats::decode(
                &footer[ss..footer.len() - TAIL_LEN],
                &header.fields,
                tail.records,
            )?)
        } else {
            None
        };
        Ok(SegmentMeta {
            header,
            records: tail.records,
            closing_hash: tail.closing_hash,
            index,
            zones,
            filter,
            stats,
            bytes: hlen + footer.len(),
        })
    }
}

impl SegmentReader {
    /// The header (dataset, batch id, sizes, algorithm, zone fields).
    pub fn header(&self) -> &SegmentHeader {
        &self.meta.header
    }

    /// Path the reader was opened on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records in the segment.
    pub fn records(&self) -> u64 {
        self.meta.records
    }

    /// Blocks in the segment.
    pub fn blocks(&self) -> u64 {
        self.meta.index.len() as u64
    }

    /// The closing hash stored at ingest.
    pub fn closing_hash(&self) -> Digest {
        self.meta.closing_hash
    }

    /// The block index.
    pub fn block_index(&self) -> &[BlockEntry] {
        &self.meta.index
    }

    /// Zone of `field` in `block`.
    pub fn zone(&self, block: u64, field: usize) -> Option<Zone> {
        let nf = self.meta.header.fields.len();
        if field >= nf {
            return None;
        }
        self.meta
            .zones
            .get(
                usize::try_from(block)
                    .ok()?
                    .checked_mul(nf)?
                    .checked_add(field)?,
            )
            .copied()
    }

    /// Every block's zones, block-major (`blocks * fields` entries).
    pub fn zones(&self) -> &[Zone] {
        &self.meta.zones
    }

    /// The batch summary kept at ingest (format 2 and later), verified with the footer.
    pub fn stats(&self) -> Option<&BatchStats> {
        self.meta.stats.as_ref()
    }

    /// The batch filter: one zone per field over the whole batch.
    pub fn batch_filter(&self) -> &[Zone] {
        &self.meta.filter
    }

    /// What the process's record cache holds of blocks `first .. end` of this unchanged file:
    /// the piece, or whether to keep it once read ([`SegmentReader::keep_piece`]). Callers ask
    /// for the same pieces each time (a fixed grid of block ranges), so a piece is found again.
    pub fn find_piece(&self, first: u64, end: u64) -> PieceLookup {
        RECORD_CACHE.lookup(&self.piece_key(first, end))
    }

    /// Keeps `records`, blocks `first .. end` of this file whose CRCs the caller checked, in the
    /// record cache.
    pub fn keep_piece(&self, first: u64, end: u64, records: Vec<u8>) {
        RECORD_CACHE.put(self.piece_key(first, end), Arc::new(records));
    }

    /// The record cache's narrow copy of blocks `first .. end` for the projection named by
    /// `projection` (`scan::Projection::key`), made from a piece it keeps.
    pub fn find_narrow(&self, first: u64, end: u64, projection: &[u32]) -> Option<Arc<Vec<u8>>> {
        RECORD_CACHE.narrow(&self.piece_key(first, end), projection)
    }

    /// Keeps `copy`, the narrow copy of blocks `first .. end` (checked records) for the projection
    /// named by `projection`, in the record cache; returns it shared.
    pub fn keep_narrow(
        &self,
        first: u64,
        end: u64,
        projection: &[u32],
        copy: Vec<u8>,
    ) -> Arc<Vec<u8>> {
        let copy = Arc::new(copy);
        RECORD_CACHE.put_narrow(self.piece_key(first, end), projection, Arc::clone(&copy));
        copy
    }

    /// The record cache's key of blocks `first .. end` of this file.
    fn piece_key(&self, first: u64, end: u64) -> PieceKey {
        PieceKey {
            file: self.key,
            first,
            end,
        }
    }

    /// Whether the record cache is on ([`SegmentReader::find_piece`]).
    pub fn record_cache_on() -> bool {
        RECORD_CACHE.enabled()
    }

    /// Reads the records of blocks `first .. first + count`, checking each block's CRC-32C.
    pub fn read_blocks(&self, first: u64, count: u64) -> Result<Vec<u8>, SegmentError> {
        let end = first
            .checked_add(count)
            .filter(|&e| e <= self.blocks())
            .ok_or_else(|| {
                SegmentError::Range(format!(
                    "blocks {first}+{count} lie outside the segment's {} blocks",
                    self.blocks()
                ))
            })?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let r = u64::from(self.meta.header.record_size);
        let entries = &self.meta.index[first as usize..end as usize];
        let start = entries[0].offset;
        let len: u64 = entries.iter().map(|e| u64::from(e.records) * r).sum();
        if len > MAX_READ_BYTES {
            return Err(SegmentError::Range(format!(
                "{len} bytes in one read, at most {MAX_READ_BYTES}"
            )));
        }
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(io("read", &self.path))?;
        let mut at = 0usize;
        for (k, e) in entries.iter().enumerate() {
            let n = e.records as usize * r as usize;
            if crc32c::crc32c(&buf[at..at + n]) != e.crc {
                return Err(SegmentError::BlockChecksum(first + k as u64));
            }
            at += n;
        }
        Ok(buf)
    }
}
