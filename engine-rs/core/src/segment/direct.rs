//! How a segment's bytes reach its file: through the page cache (`Buffered`, a `BufWriter`),
//! around it with O_DIRECT (`Direct`), or O_DIRECT submitted through io_uring (`Uring`, uring.rs).
//! Either way the file holds the same bytes and the writer's durability protocol (fsync, rename,
//! fsync of the directory) is the same; docs/segment.md, "Direct I/O".
//!
//! Direct output gathers the segment's bytes in an aligned staging buffer and writes it in
//! [`DIRECT_CHUNK`]-byte pieces at aligned offsets, each on a writer thread while the next piece
//! fills (O_DIRECT writes wait for the disk; the page cache would have hidden that). At finish the last, unaligned piece is padded
//! with zeros to the alignment, written the same way, and the file truncated to its exact length,
//! so every byte goes through the one O_DIRECT descriptor (no page-cache copy of the tail to keep
//! coherent) and the padding never outlives the `.partial` file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::uring::UringOut;

/// Offset, length and memory alignment of every direct write: a multiple of the 512- and
/// 4096-byte logical blocks of the disks in use (a device with larger blocks refuses the writes,
/// and the batch fails visibly).
pub const DIRECT_ALIGN: usize = 4096;
/// Bytes per direct write: large enough to reach the disk's streaming speed, small enough to keep
/// two per open batch in memory (one filling, one being written).
pub const DIRECT_CHUNK: usize = 4 << 20;
/// The page-cache writer's buffer.
const BUFFERED_CAPACITY: usize = 1 << 20;

/// How a segment is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentIo {
    /// Through the page cache; the fsync at finish writes it out.
    Buffered,
    /// O_DIRECT, around the page cache (falls back to `Buffered` where the file system refuses it).
    Direct,
    /// O_DIRECT writes submitted through io_uring, several in flight (falls back to `Direct`
    /// where the kernel refuses io_uring, and on to `Buffered` where O_DIRECT is refused).
    Uring,
}

impl SegmentIo {
    /// The config name: `buffered`, `direct` or `uring`.
    pub fn name(self) -> &'static str {
        match self {
            SegmentIo::Buffered => "buffered",
            SegmentIo::Direct => "direct",
            SegmentIo::Uring => "uring",
        }
    }

    /// From the config name.
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "buffered" => Some(SegmentIo::Buffered),
            "direct" => Some(SegmentIo::Direct),
            "uring" => Some(SegmentIo::Uring),
            _ => None,
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: make this thread's next O_DIRECT switch fail as a refusing file system's does.
    pub(super) static REFUSE_DIRECT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Turns O_DIRECT on for an open file. `Ok(false)` when the file system refuses it (EINVAL:
/// ramfs, some FUSE and overlay file systems, older tmpfs); the file is then unchanged.
pub fn enable_direct(file: &File) -> io::Result<bool> {
    #[cfg(test)]
    if REFUSE_DIRECT.with(|r| r.replace(false)) {
        return Ok(false);
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this `File` owns, with integer arguments only.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) } < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINVAL) {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Ok(false)
    }
}

/// Whether files in `dir` take O_DIRECT: creates, switches and removes a hidden probe file (a
/// start-up check per device, so a refusal is reported once rather than per batch).
pub fn direct_io_supported(dir: &std::path::Path) -> io::Result<bool> {
    let probe = dir.join(format!(".hd-direct-probe-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)?;
    let result = enable_direct(&file);
    drop(file);
    let _ = std::fs::remove_file(&probe);
    result
}

/// `DIRECT_CHUNK` aligned bytes inside an over-allocated `Vec` (no unsafe allocation).
struct Aligned {
    buf: Vec<u8>,
    start: usize,
}

impl Aligned {
    fn new() -> Self {
        let buf = vec![0u8; DIRECT_CHUNK + DIRECT_ALIGN];
        let start = buf.as_ptr().align_offset(DIRECT_ALIGN);
        Aligned { buf, start }
    }

    fn window(&self, len: usize) -> &[u8] {
        &self.buf[self.start..self.start + len]
    }

    fn window_mut(&mut self, len: usize) -> &mut [u8] {
        &mut self.buf[self.start..self.start + len]
    }
}

/// The thread that writes full windows while the next one fills, so the disk's time overlaps the
/// hashing instead of adding to it. At most one window is in flight.
struct Flusher {
    to_disk: Option<SyncSender<(Aligned, u64)>>,
    done: Receiver<(Aligned, io::Result<()>)>,
    thread: Option<JoinHandle<()>>,
    in_flight: bool,
}

impl Flusher {
    fn spawn(file: Arc<File>) -> io::Result<Self> {
        let (to_disk, jobs) = sync_channel::<(Aligned, u64)>(1);
        let (results, done) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("hd-segment-direct".into())
            .spawn(move || {
                for (window, offset) in jobs {
                    let r = file.write_all_at(window.window(DIRECT_CHUNK), offset);
                    if results.send((window, r)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Flusher {
            to_disk: Some(to_disk),
            done,
            thread: Some(thread),
            in_flight: false,
        })
    }

    /// Waits for the window in flight, if any; hands its buffer back once written.
    fn wait(&mut self) -> io::Result<Option<Aligned>> {
        if !self.in_flight {
            return Ok(None);
        }
        self.in_flight = false;
        let (window, r) = self.done.recv().map_err(|_| stopped())?;
        r.map(|()| Some(window))
    }

    fn send(&mut self, window: Aligned, offset: u64) -> io::Result<()> {
        let tx = self.to_disk.as_ref().ok_or_else(stopped)?;
        tx.send((window, offset)).map_err(|_| stopped())?;
        self.in_flight = true;
        Ok(())
    }
}

impl Drop for Flusher {
    /// Ends the thread and waits for it, so no write lands after an abort removed the file.
    fn drop(&mut self) {
        self.to_disk = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn stopped() -> io::Error {
    io::Error::other("the direct I/O writer thread stopped")
}

/// O_DIRECT output: aligned staging windows written at aligned offsets, the full ones by a
/// [`Flusher`] thread (started at the first full window, so a small segment starts no thread).
pub(super) struct DirectOut {
    file: Arc<File>,
    /// The window being filled.
    cur: Aligned,
    /// Bytes staged in `cur`.
    fill: usize,
    /// File offset of `cur` (bytes handed to the disk so far, a multiple of `DIRECT_CHUNK`).
    offset: u64,
    flusher: Option<Flusher>,
}

impl DirectOut {
    /// Wraps a file that already has O_DIRECT on (see [`enable_direct`]).
    fn new(file: File) -> Self {
        DirectOut {
            file: Arc::new(file),
            cur: Aligned::new(),
            fill: 0,
            offset: 0,
            flusher: None,
        }
    }

    fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = (DIRECT_CHUNK - self.fill).min(data.len());
            self.cur.window_mut(DIRECT_CHUNK)[self.fill..self.fill + n].copy_from_slice(&data[..n]);
            self.fill += n;
            data = &data[n..];
            if self.fill == DIRECT_CHUNK {
                self.submit()?;
            }
        }
        Ok(())
    }

    /// Hands the full window to the flusher and continues in the buffer it wrote last (or a new one).
    fn submit(&mut self) -> io::Result<()> {
        if self.flusher.is_none() {
            self.flusher = Some(Flusher::spawn(Arc::clone(&self.file))?);
        }
        let flusher = self.flusher.as_mut().ok_or_else(stopped)?;
        let next = flusher.wait()?.unwrap_or_else(Aligned::new);
        let full = std::mem::replace(&mut self.cur, next);
        flusher.send(full, self.offset)?;
        self.offset += DIRECT_CHUNK as u64;
        self.fill = 0;
        Ok(())
    }

    /// Waits for the window in flight, writes the staged tail padded to the alignment, then
    /// truncates the file to its exact length.
    fn finish(mut self) -> io::Result<File> {
        if let Some(mut f) = self.flusher.take() {
            f.wait()?;
        }
        let tail = self.fill;
        if tail > 0 {
            let padded = tail.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
            self.cur.window_mut(padded)[tail..].fill(0);
            self.file
                .write_all_at(self.cur.window(padded), self.offset)?;
            self.file.set_len(self.offset + tail as u64)?;
        }
        // The flusher thread (joined above) held the only other reference.
        Arc::try_unwrap(self.file).map_err(|_| stopped())
    }
}

/// Where a segment writer's bytes go.
pub(super) enum SegmentOut {
    Buffered(BufWriter<File>),
    Direct(DirectOut),
    /// Boxed: the ring's state is several times the other variants'.
    Uring(Box<UringOut>),
}

impl SegmentOut {
    /// Output for a freshly created, empty file: uring or direct when asked for and the kernel and
    /// file system take it, each falling back to the next (uring, direct, buffered).
    pub fn new(file: File, io: SegmentIo) -> io::Result<Self> {
        if io != SegmentIo::Buffered && enable_direct(&file)? {
            if io == SegmentIo::Direct {
                return Ok(SegmentOut::Direct(DirectOut::new(file)));
            }
            return Ok(match UringOut::new(file) {
                Ok(u) => SegmentOut::Uring(Box::new(u)),
                Err((file, _refused)) => SegmentOut::Direct(DirectOut::new(file)),
            });
        }
        Ok(SegmentOut::Buffered(BufWriter::with_capacity(
            BUFFERED_CAPACITY,
            file,
        )))
    }

    /// The mode in effect.
    pub fn io(&self) -> SegmentIo {
        match self {
            SegmentOut::Buffered(_) => SegmentIo::Buffered,
            SegmentOut::Direct(_) => SegmentIo::Direct,
            SegmentOut::Uring(_) => SegmentIo::Uring,
        }
    }

    pub fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            SegmentOut::Buffered(w) => w.write_all(data),
            SegmentOut::Direct(d) => d.write_all(data),
            SegmentOut::Uring(u) => u.write_all(data),
        }
    }

    /// Writes out everything staged and hands back the file at its exact length (fsynced already
    /// for `Uring`, whose fsync goes through the ring).
    pub fn into_file(self) -> io::Result<File> {
        match self {
            SegmentOut::Buffered(w) => w.into_inner().map_err(|e| e.into_error()),
            SegmentOut::Direct(d) => d.finish(),
            SegmentOut::Uring(u) => u.finish(),
        }
    }

    /// The durability point of every mode: writes out everything staged and fsyncs the file (for
    /// `Uring` through the ring). The error names the step that failed: `write` or `fsync`.
    pub fn into_durable_file(self) -> Result<File, (&'static str, io::Error)> {
        if let SegmentOut::Uring(u) = self {
            return u.finish().map_err(|e| ("write and fsync", e));
        }
        let file = self.into_file().map_err(|e| ("write", e))?;
        file.sync_all().map_err(|e| ("fsync", e))?;
        Ok(file)
    }
}
