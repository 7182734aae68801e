//! `fastingest.Cache`: an on-disk cache directory shared by reads.

use std::path::PathBuf;

use fastingest::{Cache, CacheOptions, Validate};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;

/// An on-disk cache of remote bytes; pass it as `cache=` to the read calls.
#[pyclass(name = "Cache", module = "fastingest", frozen)]
pub struct PyCache {
    pub inner: Cache,
}

fn validate_of(value: &Bound<'_, PyAny>) -> PyResult<Validate> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "validate must be a str or a number of seconds, not a bool",
        ));
    }
    if let Ok(seconds) = value.extract::<f64>() {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(to_py(fastingest::Error::InvalidArgument(format!(
                "validate: a TTL must be a non-negative number of seconds, not {seconds}"
            ))));
        }
        return Ok(Validate::Ttl(std::time::Duration::from_secs_f64(seconds)));
    }
    let text: String = value.extract()?;
    text.parse().map_err(to_py)
}

fn validate_name(v: Validate) -> String {
    match v {
        Validate::Immutable => "immutable".into(),
        Validate::Once => "once".into(),
        Validate::Always => "always".into(),
        Validate::Ttl(d) => format!("{}", d.as_secs_f64()),
    }
}

/// A byte count given as an int or as text such as "10G" or "512M".
fn size_of(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(n) = value.extract::<u64>() {
        return Ok(n);
    }
    let text = value.str()?.extract::<String>()?;
    fastingest::config::parse_size(&text).ok_or_else(|| {
        to_py(fastingest::Error::InvalidArgument(format!(
            "{name} must be a number of bytes or a size such as \"10G\", not {text:?}"
        )))
    })
}

#[pymethods]
impl PyCache {
    #[new]
    #[pyo3(signature = (path, *, max_bytes=None, min_free_bytes=None, validate=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        max_bytes: Option<&Bound<'_, PyAny>>,
        min_free_bytes: Option<&Bound<'_, PyAny>>,
        validate: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let validate = match validate {
            Some(v) => validate_of(v)?,
            None => Validate::Once,
        };
        let max_bytes = max_bytes.map(|v| size_of("max_bytes", v)).transpose()?;
        let min_free_bytes = match min_free_bytes {
            Some(v) => size_of("min_free_bytes", v)?,
            None => fastingest::cache::DEFAULT_MIN_FREE_BYTES,
        };
        let options = CacheOptions {
            path,
            max_bytes,
            min_free_bytes,
            validate,
        };
        // Opening measures the directory: no GIL needed for that.
        let inner = py.detach(|| Cache::open(options)).map_err(to_py)?;
        Ok(PyCache { inner })
    }

    /// The cache directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    #[getter]
    fn max_bytes(&self) -> Option<u64> {
        self.inner.options().max_bytes
    }

    #[getter]
    fn min_free_bytes(&self) -> u64 {
        self.inner.options().min_free_bytes
    }

    /// The validation policy: "immutable", "once", "always" or a TTL in seconds.
    #[getter]
    fn validate(&self) -> String {
        validate_name(self.inner.options().validate)
    }

    /// Size, entries, objects and hit ratio of the cache directory.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cache = self.inner.clone();
        let i = py.detach(move || cache.info());
        let d = PyDict::new(py);
        d.set_item("path", self.inner.path())?;
        d.set_item("bytes", i.bytes)?;
        d.set_item("entries", i.entries)?;
        d.set_item("objects", i.objects)?;
        d.set_item("hits", i.hits)?;
        d.set_item("misses", i.misses)?;
        d.set_item("hit_ratio", i.hit_ratio())?;
        d.set_item("bytes_served", i.bytes_served)?;
        d.set_item("corrupt", i.corrupt)?;
        d.set_item("max_bytes", self.inner.options().max_bytes)?;
        d.set_item("min_free_bytes", self.inner.options().min_free_bytes)?;
        d.set_item("validate", self.validate())?;
        Ok(d)
    }

    /// Evicts least-recently-used entries down to `max_bytes` (default: the
    /// low watermark of the cache's own limit).
    #[pyo3(signature = (max_bytes=None))]
    fn prune<'py>(
        &self,
        py: Python<'py>,
        max_bytes: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let max_bytes = max_bytes.map(|v| size_of("max_bytes", v)).transpose()?;
        let cache = self.inner.clone();
        let (entries, bytes) = py.detach(move || cache.prune(max_bytes));
        removed(py, entries, bytes)
    }

    /// Deletes everything in the cache.
    fn clear<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cache = self.inner.clone();
        let (entries, bytes) = py.detach(move || cache.clear());
        removed(py, entries, bytes)
    }

    /// Warnings raised since the last call (the Python layer re-raises them).
    fn _take_warnings(&self) -> Vec<String> {
        self.inner.take_warnings()
    }

    fn __repr__(&self) -> String {
        let o = self.inner.options();
        format!(
            "Cache({:?}, max_bytes={}, min_free_bytes={}, validate={:?})",
            self.inner.path(),
            o.max_bytes.map_or("None".to_string(), |m| m.to_string()),
            o.min_free_bytes,
            self.validate()
        )
    }
}

fn removed(py: Python<'_>, entries: u64, bytes: u64) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries_removed", entries)?;
    d.set_item("bytes_removed", bytes)?;
    Ok(d)
}
