//! The `pyarrow` module, for handing Arrow data over. `import fastingest` does
//! not import it; the first read does, through `fastingest._interrupt`, so
//! that a Ctrl-C landing in the middle of that import is not lost (see there).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static MODULE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `pyarrow`, imported the first time it is asked for.
pub fn module(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    MODULE
        .get_or_try_init(py, || {
            py.import("fastingest._interrupt")?
                .call_method1("import_module", ("pyarrow",))
                .map(Bound::unbind)
        })
        .map(|m| m.bind(py))
}
