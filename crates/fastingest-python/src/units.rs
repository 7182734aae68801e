//! `Units`: a dataset opened for reading unit by unit (row groups or
//! stripes), in any order: the reader under `fastingest.torch` and the Ray
//! and Dask read tasks.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_arrow::PySchema;

use crate::run;
use crate::stream::{to_pyarrow_batch, PyBatchStream};

/// A Parquet or ORC dataset whose footers are read, streamed by unit.
#[pyclass(name = "Units", module = "fastingest", frozen)]
pub struct PyUnits {
    inner: Arc<fastingest::Units>,
}

impl PyUnits {
    pub fn new(inner: fastingest::Units) -> Self {
        PyUnits {
            inner: Arc::new(inner),
        }
    }
}

#[pymethods]
impl PyUnits {
    /// The schema of every batch (a `pyarrow.Schema`).
    #[getter]
    fn schema(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let obj = PySchema::new(self.inner.schema()).into_pyobject(py)?;
        Ok(crate::pyarrow::module(py)?
            .getattr("schema")?
            .call1((obj,))?
            .unbind())
    }

    /// The units, in file order: `(file, index, num_rows, fetch_bytes,
    /// decoded_bytes)` each.
    fn units(&self) -> Vec<(usize, usize, u64, u64, u64)> {
        self.inner
            .units()
            .iter()
            .map(|u| (u.file, u.index, u.num_rows, u.fetch_bytes, u.decoded_bytes))
            .collect()
    }

    /// The files' locations, in dataset order (no credentials or URL
    /// signatures: for display).
    fn locations(&self) -> Vec<String> {
        self.inner.locations()
    }

    /// What opens each file again, in dataset order (a presigned URL keeps
    /// its signature: never for display).
    fn sources(&self) -> Vec<String> {
        self.inner.sources()
    }

    /// The partition keys, one row per file (a `pyarrow.RecordBatch`), or
    /// `None` when the files have none.
    fn partitions(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some(batch) = self.inner.partitions().map_err(crate::errors::to_py)? else {
            return Ok(None);
        };
        to_pyarrow_batch(py, batch).map(Some)
    }

    /// Units `order` (positions in `units()`) as one filtered batch each, in
    /// that order; the fetch runs ahead within `ahead_bytes`.
    fn stream(
        &self,
        py: Python<'_>,
        order: Vec<usize>,
        ahead_bytes: u64,
    ) -> PyResult<PyBatchStream> {
        let inner = Arc::clone(&self.inner);
        let batches = run::block_on(py, async move { inner.stream(order, ahead_bytes) })?;
        Ok(PyBatchStream::new(batches))
    }
}
