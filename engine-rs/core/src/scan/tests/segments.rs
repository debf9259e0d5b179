//! Zone skipping and the segment scanner over real segment files: results equal the kernel over
//! every record, blocks are skipped only when nothing in them matches, verify_hash catches a
//! changed record byte whose block CRC was patched to match, and a plain flip is a typed error.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::reference::Rng;
use crate::hash::HashAlgorithm;
use crate::scan::aggregate::AggregatePlan;
use crate::scan::{reduced_for_segment, ScanError, ScanFilter, ScanStep, SegmentScanner, ZonePlan};
use crate::schema::{parse, Schema};
use crate::segment::{
    zone_fields_from_schema, SegmentConfig, SegmentError, SegmentReader, SegmentWriter,
};

struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "hd-scan-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const R: usize = 40;

fn schema() -> Schema {
    parse(
        r#"{ "id": "z", "record_size": 40, "time_field": "ts", "fields": [
            { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
            { "name": "a", "offset": 8, "size": 4, "type": "uint32" },
            { "name": "f", "offset": 12, "size": 8, "type": "double" },
            { "name": "s", "offset": 20, "size": 8, "type": "string" },
            { "name": "x", "offset": 28, "size": 2, "type": "int16" },
            { "name": "ip", "offset": 30, "size": 4, "type": "ipv4" },
            { "name": "pad", "offset": 34, "size": 6, "type": "bytes" } ] }"#,
    )
    .expect("schema")
}

/// `n` records: ts ascending from 1000, a random below 1000, f random with some NaN, s one of
/// a few words, x signed around zero.
fn records(n: usize, seed: u64) -> Vec<u8> {
    let words = ["alpha", "beta", "gamma", "delta", "", "alphabet"];
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n * R);
    for i in 0..n {
        let mut r = [0u8; R];
        r[..8].copy_from_slice(&(1000 + i as i64).to_le_bytes());
        r[8..12].copy_from_slice(&((rng.next() % 1000) as u32).to_le_bytes());
        let f = if rng.below(20) == 0 {
            f64::NAN
        } else {
            (rng.next() % 2001) as f64 / 10.0 - 100.0
        };
        r[12..20].copy_from_slice(&f.to_le_bytes());
        let w = words[(i / 300 + rng.below(2)) % words.len()].as_bytes();
        r[20..20 + w.len()].copy_from_slice(w);
        r[28..30].copy_from_slice(&((rng.next() % 200) as i16 - 100).to_le_bytes());
        r[30..34].copy_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&r);
    }
    out
}

fn write(dir: &Path, name: &str, data: &[u8], zones: bool) -> PathBuf {
    let sc = schema();
    let mut w = SegmentWriter::create(SegmentConfig {
        dir: dir.to_path_buf(),
        name: name.into(),
        dataset_id: "z".into(),
        batch_id: [7u8; 64],
        record_size: R as u32,
        block_size: 64,
        algorithm: HashAlgorithm::Sha256,
        fields: if zones {
            zone_fields_from_schema(&sc)
        } else {
            Vec::new()
        },
    })
    .expect("create");
    for chunk in data.chunks(1000) {
        w.append(chunk).expect("append");
    }
    w.finish(None).expect("finish").path
}

fn scan_all(
    path: &Path,
    f: &Arc<ScanFilter>,
    verify: bool,
    step: u64,
) -> Result<ScanStep, ScanError> {
    scan_through(path, f, verify, step, true).map(|(st, _)| st)
}

/// [`scan_all`] with the record cache on or off; also how many pieces the cache served.
fn scan_through(
    path: &Path,
    f: &Arc<ScanFilter>,
    verify: bool,
    step: u64,
    cache: bool,
) -> Result<(ScanStep, u64), ScanError> {
    let mut s = SegmentScanner::open(path, Arc::clone(f), verify)?;
    s.set_record_cache(cache);
    let mut total = ScanStep::default();
    loop {
        let st = s.next(step)?;
        total.records.extend(st.records);
        total.matched += st.matched;
        total.scanned += st.scanned;
        total.blocks_skipped += st.blocks_skipped;
        if st.done {
            total.done = true;
            total.hash_ok = st.hash_ok;
            return Ok((total, s.cached_pieces()));
        }
        assert!(st.hash_ok.is_none(), "hashOk only on the last step");
    }
}

const QUERIES: &[(&str, bool)] = &[
    (
        r#"[{"filters":[{"field":"ts","op":"between","values":["1500","1700"]}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"ts","op":"lt","value":"1100"}]},{"filters":[{"field":"ts","op":"ge","value":"4000"}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"ts","op":"gt","value":"2000"},{"field":"a","op":"eq","value":"7"}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"ts","op":"in","values":["1001","3333","99999"]}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"s","op":"eq","value":"gamma"}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"s","op":"prefix","value":"alph"}]}]"#,
        true,
    ),
    (r#"[{"filters":[{"field":"s","op":"is_null"}]}]"#, true),
    (
        r#"[{"filters":[{"field":"f","op":"lt","value":"-99.5"}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"f","op":"ne","value":"0"}]}]"#,
        false,
    ),
    (
        r#"[{"filters":[{"field":"x","op":"ne","value":"5"}]}]"#,
        false,
    ),
    (
        r#"[{"filters":[{"field":"ts","op":"lt","value":"0"}]}]"#,
        true,
    ),
    (
        r#"[{"filters":[{"field":"pad","op":"masked_eq","value":"00","mask":"ff"}]}]"#,
        false,
    ),
    (
        r#"[{"filters":[{"field":"ip","op":"lt","value":"10"}]}]"#,
        false,
    ),
    (r#"[]"#, false),
];

#[test]
fn zone_skipping_never_changes_results() {
    let dir = Scratch::new();
    // 251 blocks of 2 560 bytes: three pieces of the record cache's grid (102 blocks each).
    let data = records(64 * 250 + 17, 3);
    let path = write(&dir.0, "a.hdseg", &data, true);
    let plain = write(&dir.0, "b.hdseg", &data, false);
    let sc = schema();
    for (q, skips) in QUERIES {
        let f = Arc::new(ScanFilter::compile(&sc, q).expect(q));
        let want = f.filter(&data);
        for (step, cache) in [
            (1, true),
            (7, true),
            (1000, true),
            (7, false),
            (1000, false),
        ] {
            let (got, _) = scan_through(&path, &f, false, step, cache).expect("scan");
            assert_eq!(got.records, want, "{q} step {step} cache {cache}");
            assert_eq!(got.matched as usize * R, want.len());
            assert_eq!(
                got.blocks_skipped > 0,
                *skips,
                "{q}: skipped {}",
                got.blocks_skipped
            );
            let without = scan_all(&plain, &f, false, step).expect("scan");
            assert_eq!(without.records, want);
            assert_eq!(without.blocks_skipped, 0, "no zones, no skipping");
        }
    }
}

/// `json` compiled against the test schema, `mask` hiding bits of each field.
fn aggregate_plan(json: &str, mask: Option<&[u8]>) -> Arc<AggregatePlan> {
    Arc::new(AggregatePlan::compile(&schema(), json, mask).expect(json))
}

/// Scans `path` to its end with the record cache on, narrow copies on or off, and `plan` as the
/// aggregate when given: the rows, the final partial, how many pieces came from the cache and
/// over how many the filter ran on narrow copies, and the steps it took.
fn scan_narrow(
    path: &Path,
    f: &Arc<ScanFilter>,
    plan: Option<&Arc<AggregatePlan>>,
    narrow: bool,
) -> (Vec<u8>, Option<String>, u64, u64, u32) {
    let mut s = SegmentScanner::open(path, Arc::clone(f), false).expect("open");
    s.set_narrow_copies(narrow);
    if let Some(p) = plan {
        s.set_aggregate(Arc::clone(p));
    }
    let mut rows = Vec::new();
    for steps in 1.. {
        let st = s.next(40).expect("step");
        rows.extend(st.records);
        if st.done {
            return (
                rows,
                st.partial,
                s.cached_pieces(),
                s.narrow_pieces(),
                steps,
            );
        }
    }
    unreachable!("a scan ends")
}

#[test]
fn narrow_copies_never_change_results() {
    let dir = Scratch::new();
    let data = records(64 * 250 + 17, 31);
    let path = write(&dir.0, "n.hdseg", &data, true);
    let sc = schema();
    let plan = aggregate_plan(
        r#"{"version":1,"group_by":[{"field":"s"}],"measures":[{"fn":"count"},{"fn":"sum","field":"a"},{"fn":"min","field":"x"},{"fn":"max","field":"ts"}]}"#,
        None,
    );
    let mut narrowed = 0;
    for (q, _) in QUERIES {
        let f = Arc::new(ScanFilter::compile(&sc, q).expect(q));
        // Read twice: the pieces are kept, and the third scan reads them from memory.
        for _ in 0..2 {
            scan_narrow(&path, &f, None, true);
        }
        let (rows, _, cached, narrow_pieces, _) = scan_narrow(&path, &f, None, true);
        assert!(rows == f.filter(&data), "{q}: rows over narrow copies");
        let whole = scan_narrow(&path, &f, Some(&plan), false);
        let narrow = scan_narrow(&path, &f, Some(&plan), true);
        assert_eq!(narrow.1, whole.1, "{q}: the aggregate over narrow copies");
        assert!(whole.1.is_some());
        assert_eq!(whole.3, 0, "{q}: narrow copies turned off");
        // (A query whose zones rule out every block reads no piece.)
        if crate::scan::Projection::of(&f).is_some() && !rows.is_empty() {
            assert!(cached > 0, "{q}: served from the record cache");
            assert!(
                narrow_pieces > 0 && narrow.3 > 0,
                "{q}: the filter ran over narrow copies"
            );
            narrowed += 1;
        }
    }
    // ts, a, f, x, ip alone are narrow enough (a quarter of 40 bytes); s and pad, or two fields, are not.
    assert!(narrowed >= 6, "narrowed {narrowed}");
}

#[test]
fn aggregates_read_from_narrow_copies_equal_those_over_whole_records() {
    let dir = Scratch::new();
    let data = records(64 * 250 + 17, 37);
    let path = write(&dir.0, "na.hdseg", &data, true);
    let sc = schema();
    // x (2 bytes) beside a filter's ts (8) or s (8) still fits in a quarter of the record.
    let json = r#"{"version":1,"group_by":[{"field":"x"}],"measures":[{"fn":"count"},{"fn":"sum","field":"x"},{"fn":"min","field":"x"},{"fn":"max","field":"x"}]}"#;
    // A caller who may not see x's high byte: the copies give exactly what it may read.
    let mut mask = vec![0xffu8; R];
    mask[29] = 0x0f;
    let plans = [
        aggregate_plan(json, None),
        aggregate_plan(json, Some(&mask)),
        aggregate_plan(r#"{"version":1,"measures":[{"fn":"count"}]}"#, None),
    ];
    let mut from_copies = 0;
    for (q, _) in QUERIES {
        let f = Arc::new(ScanFilter::compile(&sc, q).expect(q));
        for plan in &plans {
            for _ in 0..2 {
                scan_narrow(&path, &f, Some(plan), true);
            }
            let whole = scan_narrow(&path, &f, Some(plan), false);
            let narrow = scan_narrow(&path, &f, Some(plan), true);
            assert_eq!(
                narrow.1, whole.1,
                "{q}: the aggregate read from narrow copies"
            );
            let mut s = SegmentScanner::open(&path, Arc::clone(&f), false).expect("open");
            s.set_aggregate(Arc::clone(plan));
            if s.narrow_form().is_some_and(|n| n.aggregate.is_some()) && narrow.3 > 0 {
                from_copies += 1;
            }
        }
    }
    assert!(
        from_copies >= 8,
        "aggregated from narrow copies {from_copies} times"
    );
}

#[test]
fn filters_the_batch_zones_prove_are_left_out_of_the_kernel() {
    let dir = Scratch::new();
    // ts runs 1000 .. 1000 + 5000 over the batch.
    let data = records(5000, 41);
    let path = write(&dir.0, "p.hdseg", &data, true);
    let sc = schema();
    let reader = SegmentReader::open(&path).expect("open");
    let fields = &reader.header().fields;
    let reduce = |q: &str| {
        let f = ScanFilter::compile(&sc, q).expect(q);
        (reduced_for_segment(&f, fields, reader.batch_filter()), f)
    };
    // A time range covering the batch, and a filter on a: only a's is evaluated.
    let (r, f) = reduce(
        r#"[{"filters":[{"field":"ts","op":"between","values":["0","99999"]},{"field":"a","op":"lt","value":"100"}]}]"#,
    );
    let r = r.expect("ts proven");
    assert_eq!(r.subs().iter().map(Vec::len).collect::<Vec<_>>(), [1]);
    assert!(r.filter(&data) == f.filter(&data));
    let f = Arc::new(f);
    assert!(scan_all(&path, &f, false, 7).expect("scan").records == f.filter(&data));
    // A sub-query proven whole: every record matches.
    let (r, _) = reduce(
        r#"[{"filters":[{"field":"ts","op":"ge","value":"1000"}]},{"filters":[{"field":"a","op":"eq","value":"3"}]}]"#,
    );
    assert!(r.expect("proven").matches_all());
    // A range the batch crosses, and a filter without an exact zone check (a string), prove nothing.
    assert!(
        reduce(r#"[{"filters":[{"field":"ts","op":"lt","value":"3000"}]}]"#)
            .0
            .is_none()
    );
    assert!(
        reduce(r#"[{"filters":[{"field":"s","op":"prefix","value":""}]}]"#)
            .0
            .is_none()
    );
}

#[test]
fn the_record_cache_serves_a_file_until_it_changes() {
    let dir = Scratch::new();
    let sc = schema();
    let every = Arc::new(ScanFilter::compile(&sc, "[]").expect("all"));
    let data = records(64 * 250 + 17, 21);
    let path = write(&dir.0, "r.hdseg", &data, true);
    // Read once: remembered; read again: kept; from then on served from memory.
    let served = |path: &Path, want: &[u8]| {
        let (st, n) = scan_through(path, &every, false, 1000, true).expect("scan");
        assert!(st.records == want, "the same records");
        n
    };
    assert_eq!([served(&path, &data), served(&path, &data)], [0, 0]);
    assert_eq!(
        served(&path, &data),
        3,
        "the three pieces, from the third read"
    );
    let (_, off) = scan_through(&path, &every, false, 1000, false).expect("scan");
    assert_eq!(off, 0, "turned off for this scan: read from the file");
    let (_, audited) = scan_through(&path, &every, true, 1000, true).expect("scan");
    assert_eq!(audited, 0, "verify_hash reads the file");

    // The same path written again with other records: another file, read afresh.
    let other = records(64 * 250 + 17, 22);
    std::fs::remove_file(&path).expect("remove");
    let path = write(&dir.0, "r.hdseg", &other, true);
    assert_eq!(
        [
            served(&path, &other),
            served(&path, &other),
            served(&path, &other)
        ],
        [0, 0, 3]
    );

    // Changed in place (a flip its block CRC sees): never served from the cache, the batch fails.
    patch_record_byte(&path, 64 * 150, 3, false);
    match scan_through(&path, &every, false, 1000, true) {
        Err(ScanError::Segment(SegmentError::BlockChecksum(150))) => {}
        other => panic!(
            "expected a block checksum error, got {:?}",
            other.map(|r| r.1)
        ),
    }
}

#[test]
fn zone_plan_agrees_with_every_block() {
    // Brute force: a block the plan rules out holds no matching record.
    let dir = Scratch::new();
    let data = records(64 * 40, 11);
    let path = write(&dir.0, "c.hdseg", &data, true);
    let reader = SegmentReader::open(&path).expect("open");
    let nf = reader.header().fields.len();
    let sc = schema();
    let mut rng = Rng(5);
    let mut skipped = 0;
    for _ in 0..200 {
        let lo = 900 + rng.below(3000);
        let hi = lo + rng.below(400);
        let a = rng.below(1000);
        let q = format!(
            r#"[{{"filters":[{{"field":"ts","op":"between","values":["{lo}","{hi}"]}},{{"field":"a","op":"le","value":"{a}"}}]}},
                {{"filters":[{{"field":"f","op":"ge","value":"{}"}},{{"field":"s","op":"eq","value":"beta"}}]}}]"#,
            rng.below(200) as f64 - 100.0
        );
        let f = ScanFilter::compile(&sc, &q).expect("compiles");
        let plan = ZonePlan::new(&f, &reader.header().fields);
        for b in 0..reader.blocks() as usize {
            let zones = &reader.zones()[b * nf..(b + 1) * nf];
            if !plan.may_match(zones) {
                skipped += 1;
                let block = &data[b * 64 * R..((b + 1) * 64 * R).min(data.len())];
                assert!(
                    f.filter(block).is_empty(),
                    "block {b} skipped but matches: {q}"
                );
            }
        }
    }
    assert!(skipped > 100, "zones skipped {skipped} blocks");
}

fn patch_record_byte(path: &Path, record: usize, at: usize, fix_crc: bool) {
    let mut b = std::fs::read(path).expect("read");
    let reader = SegmentReader::open(path).expect("open");
    let h = reader.header().data_offset as usize;
    b[h + record * R + at] ^= 0x01;
    if fix_crc {
        let blk = record / 64;
        let e = &reader.block_index()[blk];
        let start = e.offset as usize;
        let crc = crc32c::crc32c(&b[start..start + e.records as usize * R]);
        let tail = b.len() - 128;
        let index_at = u64::from_le_bytes(b[tail + 24..tail + 32].try_into().expect("8")) as usize;
        let el = 16 + reader.header().algorithm.digest_len();
        let crc_at = index_at + blk * el + 12;
        b[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        let footer = crc32c::crc32c(&b[index_at..tail + 116]);
        b[tail + 116..tail + 120].copy_from_slice(&footer.to_le_bytes());
    }
    std::fs::write(path, b).expect("write");
}

#[test]
fn verify_hash_detects_a_changed_record() {
    let dir = Scratch::new();
    let data = records(64 * 10 + 5, 9);
    let sc = schema();
    let every = Arc::new(ScanFilter::compile(&sc, "[]").expect("all"));
    let none = Arc::new(
        ScanFilter::compile(
            &sc,
            r#"[{"filters":[{"field":"ts","op":"lt","value":"0"}]}]"#,
        )
        .expect("none"),
    );
    let path = write(&dir.0, "v.hdseg", &data, true);
    let ok = scan_all(&path, &every, true, 3).expect("scan");
    assert_eq!(ok.hash_ok, Some(true));
    assert_eq!(ok.records, data);
    assert_eq!(
        scan_all(&path, &every, false, 3).expect("scan").hash_ok,
        None
    );
    // Every block is hashed even when the zones rule all of them out.
    let skipped = scan_all(&path, &none, true, 4).expect("scan");
    assert_eq!(
        (skipped.hash_ok, skipped.matched, skipped.scanned),
        (Some(true), 0, 0)
    );
    assert_eq!(skipped.blocks_skipped, 11);

    // One bit of record 200 changed, its block CRC and the footer patched to match.
    patch_record_byte(&path, 200, 9, true);
    let bad = scan_all(&path, &every, true, 3).expect("scan");
    assert_eq!(bad.hash_ok, Some(false));
    assert_eq!(
        scan_all(&path, &none, true, 100).expect("scan").hash_ok,
        Some(false)
    );
    assert!(scan_all(&path, &every, false, 3)
        .expect("scan")
        .hash_ok
        .is_none());

    // A flip the CRC sees: a typed error naming the block.
    let path2 = write(&dir.0, "w.hdseg", &data, true);
    patch_record_byte(&path2, 130, 3, false);
    for verify in [false, true] {
        match scan_all(&path2, &every, verify, 3) {
            Err(ScanError::Segment(SegmentError::BlockChecksum(2))) => {}
            other => panic!("expected a block checksum error, got {other:?}"),
        }
    }
    // Zones rule block 2 out, so a scan without verify_hash never reads it.
    let early = Arc::new(
        ScanFilter::compile(
            &sc,
            r#"[{"filters":[{"field":"ts","op":"lt","value":"1010"}]}]"#,
        )
        .expect("early"),
    );
    let st = scan_all(&path2, &early, false, 2).expect("not read");
    assert_eq!(st.matched, 10);
    let e = scan_all(&path2, &early, true, 2).expect_err("read with verify");
    assert_eq!(e.code(), "ERR_SEGMENT_BLOCK_CHECKSUM");
}

#[test]
fn scanner_edges() {
    let dir = Scratch::new();
    let sc = schema();
    let every = Arc::new(ScanFilter::compile(&sc, "[]").expect("all"));
    let empty = write(&dir.0, "e.hdseg", &[], true);
    let st = scan_all(&empty, &every, true, 5).expect("empty");
    assert_eq!((st.done, st.hash_ok, st.matched), (true, Some(true), 0));
    let mut s = SegmentScanner::open(&empty, Arc::clone(&every), false).expect("open");
    assert!(s.next(1).expect("step").done);
    assert!(s.next(1).expect("again").done, "next after done stays done");

    let other = parse(
        r#"{ "id": "o", "record_size": 41, "time_field": "ts", "fields": [
            { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" } ] }"#,
    )
    .expect("schema");
    let f = Arc::new(ScanFilter::compile(&other, "[]").expect("all"));
    match SegmentScanner::open(&empty, f, false) {
        Err(e @ ScanError::RecordSize { .. }) => {
            assert_eq!(e.code(), "ERR_SCAN_RECORD_SIZE");
            assert!(e.to_string().contains("40-byte records"), "{e}");
        }
        other => panic!("expected a record size error, got {:?}", other.err()),
    }
    match SegmentScanner::open(&dir.0.join("missing.hdseg"), every, false) {
        Err(e) => assert_eq!(e.code(), "ERR_SEGMENT_IO"),
        Ok(_) => panic!("opened a missing file"),
    }
}

/// Scans `path` to the end with `offload` on the scanner (aggregate and audit as given).
fn scan_offloaded(
    path: &Path,
    f: &Arc<ScanFilter>,
    offload: &Arc<crate::gpu::Offload>,
    verify: bool,
    step: u64,
) -> ScanStep {
    let mut s = SegmentScanner::open(path, Arc::clone(f), verify).expect("open");
    s.set_offload(Some(Arc::clone(offload)));
    let mut total = ScanStep::default();
    loop {
        let st = s.next(step).expect("step");
        total.records.extend(st.records);
        total.matched += st.matched;
        total.scanned += st.scanned;
        total.blocks_skipped += st.blocks_skipped;
        if st.done {
            total.hash_ok = st.hash_ok;
            return total;
        }
    }
}

#[test]
fn offloaded_steps_match_the_cpu_kernel_and_are_counted() {
    use crate::gpu::host_check::{BrokenBackend, HostBackend};
    use crate::gpu::Offload;
    let dir = Scratch::new();
    let data = records(64 * 250 + 17, 11);
    let path = write(&dir.0, "g.hdseg", &data, true);
    let sc = schema();
    // Every step large enough: each goes to the backend (the generated program, host-compiled).
    let host = Offload::new(Box::<HostBackend>::default(), 0);
    // No step large enough: each stays on the CPU kernel and counts as a fallback.
    let small = Offload::new(Box::<HostBackend>::default(), usize::MAX);
    // A backend that always fails: the steps are redone on the CPU kernel, counted as errors.
    let broken = Offload::new(Box::new(BrokenBackend), 0);
    for (q, _) in QUERIES {
        let f = Arc::new(ScanFilter::compile(&sc, q).expect(q));
        let want = f.filter(&data);
        for step in [1, 7, 1000] {
            for o in [&host, &small, &broken] {
                let got = scan_offloaded(&path, &f, o, false, step);
                assert_eq!(got.records, want, "{q} step {step} on {}", o.device());
                assert_eq!(got.matched as usize * R, want.len());
            }
        }
    }
    let count = |o: &Offload| o.counters().snapshot().map(|(_, v)| v);
    let [bytes, steps, fallbacks, errors] = count(&host);
    assert!(
        steps > 0 && fallbacks == 0 && errors == 0,
        "{:?}",
        host.counters()
    );
    assert_eq!(bytes % R as u64, 0, "whole records");
    let [_, steps, fallbacks, _] = count(&small);
    assert!(steps == 0 && fallbacks > 0);
    let [bytes, steps, _, errors] = count(&broken);
    assert!(steps == 0 && bytes == 0 && errors > 0);
    assert!(broken
        .last_error()
        .expect("kept")
        .contains("ILLEGAL_ADDRESS"));

    // Audits (verify_hash) and aggregates stay on the CPU path: the chain needs every block in
    // order, and aggregates fold per chunk.
    let all = Arc::new(ScanFilter::compile(&sc, "[]").expect("all"));
    let before = count(&host);
    let audited = scan_offloaded(&path, &all, &host, true, 7);
    assert_eq!(audited.hash_ok, Some(true));
    assert_eq!(audited.records, data);
    assert_eq!(count(&host), before, "an audit is not offloaded");
}

/// The final partial of an aggregate scan of `path`, with `offload` or on the CPU.
fn aggregate_partial(
    path: &Path,
    f: &Arc<ScanFilter>,
    plan: &Arc<AggregatePlan>,
    offload: Option<&Arc<crate::gpu::Offload>>,
    step: u64,
) -> Option<String> {
    let mut s = SegmentScanner::open(path, Arc::clone(f), false).expect("open");
    s.set_offload(offload.cloned());
    s.set_aggregate(Arc::clone(plan));
    loop {
        let st = s.next(step).expect("step");
        assert!(st.records.is_empty());
        if st.done {
            return st.partial;
        }
    }
}

#[test]
fn aggregates_over_offloaded_filters_equal_the_cpu_partials() {
    use crate::gpu::host_check::HostBackend;
    use crate::gpu::Offload;
    let dir = Scratch::new();
    let data = records(64 * 250 + 17, 23);
    let path = write(&dir.0, "ga.hdseg", &data, true);
    let sc = schema();
    let host = Offload::new(Box::<HostBackend>::default(), 0);
    let plans = [
        aggregate_plan(r#"{"version":1,"measures":[{"fn":"count"}]}"#, None),
        aggregate_plan(
            r#"{"version":1,"group_by":[{"field":"x"}],"measures":[{"fn":"count"},{"fn":"sum","field":"a"},{"fn":"min","field":"f"},{"fn":"max","field":"ts"}]}"#,
            None,
        ),
        aggregate_plan(
            r#"{"version":1,"group_by":[{"field":"s"}],"measures":[{"fn":"sum","field":"x"},{"fn":"max","field":"f"}]}"#,
            None,
        ),
    ];
    for (q, _) in QUERIES {
        let f = Arc::new(ScanFilter::compile(&sc, q).expect(q));
        for plan in &plans {
            for step in [3, 1000] {
                let cpu = aggregate_partial(&path, &f, plan, None, step);
                let gpu = aggregate_partial(&path, &f, plan, Some(&host), step);
                assert_eq!(gpu, cpu, "{q} step {step}");
            }
        }
    }
    let [bytes, steps, _, errors] = host.counters().snapshot().map(|(_, v)| v);
    assert!(
        steps > 0 && bytes > 0 && errors == 0,
        "{:?}",
        host.counters()
    );
}

#[test]
fn an_offloaded_step_covers_more_blocks() {
    use crate::gpu::host_check::HostBackend;
    use crate::gpu::{Offload, GPU_STEP_FACTOR};
    let dir = Scratch::new();
    let data = records(64 * 100, 5);
    let path = write(&dir.0, "h.hdseg", &data, false);
    let f = Arc::new(ScanFilter::compile(&schema(), "[]").expect("all"));
    let host = Offload::new(Box::<HostBackend>::default(), 0);
    let mut s = SegmentScanner::open(&path, Arc::clone(&f), false).expect("open");
    s.set_offload(Some(host));
    let st = s.next(2).expect("step");
    assert_eq!(
        st.scanned,
        64 * 2 * GPU_STEP_FACTOR,
        "{} records in the first step",
        st.scanned
    );
}
