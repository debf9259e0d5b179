//! Thin Neon bridge over `hd-engine-core`. Functions take and return byte buffers and plain
//! values; all logic lives in the core crate. Each module registers its own exports with
//! `#[neon::export]`. This addon is never the public API: `engine-rs/index.ts` wraps it.

mod affinity;
mod batch_id;
mod codec;
mod columnar;
mod decode;
mod encode_arrow;
mod gpu;
mod hash;
mod hdwp;
mod norm;
mod pg_text;
mod policy;
mod scan;
mod schema;
mod segment;
mod user_nic;
mod util;
