//! Byte layout of a segment file: header, block index entries and the fixed tail. All integers
//! little-endian. The tables are in docs/segment.md; keep both in step.

use super::error::SegmentError;
use super::zone::{ZoneField, FIELD_DESC_LEN, MAX_ZONE_FIELDS};
use crate::batch_id::BATCH_ID_LEN;
use crate::hash::{Digest, HashAlgorithm, MAX_BLOCK_SIZE, MAX_DIGEST_LEN, MAX_RECORD_SIZE};

/// First 8 bytes of every segment.
pub const MAGIC: [u8; 8] = *b"HDSEG\r\n\x1a";
/// Last 8 bytes of every complete segment.
pub const TRAILER_MAGIC: [u8; 8] = *b"HDSEGEND";
/// Format version written by this code: 2 adds the batch summary to the footer (stats.rs).
pub const VERSION: u16 = 2;
/// The oldest format version still read (1: no batch summary; scanned as before).
pub const MIN_VERSION: u16 = 1;
/// Fixed part of the header before the dataset id.
pub const HEADER_FIXED_LEN: usize = 32 + BATCH_ID_LEN;
/// Fixed tail at the end of the file.
pub const TAIL_LEN: usize = 128;
/// Longest dataset id a header holds.
pub const MAX_DATASET_ID_LEN: usize = 255;

/// The decoded header of a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub version: u16,
    pub algorithm: HashAlgorithm,
    pub dataset_id: String,
    pub batch_id: [u8; BATCH_ID_LEN],
    pub record_size: u32,
    pub block_size: u32,
    pub fields: Vec<ZoneField>,
    /// Header length: where the records start.
    pub data_offset: u64,
}

/// Header length for a dataset id and field count (checksum included).
pub fn header_len(dataset_len: usize, fields: usize) -> usize {
    HEADER_FIXED_LEN + dataset_len + FIELD_DESC_LEN * fields + 4
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub(crate) fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl SegmentHeader {
    /// Encodes the header with its checksum.
    pub fn encode(&self) -> Vec<u8> {
        let len = header_len(self.dataset_id.len(), self.fields.len());
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.push(self.algorithm.code());
        out.push(self.dataset_id.len() as u8);
        out.extend_from_slice(&self.record_size.to_le_bytes());
        out.extend_from_slice(&self.block_size.to_le_bytes());
        out.extend_from_slice(&(self.fields.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.batch_id);
        out.extend_from_slice(self.dataset_id.as_bytes());
        for f in &self.fields {
            f.encode(&mut out);
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// How many header bytes to read after the fixed part, from the fixed part alone (checked
    /// against `file_len` so a forged length never drives a large read).
    pub fn total_len(fixed: &[u8; HEADER_FIXED_LEN], file_len: u64) -> Result<usize, SegmentError> {
        if fixed[..8] != MAGIC {
            return Err(SegmentError::Magic("header"));
        }
        let version = le16(fixed, 8);
        if !(MIN_VERSION..=VERSION).contains(&version) {
            return Err(SegmentError::Version(version));
        }
        let d = usize::from(fixed[11]);
        let f = usize::from(le16(fixed, 20));
        if f > MAX_ZONE_FIELDS {
            return Err(SegmentError::Corrupt(format!(
                "{f} zone fields (at most {MAX_ZONE_FIELDS})"
            )));
        }
        let len = header_len(d, f);
        if le32(fixed, 24) as usize != len {
            return Err(SegmentError::Corrupt(format!(
                "header length {} does not match its contents ({len})",
                le32(fixed, 24)
            )));
        }
        if len as u64 > file_len {
            return Err(SegmentError::Truncated {
                what: "header",
                need: len as u64,
                have: file_len,
            });
        }
        Ok(len)
    }

    /// Decodes a whole header (length from [`SegmentHeader::total_len`]).
    pub fn decode(b: &[u8]) -> Result<Self, SegmentError> {
        let Some(body_len) = b.len().checked_sub(4) else {
            return Err(SegmentError::Truncated {
                what: "header",
                need: HEADER_FIXED_LEN as u64,
                have: b.len() as u64,
            });
        };
        if body_len < HEADER_FIXED_LEN {
            return Err(SegmentError::Truncated {
                what: "header",
                need: HEADER_FIXED_LEN as u64,
                have: b.len() as u64,
            });
        }
        if crc32c::crc32c(&b[..body_len]) != le32(b, body_len) {
            return Err(SegmentError::HeaderChecksum);
        }
        let algorithm = HashAlgorithm::from_code(b[10]).ok_or_else(|| {
            SegmentError::Corrupt(format!("unknown hash algorithm code {}", b[10]))
        })?;
        let d = usize::from(b[11]);
        let record_size = le32(b, 12);
        let block_size = le32(b, 16);
        let nf = usize::from(le16(b, 20));
        if record_size == 0 || record_size > MAX_RECORD_SIZE {
            return Err(SegmentError::Corrupt(format!("record size {record_size}")));
        }
        if block_size == 0 || block_size > MAX_BLOCK_SIZE {
            return Err(SegmentError::Corrupt(format!("block size {block_size}")));
        }
        if header_len(d, nf) != b.len() {
            return Err(SegmentError::Corrupt(
                "header length does not match its contents".into(),
            ));
        }
        let mut batch_id = [0u8; BATCH_ID_LEN];
        batch_id.copy_from_slice(&b[32..32 + BATCH_ID_LEN]);
        let ds = &b[HEADER_FIXED_LEN..HEADER_FIXED_LEN + d];
        let dataset_id = std::str::from_utf8(ds)
            .map_err(|_| SegmentError::Corrupt("dataset id is not UTF-8".into()))?
            .to_string();
        let mut fields = Vec::with_capacity(nf);
        for desc in b[HEADER_FIXED_LEN + d..body_len].chunks_exact(FIELD_DESC_LEN) {
            let mut a = [0u8; FIELD_DESC_LEN];
            a.copy_from_slice(desc);
            fields.push(ZoneField::decode(&a, record_size)?);
        }
        Ok(SegmentHeader {
            version: le16(b, 8),
            algorithm,
            dataset_id,
            batch_id,
            record_size,
            block_size,
            fields,
            data_offset: b.len() as u64,
        })
    }
}

/// One block index entry: where the block's records lie, their CRC-32C and the block hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEntry {
    pub offset: u64,
    pub records: u32,
    pub crc: u32,
    pub hash: Digest,
}

/// Bytes of one block index entry for a digest length.
pub fn block_entry_len(digest_len: usize) -> usize {
    16 + digest_len
}

impl BlockEntry {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.records.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
        out.extend_from_slice(self.hash.as_bytes());
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Self> {
        Some(BlockEntry {
            offset: le64(b, 0),
            records: le32(b, 8),
            crc: le32(b, 12),
            hash: Digest::from_slice(&b[16..])?,
        })
    }
}

/// The fixed tail at the end of a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tail {
    pub records: u64,
    pub blocks: u64,
    pub data_offset: u64,
    pub index_offset: u64,
    pub zone_offset: u64,
    pub filter_offset: u64,
    pub closing_hash: Digest,
}

impl Tail {
    /// Encodes the tail; `crc` is the footer checksum (computed over everything from
    /// `index_offset` up to the checksum itself).
    pub(crate) fn encode_without_crc(&self, out: &mut Vec<u8>) {
        for v in [
            self.records,
            self.blocks,
            self.data_offset,
            self.index_offset,
            self.zone_offset,
            self.filter_offset,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let h = self.closing_hash.as_bytes();
        out.push(h.len() as u8);
        out.extend_from_slice(&[0; 3]);
        out.extend_from_slice(h);
        out.extend_from_slice(&[0u8; MAX_DIGEST_LEN][..MAX_DIGEST_LEN - h.len()]);
    }

    /// Decodes the tail's fields (magic and checksum are checked by the reader).
    pub(crate) fn decode(b: &[u8; TAIL_LEN]) -> Result<Self, SegmentError> {
        let hl = usize::from(b[48]);
        if hl > MAX_DIGEST_LEN {
            return Err(SegmentError::Corrupt(format!("closing hash length {hl}")));
        }
        let closing_hash = Digest::from_slice(&b[52..52 + hl])
            .ok_or_else(|| SegmentError::Corrupt("closing hash".into()))?;
        Ok(Tail {
            records: le64(b, 0),
            blocks: le64(b, 8),
            data_offset: le64(b, 16),
            index_offset: le64(b, 24),
            zone_offset: le64(b, 32),
            filter_offset: le64(b, 40),
            closing_hash,
        })
    }
}

/// Offset of the footer checksum inside the tail.
pub const TAIL_CRC_AT: usize = 116;
/// Offset of the trailer magic inside the tail.
pub const TAIL_MAGIC_AT: usize = 120;
