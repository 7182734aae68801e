//! The threads that units are decoded on: a set kept for the life of the
//! process (made again in a child after `fork()`), started one by one as
//! work finds none idle, up to the most decode slots any read has asked for
//! (each thread costs glibc a 64 MiB malloc arena of address space, so a
//! small read starts no more than it uses).
//!
//! Why not tokio's blocking pool: it starts a thread whenever none is idle,
//! and local reads keep many of them busy with `pread`, so over a few reads
//! decoding wandered over every thread the pool ever started (17 on 2
//! cores). Each thread's allocator heap keeps the pages freed into it, so
//! the process grew from 180 to 400 MB over the first ten reads of a 17 MB
//! file, and reads 2 to 10 took 2-4× as long as later ones, the kernel
//! zeroing fresh pages for each. On a fixed set of threads the memory one
//! read frees is what the next one decodes into (RSS 190-220 MB, every read
//! from the third at its steady speed).
//!
//! A unit's columns can be shared out too ([`run_all`]): the thread that
//! decodes the unit takes them one by one, and decode threads that fall idle
//! take the others. Without that, the last row groups of a read ran one to a
//! core while the other cores waited (a 1.4 ms tail in a 6 ms read).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A unit of work, run on one of the threads.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The process's decode threads and the queue they take work from.
struct Threads {
    /// The process that started them (a forked child has none of them).
    pid: u32,
    queue: Sender<Job>,
    /// Taken by whichever idle thread waits for the next job.
    jobs: Arc<Mutex<Receiver<Job>>>,
    /// Idle threads less queued jobs: at or below 0, a new job would wait.
    spare: Arc<AtomicIsize>,
    started: usize,
}

static THREADS: Mutex<Option<Threads>> = Mutex::new(None);

/// Runs `work` on a decode thread, starting one if none is idle and fewer
/// than `threads` are running, inside `runtime`'s context (a decoder may fetch
/// a range no plan foresaw). A panic in `work` is returned as its message.
pub(crate) async fn run<T: Send + 'static>(
    threads: usize,
    runtime: tokio::runtime::Handle,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (done, result) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _context = runtime.enter();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(work))
            .map_err(|panic| crate::error::panic_text(&*panic));
        // The read may have been dropped meanwhile: nobody to tell.
        let _ = done.send(outcome);
    });
    submit(threads.max(1), job)?;
    result
        .await
        .map_err(|_| "the decode thread stopped".to_string())?
}

/// A piece of work for [`run_all`].
pub(crate) type Part<T> = Box<dyn FnOnce() -> T + Send + 'static>;

/// Runs every one of `parts` and returns their outcomes in order (a panic as
/// its message). The calling thread takes parts one at a time, and so do up
/// to `threads - 1` decode threads once they are idle (asked for now, they
/// come after work queued before). Whoever finds no part left stops; the
/// caller then waits only for parts already running, so it never waits on
/// work that is still queued, even when every decode thread is busy.
pub(crate) fn run_all<T: Send + 'static>(
    threads: usize,
    parts: Vec<Part<T>>,
) -> Vec<Result<T, String>> {
    let count = parts.len();
    let shared = Arc::new(Shared {
        parts: parts.into_iter().map(|p| Mutex::new(Some(p))).collect(),
        outcomes: (0..count).map(|_| Mutex::new(None)).collect(),
        next: AtomicUsize::new(0),
        unfinished: Mutex::new(count),
        finished: Condvar::new(),
    });
    for _ in 1..threads.min(count) {
        let shared = Arc::clone(&shared);
        // A helper that cannot be queued is not needed: the caller takes
        // every part left.
        if submit(threads, Box::new(move || shared.work_through())).is_err() {
            break;
        }
    }
    shared.work_through();
    let mut unfinished = lock(&shared.unfinished);
    while *unfinished > 0 {
        unfinished = shared
            .finished
            .wait(unfinished)
            .unwrap_or_else(|e| e.into_inner());
    }
    drop(unfinished);
    shared
        .outcomes
        .iter()
        .map(|o| {
            lock(o)
                .take()
                .unwrap_or_else(|| Err("a part was never run".to_string()))
        })
        .collect()
}

/// The parts of one [`run_all`] and their outcomes.
struct Shared<T> {
    parts: Vec<Mutex<Option<Part<T>>>>,
    outcomes: Vec<Mutex<Option<Result<T, String>>>>,
    /// The next part to take (past the end: none left).
    next: AtomicUsize,
    unfinished: Mutex<usize>,
    finished: Condvar,
}

impl<T> Shared<T> {
    /// Takes and runs parts until none is left.
    fn work_through(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(slot) = self.parts.get(i) else {
                return;
            };
            let Some(part) = lock(slot).take() else {
                continue;
            };
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(part))
                .map_err(|panic| crate::error::panic_text(&*panic));
            *lock(&self.outcomes[i]) = Some(outcome);
            let mut unfinished = lock(&self.unfinished);
            *unfinished -= 1;
            if *unfinished == 0 {
                self.finished.notify_all();
            }
        }
    }
}

/// A lock whose holder may have panicked: the data here stays consistent
/// (each value is written whole).
fn lock<V>(m: &Mutex<V>) -> MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Queues `job`, starting a thread for it when none is idle and fewer than
/// `wanted` are running.
fn submit(wanted: usize, job: Job) -> Result<(), String> {
    let mut guard = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if guard.as_ref().is_some_and(|t| t.pid != pid) {
        // A forked child: the parent's threads are not here. Their queue is
        // leaked, as the runtime is: a parent thread may have held its lock
        // at the fork.
        std::mem::forget(guard.take());
    }
    let threads = guard.get_or_insert_with(|| {
        let (queue, jobs) = channel();
        Threads {
            pid,
            queue,
            jobs: Arc::new(Mutex::new(jobs)),
            spare: Arc::new(AtomicIsize::new(0)),
            started: 0,
        }
    });
    let idle_before = threads.spare.fetch_sub(1, Ordering::SeqCst);
    if idle_before <= 0 && threads.started < wanted {
        let (jobs, spare) = (Arc::clone(&threads.jobs), Arc::clone(&threads.spare));
        std::thread::Builder::new()
            .name("fastingest-decode".into())
            .spawn(move || serve(&jobs, &spare))
            .map_err(|e| format!("could not start a decode thread: {e}"))?;
        threads.started += 1;
    }
    threads
        .queue
        .send(job)
        .map_err(|_| "the decode threads stopped".to_string())
}

/// A decode thread: takes jobs one at a time, for as long as the process
/// lives.
fn serve(jobs: &Mutex<Receiver<Job>>, spare: &AtomicIsize) {
    crate::memory::mark_decode_thread();
    loop {
        spare.fetch_add(1, Ordering::SeqCst);
        // The lock is held only while waiting for a job, not while running it.
        let next = jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match next {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_runs_on_the_kept_threads_and_panics_come_back_as_errors() {
        let handle = tokio::runtime::Handle::current();
        // The first three jobs wait for one another: three threads at once.
        let together = Arc::new(std::sync::Barrier::new(3));
        let names: Vec<String> = futures::future::join_all((0..16).map(|i| {
            let together = Arc::clone(&together);
            run(3, handle.clone(), move || {
                if i < 3 {
                    together.wait();
                }
                std::thread::current().name().unwrap_or("").to_string()
            })
        }))
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
        assert!(names.iter().all(|n| n == "fastingest-decode"), "{names:?}");
        let started = || THREADS.lock().unwrap().as_ref().unwrap().started;
        assert_eq!(started(), 3);
        // One job at a time finds an idle thread: none is started for it,
        // however many a read would allow.
        for _ in 0..5 {
            assert_eq!(run(8, handle.clone(), || 1).await, Ok(1));
        }
        assert_eq!(started(), 3);

        let err = run(3, handle.clone(), || -> u8 { panic!("bad page") })
            .await
            .unwrap_err();
        assert!(err.contains("bad page"), "{err}");
        // The thread that panicked is still there for the next job.
        assert_eq!(run(3, handle.clone(), || 7).await, Ok(7));
        // The runtime's context is there: a decoder can spawn onto it.
        let spawned = run(1, handle, || tokio::spawn(async { 5 })).await.unwrap();
        assert_eq!(spawned.await.unwrap(), 5);

        // Kept in this test: the threads are the process's, and the counts
        // above would see threads started elsewhere.
        run_all_gives_every_outcome_in_order_and_idle_threads_help();
    }

    fn run_all_gives_every_outcome_in_order_and_idle_threads_help() {
        // Four parts that wait for one another: they can only finish when
        // the caller and three decode threads take one each.
        let together = Arc::new(std::sync::Barrier::new(4));
        let parts: Vec<Part<(usize, String)>> = (0..4usize)
            .map(|i| {
                let together = Arc::clone(&together);
                Box::new(move || {
                    together.wait();
                    (i, std::thread::current().name().unwrap_or("").to_string())
                }) as Part<_>
            })
            .collect();
        let done = run_all(4, parts);
        let done: Vec<(usize, String)> = done.into_iter().map(Result::unwrap).collect();
        assert_eq!(done.iter().map(|d| d.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(
            done.iter().filter(|d| d.1 == "fastingest-decode").count(),
            3,
            "{done:?}"
        );

        // A panic is that part's outcome; the others still run.
        let parts: Vec<Part<u32>> = vec![
            Box::new(|| 1),
            Box::new(|| panic!("bad column")),
            Box::new(|| 3),
        ];
        let done = run_all(2, parts);
        assert_eq!(done[0], Ok(1));
        assert!(done[1].as_ref().unwrap_err().contains("bad column"));
        assert_eq!(done[2], Ok(3));

        // One thread: the caller does everything itself, helpers or not.
        let parts: Vec<Part<usize>> = (0..5usize)
            .map(|i| Box::new(move || i * i) as Part<_>)
            .collect();
        let squares: Vec<usize> = run_all(1, parts).into_iter().map(Result::unwrap).collect();
        assert_eq!(squares, [0, 1, 4, 9, 16]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn decode_threads_know_themselves_and_upper_bound_reservations_do_not() {
        use crate::memory::{on_decode_thread, reserve_unfaulted};

        assert!(!on_decode_thread());
        let seen = run(2, tokio::runtime::Handle::current(), || {
            let inside = on_decode_thread();
            let reserving = reserve_unfaulted(on_decode_thread);
            (inside, reserving, on_decode_thread())
        })
        .await
        .unwrap();
        // On a decode thread; not while reserving; again after.
        assert_eq!(seen, (true, false, true));
        assert!(!on_decode_thread());
    }
}
