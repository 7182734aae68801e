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

impl PyBytesView {
    /// A buffer over `bytes`.
    pub fn new(bytes: Bytes) -> Self {
        PyBytesView { bytes }
    }
}

#[pymethods]
impl PyBytesView {
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let bytes = slf.get().bytes.clone();
        // SAFETY: `view` comes from Python's buffer protocol; the bytes are
        // owned by `slf`, which the view keeps alive.
        unsafe { fill_read_only_view(slf.as_any(), view, flags, &bytes, "fastingest buffers") }
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }

    fn __repr__(&self) -> String {
        format!("<fastingest.Buffer of {} bytes>", self.bytes.len())
    }
}

/// Fills `view` with `bytes`, read-only, owned by `owner` (which the view
/// keeps alive and which must keep the bytes unchanged): the buffer protocol
/// of every class that hands out fetched bytes. `what` names them in the
/// error a writable request gets.
///
/// # Safety
/// `view` must be the pointer Python passed to `__getbuffer__`, and `bytes`
/// must live as long as `owner`.
pub unsafe fn fill_read_only_view(
    owner: &Bound<'_, PyAny>,
    view: *mut ffi::Py_buffer,
    flags: c_int,
    bytes: &[u8],
    what: &str,
) -> PyResult<()> {
    if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
        return Err(PyBufferError::new_err(format!("{what} are read-only")));
    }
    // SAFETY: the caller passes Python's view and bytes owned by `owner`,
    // which the view references.
    let rc = unsafe {
        ffi::PyBuffer_FillInfo(
            view,
            owner.as_ptr(),
            bytes.as_ptr() as *mut c_void,
            bytes.len() as ffi::Py_ssize_t,
            1,
            flags,
        )
    };
    if rc != 0 {
        return Err(PyErr::fetch(owner.py()));
    }
    Ok(())
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
        d.set_item("data", Py::new(py, PyBytesView::new(bytes))?)?;
        out.append(d)?;
    }
    Ok(out)
}
