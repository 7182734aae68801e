//! `fastingest.Config`: the fetch knobs, from keyword arguments over the
//! `FASTINGEST_*` environment over the built-in defaults.

use std::time::Duration;

use fastingest::Config;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;

/// Fetch tuning for a read. See the README for what each knob does.
#[pyclass(name = "Config", module = "fastingest", frozen, from_py_object)]
#[derive(Clone)]
pub struct PyConfig {
    pub inner: Config,
}

#[pymethods]
impl PyConfig {
    #[new]
    #[pyo3(signature = (**kwargs))]
    fn new(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut inner = Config::from_env().map_err(to_py)?;
        if let Some(kwargs) = kwargs {
            for (k, v) in kwargs.iter() {
                let key: String = k.extract()?;
                let text = v.str()?.extract::<String>()?;
                inner.set(&key, &text).map_err(to_py)?;
            }
        }
        inner.validate().map_err(to_py)?;
        Ok(PyConfig { inner })
    }

    /// The knobs as a dict (sizes in bytes, durations in seconds).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = &self.inner;
        let d = PyDict::new(py);
        let secs = |x: Duration| x.as_secs_f64();
        d.set_item("footer_prefetch", c.footer_prefetch)?;
        d.set_item("long_footer_prefetch", c.long_footer_prefetch)?;
        d.set_item("small_file", c.small_file)?;
        d.set_item("start_prefetch", c.start_prefetch)?;
        d.set_item("hole_limit", c.hole_limit)?;
        d.set_item("local_hole_limit", c.local_hole_limit)?;
        d.set_item("slice_size", c.slice_size)?;
        d.set_item("near_slice_size", c.near_slice_size)?;
        d.set_item("max_in_flight", c.max_in_flight)?;
        d.set_item("memory_budget", c.memory_budget)?;
        d.set_item("max_retries", c.max_retries)?;
        d.set_item("retry_backoff", secs(c.retry_backoff))?;
        d.set_item("retry_backoff_max", secs(c.retry_backoff_max))?;
        d.set_item("request_timeout", secs(c.request_timeout))?;
        d.set_item("connect_timeout", secs(c.connect_timeout))?;
        d.set_item("decode_parallelism", c.decode_parallelism)?;
        d.set_item("summary_files", c.summary_files.as_str())?;
        d.set_item("map_local_files", c.map_local_files)?;
        d.set_item("local_disk", c.local_disk.as_str())?;
        d.set_item("bloom_filters", c.bloom_filters)?;
        d.set_item("verify_checksums", c.verify_checksums)?;
        Ok(d)
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        let d = self.to_dict(py)?;
        match d.get_item(name)? {
            Some(v) => Ok(v.unbind()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "Config has no attribute {name:?}"
            ))),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let d = self.to_dict(py)?;
        let parts: Vec<String> = d
            .iter()
            .map(|(k, v)| {
                Ok(format!(
                    "{}={}",
                    k.str()?.extract::<String>()?,
                    v.repr()?.extract::<String>()?
                ))
            })
            .collect::<PyResult<_>>()?;
        Ok(format!("Config({})", parts.join(", ")))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyConfig>()
            .map(|o| o.get().inner == self.inner)
            .unwrap_or(false)
    }
}
