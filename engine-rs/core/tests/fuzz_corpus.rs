//! Runs every fuzz target of `engine-rs/fuzz` (its library, included here) over its seed corpus
//! `engine-rs/fuzz/seeds/<target>/` — the seeds and every regression input a fuzzing run found —
//! and then over deterministic mutations of it, as part of `cargo test`. The coverage-guided runs
//! are libFuzzer's (`npm run fuzz`); this keeps the corpus green in every test run.
//! `HD_FUZZ_MUTATIONS` sets the mutations per target (default 3000).

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod fuzz;

use std::path::PathBuf;

use fuzz::mutate::{mutate, Rng};

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../fuzz/seeds/{target}"));
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

fn replay(target: &str) {
    let (_, run) = fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .expect("a known target");
    let seeds = corpus(target);
    assert!(!seeds.is_empty(), "{target} has seeds");
    for s in &seeds {
        run(s);
    }
    let n: usize = std::env::var("HD_FUZZ_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng::new(0x4844_4655_5a5a ^ target.len() as u64);
    for i in 0..n {
        let a = &seeds[i % seeds.len()];
        let b = &seeds[rng.below(seeds.len())];
        let input = mutate(a, b, &mut rng);
        let ok = std::panic::catch_unwind(|| run(&input));
        assert!(
            ok.is_ok(),
            "{target}: mutation {i} of seed {} panicked; input (hex): {}",
            i % seeds.len(),
            input.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
}

#[test]
fn every_target_has_seeds() {
    for (name, _) in fuzz::TARGETS {
        assert!(!corpus(name).is_empty(), "{name}");
    }
}

#[test]
fn hdwp_frame() {
    replay("hdwp_frame");
}

#[test]
fn hdwp_eob() {
    replay("hdwp_eob");
}

#[test]
fn schema_json() {
    replay("schema_json");
}

#[test]
fn ndjson_parse() {
    replay("ndjson_parse");
}

#[test]
fn segment_read() {
    replay("segment_read");
}

#[test]
fn filter_json() {
    replay("filter_json");
}

#[test]
fn rego_policy() {
    replay("rego_policy");
}

#[test]
fn columnar_body() {
    replay("columnar_body");
}

#[test]
fn netio_frame() {
    replay("netio_frame");
}
