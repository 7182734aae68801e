//! The one place core errors become Python exceptions. The classes live in
//! `fastingest/exceptions.py` (so they can inherit from both our base class and
//! the matching builtin, e.g. `FileNotFoundError`).

use fastingest::Error;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = MODULE.get_or_try_init(py, || {
        py.import("fastingest.exceptions").map(|m| m.unbind())
    })?;
    module
        .bind(py)
        .getattr(name)?
        .cast_into::<PyType>()
        .map_err(Into::into)
}

/// The name of the `fastingest.exceptions` class an error becomes.
pub fn exception_name(err: &Error) -> &'static str {
    match err {
        Error::NotFound { .. } => "NotFoundError",
        Error::PermissionDenied { .. } => "PermissionDeniedError",
        Error::Corrupt { .. } | Error::WrongFormat { .. } => "CorruptFileError",
        Error::Unsupported { .. } => "UnsupportedError",
        Error::ColumnNotFound { .. } => "ColumnNotFoundError",
        Error::SchemaMismatch { .. } => "SchemaMismatchError",
        Error::Io {
            timed_out: true, ..
        } => "RequestTimeoutError",
        Error::Io { .. } => "RemoteIOError",
        Error::InvalidArgument(_) | Error::InvalidConfig(_) => "InvalidArgumentError",
        Error::Unavailable(_) => "DeviceUnavailableError",
        Error::Device(_) => "DeviceError",
        // The core's error is non-exhaustive; `_error_classes` (tested in
        // tests/test_local.py) shows a new variant landing here.
        _ => "FastIngestError",
    }
}

/// Every core error variant and the exception it becomes (for a test).
#[pyfunction]
pub fn _error_classes() -> Vec<(String, &'static str)> {
    Error::one_of_each()
        .iter()
        .map(|e| (e.variant().1.to_string(), exception_name(e)))
        .collect()
}

/// Converts a core error to the matching `fastingest` exception.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| {
        let name = exception_name(&err);
        let message = err.to_string();
        match class(py, name) {
            Ok(cls) => PyErr::from_type(cls, message),
            // The package is broken if its exceptions module is missing; still
            // raise something that carries the message.
            Err(_) => match err {
                Error::InvalidArgument(_) | Error::InvalidConfig(_) => {
                    PyValueError::new_err(message)
                }
                _ => PyRuntimeError::new_err(message),
            },
        }
    })
}
