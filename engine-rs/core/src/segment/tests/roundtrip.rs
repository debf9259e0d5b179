use super::*;

fn ikey(k: u64) -> i64 {
    (k ^ (1 << 63)) as i64
}

fn fkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

#[test]
fn round_trip_records_header_and_hash() {
    let s = Scratch::new("rt");
    let sum = write(&s.0, HashAlgorithm::Sha512, 8, 100, 37);
    assert_eq!((sum.records, sum.blocks), (100, 13));
    assert_eq!(sum.path, s.0.join(segment_file_name(&batch(1))));
    assert!(!s
        .0
        .join(format!("{}.partial", segment_file_name(&batch(1))))
        .exists());
    assert_eq!(std::fs::metadata(&sum.path).unwrap().len(), sum.bytes);
    let r = SegmentReader::open(&sum.path).unwrap();
    let h = r.header();
    assert_eq!(
        (
            h.dataset_id.as_str(),
            h.record_size,
            h.block_size,
            h.algorithm
        ),
        ("trades", R, 8, HashAlgorithm::Sha512)
    );
    assert_eq!(h.fields, fields());
    assert_eq!(h.batch_id, batch(1));
    assert_eq!(r.closing_hash(), sum.closing_hash);
    let data = records(100);
    assert_eq!(r.read_blocks(0, 13).unwrap(), data);
    assert_eq!(r.read_blocks(12, 1).unwrap(), &data[96 * 16..]);
    assert_eq!(r.read_blocks(3, 2).unwrap(), &data[24 * 16..40 * 16]);
    assert_eq!(r.read_blocks(13, 0).unwrap(), Vec::<u8>::new());
    assert!(matches!(r.read_blocks(12, 2), Err(SegmentError::Range(_))));
    assert!(matches!(
        r.read_blocks(u64::MAX, 2),
        Err(SegmentError::Range(_))
    ));
    assert_eq!(
        verify_segment(&sum.path).unwrap(),
        Verified {
            records: 100,
            blocks: 13,
            closing_hash: sum.closing_hash
        }
    );
}

#[test]
fn zone_maps_compare_as_each_fields_type() {
    let s = Scratch::new("zone");
    let sum = write(&s.0, HashAlgorithm::Sha256, 8, 100, 1000);
    let r = SegmentReader::open(&sum.path).unwrap();
    for k in 0..13u32 {
        let (first, last) = (k * 8, (k * 8 + 7).min(99));
        let u = r.zone(u64::from(k), 0).unwrap();
        assert_eq!((u.min, u.max), (u64::from(first * 7), u64::from(last * 7)));
        let i = r.zone(u64::from(k), 1).unwrap();
        assert_eq!(
            (ikey(i.min), ikey(i.max)),
            (
                i64::from(100 - last as i16 * 3),
                i64::from(100 - first as i16 * 3)
            )
        );
        let f = r.zone(u64::from(k), 2).unwrap();
        let vals: Vec<f64> = (first..=last)
            .filter(|i| i % 11 != 10)
            .map(|i| f64::from(i) / 2.0 - 5.0)
            .collect();
        assert_eq!(
            fkey(f.min),
            vals.iter().cloned().fold(f64::INFINITY, f64::min),
            "block {k}"
        );
        assert_eq!(
            fkey(f.max),
            vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
        );
        let t = r.zone(u64::from(k), 3).unwrap();
        let keys: Vec<u64> = (first..=last)
            .map(|i| u64::from_be_bytes([b'a', b'a' + (i % 26) as u8, 0, 0, 0, 0, 0, 0]))
            .collect();
        assert_eq!(
            (t.min, t.max),
            (*keys.iter().min().unwrap(), *keys.iter().max().unwrap())
        );
    }
    assert_eq!(r.zone(13, 0), None);
    assert_eq!(r.zone(0, 4), None);
    // Negative values must sort below positive ones: block 0 holds -5.0 .. -1.5.
    assert!(fkey(r.zone(0, 2).unwrap().min) < 0.0);
    let f = r.batch_filter();
    assert_eq!((f[0].min, f[0].max), (0, 99 * 7));
    assert_eq!((ikey(f[1].min), ikey(f[1].max)), (100 - 99 * 3, 100));
    assert_eq!((fkey(f[2].min), fkey(f[2].max)), (-5.0, 44.5));
}

#[test]
fn a_block_of_only_nan_has_an_empty_zone() {
    let s = Scratch::new("nan");
    let sum = write(&s.0, HashAlgorithm::Blake3, 1, 12, 16);
    let r = SegmentReader::open(&sum.path).unwrap();
    assert!(r.zone(10, 2).unwrap().is_empty());
    assert!(!r.zone(9, 2).unwrap().is_empty());
    assert!(!r.batch_filter()[2].is_empty());
}

#[test]
fn every_chunking_writes_the_same_bytes() {
    let s = Scratch::new("chunks");
    let mut files = Vec::new();
    for chunk in [1, 5, 15, 16, 17, 64, 5000] {
        let d = s.0.join(format!("c{chunk}"));
        std::fs::create_dir_all(&d).unwrap();
        files.push(std::fs::read(write(&d, HashAlgorithm::Sha512, 4, 50, chunk).path).unwrap());
    }
    assert!(files.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn every_algorithm_round_trips_and_verifies() {
    for alg in [
        HashAlgorithm::Sha512,
        HashAlgorithm::Sha256,
        HashAlgorithm::Blake3,
    ] {
        let s = Scratch::new(alg.name());
        let sum = write(&s.0, alg, 64, 300, 4096);
        assert_eq!(sum.closing_hash.as_bytes().len(), alg.digest_len());
        assert_eq!(
            verify_segment(&sum.path).unwrap().closing_hash,
            sum.closing_hash
        );
    }
}

#[test]
fn an_empty_batch_is_a_valid_segment() {
    let s = Scratch::new("empty");
    let sum = write(&s.0, HashAlgorithm::Sha512, 64, 0, 1);
    assert_eq!((sum.records, sum.blocks), (0, 0));
    assert_eq!(sum.closing_hash, HashAlgorithm::Sha512.hash(&batch(1)));
    let r = SegmentReader::open(&sum.path).unwrap();
    assert_eq!(r.read_blocks(0, 0).unwrap(), Vec::<u8>::new());
    assert!(r.batch_filter().iter().all(Zone::is_empty));
    assert!(verify_segment(&sum.path).is_ok());
}

#[test]
fn a_wrong_closing_hash_removes_the_partial_and_commits_nothing() {
    let s = Scratch::new("mismatch");
    let mut w = SegmentWriter::create(config(&s.0, HashAlgorithm::Sha512, 8)).unwrap();
    w.append(&records(10)).unwrap();
    let err = w.finish(Some(&[0u8; 64])).unwrap_err();
    assert_eq!(err.code(), "ERR_SEGMENT_CLOSING_HASH");
    assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 0);
}

#[test]
fn a_partial_final_record_fails_finish() {
    let s = Scratch::new("tailrec");
    let mut w = SegmentWriter::create(config(&s.0, HashAlgorithm::Sha512, 8)).unwrap();
    w.append(&records(3)[..40]).unwrap();
    assert!(matches!(
        w.finish(None),
        Err(SegmentError::PartialRecord(8))
    ));
    assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 0);
}

#[test]
fn dropping_an_unfinished_writer_removes_its_partial() {
    let s = Scratch::new("drop");
    {
        let mut w = SegmentWriter::create(config(&s.0, HashAlgorithm::Sha512, 8)).unwrap();
        w.append(&records(5)).unwrap();
        assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 1);
    }
    assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 0);
}

#[test]
fn an_existing_segment_or_partial_is_not_overwritten() {
    let s = Scratch::new("exists");
    let _live = SegmentWriter::create(config(&s.0, HashAlgorithm::Sha512, 8)).unwrap();
    assert!(matches!(
        SegmentWriter::create(config(&s.0, HashAlgorithm::Sha512, 8)),
        Err(SegmentError::Exists(_))
    ));
    drop(_live);
    write(&s.0, HashAlgorithm::Sha512, 8, 3, 16);
    assert!(matches!(
        SegmentWriter::create(config(&s.0, HashAlgorithm::Sha512, 8)),
        Err(SegmentError::Exists(_))
    ));
}

#[test]
fn bad_configs_are_refused() {
    let s = Scratch::new("cfg");
    let mut c = config(&s.0, HashAlgorithm::Sha512, 8);
    for name in ["x.seg", "../a.hdseg", ".hdseg", "a/b.hdseg"] {
        c.name = name.into();
        assert_eq!(
            SegmentWriter::create(c.clone()).err().map(|e| e.code()),
            Some("ERR_SEGMENT_CONFIG"),
            "{name}"
        );
    }
    let mut c = config(&s.0, HashAlgorithm::Sha512, 8);
    c.fields.push(ZoneField {
        offset: 10,
        size: 8,
        kind: ZoneKind::Unsigned,
        big_endian: false,
    });
    assert!(matches!(
        SegmentWriter::create(c),
        Err(SegmentError::Config(_))
    ));
    let mut c = config(&s.0, HashAlgorithm::Sha512, 8);
    c.fields = vec![ZoneField {
        offset: 0,
        size: 3,
        kind: ZoneKind::Signed,
        big_endian: false,
    }];
    assert!(matches!(
        SegmentWriter::create(c),
        Err(SegmentError::Config(_))
    ));
    let mut c = config(&s.0, HashAlgorithm::Sha512, 0);
    c.block_size = 0;
    assert!(matches!(
        SegmentWriter::create(c),
        Err(SegmentError::Config(_))
    ));
}

#[test]
fn zone_fields_come_from_a_schema() {
    let schema = crate::schema::parse(
        r#"{"id":"t","record_size":32,"byte_order":"big","time_field":"ts","fields":[
        {"name":"ts","offset":0,"size":8,"type":"timestamp"},
        {"name":"n","offset":8,"size":2,"type":"uint16"},
        {"name":"x","offset":10,"size":8,"type":"double"},
        {"name":"s","offset":18,"size":14,"type":"string"}]}"#,
    )
    .expect("schema");
    let f = zone_fields_from_schema(&schema);
    assert_eq!(
        f,
        vec![
            ZoneField {
                offset: 0,
                size: 8,
                kind: ZoneKind::Signed,
                big_endian: true
            },
            ZoneField {
                offset: 8,
                size: 2,
                kind: ZoneKind::Unsigned,
                big_endian: true
            },
            ZoneField {
                offset: 10,
                size: 8,
                kind: ZoneKind::Float,
                big_endian: true
            },
            ZoneField {
                offset: 18,
                size: 14,
                kind: ZoneKind::Bytes,
                big_endian: true
            },
        ]
    );
}
