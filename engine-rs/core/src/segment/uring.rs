//! O_DIRECT segment writes submitted through io_uring (`Uring`): the segment's bytes are staged in
//! [`URING_CHUNK`]-byte aligned blocks and each full block is handed to the kernel as one write
//! while the next one fills, up to [`URING_DEPTH`] writes in flight, with no writer thread. At
//! finish the tail is padded to the alignment and written the same way, the file truncated to its
//! exact length and fsynced through the ring: the durability point of the buffered and direct
//! writers, so the file, its hash coverage and its recovery are theirs (docs/segment.md, "Direct
//! I/O"; docs/storage-node.md).
//!
//! io_uring may be missing or refused: an old kernel, `/proc/sys/kernel/io_uring_disabled`, a
//! seccomp filter (container runtimes' default profiles), or a file system that refuses O_DIRECT.
//! [`uring_io_refusal`] says why at device start-up; a writer whose ring cannot be set up writes
//! with `Direct` (or `Buffered`) instead, see `SegmentOut::new`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use io_uring::{opcode, types, IoUring, Probe};

use super::direct::{enable_direct, DIRECT_ALIGN};

/// Bytes per io_uring write: with [`URING_DEPTH`] of them in flight an open batch holds 8 MiB of
/// staging memory, as a direct writer does with its two 4 MiB windows.
pub const URING_CHUNK: usize = 1 << 20;
/// Writes in flight per segment at most (the ring has room for all of them and the fsync).
pub const URING_DEPTH: usize = 8;
/// The user data of the fsync entry (blocks are numbered from 0).
const FSYNC_TAG: u64 = u64::MAX;

#[cfg(test)]
thread_local! {
    /// Tests: make this thread's next ring set-up fail as a kernel that refuses io_uring does.
    pub(super) static REFUSE_URING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A ring for one segment, or the kernel's refusal.
fn open_ring() -> io::Result<IoUring> {
    #[cfg(test)]
    if REFUSE_URING.with(|r| r.replace(false)) {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    IoUring::new((2 * URING_DEPTH) as u32)
}

/// Why the kernel refuses to set up a ring, in words an operator can act on.
fn setup_refusal(e: &io::Error) -> String {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let why = match (e.raw_os_error(), sysctl.as_str()) {
        (_, "2") => "disabled by /proc/sys/kernel/io_uring_disabled = 2".to_string(),
        (Some(libc::EPERM), "1") => {
            "restricted by /proc/sys/kernel/io_uring_disabled = 1 to the io_uring_group".to_string()
        }
        (Some(libc::EPERM | libc::ENOSYS), _) => format!(
            "{e}: blocked by a seccomp filter (a container's default profile) or missing from this kernel"
        ),
        _ => e.to_string(),
    };
    format!("the kernel refuses io_uring ({why})")
}

/// Whether segments in `dir` can be written through io_uring: `None` when they can, otherwise why
/// not. Sets up a ring, checks that it has the write and fsync operations, and writes and fsyncs
/// one aligned block of an O_DIRECT probe file through it (created and removed again).
pub fn uring_io_refusal(dir: &Path) -> io::Result<Option<String>> {
    let mut ring = match open_ring() {
        Ok(r) => r,
        Err(e) => return Ok(Some(setup_refusal(&e))),
    };
    let mut probe = Probe::new();
    let ops_ok = ring.submitter().register_probe(&mut probe).is_ok()
        && probe.is_supported(opcode::Write::CODE)
        && probe.is_supported(opcode::Fsync::CODE);
    if !ops_ok {
        return Ok(Some(
            "this kernel's io_uring lacks the write and fsync operations (Linux 5.6 or later has them)"
                .into(),
        ));
    }
    let path = dir.join(format!(".hd-uring-probe-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    let result = (|| {
        if !enable_direct(&file)? {
            return Ok(Some(
                "the file system refuses O_DIRECT, which io_uring writes need".to_string(),
            ));
        }
        let block = Block::new();
        let write = opcode::Write::new(
            types::Fd(file.as_raw_fd()),
            block.ptr(),
            DIRECT_ALIGN as u32,
        )
        .offset(0)
        .build()
        .user_data(0);
        // SAFETY: `block` outlives the operation: `complete` waits for its completion below, and
        // where the ring cannot say it completed the block is leaked, never freed under the kernel.
        let wrote = match unsafe { push(&mut ring, &write) }.and_then(|()| complete(&mut ring)) {
            Ok(r) => r,
            Err(e) => {
                std::mem::forget(block);
                return Err(e);
            }
        };
        let synced = fsync(&mut ring, &file);
        Ok(match (wrote, synced) {
            (r, _) if r < 0 => Some(format!(
                "an O_DIRECT write through io_uring fails here ({})",
                io::Error::from_raw_os_error(-r)
            )),
            (_, Err(e)) => Some(format!("an fsync through io_uring fails here ({e})")),
            _ => None,
        })
    })();
    drop(file);
    let _ = std::fs::remove_file(&path);
    result
}

/// `URING_CHUNK` bytes aligned to `DIRECT_ALIGN` inside an over-allocated `Vec`; the kernel reads
/// a submitted block through a raw pointer, so a block is never touched while in flight.
struct Block {
    buf: Vec<u8>,
    start: usize,
}

impl Block {
    fn new() -> Self {
        let buf = vec![0u8; URING_CHUNK + DIRECT_ALIGN];
        let start = buf.as_ptr().align_offset(DIRECT_ALIGN);
        Block { buf, start }
    }

    fn ptr(&self) -> *const u8 {
        self.buf[self.start..].as_ptr()
    }

    fn bytes(&self, len: usize) -> &[u8] {
        &self.buf[self.start..self.start + len]
    }

    fn bytes_mut(&mut self, len: usize) -> &mut [u8] {
        &mut self.buf[self.start..self.start + len]
    }
}

/// Queues one entry and submits it without waiting.
///
/// # Safety
/// The memory the entry points at must stay valid and unchanged until its completion is reaped.
unsafe fn push(ring: &mut IoUring, entry: &io_uring::squeue::Entry) -> io::Result<()> {
    // SAFETY: passed on from the caller.
    unsafe { queue(ring, entry)? };
    submit_queued(ring)
}

/// Queues one entry for the next submission.
///
/// # Safety
/// As [`push`].
unsafe fn queue(ring: &mut IoUring, entry: &io_uring::squeue::Entry) -> io::Result<()> {
    // SAFETY: passed on from the caller.
    unsafe { ring.submission().push(entry) }
        .map_err(|_| io::Error::other("the io_uring submission queue is full"))
}

/// Submits what is queued without waiting.
fn submit_queued(ring: &mut IoUring) -> io::Result<()> {
    loop {
        match ring.submit() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(drop),
        }
    }
}

/// Waits for one completion and returns its result (a byte count, or minus an errno).
fn complete(ring: &mut IoUring) -> io::Result<i32> {
    loop {
        if let Some(c) = ring.completion().next() {
            return Ok(c.result());
        }
        match ring.submit_and_wait(1) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => r.map(drop)?,
        }
    }
}

/// fsync of `file` through the ring, once no write is in flight.
fn fsync(ring: &mut IoUring, file: &File) -> io::Result<()> {
    let entry = opcode::Fsync::new(types::Fd(file.as_raw_fd()))
        .build()
        .user_data(FSYNC_TAG);
    // SAFETY: an fsync points at no memory.
    unsafe { push(ring, &entry)? };
    match complete(ring)? {
        r if r < 0 => Err(io::Error::from_raw_os_error(-r)),
        _ => Ok(()),
    }
}

/// O_DIRECT output through io_uring: blocks are allocated as needed (a small segment uses one),
/// numbered by their place in `blocks`, which is also their user data in the ring.
pub(super) struct UringOut {
    /// `None` only once `finish` handed it out.
    file: Option<File>,
    ring: IoUring,
    blocks: Vec<Block>,
    /// File offset and length of each block's write while it is in flight.
    spans: Vec<(u64, usize)>,
    /// Blocks neither filling nor in flight.
    free: Vec<usize>,
    in_flight: usize,
    /// The block being filled, its staged bytes and its file offset (a multiple of `URING_CHUNK`).
    cur: usize,
    fill: usize,
    offset: u64,
}

impl UringOut {
    /// Sets up a ring for a file that already has O_DIRECT on (see [`enable_direct`]); fails
    /// where the kernel refuses io_uring, handing the file back for another mode.
    pub fn new(file: File) -> Result<Self, (File, io::Error)> {
        let ring = match open_ring() {
            Ok(r) => r,
            Err(e) => return Err((file, e)),
        };
        Ok(UringOut {
            file: Some(file),
            ring,
            blocks: vec![Block::new()],
            spans: vec![(0, 0)],
            free: Vec::new(),
            in_flight: 0,
            cur: 0,
            fill: 0,
            offset: 0,
        })
    }

    fn file(&self) -> io::Result<&File> {
        self.file
            .as_ref()
            .ok_or_else(|| io::Error::other("the io_uring segment output is finished"))
    }

    pub fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = (URING_CHUNK - self.fill).min(data.len());
            let at = self.fill;
            self.blocks[self.cur].bytes_mut(URING_CHUNK)[at..at + n].copy_from_slice(&data[..n]);
            self.fill += n;
            data = &data[n..];
            if self.fill == URING_CHUNK {
                self.submit(URING_CHUNK)?;
                self.cur = self.next_block()?;
                self.fill = 0;
                self.offset += URING_CHUNK as u64;
            }
        }
        Ok(())
    }

    /// Hands the first `len` bytes of the block being filled to the kernel.
    fn submit(&mut self, len: usize) -> io::Result<()> {
        let i = self.cur;
        let entry = opcode::Write::new(
            types::Fd(self.file()?.as_raw_fd()),
            self.blocks[i].ptr(),
            len as u32,
        )
        .offset(self.offset)
        .build()
        .user_data(i as u64);
        self.spans[i] = (self.offset, len);
        // SAFETY: block `i` leaves `cur` and joins `free` only once its completion is reaped
        // (`reap`), and `Drop` waits for every write in flight before the blocks are freed; a
        // block's heap memory does not move when `blocks` grows.
        unsafe { queue(&mut self.ring, &entry)? };
        // In flight from here: should this submission fail, `reap` (or `Drop`) submits it again
        // while waiting, so its block is never reused or freed before it completes.
        self.in_flight += 1;
        submit_queued(&mut self.ring)
    }

    /// A block to fill next: a free one, a new one while fewer than `URING_DEPTH` exist, or the
    /// first to complete.
    fn next_block(&mut self) -> io::Result<usize> {
        if self.free.is_empty() && self.blocks.len() < URING_DEPTH {
            self.blocks.push(Block::new());
            self.spans.push((0, 0));
            return Ok(self.blocks.len() - 1);
        }
        while self.free.is_empty() {
            if self.in_flight == 0 {
                return Err(io::Error::other("no io_uring block free or in flight"));
            }
            self.reap()?;
        }
        self.free
            .pop()
            .ok_or_else(|| io::Error::other("no free io_uring block"))
    }

    /// Waits for at least one write to complete and reaps every completion there is. A short
    /// write's rest is written synchronously at its offset; the first failure is returned after
    /// all completions at hand are accounted.
    fn reap(&mut self) -> io::Result<()> {
        if self.in_flight == 0 {
            return Ok(());
        }
        let mut done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        while done.is_empty() {
            match self.ring.submit_and_wait(1) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => r.map(drop)?,
            }
            done = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result()))
                .collect();
        }
        let mut first_err = None;
        for (tag, res) in done {
            let i = tag as usize;
            if i >= self.blocks.len() {
                continue;
            }
            self.in_flight -= 1;
            self.free.push(i);
            let (offset, len) = self.spans[i];
            let r = if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else if (res as usize) < len {
                let wrote = res as usize;
                self.file()?
                    .write_all_at(&self.blocks[i].bytes(len)[wrote..], offset + wrote as u64)
            } else {
                Ok(())
            };
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Writes the staged tail padded to the alignment, waits for every write, truncates the file
    /// to its exact length and fsyncs it through the ring: once this returns, the bytes are durable.
    pub fn finish(mut self) -> io::Result<File> {
        let tail = self.fill;
        if tail > 0 {
            let padded = tail.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
            self.blocks[self.cur].bytes_mut(padded)[tail..].fill(0);
            self.submit(padded)?;
        }
        while self.in_flight > 0 {
            self.reap()?;
        }
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("finished twice"))?;
        if tail > 0 {
            file.set_len(self.offset + tail as u64)?;
        }
        fsync(&mut self.ring, &file)?;
        Ok(file)
    }
}

impl Drop for UringOut {
    /// Waits for the writes in flight before their blocks are freed (an abort, or a failed write);
    /// where the ring cannot say they completed, the blocks are leaked rather than freed under the kernel.
    fn drop(&mut self) {
        while self.in_flight > 0 {
            let before = self.in_flight;
            if self.reap().is_err() && self.in_flight == before {
                std::mem::forget(std::mem::take(&mut self.blocks));
                return;
            }
        }
    }
}
