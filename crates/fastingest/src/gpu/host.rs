//! A device target in host memory. Each "stream" is a worker thread that runs
//! its copies in order, so the pipeline's pooling, ordering and overlap are
//! exercised exactly as on a GPU; only the copy itself is a `memcpy`.
//! It also serves `device="cpu"`.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use super::target::{
    check_copy, Device, DeviceMemory, DeviceTarget, KeptStaging, StagingBuffer, Ticket,
};
use crate::error::{Error, Result};

/// Device allocations are aligned like CUDA's (256 bytes).
const ALIGN: usize = 256;

/// Host memory standing in for device memory.
#[derive(Debug)]
pub struct HostMemory {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
}

// SAFETY: the allocation is plain memory; writers (copy workers) touch
// disjoint ranges, and readers wait for the copies first.
unsafe impl Send for HostMemory {}
unsafe impl Sync for HostMemory {}

impl HostMemory {
    fn new(len: usize) -> Result<Self> {
        let layout = Layout::from_size_align(len.max(1), ALIGN)
            .map_err(|e| Error::Device(format!("cannot allocate {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::Device(format!(
                "out of memory allocating {len} bytes"
            )));
        }
        Ok(HostMemory { ptr, len, layout })
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

impl DeviceMemory for HostMemory {
    fn ptr(&self) -> u64 {
        self.ptr as u64
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// A staging buffer in ordinary memory (the host target's, and the staging
/// tests').
pub(crate) struct HostStaging(pub(crate) Vec<u8>);

impl StagingBuffer for HostStaging {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0
    }
    fn as_slice(&self) -> &[u8] {
        &self.0
    }
    fn size(&self) -> usize {
        self.0.len()
    }
}

/// A raw pointer sent to a copy worker.
struct SendPtr(*mut u8);
// SAFETY: see `HostTarget::copy`: the pointee outlives the copy, and no one
// else touches those bytes until the copy's ticket completes.
unsafe impl Send for SendPtr {}

enum Job {
    Copy {
        src: SendPtr,
        dst: SendPtr,
        len: usize,
        done: mpsc::SyncSender<()>,
    },
    Barrier(mpsc::SyncSender<()>),
}

/// Staging bytes a host target keeps between uploads.
const KEPT_STAGING: usize = 64 << 20;

/// The host target: `streams` copy workers.
pub struct HostTarget {
    workers: Vec<mpsc::Sender<Job>>,
    kept: KeptStaging,
    /// The address ranges of the blocks `alloc_pinned` handed out, which
    /// stand in for page-locked memory (an entry outliving its block costs
    /// nothing here: a host copy reads any memory).
    pinned: std::sync::Mutex<Vec<std::ops::Range<usize>>>,
}

impl HostTarget {
    /// A target with `streams` copy workers (at least one).
    pub fn new(streams: usize) -> Self {
        let workers = (0..streams.max(1))
            .map(|i| {
                let (tx, rx) = mpsc::channel::<Job>();
                thread::Builder::new()
                    .name(format!("fastingest-copy-{i}"))
                    .spawn(move || {
                        for job in rx {
                            match job {
                                Job::Copy {
                                    src,
                                    dst,
                                    len,
                                    done,
                                } => {
                                    // SAFETY: both ranges are valid for `len`
                                    // bytes and do not overlap (staging vs arena).
                                    unsafe { std::ptr::copy_nonoverlapping(src.0, dst.0, len) };
                                    let _ = done.send(());
                                }
                                Job::Barrier(done) => {
                                    let _ = done.send(());
                                }
                            }
                        }
                    })
                    .map(|_| tx)
            })
            .collect::<std::io::Result<Vec<_>>>()
            // Without threads there are no streams; copies then run inline.
            .unwrap_or_default();
        HostTarget {
            workers,
            kept: KeptStaging::new(KEPT_STAGING),
            pinned: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Staging bytes kept for the next upload.
    pub fn kept_staging_bytes(&self) -> usize {
        self.kept.bytes()
    }
}

struct HostTicket(Option<mpsc::Receiver<()>>);

impl Ticket for HostTicket {
    fn wait(self: Box<Self>) -> Result<()> {
        match &self.0 {
            Some(rx) => rx
                .recv()
                .map_err(|_| Error::Device("a copy worker stopped".into())),
            None => Ok(()),
        }
    }
}

impl DeviceTarget for HostTarget {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn alloc(&self, len: usize) -> Result<Arc<dyn DeviceMemory>> {
        Ok(Arc::new(HostMemory::new(len)?))
    }

    fn alloc_staging(&self, len: usize) -> Result<Box<dyn StagingBuffer>> {
        match self.kept.take(len) {
            Some(kept) => Ok(kept),
            None => Ok(Box::new(HostStaging(vec![0; len]))),
        }
    }

    fn recycle_staging(&self, staging: Box<dyn StagingBuffer>) {
        self.kept.keep(staging);
    }

    fn streams(&self) -> usize {
        self.workers.len().max(1)
    }

    fn alloc_pinned(&self, len: usize) -> Result<Box<dyn StagingBuffer>> {
        let block = HostStaging(vec![0; len]);
        let start = block.0.as_ptr() as usize;
        self.pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(start..start + len);
        Ok(Box::new(block))
    }

    fn is_pinned(&self, bytes: &[u8]) -> bool {
        let (start, end) = (
            bytes.as_ptr() as usize,
            bytes.as_ptr() as usize + bytes.len(),
        );
        let blocks = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        blocks.iter().any(|b| b.start <= start && end <= b.end)
    }

    fn copy_pinned(
        &self,
        stream: usize,
        src: &[u8],
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>> {
        self.copy_from(
            stream,
            src.as_ptr().cast_mut(),
            src.len(),
            src.len(),
            dst,
            offset,
        )
    }

    fn copy(
        &self,
        stream: usize,
        staging: &mut dyn StagingBuffer,
        len: usize,
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>> {
        let src = staging.as_mut_slice();
        self.copy_from(stream, src.as_mut_ptr(), src.len(), len, dst, offset)
    }
    fn synchronize(&self) -> Result<()> {
        let mut waits = Vec::with_capacity(self.workers.len());
        for w in &self.workers {
            let (done, rx) = mpsc::sync_channel(1);
            w.send(Job::Barrier(done))
                .map_err(|_| Error::Device("a copy worker stopped".into()))?;
            waits.push(rx);
        }
        for rx in waits {
            rx.recv()
                .map_err(|_| Error::Device("a copy worker stopped".into()))?;
        }
        Ok(())
    }
}

impl HostTarget {
    /// A copy of `len` bytes from `src` (`room` bytes readable there) to
    /// `dst` at `offset` on worker `stream`.
    fn copy_from(
        &self,
        stream: usize,
        src: *mut u8,
        room: usize,
        len: usize,
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>> {
        check_copy(len, room, offset, dst.len())?;
        let dst_ptr = (dst.ptr() as *mut u8).wrapping_add(offset);
        let Some(worker) = self.workers.get(stream % self.workers.len().max(1)) else {
            // SAFETY: checked above that both ranges hold `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src, dst_ptr, len) };
            return Ok(Box::new(HostTicket(None)));
        };
        let (done, rx) = mpsc::sync_channel(1);
        worker
            .send(Job::Copy {
                src: SendPtr(src),
                dst: SendPtr(dst_ptr),
                len,
                done,
            })
            .map_err(|_| Error::Device("a copy worker stopped".into()))?;
        Ok(Box::new(HostTicket(Some(rx))))
    }
}
