//! io_uring segments: byte for byte the buffered file at every alignment edge, torn writes
//! recovered like any other, and the fallbacks (direct, then buffered) where io_uring or O_DIRECT
//! is refused.

use std::fs::{self, File};
use std::path::Path;

use super::super::direct::{SegmentOut, REFUSE_DIRECT};
use super::super::uring::REFUSE_URING;
use super::io_kit::{assert_same_as_buffered, edge_bytes, partial_of_batch_1, write_io, writer};
use super::*;

/// Whether this machine writes segments in `dir` through io_uring (a seccomp filter or the
/// io_uring_disabled sysctl may refuse it; then the tests check the fallback instead).
fn uring_here(dir: &Path) -> bool {
    match uring_io_refusal(dir).expect("probe") {
        None => true,
        Some(why) => {
            eprintln!("io_uring refused here: {why}");
            false
        }
    }
}

/// The mode a `Uring` writer must get in `dir`.
fn expected_mode(dir: &Path) -> SegmentIo {
    if uring_here(dir) {
        SegmentIo::Uring
    } else if direct_io_supported(dir).expect("probe") {
        SegmentIo::Direct
    } else {
        SegmentIo::Buffered
    }
}

#[test]
fn uring_segments_are_byte_identical_to_buffered_ones() {
    let c = URING_CHUNK / R as usize;
    // Empty, under one alignment block, around one block, and more blocks than the ring holds.
    for (n, chunk) in [
        (0u32, 1usize),
        (1, 16),
        (200, 37),
        (c as u32 - 1, 65_536),
        (c as u32, 1 << 20),
        ((URING_DEPTH * c * 2 + 3) as u32, 3_000_000),
    ] {
        let b = Scratch::new("uring-b");
        let u = Scratch::new("uring-u");
        let (sb, _) = write_io(&b.0, SegmentIo::Buffered, n, chunk);
        let (su, mu) = write_io(&u.0, SegmentIo::Uring, n, chunk);
        assert_eq!(mu, expected_mode(&u.0), "{n} records");
        assert_same_as_buffered(n, &su, &sb);
        assert_eq!(fs::read_dir(&u.0).unwrap().count(), 1, "only the segment");
    }
}

#[test]
fn uring_output_keeps_exact_lengths_at_alignment_edges() {
    let s = Scratch::new("uring-edge");
    let (a, c) = (DIRECT_ALIGN, URING_CHUNK);
    let want = expected_mode(&s.0);
    for len in [
        0,
        1,
        a - 1,
        a,
        a + 1,
        c - 1,
        c,
        c + 1,
        URING_DEPTH * c,
        (URING_DEPTH + 2) * c + 5000,
    ] {
        let data = edge_bytes(len);
        let path = s.0.join(format!("edge-{len}"));
        let mut out = SegmentOut::new(File::create(&path).unwrap(), SegmentIo::Uring).unwrap();
        assert_eq!(out.io(), want);
        // Uneven pieces, so block edges fall inside appends.
        for piece in data.chunks(a * 3 + 7) {
            out.write_all(piece).unwrap();
        }
        drop(out.into_durable_file().unwrap());
        assert!(fs::read(&path).unwrap() == data, "{len} bytes");
    }
}

#[test]
fn a_failed_uring_write_surfaces_as_an_error() {
    // A read-only descriptor: every write the ring completes fails (EBADF).
    let s = Scratch::new("uring-fail");
    if !uring_here(&s.0) {
        return;
    }
    let path = s.0.join("ro");
    fs::write(&path, b"").unwrap();
    let mut out = SegmentOut::new(File::open(&path).unwrap(), SegmentIo::Uring).unwrap();
    assert_eq!(out.io(), SegmentIo::Uring);
    let data = vec![7u8; (URING_DEPTH + 3) * URING_CHUNK + 5];
    let failed = data
        .chunks(URING_CHUNK / 2)
        .any(|c| out.write_all(c).is_err());
    assert!(
        failed,
        "more blocks than the ring holds: a completion was reaped"
    );
    // Dropped with writes possibly in flight: waits for them rather than freeing their blocks.
    drop(out);
    let mut out = SegmentOut::new(File::open(&path).unwrap(), SegmentIo::Uring).unwrap();
    out.write_all(&data[..100]).unwrap();
    let (op, e) = out.into_durable_file().unwrap_err();
    assert_eq!(op, "write and fsync");
    assert_eq!(e.raw_os_error(), Some(libc::EBADF));
}

#[test]
fn a_refused_ring_falls_back_to_direct_then_buffered() {
    let b = Scratch::new("uring-rb");
    let (sb, _) = write_io(&b.0, SegmentIo::Buffered, 70_000, 999);
    let want = fs::read(&sb.path).unwrap();

    let d = Scratch::new("uring-rd");
    REFUSE_URING.with(|r| r.set(true));
    let (sd, md) = write_io(&d.0, SegmentIo::Uring, 70_000, 999);
    REFUSE_URING.with(|r| r.set(false));
    let direct = direct_io_supported(&d.0).unwrap();
    assert_eq!(
        md,
        if direct {
            SegmentIo::Direct
        } else {
            SegmentIo::Buffered
        }
    );
    assert!(fs::read(&sd.path).unwrap() == want);

    let f = Scratch::new("uring-rf");
    REFUSE_URING.with(|r| r.set(true));
    REFUSE_DIRECT.with(|r| r.set(true));
    let (sf, mf) = write_io(&f.0, SegmentIo::Uring, 70_000, 999);
    REFUSE_URING.with(|r| r.set(false));
    assert_eq!(mf, SegmentIo::Buffered);
    assert!(fs::read(&sf.path).unwrap() == want);
    assert_eq!(verify_segment(&sf.path).unwrap().records, 70_000);
}

#[test]
fn the_probe_says_why_io_uring_is_refused_and_leaves_no_file() {
    let s = Scratch::new("uring-probe");
    REFUSE_URING.with(|r| r.set(true));
    let why = uring_io_refusal(&s.0).unwrap().expect("refused");
    assert!(why.starts_with("the kernel refuses io_uring ("), "{why}");
    let again = uring_io_refusal(&s.0).unwrap();
    if direct_io_supported(&s.0).unwrap() {
        // Refusals other than the injected one are this machine's, said in the message.
        assert!(again.is_none() || again.unwrap().contains("io_uring"));
    } else {
        assert!(again.unwrap().contains("refuses O_DIRECT"));
    }
    assert_eq!(fs::read_dir(&s.0).unwrap().count(), 0, "probe file left");
    if uring_here(&s.0) {
        // A directory that cannot hold the probe file is an error, not a refusal.
        assert!(uring_io_refusal(&s.0.join("missing")).is_err());
    }
}

#[test]
fn a_file_system_that_refuses_o_direct_gets_buffered_uring_segments() {
    let Some(fs_) = super::direct::Ramfs::mount() else {
        eprintln!("cannot mount a ramfs here (needs root); covered by a_refused_ring_falls_back_to_direct_then_buffered");
        return;
    };
    let dir = &fs_.0 .0;
    let why = uring_io_refusal(dir).unwrap().expect("ramfs refuses");
    assert!(
        why == "the file system refuses O_DIRECT, which io_uring writes need"
            || why.starts_with("the kernel refuses io_uring"),
        "{why}"
    );
    assert_eq!(fs::read_dir(dir).unwrap().count(), 0, "probe file left");
    let (su, mu) = write_io(dir, SegmentIo::Uring, 20_000, 4096);
    assert_eq!(mu, SegmentIo::Buffered);
    let b = Scratch::new("uring-ramfs-b");
    let (sb, _) = write_io(&b.0, SegmentIo::Buffered, 20_000, 4096);
    assert!(fs::read(&su.path).unwrap() == fs::read(&sb.path).unwrap());
}

#[test]
fn segments_torn_mid_write_are_recovered_like_any_other() {
    let s = Scratch::new("uring-torn");
    let crash = Scratch::new("uring-crash");
    // A complete segment, and a copy of it torn inside its records.
    let (good, _) = write_io(&s.0, SegmentIo::Uring, 10_000, 4096);
    let bytes = fs::read(&good.path).unwrap();
    fs::write(crash.0.join(good.path.file_name().unwrap()), &bytes).unwrap();
    let torn = crash.0.join("torn.hdseg");
    fs::write(&torn, &bytes[..bytes.len() / 2]).unwrap();
    // A batch cut off while its blocks were in the ring: what its partial file held then.
    let mut cfg = config(&s.0, HashAlgorithm::Sha256, 64);
    cfg.name = "open.hdseg".into();
    cfg.batch_id = batch(2);
    let mut w = SegmentWriter::create_with_io(cfg, SegmentIo::Uring).unwrap();
    w.append(&records(3 * URING_CHUNK as u32 / R)).unwrap();
    let partial = s.0.join(format!("open.hdseg{PARTIAL_SUFFIX}"));
    fs::copy(
        &partial,
        crash.0.join(format!("open.hdseg{PARTIAL_SUFFIX}")),
    )
    .unwrap();
    drop(w);
    assert!(!partial.exists(), "a dropped writer removes its partial");

    let out = recover_dir(&crash.0, RecoverOptions::default()).unwrap();
    assert_eq!(
        out.complete,
        vec![crash.0.join(good.path.file_name().unwrap())]
    );
    assert_eq!(
        out.discarded,
        vec![crash.0.join(format!("open.hdseg{PARTIAL_SUFFIX}"))]
    );
    assert_eq!(
        out.quarantined
            .iter()
            .map(|q| q.path.clone())
            .collect::<Vec<_>>(),
        vec![crash.0.join(QUARANTINE_DIR).join("torn.hdseg")]
    );
}

#[test]
fn abort_and_a_bad_closing_hash_remove_the_uring_partial() {
    let s = Scratch::new("uring-abort");
    let partial = partial_of_batch_1(&s.0);
    let data = records(3 * URING_DEPTH as u32 * URING_CHUNK as u32 / R / 2);
    let mut w = writer(&s.0, SegmentIo::Uring);
    w.append(&data).unwrap();
    assert!(partial.exists());
    w.abort();
    assert!(!partial.exists());
    assert!(matches!(w.append(&data), Err(SegmentError::Closed)));

    let mut w = writer(&s.0, SegmentIo::Uring);
    w.append(&data).unwrap();
    let err = w.finish(Some(&[0u8; 32])).unwrap_err();
    assert!(matches!(err, SegmentError::ClosingHash { .. }));
    assert_eq!(fs::read_dir(&s.0).unwrap().count(), 0);
}
