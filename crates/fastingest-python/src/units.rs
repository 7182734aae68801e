//! `ParquetUnits`: a dataset opened for reading row group by row group, in
//! any order (the reader under `fastingest.torch`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_arrow::PySchema;

use crate::run;
use crate::stream::PyBatchStream;

/// A Parquet dataset whose footers are read, streamed by row group.
#[pyclass(name = "ParquetUnits", module = "fastingest", frozen)]
pub struct PyParquetUnits {
    inner: Arc<fastingest::ParquetUnits>,
}

impl PyParquetUnits {
    pub fn new(inner: fastingest::ParquetUnits) -> Self {
        PyParquetUnits {
            inner: Arc::new(inner),
        }
    }
}

#[pymethods]
impl PyParquetUnits {
    /// The schema of every batch (a `pyarrow.Schema`).
    #[getter]
    fn schema(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let obj = PySchema::new(self.inner.schema()).into_pyobject(py)?;
        Ok(py
            .import("pyarrow")?
            .getattr("schema")?
            .call1((obj,))?
            .unbind())
    }

    /// The row groups, in file order: `(file, row_group, num_rows,
    /// fetch_bytes, decoded_bytes)` each.
    fn units(&self) -> Vec<(usize, usize, u64, u64, u64)> {
        self.inner
            .units()
            .iter()
            .map(|u| (u.file, u.index, u.num_rows, u.fetch_bytes, u.decoded_bytes))
            .collect()
    }

    /// The files' locations, in dataset order.
    fn locations(&self) -> Vec<String> {
        self.inner.locations()
    }

    /// Row groups `order` (positions in `units()`) as one filtered batch
    /// each, in that order; the fetch runs ahead within `ahead_bytes`.
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
