//! The sender's batch digest (docs/hdwp.md, "eob"): BLAKE3-256 of every record byte of one batch,
//! in the order sent. Unlike the hash chain it has no settings (algorithm, record size, block
//! size), so a sender computes it without knowing the SCC's configuration, and it does not depend
//! on how the records were split into frames or calls.

/// Length of a batch digest in bytes.
pub const BATCH_DIGEST_LEN: usize = 32;

/// The running batch digest of one batch.
#[derive(Clone, Debug, Default)]
pub struct BatchDigest(blake3::Hasher);

impl BatchDigest {
    /// An empty digest (the digest of a batch without records until updated).
    pub fn new() -> Self {
        Self(blake3::Hasher::new())
    }

    /// Feeds the next bytes of the batch (chunks of any size; records may span chunks).
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest of everything fed so far (the digest may be fed more afterwards).
    pub fn finish(&self) -> [u8; BATCH_DIGEST_LEN] {
        *self.0.finalize().as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_does_not_matter() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut whole = BatchDigest::new();
        whole.update(&data);
        let mut parts = BatchDigest::new();
        for c in data.chunks(333) {
            parts.update(c);
        }
        assert_eq!(whole.finish(), parts.finish());
        assert_eq!(whole.finish(), *blake3::hash(&data).as_bytes());
        let mut other = BatchDigest::new();
        other.update(&data[..9_999]);
        assert_ne!(other.finish(), whole.finish());
    }
}
