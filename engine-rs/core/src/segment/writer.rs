//! Writes one batch's segment: `<name>.partial` grows as records arrive (hashed on the way by the
//! batch's chain), and only `finish` — after the closing hash matches the SCC's — writes the footer,
//! fsyncs, renames to `<name>` and fsyncs the directory. A batch is visible only when complete.
//! The bytes go through the page cache, around it with O_DIRECT (direct.rs) or O_DIRECT through
//! io_uring (uring.rs); the file is the same.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use super::direct::{SegmentIo, SegmentOut};
use super::error::{io, SegmentError};
use super::layout::{BlockEntry, SegmentHeader, Tail, TAIL_CRC_AT, TRAILER_MAGIC, VERSION};
use super::stats::StatsBuilder;
use super::zone::{accumulate, Zone, ZoneField, MAX_ZONE_FIELDS};
use super::{PARTIAL_SUFFIX, SEGMENT_EXT};
use crate::batch_id::BATCH_ID_LEN;
use crate::hash::{ChainState, Digest, HashAlgorithm};

/// What a writer needs to know about the batch it stores.
#[derive(Clone, Debug)]
pub struct SegmentConfig {
    /// Directory the segment goes in (must exist).
    pub dir: PathBuf,
    /// File name of the complete segment; must end in `.hdseg` and contain no path separator.
    pub name: String,
    pub dataset_id: String,
    pub batch_id: [u8; BATCH_ID_LEN],
    pub record_size: u32,
    /// Record hashes per chain block (HASH_CHAIN_BLOCK_SIZE).
    pub block_size: u32,
    pub algorithm: HashAlgorithm,
    /// Fields to keep zone maps for.
    pub fields: Vec<ZoneField>,
}

/// What a finished segment holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSummary {
    pub path: PathBuf,
    pub records: u64,
    pub blocks: u64,
    pub closing_hash: Digest,
    /// File size in bytes.
    pub bytes: u64,
}

/// The default file name of a batch's segment: 128 hex digits of the batch id plus `.hdseg`.
pub fn segment_file_name(batch_id: &[u8; BATCH_ID_LEN]) -> String {
    let mut s: String = batch_id.iter().map(|b| format!("{b:02x}")).collect();
    s.push_str(SEGMENT_EXT);
    s
}

fn check_config(c: &SegmentConfig) -> Result<(), SegmentError> {
    let bad = |m: String| Err(SegmentError::Config(m));
    let n = &c.name;
    if n.len() <= SEGMENT_EXT.len()
        || !n.ends_with(SEGMENT_EXT)
        || n.contains(['/', '\\', '\0'])
        || n.starts_with('.')
    {
        return bad(format!(
            "segment name must be a plain file name ending in {SEGMENT_EXT}, got {n:?}"
        ));
    }
    if c.dataset_id.len() > super::layout::MAX_DATASET_ID_LEN {
        return bad(format!(
            "dataset id is {} bytes, at most {}",
            c.dataset_id.len(),
            super::layout::MAX_DATASET_ID_LEN
        ));
    }
    if c.fields.len() > MAX_ZONE_FIELDS {
        return bad(format!(
            "{} zone fields, at most {MAX_ZONE_FIELDS}",
            c.fields.len()
        ));
    }
    for f in &c.fields {
        f.check(c.record_size).map_err(SegmentError::Config)?;
    }
    Ok(())
}

/// Streams one batch into a segment. Dropping it before `finish` removes the partial file.
pub struct SegmentWriter {
    cfg: SegmentConfig,
    partial: PathBuf,
    target: PathBuf,
    out: Option<SegmentOut>,
    chain: Option<ChainState>,
    data_offset: u64,
    /// Bytes of a record split across appends.
    carry: Vec<u8>,
    records: u64,
    in_block: u32,
    block_crc: u32,
    block_zones: Vec<Zone>,
    batch_zones: Vec<Zone>,
    /// Per closed block: offset, records, crc.
    index: Vec<(u64, u32, u32)>,
    zones: Vec<Zone>,
    /// The batch summary (sums, per-code counts) kept as records arrive.
    stats: StatsBuilder,
}

impl SegmentWriter {
    /// Creates `<dir>/<name>.partial` and writes the header through the page cache. Fails if
    /// `<name>` or the partial already exists (recovery removes stale partials at start-up).
    pub fn create(cfg: SegmentConfig) -> Result<Self, SegmentError> {
        Self::create_with_io(cfg, SegmentIo::Buffered)
    }

    /// As [`SegmentWriter::create`], writing with `io`. `Direct` falls back to `Buffered` where the
    /// file system refuses O_DIRECT, `Uring` to `Direct` where the kernel refuses io_uring (and on
    /// to `Buffered`); [`SegmentWriter::io`] says which is in effect.
    pub fn create_with_io(cfg: SegmentConfig, io_mode: SegmentIo) -> Result<Self, SegmentError> {
        check_config(&cfg)?;
        let chain = ChainState::new(
            cfg.algorithm,
            cfg.record_size,
            cfg.block_size,
            &cfg.batch_id,
        )
        .map_err(|e| SegmentError::Config(e.to_string()))?;
        let target = cfg.dir.join(&cfg.name);
        let partial = cfg.dir.join(format!("{}{PARTIAL_SUFFIX}", cfg.name));
        if target.exists() {
            return Err(SegmentError::Exists(target));
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&partial)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    SegmentError::Exists(partial.clone())
                } else {
                    io("create", &partial)(e)
                }
            })?;
        let out = match SegmentOut::new(file, io_mode) {
            Ok(out) => out,
            Err(e) => {
                let _ = fs::remove_file(&partial);
                return Err(io("open for direct I/O", &partial)(e));
            }
        };
        let header = SegmentHeader {
            version: VERSION,
            algorithm: cfg.algorithm,
            dataset_id: cfg.dataset_id.clone(),
            batch_id: cfg.batch_id,
            record_size: cfg.record_size,
            block_size: cfg.block_size,
            fields: cfg.fields.clone(),
            data_offset: 0,
        }
        .encode();
        let nf = cfg.fields.len();
        let mut w = SegmentWriter {
            partial,
            target,
            out: Some(out),
            chain: Some(chain),
            data_offset: header.len() as u64,
            carry: Vec::new(),
            records: 0,
            in_block: 0,
            block_crc: 0,
            block_zones: vec![Zone::EMPTY; nf],
            batch_zones: vec![Zone::EMPTY; nf],
            index: Vec::new(),
            zones: Vec::new(),
            stats: StatsBuilder::new(&cfg.fields),
            cfg,
        };
        w.write(&header)?;
        Ok(w)
    }

    /// Path of the complete segment once finished.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// How the segment is being written (the mode it fell back to after a refused `Uring` or
    /// `Direct`); `Buffered` once finished or aborted.
    pub fn io(&self) -> SegmentIo {
        self.out
            .as_ref()
            .map_or(SegmentIo::Buffered, SegmentOut::io)
    }

    /// Records appended so far (whole ones).
    pub fn records(&self) -> u64 {
        self.records
    }

    fn write(&mut self, data: &[u8]) -> Result<(), SegmentError> {
        let out = self.out.as_mut().ok_or(SegmentError::Closed)?;
        if let Err(e) = out.write_all(data) {
            let err = io("write", &self.partial)(e);
            self.abort();
            return Err(err);
        }
        Ok(())
    }

    /// Appends the next bytes of the batch; records may be split across calls.
    pub fn append(&mut self, data: &[u8]) -> Result<(), SegmentError> {
        let Some(chain) = self.chain.as_mut() else {
            return Err(SegmentError::Closed);
        };
        chain.update(data);
        self.write(data)?;
        let r = self.cfg.record_size as usize;
        let mut data = data;
        if !self.carry.is_empty() {
            let take = (r - self.carry.len()).min(data.len());
            self.carry.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.carry.len() < r {
                return Ok(());
            }
            let rec = std::mem::take(&mut self.carry);
            self.consume(&rec);
        }
        let whole = data.len() / r * r;
        self.consume(&data[..whole]);
        self.carry.extend_from_slice(&data[whole..]);
        Ok(())
    }

    /// Accounts whole records: block CRCs and zone maps, closing blocks as they fill.
    fn consume(&mut self, mut recs: &[u8]) {
        let r = self.cfg.record_size as usize;
        while !recs.is_empty() {
            let room = (self.cfg.block_size - self.in_block) as usize;
            let take = room.min(recs.len() / r);
            let (span, rest) = recs.split_at(take * r);
            self.block_crc = crc32c::crc32c_append(self.block_crc, span);
            accumulate(&self.cfg.fields, &mut self.block_zones, span, r);
            self.stats.add(span, r);
            self.in_block += take as u32;
            self.records += take as u64;
            if self.in_block == self.cfg.block_size {
                self.close_block();
            }
            recs = rest;
        }
    }

    fn close_block(&mut self) {
        let b = u64::from(self.cfg.block_size) * u64::from(self.cfg.record_size);
        let offset = self.data_offset + self.index.len() as u64 * b;
        self.index.push((offset, self.in_block, self.block_crc));
        for (bz, z) in self.batch_zones.iter_mut().zip(&self.block_zones) {
            bz.merge(*z);
        }
        self.zones.extend(self.block_zones.iter().copied());
        self.block_zones.iter_mut().for_each(|z| *z = Zone::EMPTY);
        self.in_block = 0;
        self.block_crc = 0;
    }

    /// Completes the segment. With `expected` (the SCC's closing hash), a mismatch removes the
    /// partial file and fails; so does a partial final record. On success the segment is durable
    /// and visible under its final name.
    pub fn finish(mut self, expected: Option<&[u8]>) -> Result<SegmentSummary, SegmentError> {
        let Some(chain) = self.chain.take() else {
            return Err(SegmentError::Closed);
        };
        if !self.carry.is_empty() {
            self.abort();
            return Err(SegmentError::PartialRecord(self.carry.len()));
        }
        if self.in_block > 0 {
            self.close_block();
        }
        let result = chain.finish();
        if let Some(exp) = expected {
            if exp != result.closing_hash.as_bytes() {
                self.abort();
                let expected = exp.iter().map(|b| format!("{b:02x}")).collect();
                return Err(SegmentError::ClosingHash {
                    expected,
                    actual: result.closing_hash.to_hex(),
                });
            }
        }
        let footer = self.footer(&result.block_hashes, result.closing_hash);
        self.write(&footer)?;
        let bytes =
            self.data_offset + self.records * u64::from(self.cfg.record_size) + footer.len() as u64;
        let out = self.out.take().ok_or(SegmentError::Closed)?;
        let mut renamed = false;
        let commit = || -> Result<(), SegmentError> {
            // The durability point (fsync, through the ring for io_uring): nothing is renamed, so
            // nothing acknowledged, before the bytes are on the disk.
            let file = out
                .into_durable_file()
                .map_err(|(op, e)| io(op, &self.partial)(e))?;
            drop(file);
            fs::rename(&self.partial, &self.target).map_err(io("rename", &self.partial))?;
            renamed = true;
            sync_dir(&self.cfg.dir)
        };
        if let Err(e) = commit() {
            // Not durable, so not acknowledged: leave nothing behind that recovery would serve.
            let _ = fs::remove_file(if renamed { &self.target } else { &self.partial });
            return Err(e);
        }
        Ok(SegmentSummary {
            path: self.target.clone(),
            records: self.records,
            blocks: self.index.len() as u64,
            closing_hash: result.closing_hash,
            bytes,
        })
    }

    fn footer(&self, block_hashes: &[u8], closing_hash: Digest) -> Vec<u8> {
        let dl = self.cfg.algorithm.digest_len();
        let index_offset = self.data_offset + self.records * u64::from(self.cfg.record_size);
        let mut out = Vec::new();
        for ((offset, records, crc), h) in self.index.iter().zip(block_hashes.chunks_exact(dl)) {
            let hash = Digest::from_slice(h).unwrap_or(closing_hash);
            BlockEntry {
                offset: *offset,
                records: *records,
                crc: *crc,
                hash,
            }
            .encode(&mut out);
        }
        let zone_offset = index_offset + out.len() as u64;
        for z in &self.zones {
            z.encode(&mut out);
        }
        let filter_offset = index_offset + out.len() as u64;
        for z in &self.batch_zones {
            z.encode(&mut out);
        }
        let stats_at = out.len();
        self.stats.finish().encode(&mut out);
        let stats_len = (out.len() - stats_at) as u64;
        let tail = Tail {
            records: self.records,
            blocks: self.index.len() as u64,
            data_offset: self.data_offset,
            index_offset,
            zone_offset,
            filter_offset,
            closing_hash,
        };
        tail.encode_without_crc(&mut out);
        debug_assert_eq!(
            out.len() as u64
                - (filter_offset - index_offset)
                - self.batch_zones.len() as u64 * 16
                - stats_len,
            TAIL_CRC_AT as u64
        );
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&TRAILER_MAGIC);
        out
    }

    /// Abandons the batch: closes and removes the partial file.
    pub fn abort(&mut self) {
        self.chain = None;
        if self.out.take().is_some() {
            let _ = fs::remove_file(&self.partial);
        }
    }
}

impl Drop for SegmentWriter {
    fn drop(&mut self) {
        self.abort();
    }
}

/// fsyncs a directory so a rename or removal in it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), SegmentError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("fsync directory", dir))
}
