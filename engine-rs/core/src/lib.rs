//! HD engine core: the byte-level hot paths of the Hyperscale Dataset Store.
//!
//! This crate knows nothing of Node.js. The Neon bridge (`hd-engine-node`) wraps it with functions
//! over byte buffers; fuzz targets and `cargo test` exercise it directly.

pub mod affinity;
pub mod batch_id;
pub mod columnar;
pub mod decode;
pub mod encode;
pub mod gpu;
pub mod hash;
pub mod hdwp;
pub mod netio;
pub mod norm;
pub mod pg_text;
pub mod policy;
pub mod scan;
pub mod schema;
pub mod segment;
pub mod types;

#[cfg(test)]
mod test_rng;
