//! `fastingest.ReadStats`: counters a read fills in.

use fastingest::ReadStats;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Counters of one or more reads: pass it as `stats=` and read it afterwards.
#[pyclass(name = "ReadStats", module = "fastingest", frozen)]
#[derive(Clone, Default)]
pub struct PyReadStats {
    pub inner: ReadStats,
}

#[pymethods]
impl PyReadStats {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// All counters as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.snapshot();
        let d = PyDict::new(py);
        d.set_item("files", s.files)?;
        d.set_item("requests", s.requests)?;
        d.set_item("retries", s.retries)?;
        d.set_item("bytes_fetched", s.bytes_fetched)?;
        d.set_item("bytes_needed", s.bytes_needed)?;
        d.set_item("unplanned_requests", s.unplanned_requests)?;
        d.set_item("fetch_seconds", s.fetch_seconds_total.as_secs_f64())?;
        d.set_item("decode_seconds", s.decode_seconds_total.as_secs_f64())?;
        d.set_item("rows", s.rows)?;
        d.set_item("cache_hits", s.cache_hits)?;
        d.set_item("cache_misses", s.cache_misses)?;
        d.set_item("cache_corrupt", s.cache_corrupt)?;
        d.set_item("bytes_from_cache", s.bytes_from_cache)?;
        d.set_item("bytes_mapped", s.bytes_mapped)?;
        d.set_item("row_groups_bloom_skipped", s.row_groups_bloom_skipped)?;
        Ok(d)
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        match self.to_dict(py)?.get_item(name)? {
            Some(v) => Ok(v.unbind()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "ReadStats has no attribute {name:?}"
            ))),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ReadStats({})",
            self.to_dict(py)?.repr()?.extract::<String>()?
        ))
    }
}
