//! Python arguments to core types, and core results to Python objects.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Float64Array, Int64Array, StringArray,
    UInt64Array,
};
use fastingest::source::Source;
use fastingest::StorageOptions;
use fastingest::{CmpOp, Filter, Footer, Partitioning, Predicate, PreparedFile};
use parquet::basic::LogicalType;
use parquet::file::statistics::Statistics;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3_arrow::{PyArray, PySchema};

use crate::errors::to_py;

/// `source`: a str, an `os.PathLike`, or a list/tuple of those.
pub fn sources(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    fn one(o: &Bound<'_, PyAny>) -> PyResult<String> {
        // `extract`, never `to_string()`: Display goes through `str()`, which
        // runs pending signal handlers and prints "<unprintable ...>" when Ctrl-C
        // lands there, and the read would then go on with that text as its path.
        if let Ok(s) = o.cast::<PyString>() {
            return s.extract::<String>();
        }
        let fspath = o.py().import("os")?.getattr("fspath")?;
        // Only "not a path" becomes our TypeError: anything else raised on the
        // way (KeyboardInterrupt, an error inside `__fspath__`) propagates.
        match fspath.call1((o,)) {
            Ok(p) => p.extract::<String>(),
            Err(e) if !e.is_instance_of::<PyTypeError>(o.py()) => Err(e),
            Err(_) => Err(PyTypeError::new_err(format!(
                "source must be a path, URL, or a list of them, not {}",
                o.get_type().name()?
            ))),
        }
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<pyo3::types::PyTuple>() {
        obj.try_iter()?.map(|o| one(&o?)).collect()
    } else {
        Ok(vec![one(obj)?])
    }
}

/// `partitioning`, as `fastingest._options._partitioning` normalised it:
/// `"auto"`, `"off"`, `"hive"`, or a schema of typed keys.
pub fn partitioning(obj: &Bound<'_, PyAny>) -> PyResult<Partitioning> {
    if let Ok(text) = obj.extract::<String>() {
        return match text.as_str() {
            "auto" => Ok(Partitioning::Auto),
            "off" => Ok(Partitioning::Off),
            "hive" => Ok(Partitioning::Hive(Vec::new())),
            other => Err(PyTypeError::new_err(format!(
                "partitioning must be 'hive', None, a mapping or a schema, not {other:?}"
            ))),
        };
    }
    let schema: PySchema = obj.extract()?;
    Ok(Partitioning::Hive(
        schema
            .into_inner()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect(),
    ))
}

/// `coerce_int96_timestamp_unit`, as `fastingest._options` checked it.
pub fn time_unit(name: Option<&str>) -> PyResult<Option<arrow_schema::TimeUnit>> {
    use arrow_schema::TimeUnit;
    Ok(match name {
        None => None,
        Some("s") => Some(TimeUnit::Second),
        Some("ms") => Some(TimeUnit::Millisecond),
        Some("us") => Some(TimeUnit::Microsecond),
        Some("ns") => Some(TimeUnit::Nanosecond),
        Some(other) => {
            return Err(PyTypeError::new_err(format!(
                "coerce_int96_timestamp_unit must be \"s\", \"ms\", \"us\" or \"ns\", not {other:?}"
            )))
        }
    })
}

/// `binary_type`, as `fastingest._options._binary_type` normalised it:
/// `None` or one of pyarrow's binary type names.
pub fn binary_type(name: Option<&str>) -> PyResult<fastingest::BinaryType> {
    match name {
        None => Ok(fastingest::BinaryType::AsWritten),
        Some(name) => fastingest::BinaryType::from_name(name).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "binary_type must be pyarrow.binary(), large_binary() or binary_view(), not {name:?}"
            ))
        }),
    }
}

/// `storage_options`: a dict of str to str/bool/int.
pub fn storage_options(obj: Option<&Bound<'_, PyDict>>) -> PyResult<StorageOptions> {
    let mut out = StorageOptions::new();
    if let Some(d) = obj {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let value = if let Ok(b) = v.extract::<bool>() {
                b.to_string()
            } else {
                v.str()?.extract::<String>()?
            };
            out.insert(key, value);
        }
    }
    Ok(out)
}

/// A filter's literal(s) as `fastingest._filters` passes them: a pyarrow
/// array, or `(kind, values)` for values of one plain Python type, built
/// into an Arrow array here so that a filtered read needs no pyarrow before
/// its requests start.
#[derive(FromPyObject)]
pub enum FilterLiteral<'py> {
    Arrow(PyArray),
    Plain(String, Bound<'py, PyAny>),
}

impl FilterLiteral<'_> {
    pub fn into_array(self) -> PyResult<ArrayRef> {
        let (kind, values) = match self {
            FilterLiteral::Arrow(array) => return Ok(array.into_inner().0),
            FilterLiteral::Plain(kind, values) => (kind, values),
        };
        Ok(match kind.as_str() {
            "bool" => Arc::new(BooleanArray::from(values.extract::<Vec<bool>>()?)),
            "int64" => Arc::new(Int64Array::from(values.extract::<Vec<i64>>()?)),
            "uint64" => Arc::new(UInt64Array::from(values.extract::<Vec<u64>>()?)),
            "float64" => Arc::new(Float64Array::from(values.extract::<Vec<f64>>()?)),
            "string" => Arc::new(StringArray::from(values.extract::<Vec<String>>()?)),
            "binary" => {
                let bytes = values.extract::<Vec<Vec<u8>>>()?;
                Arc::new(BinaryArray::from_iter_values(bytes))
            }
            "date32" => Arc::new(Date32Array::from(values.extract::<Vec<i32>>()?)),
            other => {
                return Err(PyTypeError::new_err(format!(
                    "internal: unknown filter literal kind {other:?}"
                )))
            }
        })
    }
}

/// Filters as normalised by `fastingest._filters`: a list of conjunctions,
/// each a list of `(column, op, literals)`.
pub fn filter(
    obj: Option<Vec<Vec<(String, String, FilterLiteral<'_>)>>>,
) -> PyResult<Option<Filter>> {
    let Some(dnf) = obj else { return Ok(None) };
    let disjuncts = dnf
        .into_iter()
        .map(|conj| {
            conj.into_iter()
                .map(|(column, op, value)| {
                    Ok(Predicate {
                        column,
                        op: CmpOp::parse(&op).map_err(to_py)?,
                        value: value.into_array()?,
                    })
                })
                .collect::<PyResult<Vec<_>>>()
        })
        .collect::<PyResult<Vec<_>>>()?;
    Filter::new(disjuncts).map(Some).map_err(to_py)
}

fn ranges<'py>(
    py: Python<'py>,
    rs: impl Iterator<Item = std::ops::Range<u64>>,
) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, rs.map(|r| (r.start, r.end)))
}

/// One file's plan as a dict.
pub fn plan_dict<'py>(py: Python<'py>, p: &PreparedFile) -> PyResult<Bound<'py, PyDict>> {
    file_plan_dict(py, &p.plan, "row_groups")
}

/// A file's plan as a dict; `units` names what the plan's units are
/// (`row_groups` for Parquet, `stripes` for ORC).
pub fn file_plan_dict<'py>(
    py: Python<'py>,
    plan: &fastingest::plan::FilePlan,
    units: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("location", &plan.location)?;
    d.set_item("file_size", plan.file_size)?;
    d.set_item(
        units,
        plan.units.iter().map(|u| u.index).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "ranges",
        ranges(py, plan.units.iter().flat_map(|u| u.ranges.iter().cloned()))?,
    )?;
    d.set_item(
        "spans",
        ranges(py, plan.spans.iter().map(|s| s.range.clone()))?,
    )?;
    d.set_item(
        "requests",
        ranges(py, plan.spans.iter().flat_map(|s| s.slices.iter().cloned()))?,
    )?;
    d.set_item("bytes_needed", plan.bytes_needed())?;
    d.set_item("bytes_to_fetch", plan.bytes_to_fetch())?;
    d.set_item("num_requests", plan.num_requests())?;
    Ok(d)
}

fn stat_value<'py>(
    py: Python<'py>,
    s: &Statistics,
    min: bool,
    text: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    macro_rules! pick {
        ($v:expr) => {
            if min {
                $v.min_opt()
            } else {
                $v.max_opt()
            }
        };
    }
    let v = match s {
        Statistics::Boolean(v) => pick!(v)
            .map(|x| x.into_pyobject(py).map(|b| b.to_owned().into_any()))
            .transpose()?,
        Statistics::Int32(v) => pick!(v)
            .map(|x| x.into_pyobject(py).map(|b| b.into_any()))
            .transpose()?,
        Statistics::Int64(v) => pick!(v)
            .map(|x| x.into_pyobject(py).map(|b| b.into_any()))
            .transpose()?,
        Statistics::Float(v) => pick!(v)
            .map(|x| x.into_pyobject(py).map(|b| b.into_any()))
            .transpose()?,
        Statistics::Double(v) => pick!(v)
            .map(|x| x.into_pyobject(py).map(|b| b.into_any()))
            .transpose()?,
        Statistics::Int96(_) => None,
        Statistics::ByteArray(v) => pick!(v).map(|x| bytes_value(py, x.data(), text)),
        Statistics::FixedLenByteArray(v) => pick!(v).map(|x| bytes_value(py, x.data(), false)),
    };
    Ok(v)
}

fn bytes_value<'py>(py: Python<'py>, data: &[u8], text: bool) -> Bound<'py, PyAny> {
    match (text, std::str::from_utf8(data)) {
        (true, Ok(s)) => PyString::new(py, s).into_any(),
        _ => PyBytes::new(py, data).into_any(),
    }
}

/// One file's footer as a dict.
pub fn metadata_dict<'py>(
    py: Python<'py>,
    source: &Source,
    footer: &Footer,
    schema: &arrow_schema::SchemaRef,
) -> PyResult<Bound<'py, PyDict>> {
    let md = &footer.metadata;
    let fm = md.file_metadata();
    let d = PyDict::new(py);
    d.set_item("format", "parquet")?;
    d.set_item("location", source.location())?;
    d.set_item("file_size", footer.file_size)?;
    d.set_item("num_rows", fm.num_rows())?;
    d.set_item("num_row_groups", md.num_row_groups())?;
    d.set_item("created_by", fm.created_by())?;
    d.set_item("format_version", fm.version())?;
    d.set_item(
        "schema",
        PySchema::new(Arc::clone(schema)).into_pyarrow(py)?,
    )?;
    let rgs = PyList::empty(py);
    for (i, rg) in md.row_groups().iter().enumerate() {
        let r = PyDict::new(py);
        r.set_item("index", i)?;
        r.set_item("num_rows", rg.num_rows())?;
        r.set_item("total_byte_size", rg.total_byte_size())?;
        r.set_item("compressed_size", rg.compressed_size())?;
        let cols = PyList::empty(py);
        for c in rg.columns() {
            let cd = PyDict::new(py);
            let descr = c.column_descr();
            let text = matches!(
                descr.logical_type_ref(),
                Some(LogicalType::String) | Some(LogicalType::Enum) | Some(LogicalType::Json)
            ) || descr.converted_type() == parquet::basic::ConvertedType::UTF8;
            let (start, len) = c.byte_range();
            cd.set_item("path", c.column_path().string())?;
            cd.set_item("physical_type", c.column_type().to_string())?;
            cd.set_item(
                "logical_type",
                descr.logical_type_ref().map(|l| format!("{l:?}")),
            )?;
            cd.set_item(
                "codec",
                fastingest::parquet::chunks::codec_name(c.compression()),
            )?;
            cd.set_item(
                "encodings",
                c.encodings().map(|e| e.to_string()).collect::<Vec<_>>(),
            )?;
            cd.set_item("file_offset", start)?;
            cd.set_item("compressed_size", len)?;
            cd.set_item("uncompressed_size", c.uncompressed_size())?;
            cd.set_item("num_values", c.num_values())?;
            match c.statistics() {
                Some(s) => {
                    let sd = PyDict::new(py);
                    sd.set_item("min", stat_value(py, s, true, text)?)?;
                    sd.set_item("max", stat_value(py, s, false, text)?)?;
                    sd.set_item("null_count", s.null_count_opt())?;
                    sd.set_item("distinct_count", s.distinct_count_opt())?;
                    cd.set_item("statistics", sd)?;
                }
                None => cd.set_item("statistics", py.None())?,
            }
            cols.append(cd)?;
        }
        r.set_item("columns", cols)?;
        rgs.append(r)?;
    }
    d.set_item("row_groups", rgs)?;
    Ok(d)
}

/// One column's ORC statistics as a dict (`None` when the writer left none).
fn orc_statistics<'py>(
    py: Python<'py>,
    s: &orc_rust::statistics::ColumnStatistics,
) -> PyResult<Bound<'py, PyDict>> {
    use orc_rust::statistics::TypeStatistics as T;
    let d = PyDict::new(py);
    d.set_item("num_values", s.number_of_values())?;
    d.set_item("has_null", s.has_null())?;
    match s.type_statistics() {
        Some(T::Integer { min, max, .. }) => {
            d.set_item("min", min)?;
            d.set_item("max", max)?;
        }
        Some(T::Double { min, max, .. }) => {
            d.set_item("min", min)?;
            d.set_item("max", max)?;
        }
        Some(T::String {
            lower_bound,
            upper_bound,
            ..
        }) => {
            d.set_item("min", lower_bound)?;
            d.set_item("max", upper_bound)?;
        }
        Some(T::Decimal { min, max, .. }) => {
            d.set_item("min", min)?;
            d.set_item("max", max)?;
        }
        Some(T::Date { min, max }) => {
            d.set_item("min_days", min)?;
            d.set_item("max_days", max)?;
        }
        Some(T::Timestamp {
            min_utc, max_utc, ..
        }) => {
            d.set_item("min_utc_millis", min_utc)?;
            d.set_item("max_utc_millis", max_utc)?;
        }
        Some(T::Bucket { true_count }) => d.set_item("true_count", true_count)?,
        _ => {}
    }
    Ok(d)
}

/// The metadata of an ORC file as a dict (see `fastingest.metadata`).
pub fn orc_metadata_dict<'py>(
    py: Python<'py>,
    source: &Source,
    tail: &fastingest::orc::OrcTail,
    schema: &arrow_schema::SchemaRef,
) -> PyResult<Bound<'py, PyDict>> {
    let md = &tail.metadata;
    let d = PyDict::new(py);
    d.set_item("format", "orc")?;
    d.set_item("location", source.location())?;
    d.set_item("file_size", tail.file_size)?;
    d.set_item("num_rows", md.number_of_rows())?;
    d.set_item("num_stripes", md.stripe_metadatas().len())?;
    d.set_item("file_format_version", md.file_format_version())?;
    d.set_item(
        "compression",
        md.compression().map_or("none".to_string(), |c| {
            c.compression_type().to_string().to_lowercase()
        }),
    )?;
    d.set_item("row_index_stride", md.row_index_stride())?;
    d.set_item(
        "schema",
        PySchema::new(Arc::clone(schema)).into_pyarrow(py)?,
    )?;
    // Column 0 is the root struct; statistics are listed per top-level column
    // by ORC column id.
    let root = md.root_data_type();
    let stats_of =
        |py, stats: &[orc_rust::statistics::ColumnStatistics]| -> PyResult<Bound<'_, PyDict>> {
            let out = PyDict::new(py);
            for child in root.children() {
                let id = child.data_type().column_index();
                if let Some(s) = stats.get(id) {
                    out.set_item(child.name(), orc_statistics(py, s)?)?;
                }
            }
            Ok(out)
        };
    d.set_item("statistics", stats_of(py, md.column_file_statistics())?)?;
    let stripes = PyList::empty(py);
    for (i, s) in md.stripe_metadatas().iter().enumerate() {
        let sd = PyDict::new(py);
        sd.set_item("index", i)?;
        sd.set_item("offset", s.offset())?;
        sd.set_item("index_length", s.index_length())?;
        sd.set_item("data_length", s.data_length())?;
        sd.set_item("footer_length", s.footer_length())?;
        sd.set_item("num_rows", s.number_of_rows())?;
        sd.set_item("statistics", stats_of(py, s.column_statistics())?)?;
        stripes.append(sd)?;
    }
    d.set_item("stripes", stripes)?;
    Ok(d)
}
