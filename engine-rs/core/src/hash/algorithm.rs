//! The hash algorithms a chain can use, behind one small trait so the chain's hot loop is
//! monomorphised per algorithm (no dispatch per record).
//!
//! Each algorithm uses the fastest implementation measured on the x86-64 servers HD runs on
//! (docs/BENCHMARKS.md, "Hash chain"): SHA-512 from `ring` (BoringSSL's assembly, 1.26× the
//! `sha2` crate on 150-byte records), SHA-256 from `sha2` (its SHA-NI path beats `ring`'s on
//! short records), BLAKE3 from `blake3`. The digests are the standard ones whichever library
//! computes them; the tests check `ring` against `sha2`.

use sha2::Digest as _;

/// Longest digest of any algorithm (sha512).
pub const MAX_DIGEST_LEN: usize = 64;

/// A hash algorithm of the chain. The numeric codes are stored in segment headers; never reuse one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    Sha512 = 1,
    Sha256 = 2,
    Blake3 = 3,
}

impl HashAlgorithm {
    /// Parses the name used by HASH_ALGORITHM (`sha512`, `sha256`, `blake3`; ASCII case ignored).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "sha512" => Some(Self::Sha512),
            "sha256" => Some(Self::Sha256),
            "blake3" => Some(Self::Blake3),
            _ => None,
        }
    }

    /// The algorithm of a code stored in a segment header.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Sha512),
            2 => Some(Self::Sha256),
            3 => Some(Self::Blake3),
            _ => None,
        }
    }

    /// Lower-case name, as HASH_ALGORITHM spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha512 => "sha512",
            Self::Sha256 => "sha256",
            Self::Blake3 => "blake3",
        }
    }

    /// Code stored in segment headers.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Digest length in bytes (64 for sha512, 32 for sha256 and blake3).
    pub fn digest_len(self) -> usize {
        match self {
            Self::Sha512 => 64,
            Self::Sha256 | Self::Blake3 => 32,
        }
    }

    /// One-shot hash of `data`.
    pub fn hash(self, data: &[u8]) -> Digest {
        match self {
            Self::Sha512 => Sha512::one_shot(data),
            Self::Sha256 => sha2::Sha256::one_shot(data),
            Self::Blake3 => blake3::Hasher::one_shot(data),
        }
    }
}

/// A digest of up to [`MAX_DIGEST_LEN`] bytes, kept inline so hashing allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    bytes: [u8; MAX_DIGEST_LEN],
    len: u8,
}

impl Digest {
    /// Wraps digest bytes; `None` when longer than [`MAX_DIGEST_LEN`].
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        let mut d = Digest {
            bytes: [0; MAX_DIGEST_LEN],
            len: u8::try_from(bytes.len()).ok()?,
        };
        d.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(d)
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Lower-case hex, for messages.
    pub fn to_hex(&self) -> String {
        self.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

/// What the chain needs of a hash function: start, feed bytes, close into a [`Digest`].
pub(crate) trait ChainHasher: Send {
    fn fresh() -> Self;
    fn feed(&mut self, data: &[u8]);
    fn close(self) -> Digest;
    /// The hash of `data` in one call (each record of the chain).
    #[inline]
    fn one_shot(data: &[u8]) -> Digest
    where
        Self: Sized,
    {
        let mut h = Self::fresh();
        h.feed(data);
        h.close()
    }
    /// Closes the hasher and leaves a fresh one in its place.
    fn close_reset(&mut self) -> Digest
    where
        Self: Sized,
    {
        std::mem::replace(self, Self::fresh()).close()
    }
}

fn digest_of(out: &[u8]) -> Digest {
    let mut d = Digest {
        bytes: [0; MAX_DIGEST_LEN],
        len: out.len() as u8,
    };
    d.bytes[..out.len()].copy_from_slice(out);
    d
}

/// SHA-512 from `ring`.
pub(crate) struct Sha512(ring::digest::Context);

impl ChainHasher for Sha512 {
    fn fresh() -> Self {
        Sha512(ring::digest::Context::new(&ring::digest::SHA512))
    }
    fn feed(&mut self, data: &[u8]) {
        self.0.update(data);
    }
    fn close(self) -> Digest {
        digest_of(self.0.finish().as_ref())
    }
    /// `ring`'s one-shot digest skips the context's partial-block buffer.
    #[inline]
    fn one_shot(data: &[u8]) -> Digest {
        digest_of(ring::digest::digest(&ring::digest::SHA512, data).as_ref())
    }
}

impl ChainHasher for sha2::Sha256 {
    fn fresh() -> Self {
        sha2::Sha256::new()
    }
    fn feed(&mut self, data: &[u8]) {
        self.update(data);
    }
    fn close(self) -> Digest {
        digest_of(&self.finalize())
    }
}

impl ChainHasher for blake3::Hasher {
    fn fresh() -> Self {
        blake3::Hasher::new()
    }
    fn feed(&mut self, data: &[u8]) {
        self.update(data);
    }
    fn close(self) -> Digest {
        digest_of(self.finalize().as_bytes())
    }
}
