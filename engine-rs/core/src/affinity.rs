//! CPU affinity of the process's threads (MASTER_CPUSET, TRANSPORT_CORES, KV_CORES; docs/scc.md,
//! "CPU pinning").
//!
//! Linux only (`sched_setaffinity` / `sched_getaffinity` on thread ids). What each setting pins is
//! decided in TypeScript (`lib/cpuAffinity.ts`); this module offers the thread-level tools:
//!
//! - read and set one thread's CPUs ([`thread_cpus`], [`set_thread_cpus`]; tid 0: the caller);
//! - list the process's threads with their names (`/proc/self/task`, [`process_threads`]);
//! - the engine's worker CPUs ([`set_worker_cpus`]): threads the engine starts later (the hashing
//!   pool) call [`enter_worker_cpus`] as they start, so they land there and not on the CPUs of the
//!   thread that happened to start them;
//! - [`pin_pool_worker`]: pins the calling thread and meets the other calls of the same round at
//!   a barrier, so that `n` concurrent calls each run on a different one of `n` pool threads (libuv's
//!   pool, where Neon tasks run, names none of its threads).

use std::io;
use std::sync::{Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Highest CPU number + 1 a set may name (glibc's `CPU_SETSIZE`).
pub const MAX_CPUS: usize = 1024;

fn to_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty CPU set",
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= MAX_CPUS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond the largest CPU number {}", MAX_CPUS - 1),
            ));
        }
        // SAFETY: c < CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// The CPUs thread `tid` may run on (0: the calling thread), ascending.
pub fn thread_cpus(tid: i32) -> io::Result<Vec<usize>> {
    // SAFETY: all zeroes is the empty set; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable cpu_set_t of the size passed.
    let r =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: c < CPU_SETSIZE.
    Ok((0..MAX_CPUS)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Restricts thread `tid` (0: the calling thread) to `cpus`. EINVAL: none of them is usable;
/// ESRCH: no such thread; EPERM: another process's thread.
pub fn set_thread_cpus(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let set = to_set(cpus)?;
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's kernel thread id.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// The process's threads: (tid, name from `/proc/self/task/<tid>/comm`), by tid. A thread that
/// ends while it is read is left out.
///
/// One pass over `/proc/self/task` can end early: the kernel walks the thread list from the entry
/// it stopped at, and when that thread has just exited the walk stops there, leaving out every
/// later thread. So passes repeat until two in a row list the same threads (at most a few), and
/// the threads of all passes that are still alive are kept.
pub fn process_threads() -> io::Result<Vec<(i32, String)>> {
    let mut all = std::collections::BTreeSet::new();
    let mut last: Vec<i32> = Vec::new();
    for _ in 0..8 {
        let pass = task_ids()?;
        let same = pass == last;
        all.extend(pass.iter().copied());
        last = pass;
        if same {
            break;
        }
    }
    // Names last, and only of threads still there.
    Ok(all
        .into_iter()
        .filter_map(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                .ok()
                .map(|name| (tid, name.trim_end().to_string()))
        })
        .collect())
}

/// One pass over `/proc/self/task`: the thread ids it lists, sorted.
fn task_ids() -> io::Result<Vec<i32>> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task")? {
        if let Some(tid) = entry?
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        {
            ids.push(tid);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// CPUs the engine's worker threads run on; empty: not pinned (they keep their starter's).
static WORKER_CPUS: RwLock<Vec<usize>> = RwLock::new(Vec::new());

/// Sets the CPUs of worker threads the engine starts from now on (empty: not pinned).
pub fn set_worker_cpus(cpus: &[usize]) -> io::Result<()> {
    if !cpus.is_empty() {
        to_set(cpus)?;
    }
    *WORKER_CPUS.write().unwrap_or_else(|e| e.into_inner()) = cpus.to_vec();
    Ok(())
}

/// The worker CPUs in force (empty: not pinned).
pub fn worker_cpus() -> Vec<usize> {
    WORKER_CPUS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Called by a worker thread of the engine as it starts: moves it to the worker CPUs, if set. A
/// refusal (the CPUs were taken away since) leaves the thread where it is.
pub fn enter_worker_cpus() {
    let cpus = worker_cpus();
    if !cpus.is_empty() {
        let _ = set_thread_cpus(0, &cpus);
    }
}

/// The barrier of [`pin_pool_worker`]: the round and how many of its calls arrived.
struct Round {
    id: u64,
    arrived: usize,
}

static ROUND: Mutex<Round> = Mutex::new(Round { id: 0, arrived: 0 });
static ARRIVED: Condvar = Condvar::new();

/// Pins the calling thread to `cpus`, then waits (at most `wait`) until `expected` calls of round
/// `round` have arrived, so that no pool thread runs two calls of one round while another runs
/// none. Returns the calling thread's tid. Rounds must be new ids; a call of an older round counts
/// nothing.
pub fn pin_pool_worker(
    round: u64,
    expected: usize,
    cpus: &[usize],
    wait: Duration,
) -> io::Result<i32> {
    set_thread_cpus(0, cpus)?;
    let tid = current_tid();
    let deadline = Instant::now() + wait;
    let mut r = ROUND.lock().unwrap_or_else(|e| e.into_inner());
    if r.id != round {
        if round < r.id {
            return Ok(tid);
        }
        r.id = round;
        r.arrived = 0;
    }
    r.arrived += 1;
    ARRIVED.notify_all();
    while r.id == round && r.arrived < expected {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        r = ARRIVED
            .wait_timeout(r, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    Ok(tid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_one_of_its_cpus_reads_back_that_cpu() {
        let mine = thread_cpus(0).unwrap();
        assert!(!mine.is_empty());
        let one = *mine.last().unwrap();
        std::thread::spawn(move || {
            set_thread_cpus(0, &[one]).unwrap();
            assert_eq!(thread_cpus(0).unwrap(), vec![one]);
            assert_eq!(thread_cpus(current_tid()).unwrap(), vec![one]);
        })
        .join()
        .unwrap();
        // The spawning thread keeps its own.
        assert_eq!(thread_cpus(0).unwrap(), mine);
    }

    #[test]
    fn bad_sets_are_refused() {
        assert_eq!(
            set_thread_cpus(0, &[]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            set_thread_cpus(0, &[MAX_CPUS]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        // CPUs the kernel does not have: EINVAL.
        let e = set_thread_cpus(0, &[MAX_CPUS - 1]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn threads_are_listed_with_their_names() {
        let t = std::thread::Builder::new()
            .name("hd-aff-test".into())
            .spawn(|| {
                let me = current_tid();
                let all = process_threads().unwrap();
                assert!(all
                    .iter()
                    .any(|(tid, name)| *tid == me && name == "hd-aff-test"));
            })
            .unwrap();
        t.join().unwrap();
    }

    #[test]
    fn calls_of_one_round_meet_on_distinct_threads() {
        let cpus = thread_cpus(0).unwrap();
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let c = cpus.clone();
                std::thread::spawn(move || {
                    pin_pool_worker(7, 3, &c, Duration::from_secs(5)).unwrap()
                })
            })
            .collect();
        let mut tids: Vec<i32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        tids.sort_unstable();
        tids.dedup();
        assert_eq!(tids.len(), 3);
    }

    #[test]
    fn a_bad_worker_set_is_refused_and_changes_nothing() {
        // The worker CPUs are process-wide (the hashing pool reads them): tests only try refusals.
        assert!(set_worker_cpus(&[MAX_CPUS]).is_err());
        assert!(worker_cpus().is_empty());
    }
}
