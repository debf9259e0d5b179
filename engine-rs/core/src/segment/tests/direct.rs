//! Direct I/O (O_DIRECT) segments: byte-for-byte the buffered file, readable and verifiable, and
//! buffered where the file system refuses O_DIRECT.

use std::fs::{self, File};
use std::path::Path;
use std::process::Command;

use super::super::direct::{SegmentOut, REFUSE_DIRECT};
use super::io_kit::{assert_same_as_buffered, edge_bytes, partial_of_batch_1, write_io, writer};
use super::*;

/// Whether this test machine's temp dir takes O_DIRECT (a tmpfs before Linux 6.6 does not).
fn direct_here(dir: &Path) -> bool {
    direct_io_supported(dir).expect("probe")
}

#[test]
fn direct_segments_are_byte_identical_to_buffered_ones() {
    // Empty, under one alignment block, around the 4 MiB chunk, and several chunks.
    for (n, chunk) in [
        (0u32, 1usize),
        (1, 16),
        (200, 37),
        (262_000, 65_536),
        (262_144, 1 << 20),
        (700_001, 3_000_000),
    ] {
        let b = Scratch::new("dio-b");
        let d = Scratch::new("dio-d");
        let (sb, mb) = write_io(&b.0, SegmentIo::Buffered, n, chunk);
        let (sd, md) = write_io(&d.0, SegmentIo::Direct, n, chunk);
        assert_eq!(mb, SegmentIo::Buffered);
        if direct_here(&d.0) {
            assert_eq!(md, SegmentIo::Direct, "{n} records");
        }
        assert_same_as_buffered(n, &sd, &sb);
        assert!(!partial_of_batch_1(&d.0).exists());
    }
}

#[test]
fn direct_output_keeps_exact_lengths_at_alignment_edges() {
    let s = Scratch::new("dio-edge");
    let a = DIRECT_ALIGN;
    let c = DIRECT_CHUNK;
    for len in [
        0,
        1,
        a - 1,
        a,
        a + 1,
        c - 1,
        c,
        c + 1,
        2 * c + a,
        2 * c + 5000,
    ] {
        let data = edge_bytes(len);
        let path = s.0.join(format!("edge-{len}"));
        let file = File::create(&path).unwrap();
        let mut out = SegmentOut::new(file, SegmentIo::Direct).unwrap();
        if direct_here(&s.0) {
            assert_eq!(out.io(), SegmentIo::Direct);
        }
        // Uneven pieces, so window edges fall inside appends.
        for piece in data.chunks(a * 3 + 7) {
            out.write_all(piece).unwrap();
        }
        drop(out.into_file().unwrap());
        assert!(fs::read(&path).unwrap() == data, "{len} bytes");
    }
}

#[test]
fn a_failed_direct_write_surfaces_as_an_error() {
    // A read-only descriptor: every write fails (EBADF), on the writer thread or at finish.
    let s = Scratch::new("dio-fail");
    let path = s.0.join("ro");
    fs::write(&path, b"").unwrap();
    let file = File::open(&path).unwrap();
    let Ok(mut out) = SegmentOut::new(file, SegmentIo::Direct) else {
        return;
    };
    if out.io() != SegmentIo::Direct {
        return;
    }
    let data = vec![7u8; 3 * DIRECT_CHUNK + 5];
    let failed = data
        .chunks(DIRECT_CHUNK / 2)
        .any(|c| out.write_all(c).is_err());
    assert!(failed || out.into_file().is_err());
}

#[test]
fn refused_direct_io_falls_back_to_buffered() {
    let b = Scratch::new("dio-rb");
    let d = Scratch::new("dio-rd");
    REFUSE_DIRECT.with(|r| r.set(true));
    let (sd, md) = write_io(&d.0, SegmentIo::Direct, 5000, 999);
    assert_eq!(md, SegmentIo::Buffered);
    let (sb, _) = write_io(&b.0, SegmentIo::Buffered, 5000, 999);
    assert!(fs::read(&sd.path).unwrap() == fs::read(&sb.path).unwrap());
    assert_eq!(verify_segment(&sd.path).unwrap().records, 5000);
}

#[test]
fn abort_and_bad_closing_hash_remove_the_direct_partial() {
    let s = Scratch::new("dio-abort");
    let partial = partial_of_batch_1(&s.0);
    let data = records(300_000);
    let mut w = writer(&s.0, SegmentIo::Direct);
    w.append(&data).unwrap();
    assert!(partial.exists());
    w.abort();
    assert!(!partial.exists());
    assert_eq!(w.io(), SegmentIo::Buffered);
    assert!(matches!(w.append(&data), Err(SegmentError::Closed)));

    let mut w = writer(&s.0, SegmentIo::Direct);
    w.append(&data).unwrap();
    drop(w);
    assert!(!partial.exists());

    let mut w = writer(&s.0, SegmentIo::Direct);
    w.append(&data).unwrap();
    let err = w.finish(Some(&[0u8; 32])).unwrap_err();
    assert!(matches!(err, SegmentError::ClosingHash { .. }));
    assert!(!partial.exists());
    assert_eq!(fs::read_dir(&s.0).unwrap().count(), 0);
}

/// A ramfs mount, which refuses O_DIRECT on every kernel; unmounted when dropped.
pub(super) struct Ramfs(pub Scratch);

impl Ramfs {
    /// None where this process may not mount (not root, or no CAP_SYS_ADMIN).
    pub fn mount() -> Option<Self> {
        let s = Scratch::new("dio-ramfs");
        let ok = Command::new("mount")
            .args(["-t", "ramfs", "ramfs"])
            .arg(&s.0)
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then_some(Ramfs(s))
    }
}

impl Drop for Ramfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0 .0).status();
    }
}

#[test]
fn a_file_system_that_refuses_o_direct_gets_buffered_segments() {
    let Some(fs_) = Ramfs::mount() else {
        eprintln!("cannot mount a ramfs here (needs root); covered by refused_direct_io_falls_back_to_buffered");
        return;
    };
    let dir = &fs_.0 .0;
    assert!(!direct_here(dir));
    assert_eq!(fs::read_dir(dir).unwrap().count(), 0, "probe file left");
    let (sd, md) = write_io(dir, SegmentIo::Direct, 20_000, 4096);
    assert_eq!(md, SegmentIo::Buffered);
    assert_eq!(verify_segment(&sd.path).unwrap().records, 20_000);
    let b = Scratch::new("dio-ramfs-b");
    let (sb, _) = write_io(&b.0, SegmentIo::Buffered, 20_000, 4096);
    assert!(fs::read(&sd.path).unwrap() == fs::read(&sb.path).unwrap());
}
