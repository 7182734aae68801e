//! Raw column chunks in Python: `Chunk` (host bytes, buffer protocol),
//! `ChunkSet`, and their device counterparts `DeviceChunk` / `DeviceChunkSet`
//! (DLPack and `__cuda_array_interface__`).

use std::ffi::{c_int, c_void, CStr};
use std::sync::Arc;

use fastingest::gpu::{self, Device, DeviceChunks, UploadOptions};
use fastingest::parquet::chunks::{ChunkLayout, ChunkMeta, ChunkSet};
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyIndexError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::errors::to_py;
use crate::run;
use crate::stripes::fill_read_only_view;

/// `index` into a sequence of `len`, Python style (negative from the end).
fn position(index: isize, len: usize) -> PyResult<usize> {
    let i = if index < 0 {
        index + len as isize
    } else {
        index
    };
    if i < 0 || i as usize >= len {
        return Err(PyIndexError::new_err(format!(
            "chunk index {index} out of range ({len} chunks)"
        )));
    }
    Ok(i as usize)
}

/// A device given as an int (CUDA ordinal) or a string ("cpu", "cuda:1").
pub fn device_of(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(n) = obj.extract::<usize>() {
        return Ok(Device::Cuda(n));
    }
    let text: String = obj.str()?.extract()?;
    text.parse::<Device>().map_err(to_py)
}

/// The device given, or the first CUDA device when none is.
fn device_or_first_gpu(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    obj.map_or(Ok(Device::Cuda(0)), device_of)
}

/// Upload tuning from the keyword arguments (defaults where `None`).
pub fn upload_options(
    staging_size: Option<usize>,
    staging_buffers: Option<usize>,
    streams: Option<usize>,
    staging_threads: Option<usize>,
) -> UploadOptions {
    let d = UploadOptions::default();
    let staging_threads = staging_threads.unwrap_or(d.staging_threads);
    UploadOptions {
        staging_size: staging_size.unwrap_or(d.staging_size),
        // Two buffers per thread unless the caller chose.
        staging_buffers: staging_buffers.unwrap_or(2 * staging_threads.max(1)),
        streams: streams.unwrap_or(d.streams),
        staging_threads,
        alignment: d.alignment,
    }
}

/// The metadata of one chunk as attributes shared by `Chunk` and `DeviceChunk`.
fn meta_repr(kind: &str, m: &ChunkMeta, extra: &str) -> String {
    format!(
        "<fastingest.{kind} {} row_group={} column={:?} file_offset={} length={} codec={}{extra}>",
        m.source, m.row_group, m.column, m.file_offset, m.length, m.codec
    )
}

/// Footer bytes of every file, in file order: encoded on first use, then
/// the same `bytes` objects on every access (`set.footers[c.file]` in a loop
/// over chunks must not re-encode a footer per chunk).
#[derive(Default)]
pub struct Footers(PyOnceLock<Vec<Py<PyBytes>>>);

impl Footers {
    fn list<'py>(&self, py: Python<'py>, layout: &ChunkLayout) -> PyResult<Bound<'py, PyList>> {
        let all = self.0.get_or_try_init(py, || {
            layout
                .files
                .iter()
                .map(|f| {
                    let bytes = f.footer_bytes().map_err(to_py)?;
                    Ok(PyBytes::new(py, &bytes).unbind())
                })
                .collect::<PyResult<Vec<_>>>()
        })?;
        PyList::new(py, all.iter().map(|b| b.bind(py)))
    }
}

/// What a column chunk is: the metadata `Chunk` and `DeviceChunk` share.
#[pyclass(name = "ChunkInfo", module = "fastingest", subclass, frozen)]
pub struct PyChunkInfo {
    meta: ChunkMeta,
}

#[pymethods]
impl PyChunkInfo {
    /// The file, as named in the read.
    #[getter]
    fn source(&self) -> &str {
        &self.meta.source
    }
    /// Index of the file in the set (into `sources` and `footers`).
    #[getter]
    fn file(&self) -> usize {
        self.meta.file
    }
    /// Row group in the file.
    #[getter]
    fn row_group(&self) -> usize {
        self.meta.row_group
    }
    /// Dotted Parquet path of the leaf column.
    #[getter]
    fn column(&self) -> &str {
        &self.meta.column
    }
    /// Leaf column index in the file's schema.
    #[getter]
    fn leaf(&self) -> usize {
        self.meta.leaf
    }
    /// Where the chunk starts in the file.
    #[getter]
    fn file_offset(&self) -> u64 {
        self.meta.file_offset
    }
    /// The chunk's length in bytes.
    #[getter]
    fn length(&self) -> u64 {
        self.meta.length
    }
    /// Compression codec.
    #[getter]
    fn codec(&self) -> &str {
        &self.meta.codec
    }
    /// Values in the chunk (nulls and repeated values included).
    #[getter]
    fn num_values(&self) -> i64 {
        self.meta.num_values
    }
    /// Parquet physical type.
    #[getter]
    fn physical_type(&self) -> &str {
        &self.meta.physical_type
    }
    /// Parquet logical type, if any.
    #[getter]
    fn logical_type(&self) -> Option<&str> {
        self.meta.logical_type.as_deref()
    }
    fn __len__(&self) -> usize {
        self.meta.length as usize
    }
}

/// One column chunk's bytes in host memory (read-only buffer protocol).
#[pyclass(name = "Chunk", module = "fastingest", extends = PyChunkInfo, frozen)]
pub struct PyChunk {
    set: Arc<ChunkSet>,
    index: usize,
}

impl PyChunk {
    fn meta(&self) -> &ChunkMeta {
        &self.set.layout.chunks[self.index]
    }

    fn create(py: Python<'_>, set: &Arc<ChunkSet>, index: usize) -> PyResult<Py<PyChunk>> {
        let info = PyChunkInfo {
            meta: set.layout.chunks[index].clone(),
        };
        let chunk = PyChunk {
            set: Arc::clone(set),
            index,
        };
        Py::new(py, PyClassInitializer::from(info).add_subclass(chunk))
    }
}

#[pymethods]
impl PyChunk {
    /// Exposes the bytes without copying: `memoryview(chunk)`.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let me = slf.get();
        let bytes = me.set.bytes[me.index].clone();
        // SAFETY: `view` comes from Python's buffer protocol; the bytes are
        // owned by the set, which `slf` (referenced by the view) keeps alive.
        unsafe { fill_read_only_view(slf.as_any(), view, flags, &bytes, "column chunks") }
    }

    fn __repr__(&self) -> String {
        meta_repr("Chunk", self.meta(), "")
    }
}

/// The column chunks of a read (see `fastingest.read_chunks`).
#[pyclass(name = "ChunkSet", module = "fastingest", frozen)]
pub struct PyChunkSet {
    set: Arc<ChunkSet>,
    footers: Footers,
}

impl PyChunkSet {
    pub fn new(set: ChunkSet) -> Self {
        PyChunkSet {
            set: Arc::new(set),
            footers: Footers::default(),
        }
    }
}

#[pymethods]
impl PyChunkSet {
    fn __len__(&self) -> usize {
        self.set.bytes.len()
    }

    fn __getitem__(&self, py: Python<'_>, index: isize) -> PyResult<Py<PyChunk>> {
        PyChunk::create(py, &self.set, position(index, self.set.bytes.len())?)
    }

    fn __iter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        let py = slf.py();
        let me = slf.get();
        let chunks = (0..me.set.bytes.len())
            .map(|i| PyChunk::create(py, &me.set, i))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, chunks)?.try_iter().map(Bound::into_any)
    }

    /// Total bytes of the chunks.
    #[getter]
    fn nbytes(&self) -> usize {
        self.set.bytes.iter().map(|b| b.len()).sum()
    }

    /// The files of the set, in order (a chunk's `file` indexes this).
    #[getter]
    fn sources(&self) -> Vec<String> {
        self.set
            .layout
            .files
            .iter()
            .map(|f| f.source.location().to_string())
            .collect()
    }

    /// Each file's footer (Thrift `FileMetaData`, original offsets).
    #[getter]
    fn footers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.footers.list(py, &self.set.layout)
    }

    /// A minimal Parquet file holding exactly these row groups and columns.
    fn to_parquet_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let set = Arc::clone(&self.set);
        let bytes = py.detach(move || set.to_parquet_bytes()).map_err(to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Uploads every chunk to `device` through pinned staging buffers.
    #[pyo3(signature = (device=None, stream=None, *, staging_size=None, staging_buffers=None, streams=None, staging_threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn to_device(
        &self,
        py: Python<'_>,
        device: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, PyAny>>,
        staging_size: Option<usize>,
        staging_buffers: Option<usize>,
        streams: Option<usize>,
        staging_threads: Option<usize>,
    ) -> PyResult<PyDeviceChunkSet> {
        // Uploads complete before this returns, so work on any stream may use
        // the chunks; `stream` is accepted for the array API's convention.
        let _ = stream;
        let device = device_or_first_gpu(device)?;
        let options = upload_options(staging_size, staging_buffers, streams, staging_threads);
        let set = Arc::clone(&self.set);
        let chunks = py
            .detach(move || {
                let target = gpu::target_for(device, options.streams)?;
                gpu::upload_set(target.as_ref(), &set, &options)
            })
            .map_err(to_py)?;
        Ok(PyDeviceChunkSet::new(self.set.layout.clone(), chunks))
    }

    /// A copy of the set in page-locked host memory of `device`, which
    /// `to_device` uploads without staging.
    #[pyo3(signature = (device=None, *, staging_threads=None))]
    fn pin(
        &self,
        py: Python<'_>,
        device: Option<&Bound<'_, PyAny>>,
        staging_threads: Option<usize>,
    ) -> PyResult<PyChunkSet> {
        let device = device_or_first_gpu(device)?;
        let options = upload_options(None, None, None, staging_threads);
        let set = Arc::clone(&self.set);
        let pinned = py
            .detach(move || {
                let target = gpu::target_for(device, options.streams)?;
                gpu::pin_set(target.as_ref(), &set, options.staging_threads)
            })
            .map_err(to_py)?;
        Ok(PyChunkSet::new(pinned))
    }

    fn __repr__(&self) -> String {
        format!(
            "<fastingest.ChunkSet {} chunks, {} bytes, {} files>",
            self.set.bytes.len(),
            self.nbytes(),
            self.set.layout.files.len()
        )
    }
}

/// Column chunks in device memory (one allocation).
#[pyclass(name = "DeviceChunkSet", module = "fastingest", frozen)]
pub struct PyDeviceChunkSet {
    layout: Arc<ChunkLayout>,
    chunks: Arc<DeviceChunks>,
    footers: Footers,
}

impl PyDeviceChunkSet {
    fn new(layout: ChunkLayout, chunks: DeviceChunks) -> Self {
        PyDeviceChunkSet {
            layout: Arc::new(layout),
            chunks: Arc::new(chunks),
            footers: Footers::default(),
        }
    }
}

#[pymethods]
impl PyDeviceChunkSet {
    fn __len__(&self) -> usize {
        self.chunks.lengths.len()
    }

    fn __getitem__(&self, py: Python<'_>, index: isize) -> PyResult<Py<PyDeviceChunk>> {
        let i = position(index, self.chunks.lengths.len())?;
        PyDeviceChunk::create(py, self, i)
    }

    fn __iter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        let py = slf.py();
        let me = slf.get();
        let chunks = (0..me.chunks.lengths.len())
            .map(|i| PyDeviceChunk::create(py, me, i))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, chunks)?.try_iter().map(Bound::into_any)
    }

    /// `"cuda:N"` or `"cpu"`.
    #[getter]
    fn device(&self) -> String {
        self.chunks.device.to_string()
    }

    /// Address of the allocation holding every chunk.
    #[getter]
    fn ptr(&self) -> u64 {
        self.chunks.memory.ptr()
    }

    /// Bytes of the chunks (without alignment padding).
    #[getter]
    fn nbytes(&self) -> usize {
        self.chunks.lengths.iter().sum()
    }

    /// Each file's footer (Thrift `FileMetaData`, original offsets).
    #[getter]
    fn footers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.footers.list(py, &self.layout)
    }

    /// How the upload went: copies, staging buffers, overlap with the fetch.
    #[getter]
    fn upload_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.chunks.report;
        let d = PyDict::new(py);
        d.set_item("bytes", r.bytes)?;
        d.set_item("copies", r.copies)?;
        d.set_item("staging_allocated", r.staging_allocated)?;
        d.set_item("staging_waits", r.staging_waits)?;
        d.set_item("copies_before_last_arrival", r.copies_before_last_arrival)?;
        d.set_item("wait_for_data_s", r.wait_for_data_s)?;
        d.set_item("staging_copy_s", r.staging_copy_s)?;
        d.set_item("staging_threads", r.staging_threads)?;
        d.set_item("total_s", r.total_s)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<fastingest.DeviceChunkSet {} chunks, {} bytes on {}>",
            self.chunks.lengths.len(),
            self.nbytes(),
            self.chunks.device
        )
    }
}

/// One column chunk in device memory.
#[pyclass(name = "DeviceChunk", module = "fastingest", extends = PyChunkInfo, frozen)]
pub struct PyDeviceChunk {
    layout: Arc<ChunkLayout>,
    chunks: Arc<DeviceChunks>,
    index: usize,
}

impl PyDeviceChunk {
    fn meta(&self) -> &ChunkMeta {
        &self.layout.chunks[self.index]
    }

    fn create(py: Python<'_>, set: &PyDeviceChunkSet, index: usize) -> PyResult<Py<Self>> {
        let info = PyChunkInfo {
            meta: set.layout.chunks[index].clone(),
        };
        let chunk = PyDeviceChunk {
            layout: Arc::clone(&set.layout),
            chunks: Arc::clone(&set.chunks),
            index,
        };
        Py::new(py, PyClassInitializer::from(info).add_subclass(chunk))
    }

    fn dl_device(&self) -> (i32, i32) {
        match self.chunks.device {
            Device::Cpu => (DL_CPU, 0),
            Device::Cuda(n) => (DL_CUDA, n as i32),
        }
    }
}

#[pymethods]
impl PyDeviceChunk {
    /// Device address of the chunk's first byte (cuDF's device-span `.ptr`).
    #[getter]
    fn ptr(&self) -> u64 {
        self.chunks.ptr(self.index)
    }

    /// Bytes (cuDF's device-span `.size`).
    #[getter]
    fn size(&self) -> usize {
        self.chunks.lengths[self.index]
    }

    /// `"cuda:N"` or `"cpu"`.
    #[getter]
    fn device(&self) -> String {
        self.chunks.device.to_string()
    }

    /// The CUDA Array Interface (v3): a 1-D `uint8` array, read-only. The
    /// upload has completed, so no stream needs to synchronise (`None`).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.chunks.device == Device::Cpu {
            return Err(PyAttributeError::new_err(
                "__cuda_array_interface__: this chunk is in host memory (device=\"cpu\")",
            ));
        }
        let d = PyDict::new(py);
        d.set_item("shape", (self.size(),))?;
        d.set_item("typestr", "|u1")?;
        d.set_item("data", (self.ptr(), true))?;
        d.set_item("version", 3)?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    /// `(device_type, device_id)` as DLPack names them (1 = CPU, 2 = CUDA).
    fn __dlpack_device__(&self) -> (i32, i32) {
        self.dl_device()
    }

    /// A DLPack capsule of the chunk (1-D `uint8`), sharing its memory. The
    /// upload has completed before the set was returned, so the data is
    /// ready for work on any `stream`.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (stream, max_version);
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "__dlpack__(copy=True) is not supported; the chunk is exported without copying",
            ));
        }
        if let Some(want) = dl_device {
            if want != self.dl_device() {
                return Err(PyBufferError::new_err(format!(
                    "the chunk is on {}; cannot export it to DLPack device {want:?}",
                    self.chunks.device
                )));
            }
        }
        dlpack_capsule(py, &self.chunks, self.index, self.dl_device())
    }

    fn __repr__(&self) -> String {
        meta_repr(
            "DeviceChunk",
            self.meta(),
            &format!(" device={} ptr={:#x}", self.chunks.device, self.ptr()),
        )
    }
}

// DLPack (v0.8 layout of the unversioned `DLManagedTensor`, which every
// consumer accepts).
const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;
const DL_UINT: u8 = 1;
const DLTENSOR: &CStr = c"dltensor";

#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// What a capsule keeps alive: the allocation and the shape array.
struct Keep {
    _chunks: Arc<DeviceChunks>,
    shape: [i64; 1],
}

unsafe extern "C" fn delete_managed(m: *mut DlManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: both boxes were leaked in `dlpack_capsule` and are freed once,
    // by the consumer (through this deleter) or by the capsule's destructor.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx as *mut Keep));
    }
}

unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // A consumer renames the capsule to "used_dltensor" and owns the tensor;
    // otherwise it was never consumed and is ours to free.
    // SAFETY: `capsule` is a live capsule object (called by Python).
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()) as *mut DlManagedTensor;
            delete_managed(m);
        }
    }
}

fn dlpack_capsule<'py>(
    py: Python<'py>,
    chunks: &Arc<DeviceChunks>,
    index: usize,
    (device_type, device_id): (i32, i32),
) -> PyResult<Bound<'py, PyAny>> {
    let keep = Box::into_raw(Box::new(Keep {
        _chunks: Arc::clone(chunks),
        shape: [chunks.lengths[index] as i64],
    }));
    let managed = Box::into_raw(Box::new(DlManagedTensor {
        dl_tensor: DlTensor {
            data: chunks.ptr(index) as *mut c_void,
            device: DlDevice {
                device_type,
                device_id,
            },
            ndim: 1,
            dtype: DlDataType {
                code: DL_UINT,
                bits: 8,
                lanes: 1,
            },
            // SAFETY: `keep` is live until the deleter runs.
            shape: unsafe { (*keep).shape.as_mut_ptr() },
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: keep as *mut c_void,
        deleter: Some(delete_managed),
    }));
    // SAFETY: a new capsule owning `managed`; on failure we free it here.
    let capsule = unsafe {
        ffi::PyCapsule_New(
            managed as *mut c_void,
            DLTENSOR.as_ptr(),
            Some(capsule_destructor),
        )
    };
    if capsule.is_null() {
        // SAFETY: not handed to Python; freed once.
        unsafe { delete_managed(managed) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `PyCapsule_New` returned a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) })
}

/// `fastingest.read_chunks(..., device=...)`: fetch and upload overlapped.
pub fn read_to_device(
    py: Python<'_>,
    sources: Vec<String>,
    options: fastingest::ReadOptions,
    device: Device,
    upload: UploadOptions,
) -> PyResult<PyDeviceChunkSet> {
    let (layout, chunks) = run::block_on(py, async move {
        let target = gpu::target_for(device, upload.streams)?;
        gpu::read_chunks_to_device(&sources, &options, target, upload).await
    })?;
    Ok(PyDeviceChunkSet::new(layout, chunks))
}
