//! Running core futures from Python: on the shared runtime, with the GIL
//! released, interruptible by Ctrl-C.

use std::future::Future;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors::to_py;

/// Runs `fut` to completion with the GIL released. Signals (KeyboardInterrupt)
/// are checked every 100 ms; on one, the read is cancelled and the signal raised.
pub fn block_on<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = fastingest::Result<T>> + Send + 'static,
{
    let rt = fastingest::runtime::shared()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
    let mut handle = rt.spawn(fut);
    loop {
        let waited = py.detach(|| {
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(100), &mut handle).await
            })
        });
        match waited {
            Ok(Ok(result)) => return result.map_err(to_py),
            Ok(Err(join)) => {
                return Err(PyRuntimeError::new_err(format!(
                    "fastingest read failed: {join}"
                )));
            }
            Err(_elapsed) => {
                if let Err(e) = py.check_signals() {
                    handle.abort();
                    return Err(e);
                }
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
