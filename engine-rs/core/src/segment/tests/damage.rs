use super::*;

fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] ^= 0x10;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_flipped_record_byte_fails_the_block_read_and_verification() {
    let s = Scratch::new("flip-rec");
    let sum = write(&s.0, HashAlgorithm::Sha512, 8, 40, 4096);
    let data_offset = SegmentReader::open(&sum.path).unwrap().header().data_offset;
    flip(&sum.path, data_offset + 8 * 16 * 2 + 5);
    let r = SegmentReader::open(&sum.path).expect("footer is intact");
    assert!(r.read_blocks(0, 2).is_ok());
    assert!(matches!(
        r.read_blocks(2, 1),
        Err(SegmentError::BlockChecksum(2))
    ));
    assert!(matches!(
        verify_segment(&sum.path),
        Err(SegmentError::BlockChecksum(2))
    ));
}

#[test]
fn records_rewritten_with_a_matching_crc_still_fail_the_chain() {
    let s = Scratch::new("chain");
    let sum = write(&s.0, HashAlgorithm::Sha256, 8, 16, 4096);
    // Swap two records inside block 1 and patch that block's CRC: only the chain can tell.
    let r = SegmentReader::open(&sum.path).unwrap();
    let e = r.block_index()[1].clone();
    let dl = 32usize;
    let index_at = r.header().data_offset + 16 * 16;
    drop(r);
    let mut b = std::fs::read(&sum.path).unwrap();
    let o = e.offset as usize;
    let (a, c): (Vec<u8>, Vec<u8>) = (b[o..o + 16].to_vec(), b[o + 16..o + 32].to_vec());
    b[o..o + 16].copy_from_slice(&c);
    b[o + 16..o + 32].copy_from_slice(&a);
    let crc = crc32c::crc32c(&b[o..o + 8 * 16]);
    let entry_at = index_at as usize + (16 + dl);
    b[entry_at + 12..entry_at + 16].copy_from_slice(&crc.to_le_bytes());
    let tail_at = b.len() - TAIL_LEN;
    let fcrc = crc32c::crc32c(&b[index_at as usize..tail_at + 116]);
    b[tail_at + 116..tail_at + 120].copy_from_slice(&fcrc.to_le_bytes());
    std::fs::write(&sum.path, b).unwrap();
    assert!(SegmentReader::open(&sum.path)
        .unwrap()
        .read_blocks(1, 1)
        .is_ok());
    assert!(matches!(
        verify_segment(&sum.path),
        Err(SegmentError::ChainMismatch(1))
    ));
}

#[test]
fn every_single_byte_flip_is_detected() {
    let s = Scratch::new("every-flip");
    let sum = write(&s.0, HashAlgorithm::Blake3, 2, 5, 4096);
    let good = std::fs::read(&sum.path).unwrap();
    for at in 0..good.len() {
        let mut b = good.clone();
        b[at] ^= 0x01;
        std::fs::write(&sum.path, &b).unwrap();
        let e = verify_segment(&sum.path).expect_err("flip must be detected");
        assert!(e.is_damage(), "byte {at}: {e}");
    }
}

#[test]
fn every_truncation_is_a_typed_error() {
    let s = Scratch::new("trunc");
    let sum = write(&s.0, HashAlgorithm::Sha512, 2, 5, 4096);
    let good = std::fs::read(&sum.path).unwrap();
    for len in 0..good.len() {
        std::fs::write(&sum.path, &good[..len]).unwrap();
        let e = SegmentReader::open(&sum.path).expect_err("truncated");
        assert!(e.is_damage(), "len {len}: {e}");
    }
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 3]);
    std::fs::write(&sum.path, &longer).unwrap();
    assert!(SegmentReader::open(&sum.path).unwrap_err().is_damage());
}

#[test]
fn random_garbage_never_panics() {
    let s = Scratch::new("garbage");
    let sum = write(&s.0, HashAlgorithm::Sha512, 3, 7, 4096);
    let good = std::fs::read(&sum.path).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let p = s.0.join("g.hdseg");
    for round in 0..400 {
        let bytes: Vec<u8> = if round % 2 == 0 {
            (0..next() % 1200).map(|_| next() as u8).collect()
        } else {
            // A valid segment with a few random bytes overwritten: gets past the magic checks.
            let mut b = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % b.len() as u64) as usize;
                b[at] = next() as u8;
            }
            b
        };
        std::fs::write(&p, &bytes).unwrap();
        if let Ok(r) = SegmentReader::open(&p) {
            let _ = r.read_blocks(0, r.blocks());
        }
        let _ = verify_segment(&p);
    }
}

#[test]
fn recovery_keeps_good_segments_discards_partials_and_quarantines_damage() {
    let s = Scratch::new("recover");
    let good = write(&s.0, HashAlgorithm::Sha512, 8, 20, 4096);
    let mut cfg = config(&s.0, HashAlgorithm::Sha512, 8);
    cfg.name = "bad-record.hdseg".into();
    let mut w = SegmentWriter::create(cfg).unwrap();
    w.append(&records(20)).unwrap();
    let bad = w.finish(None).unwrap();
    let off = SegmentReader::open(&bad.path).unwrap().header().data_offset;
    flip(&bad.path, off + 3);
    let mut cfg = config(&s.0, HashAlgorithm::Sha512, 8);
    cfg.name = "bad-footer.hdseg".into();
    let w = SegmentWriter::create(cfg).unwrap();
    let badf = w.finish(None).unwrap();
    let len = std::fs::metadata(&badf.path).unwrap().len();
    flip(&badf.path, len - 20);
    // A crash mid-write leaves a partial; a stray file is not ours.
    std::fs::write(s.0.join("crashed.hdseg.partial"), b"half a batch").unwrap();
    std::fs::write(s.0.join("notes.txt"), b"keep me").unwrap();
    let out = recover_dir(&s.0, RecoverOptions::default()).unwrap();
    assert_eq!(out.complete, vec![good.path.clone()]);
    assert_eq!(out.discarded, vec![s.0.join("crashed.hdseg.partial")]);
    let q: Vec<_> = out
        .quarantined
        .iter()
        .map(|q| (q.path.clone(), q.code))
        .collect();
    assert_eq!(
        q,
        vec![
            (
                s.0.join("quarantine/bad-footer.hdseg"),
                "ERR_SEGMENT_FOOTER_CHECKSUM"
            ),
            (
                s.0.join("quarantine/bad-record.hdseg"),
                "ERR_SEGMENT_BLOCK_CHECKSUM"
            )
        ]
    );
    assert!(s.0.join("notes.txt").exists());
    assert!(!s.0.join("crashed.hdseg.partial").exists() && !bad.path.exists());
    // Idempotent: a second pass finds only the good segment.
    let again = recover_dir(
        &s.0,
        RecoverOptions {
            verify_chains: false,
        },
    )
    .unwrap();
    assert_eq!(
        again,
        Recovery {
            complete: vec![good.path],
            ..Recovery::default()
        }
    );
}

#[test]
fn quarantine_never_overwrites_an_earlier_quarantined_file() {
    let s = Scratch::new("q-twice");
    for _ in 0..2 {
        let sum = write(&s.0, HashAlgorithm::Sha512, 8, 3, 4096);
        flip(&sum.path, 0);
        recover_dir(&s.0, RecoverOptions::default()).unwrap();
    }
    let name = segment_file_name(&batch(1));
    assert!(s.0.join(QUARANTINE_DIR).join(&name).exists());
    assert!(s.0.join(QUARANTINE_DIR).join(format!("{name}.1")).exists());
}

#[test]
fn a_valid_segment_of_another_batch_under_this_batchs_name_is_refused() {
    let s = Scratch::new("misplaced");
    let one = write(&s.0, HashAlgorithm::Sha256, 8, 20, 4096);
    // Batch 2's name, batch 1's whole and valid segment: a misdirected copy.
    let other = s.0.join(segment_file_name(&batch(2)));
    std::fs::copy(&one.path, &other).unwrap();
    let err = SegmentReader::open(&other).unwrap_err();
    assert_eq!(err.code(), "ERR_SEGMENT_CORRUPT");
    assert!(err.to_string().contains("holds batch"), "{err}");
    assert_eq!(
        verify_segment(&other).unwrap_err().code(),
        "ERR_SEGMENT_CORRUPT"
    );
    // The same bytes under any other name (quarantine copies, tests' own names) still open.
    let free = s.0.join("copy.hdseg");
    std::fs::copy(&one.path, &free).unwrap();
    assert!(SegmentReader::open(&free).is_ok());
    // Recovery quarantines it and keeps the rightly named one.
    std::fs::remove_file(&free).unwrap();
    let out = recover_dir(&s.0, RecoverOptions::default()).unwrap();
    assert_eq!(out.complete, vec![one.path.clone()]);
    assert_eq!(out.quarantined.len(), 1);
    assert_eq!(out.quarantined[0].code, "ERR_SEGMENT_CORRUPT");
}
