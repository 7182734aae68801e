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
    let rt = fastingest::runtime::shared()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
    // A signal that arrived while the runtime was being built (or before):
    // raise it before any request goes out.
    py.check_signals()?;
    let (tx, mut rx) = mpsc::sync_channel(1);
    let task = rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
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
pub fn spawn_with_callback<T, F, C>(fut: F, callback: Py<PyAny>, finish: C) -> PyResult<()>
where
    T: Send + 'static,
    F: Future<Output = fastingest::Result<T>> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let rt = fastingest::runtime::shared()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
    rt.spawn(async move {
        let result = fut.await;
        // Taking the GIL may wait; do it off the I/O workers.
        let _ = tokio::task::spawn_blocking(move || {
            Python::attach(|py| {
                let outcome = result.map_err(to_py).and_then(|v| finish(py, v));
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
    Ok(())
}
