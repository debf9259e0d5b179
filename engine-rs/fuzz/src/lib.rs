//! Fuzz targets for every parser of outside bytes in hd-engine-core, each a plain
//! `fn run(&[u8])` that must never panic and checks properties beyond that (see each module).
//!
//! - `fuzz_targets/*.rs`: libFuzzer entries (coverage-guided; `scripts/fuzz.sh` builds them on the
//!   stable toolchain with SanitizerCoverage flags, `cargo fuzz` also works where installed).
//! - `core/tests/fuzz_corpus.rs` includes this file and runs every target over its seed corpus
//!   (`seeds/<target>/`) plus deterministic mutations of it, as part of `cargo test`.
//!
//! This file and its modules use only `hd_engine_core` and `crc32c`, both dependencies of the core
//! crate, so the core's test can include them.

pub mod columnar_body;
pub mod filter_json;
pub mod hdwp_eob;
pub mod hdwp_frame;
pub mod mutate;
pub mod ndjson_parse;
pub mod netio_frame;
pub mod rego_policy;
pub mod schema_json;
pub mod segment_read;

/// A target: runs one input, panics on a finding.
pub type Target = fn(&[u8]);

/// Every target by name, as `seeds/<name>/` and `fuzz_targets/<name>.rs` call it.
pub const TARGETS: [(&str, Target); 9] = [
    ("hdwp_frame", hdwp_frame::run),
    ("hdwp_eob", hdwp_eob::run),
    ("schema_json", schema_json::run),
    ("ndjson_parse", ndjson_parse::run),
    ("segment_read", segment_read::run),
    ("filter_json", filter_json::run),
    ("rego_policy", rego_policy::run),
    ("columnar_body", columnar_body::run),
    ("netio_frame", netio_frame::run),
];
