//! Raw ORC stripes for Python: each stripe's description as a dict, its
//! bytes as a read-only buffer shared with the fetch (no copy).

use std::ffi::{c_int, c_void};

use bytes::Bytes;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use fastingest::StripeSet;

/// Bytes fetched by fastingest, exposed without copying through the
/// buffer protocol: `memoryview(b)`, `bytes(b)`, `numpy.frombuffer(b, ...)`.
#[pyclass(name = "Buffer", module = "fastingest", frozen)]
pub struct PyBytesView {
    bytes: Bytes,
}

#[pymethods]
impl PyBytesView {
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("fastingest buffers are read-only"));
        }
        let bytes = &slf.get().bytes;
        // SAFETY: the bytes are immutable and owned by `slf`, which the view
        // keeps alive through its reference to it.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr() as *mut c_void,
                bytes.len() as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }

    fn __repr__(&self) -> String {
        format!("<fastingest.Buffer of {} bytes>", self.bytes.len())
    }
}

/// One dict per stripe (see `fastingest.read_orc_stripes`).
pub fn stripe_dicts<'py>(py: Python<'py>, set: StripeSet) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (meta, bytes) in set.stripes.iter().zip(set.bytes) {
        let d = PyDict::new(py);
        d.set_item("location", &meta.source)?;
        d.set_item("file", meta.file)?;
        d.set_item("stripe", meta.stripe)?;
        d.set_item("offset", meta.offset)?;
        d.set_item("index_length", meta.index_length)?;
        d.set_item("data_length", meta.data_length)?;
        d.set_item("footer_length", meta.footer_length)?;
        d.set_item("num_rows", meta.num_rows)?;
        d.set_item("data", Py::new(py, PyBytesView { bytes })?)?;
        out.append(d)?;
    }
    Ok(out)
}
