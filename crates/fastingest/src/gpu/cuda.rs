//! The CUDA target, through cudarc with libcuda loaded at run time.
//!
//! cudarc panics on any driver call when libcuda cannot be loaded, so every
//! entry point checks `is_culib_present` first and turns its absence into
//! `Error::Unavailable`. Staging buffers are page-locked (`cuMemHostAlloc`)
//! and kept for later uploads (page-locking costs about what copying does),
//! copies are `cuMemcpyHtoDAsync` on the target's streams, and each copy's
//! completion is an event the pipeline waits on before reusing its buffer.

use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream, DriverError};

use super::target::{
    check_copy, Device, DeviceMemory, DeviceTarget, KeptStaging, StagingBuffer, Ticket,
};
use crate::error::{Error, Result};

fn device_error(what: &str) -> impl Fn(DriverError) -> Error + '_ {
    move |e| Error::Device(format!("CUDA {what} failed: {e}"))
}

/// Number of CUDA devices, or why CUDA cannot be used.
pub fn device_count() -> Result<usize> {
    // SAFETY: only tries to load the driver library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::Unavailable(
            "no CUDA driver found (libcuda could not be loaded); is this a GPU machine?".into(),
        ));
    }
    let n = CudaContext::device_count()
        .map_err(|e| Error::Unavailable(format!("the CUDA driver is present but unusable: {e}")))?;
    Ok(n.max(0) as usize)
}

/// Pinned staging bytes a target keeps between uploads (the default pool,
/// 2 buffers of 8 MiB per staging thread, is at most 128 MiB).
const KEPT_STAGING: usize = 256 << 20;

/// Uploads to one CUDA device.
pub struct CudaTarget {
    ordinal: usize,
    ctx: Arc<CudaContext>,
    streams: Vec<Arc<CudaStream>>,
    kept: KeptStaging,
}

impl CudaTarget {
    /// A target on device `ordinal` with `streams` copy streams.
    pub fn new(ordinal: usize, streams: usize) -> Result<Self> {
        let n = device_count()?;
        if n == 0 {
            return Err(Error::Unavailable(
                "the CUDA driver reports no devices".into(),
            ));
        }
        if ordinal >= n {
            return Err(Error::InvalidArgument(format!(
                "device cuda:{ordinal} does not exist (this machine has {n})"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(device_error("context creation"))?;
        let streams = (0..streams.max(1))
            .map(|_| ctx.new_stream().map_err(device_error("stream creation")))
            .collect::<Result<Vec<_>>>()?;
        Ok(CudaTarget {
            ordinal,
            ctx,
            streams,
            kept: KeptStaging::new(KEPT_STAGING),
        })
    }
}

impl CudaTarget {
    /// A new page-locked host buffer of `len` bytes (flags 0: cacheable, so
    /// the CPU writes into it at memory speed).
    fn page_locked(&self, len: usize) -> Result<Box<dyn StagingBuffer>> {
        self.ctx
            .bind_to_thread()
            .map_err(device_error("binding the context"))?;
        // SAFETY: a plain page-locked allocation; a zero-byte one is
        // rounded up.
        let ptr = unsafe { result::malloc_host(len.max(1), 0) }
            .map_err(device_error("pinned host allocation"))?;
        Ok(Box::new(PinnedStaging {
            ptr: ptr.cast(),
            len,
            ctx: Arc::clone(&self.ctx),
        }))
    }

    /// Starts copying page-locked `src` to `dst` at `offset` on `stream`;
    /// the ticket completes with the copy.
    fn copy_from(
        &self,
        stream: usize,
        src: &[u8],
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>> {
        check_copy(src.len(), src.len(), offset, dst.len())?;
        let stream = &self.streams[stream % self.streams.len()];
        self.ctx
            .bind_to_thread()
            .map_err(device_error("binding the context"))?;
        // SAFETY: `src` is page-locked and stays untouched until the ticket
        // completes (both callers' contracts); the destination range was
        // checked to lie within the allocation.
        unsafe { result::memcpy_htod_async(dst.ptr() + offset as u64, src, stream.cu_stream()) }
            .map_err(device_error("host-to-device copy"))?;
        let event = self
            .ctx
            .new_event(None)
            .map_err(device_error("event creation"))?;
        event.record(stream).map_err(device_error("event record"))?;
        Ok(Box::new(CudaTicket(event)))
    }
}

/// A device allocation, freed on drop.
#[derive(Debug)]
struct CudaMemory {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl Drop for CudaMemory {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by `cuMemAlloc` in this context, freed once.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}

impl DeviceMemory for CudaMemory {
    fn ptr(&self) -> u64 {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// A page-locked host buffer, freed on drop.
struct PinnedStaging {
    ptr: *mut u8,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: plain host memory owned by this value.
unsafe impl Send for PinnedStaging {}

impl StagingBuffer for PinnedStaging {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes allocated by `cuMemHostAlloc`, owned here.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    fn as_slice(&self) -> &[u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn size(&self) -> usize {
        self.len
    }
}

impl Drop for PinnedStaging {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by `cuMemHostAlloc`; the pipeline waits for
            // copies reading it before dropping it.
            let _ = unsafe { result::free_host(self.ptr.cast()) };
        }
    }
}

struct CudaTicket(CudaEvent);

impl Ticket for CudaTicket {
    fn wait(self: Box<Self>) -> Result<()> {
        self.0
            .synchronize()
            .map_err(device_error("waiting for a copy"))
    }
}

impl DeviceTarget for CudaTarget {
    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn alloc(&self, len: usize) -> Result<Arc<dyn DeviceMemory>> {
        self.ctx
            .bind_to_thread()
            .map_err(device_error("binding the context"))?;
        // SAFETY: a plain allocation; a zero-byte request is rounded up.
        let ptr = unsafe { result::malloc_sync(len.max(1)) }.map_err(|e| {
            Error::Device(format!(
                "cannot allocate {len} bytes on cuda:{}: {e}",
                self.ordinal
            ))
        })?;
        Ok(Arc::new(CudaMemory {
            ptr,
            len,
            ctx: Arc::clone(&self.ctx),
        }))
    }

    fn alloc_pinned(&self, len: usize) -> Result<Box<dyn StagingBuffer>> {
        self.page_locked(len)
    }

    fn is_pinned(&self, bytes: &[u8]) -> bool {
        let host_memory = |at: *const u8| {
            let mut kind = 0u32;
            // SAFETY: asks the driver what memory an address lies in;
            // `kind` is the `CUmemorytype` the attribute is.
            let asked = unsafe {
                sys::cuPointerGetAttribute(
                    (&mut kind as *mut u32).cast(),
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    at as sys::CUdeviceptr,
                )
            };
            asked == sys::CUresult::CUDA_SUCCESS
                && kind == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
        };
        !bytes.is_empty()
            && self.ctx.bind_to_thread().is_ok()
            && host_memory(bytes.as_ptr())
            && host_memory(bytes.as_ptr().wrapping_add(bytes.len() - 1))
    }

    fn copy_pinned(
        &self,
        stream: usize,
        src: &[u8],
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>> {
        // `src` is page-locked (`is_pinned`); the caller keeps it untouched
        // until the ticket completes.
        self.copy_from(stream, src, dst, offset)
    }

    fn alloc_staging(&self, len: usize) -> Result<Box<dyn StagingBuffer>> {
        match self.kept.take(len) {
            Some(kept) => Ok(kept),
            None => self.page_locked(len),
        }
    }

    fn recycle_staging(&self, staging: Box<dyn StagingBuffer>) {
        self.kept.keep(staging);
    }

    fn streams(&self) -> usize {
        self.streams.len()
    }

    fn copy(
        &self,
        stream: usize,
        staging: &mut dyn StagingBuffer,
        len: usize,
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>> {
        let src = staging.as_slice();
        check_copy(len, src.len(), offset, dst.len())?;
        // The staging buffer stays untouched until the ticket completes
        // (the pipeline's contract).
        self.copy_from(stream, &src[..len], dst, offset)
    }

    fn synchronize(&self) -> Result<()> {
        for s in &self.streams {
            s.synchronize()
                .map_err(device_error("stream synchronisation"))?;
        }
        Ok(())
    }
}
