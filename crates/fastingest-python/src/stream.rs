//! `BatchStream`: a read's record batches in Python as they are decoded.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3_arrow::{PyRecordBatch, PySchema};
use tokio::sync::mpsc;

use crate::errors::to_py;

type Batches = mpsc::Receiver<fastingest::Result<RecordBatch>>;

/// The batches of a read, in file and row order (see `fastingest.iter_batches`).
#[pyclass(name = "BatchStream", module = "fastingest", frozen)]
pub struct PyBatchStream {
    schema: SchemaRef,
    batches: Mutex<Option<Batches>>,
}

impl PyBatchStream {
    pub fn new(stream: fastingest::BatchStream) -> Self {
        PyBatchStream {
            schema: stream.schema,
            batches: Mutex::new(Some(stream.batches)),
        }
    }

    /// The next batch, waiting with the GIL released; Ctrl-C interrupts.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        let rt = fastingest::runtime::shared()
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
        loop {
            let next = py.detach(|| {
                let mut guard = self.batches.lock().unwrap_or_else(|p| p.into_inner());
                let Some(rx) = guard.as_mut() else {
                    return Next::End; // closed or exhausted
                };
                let waited = rt.block_on(async {
                    tokio::time::timeout(crate::run::SIGNAL_POLL, rx.recv()).await
                });
                match waited {
                    Ok(Some(Ok(batch))) => Next::Batch(batch),
                    Ok(Some(Err(e))) => {
                        *guard = None;
                        Next::Failed(e)
                    }
                    Ok(None) => {
                        *guard = None;
                        Next::End
                    }
                    Err(_elapsed) => Next::Pending,
                }
            });
            match next {
                Next::Batch(b) => return Ok(Some(b)),
                Next::End => return Ok(None),
                Next::Failed(e) => return Err(to_py(e)),
                Next::Pending => py.check_signals()?,
            }
        }
    }
}

/// What waiting for the next batch gave.
enum Next {
    Batch(RecordBatch),
    End,
    Failed(fastingest::Error),
    Pending,
}

pub(crate) fn to_pyarrow_batch(py: Python<'_>, batch: RecordBatch) -> PyResult<Py<PyAny>> {
    let obj = PyRecordBatch::new(batch).into_pyobject(py)?;
    Ok(crate::pyarrow::module(py)?
        .getattr("record_batch")?
        .call1((obj,))?
        .unbind())
}

#[pymethods]
impl PyBatchStream {
    /// The schema of every batch (a `pyarrow.Schema`).
    #[getter]
    fn schema(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let obj = PySchema::new(Arc::clone(&self.schema)).into_pyobject(py)?;
        Ok(crate::pyarrow::module(py)?
            .getattr("schema")?
            .call1((obj,))?
            .unbind())
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.next_batch(py)? {
            Some(b) => Ok(Some(to_pyarrow_batch(py, b)?)),
            None => Ok(None),
        }
    }

    /// The remaining batches as one `pyarrow.Table`.
    fn read_all(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut batches = Vec::new();
        while let Some(b) = self.next_batch(py)? {
            batches.push(to_pyarrow_batch(py, b)?);
        }
        let schema = self.schema(py)?;
        Ok(crate::pyarrow::module(py)?
            .getattr("Table")?
            .call_method1("from_batches", (batches, schema))?
            .unbind())
    }

    /// Stops the read (also done when the stream is garbage-collected).
    fn close(&self) {
        *self.batches.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __exit__(&self, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.close();
    }
}
