//! The one tokio runtime that synchronous callers (the Python binding, the
//! blocking Rust API) run reads on. It is rebuilt in a child after `fork()`:
//! a forked child has none of the parent's worker threads, so using the
//! parent's runtime there would hang forever.

use std::sync::{Arc, Mutex, OnceLock};

use tokio::runtime::Runtime;

static SHARED: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// The cores this process may use, looked up once. The standard library
/// reads the cgroup's files on every call (an `open` and two `read`s):
/// asked once per row group, that was 4 % of a steady read of a small file.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// The process's shared runtime, created on first use and again after a fork.
pub fn shared() -> std::io::Result<Arc<Runtime>> {
    let pid = std::process::id();
    let mut guard = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, rt)) = guard.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(rt));
        }
    }
    // Either first use or we are a forked child. The parent's runtime must not
    // be dropped here (dropping joins threads that do not exist in the child),
    // so it is leaked on purpose.
    if let Some((_, stale)) = guard.take() {
        std::mem::forget(stale);
        crate::clients::forget_cached_clients();
    }
    let workers = cores().max(2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("fastingest-io")
        .enable_all()
        .build()?;
    let rt = Arc::new(rt);
    *guard = Some((pid, Arc::clone(&rt)));
    Ok(rt)
}
