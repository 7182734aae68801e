//! The torch loader's shuffle: a window's column put in its seeded order,
//! with the GIL released (see `fastingest::rows`).

use std::cell::RefCell;

use bytes::Bytes;
use pyo3::buffer::{PyBuffer, PyUntypedBuffer};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

use crate::errors::to_py;
use crate::stripes::PyBytesView;

thread_local! {
    /// A column of several parts is laid end to end here before the gather:
    /// reused from column to column, so it is warm memory, not fresh pages.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The rows `rows` (int64) of the column whose values (`width` bytes each)
/// are the C-contiguous buffers `parts` laid end to end, as a new read-only
/// `Buffer` (for `numpy.frombuffer`). Its memory comes from fastingest's
/// allocator, which keeps freed memory for reuse: a fresh NumPy array of a
/// window's size would fault in new zeroed pages every window.
#[pyfunction]
pub fn take_rows(
    py: Python<'_>,
    parts: Vec<Bound<'_, PyAny>>,
    width: usize,
    rows: Bound<'_, PyAny>,
) -> PyResult<PyBytesView> {
    // Typed: an int64 format, aligned, checked by PyO3.
    let index = PyBuffer::<i64>::get(&rows)?;
    let Some(index_ptr) = index.as_slice_ptr() else {
        return Err(PyBufferError::new_err(
            "rows must be a C-contiguous int64 array",
        ));
    };
    let buffers = parts
        .iter()
        .map(|p| {
            let buffer = PyUntypedBuffer::get(p)?;
            if !buffer.is_c_contiguous() {
                return Err(PyBufferError::new_err(
                    "take_rows needs C-contiguous arrays",
                ));
            }
            Ok(buffer)
        })
        .collect::<PyResult<Vec<_>>>()?;
    // SAFETY: the buffers stay acquired (their memory pinned) until the end
    // of this call, and the slices do not outlive it.
    let (values, rows): (Vec<&[u8]>, &[i64]) = unsafe {
        (
            buffers.iter().map(|b| bytes(b)).collect(),
            index_ptr.as_ref(),
        )
    };
    let taken = py
        .detach(|| {
            SCRATCH.with_borrow_mut(|scratch| fastingest::rows::take(&values, width, rows, scratch))
        })
        .map_err(to_py)?;
    Ok(PyBytesView::new(Bytes::from(taken)))
}

/// # Safety
/// The slice must not outlive `buffer`.
unsafe fn bytes(buffer: &PyUntypedBuffer) -> &[u8] {
    if buffer.len_bytes() == 0 {
        return &[]; // an exporter may give no pointer for no bytes
    }
    unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), buffer.len_bytes()) }
}
