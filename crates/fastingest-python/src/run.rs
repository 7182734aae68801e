//! Running core futures from Python: on the shared runtime, with the GIL
//! released, interruptible by Ctrl-C.

use std::future::Future;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors::to_py;

/// How often a waiting call looks for a pending signal (Ctrl-C).
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `fut` to completion on the shared runtime with the GIL released.
/// Signals (KeyboardInterrupt) are checked every [`SIGNAL_POLL`]; on one, the
/// read is cancelled and the signal raised. The wait is a timed wait on a
/// channel, not a runtime timer, so a runtime whose workers are all busy
/// cannot delay the check.
pub fn block_on<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = fastingest::Result<T>> + Send + 'static,
{
    block_on_after(py, fut, |_| Ok(()))
}

/// [`block_on`], running `meanwhile` with the GIL held once the read has
/// started and before waiting for it: Python-side work (importing pyarrow
/// in a fresh process, ~0.1 s) overlaps the read's requests instead of
/// preceding them. An error from `meanwhile` cancels the read.
pub fn block_on_after<T, F, M>(py: Python<'_>, fut: F, meanwhile: M) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = fastingest::Result<T>> + Send + 'static,
    M: FnOnce(Python<'_>) -> PyResult<()>,
{
    let rt = fastingest::runtime::shared()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
    // A signal that arrived while the runtime was being built (or before):
    // raise it before any request goes out.
    py.check_signals()?;
    let (tx, mut rx) = mpsc::sync_channel(1);
    let task = rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    if let Err(e) = meanwhile(py) {
        task.abort();
        return Err(e);
    }
    loop {
        // The receiver travels into the GIL-free closure and back (it is Send
        // but not Sync, so it cannot be borrowed there).
        let (waited, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match waited {
            Ok(result) => return result.map_err(to_py),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    return Err(e);
                }
            }
            // The task ended without sending: it panicked (caught by tokio).
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "fastingest read failed: the read task panicked",
                ));
            }
        }
    }
}

/// Starts `fut` on the shared runtime and calls `callback(ok, value)` from a
/// worker thread when it ends: `ok` is True with the value made by `finish`,
/// or False with the exception.
pub fn spawn_with_callback<T, F, C>(fut: F, callback: Py<PyAny>, finish: C) -> PyResult<PendingRead>
where
    T: Send + 'static,
    F: Future<Output = fastingest::Result<T>> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let rt = fastingest::runtime::shared()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
    // The read itself is a task of its own: cancelling aborts it (its
    // requests dropped, its buffers freed) without the callback running.
    let read = rt.spawn(fut);
    let abort = read.abort_handle();
    rt.spawn(async move {
        // `None`: the read panicked (a bug; the decoders' panics are caught
        // and named as corrupt files before they get here).
        let result = match read.await {
            Ok(result) => Some(result),
            Err(e) if e.is_cancelled() => return,
            Err(_) => None,
        };
        // Taking the GIL may wait; do it off the I/O workers.
        let _ = tokio::task::spawn_blocking(move || {
            Python::attach(|py| {
                let outcome = match result {
                    Some(result) => result.map_err(to_py).and_then(|v| finish(py, v)),
                    None => Err(PyRuntimeError::new_err(
                        "fastingest read failed: the read task panicked",
                    )),
                };
                let call = match outcome {
                    Ok(value) => callback.call1(py, (true, value)),
                    Err(err) => callback.call1(py, (false, err.into_value(py))),
                };
                if let Err(e) = call {
                    e.write_unraisable(py, None);
                }
            })
        })
        .await;
    });
    Ok(PendingRead { abort })
}

/// A read started for a coroutine (`read_parquet_async`): cancelling the
/// awaiting task cancels the read.
#[pyclass(name = "PendingRead", module = "fastingest._fastingest", frozen)]
pub struct PendingRead {
    abort: tokio::task::AbortHandle,
}

#[pymethods]
impl PendingRead {
    /// Stops the read: its requests are dropped and its memory freed; the
    /// callback is not called.
    fn cancel(&self) {
        self.abort.abort();
    }

    /// Whether the read has ended (finished, failed or cancelled).
    fn done(&self) -> bool {
        self.abort.is_finished()
    }
}
