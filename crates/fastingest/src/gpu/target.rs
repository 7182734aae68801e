//! What the upload pipeline needs from a device: memory to land in, pinned
//! host buffers to stage through, and asynchronous copies on streams.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// Where uploaded bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// Host memory (the pipeline's reference target).
    Cpu,
    /// A CUDA device, by ordinal.
    Cuda(usize),
}

impl FromStr for Device {
    type Err = Error;

    /// `"cpu"`, `"cuda"` (device 0), `"cuda:N"`, or `"N"`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "device {s:?}: expected \"cpu\", \"cuda\", \"cuda:N\" or a device number"
            ))
        };
        match s.trim() {
            "cpu" => Ok(Device::Cpu),
            "cuda" | "gpu" => Ok(Device::Cuda(0)),
            other => {
                let n = other.strip_prefix("cuda:").unwrap_or(other);
                n.parse().map(Device::Cuda).map_err(|_| bad())
            }
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// One allocation on the device; freed when dropped.
pub trait DeviceMemory: Send + Sync + fmt::Debug {
    /// The address of the first byte (a device pointer for CUDA).
    fn ptr(&self) -> u64;
    /// Its size in bytes.
    fn len(&self) -> usize;
    /// Whether it holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A page-locked host buffer that copies read from.
pub trait StagingBuffer: Send {
    /// The buffer, for the CPU to fill.
    fn as_mut_slice(&mut self) -> &mut [u8];
    /// The buffer, to read.
    fn as_slice(&self) -> &[u8];
    /// Its size in bytes.
    fn size(&self) -> usize;
}

/// A copy in flight; `wait` returns when its staging buffer may be reused.
pub trait Ticket: Send {
    /// Blocks until the copy is done.
    fn wait(self: Box<Self>) -> Result<()>;
}

/// A device the pipeline can upload to.
pub trait DeviceTarget: Send + Sync {
    /// Which device.
    fn device(&self) -> Device;
    /// Allocates `len` bytes on the device.
    fn alloc(&self, len: usize) -> Result<Arc<dyn DeviceMemory>>;
    /// A staging buffer of at least `len` bytes: one kept from an earlier
    /// upload where the target keeps them, else a new one.
    fn alloc_staging(&self, len: usize) -> Result<Box<dyn StagingBuffer>>;
    /// Takes back a staging buffer no copy reads any more, for a later
    /// upload (by default it is freed).
    fn recycle_staging(&self, staging: Box<dyn StagingBuffer>) {
        drop(staging);
    }
    /// A new page-locked host buffer of exactly `len` bytes, to hold a
    /// chunk set that is uploaded straight from it ([`super::pin_set`]).
    fn alloc_pinned(&self, len: usize) -> Result<Box<dyn StagingBuffer>>;
    /// Whether all of `bytes` lies in page-locked host memory that copies
    /// can read directly, with no staging.
    fn is_pinned(&self, bytes: &[u8]) -> bool;
    /// Starts copying `src`, which [`DeviceTarget::is_pinned`] accepted and
    /// which must stay untouched until the ticket completes, to `dst` at
    /// `offset`, on `stream`.
    fn copy_pinned(
        &self,
        stream: usize,
        src: &[u8],
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>>;
    /// How many copy streams there are (copies are spread round-robin).
    fn streams(&self) -> usize;
    /// Starts copying `staging[..len]` to `dst` at `offset`, on `stream`.
    ///
    /// The staging buffer must stay untouched until the ticket completes;
    /// `dst[offset..offset + len]` must be within the allocation.
    fn copy(
        &self,
        stream: usize,
        staging: &mut dyn StagingBuffer,
        len: usize,
        dst: &dyn DeviceMemory,
        offset: usize,
    ) -> Result<Box<dyn Ticket>>;
    /// Waits for every copy started so far.
    fn synchronize(&self) -> Result<()>;
}

/// Staging buffers a target keeps between uploads, up to a byte budget.
pub(crate) struct KeptStaging {
    budget: usize,
    kept: Mutex<Vec<Box<dyn StagingBuffer>>>,
}

impl KeptStaging {
    /// Keeps at most `budget` bytes of buffers.
    pub(crate) fn new(budget: usize) -> Self {
        KeptStaging {
            budget,
            kept: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Box<dyn StagingBuffer>>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The smallest kept buffer of at least `len` bytes.
    pub(crate) fn take(&self, len: usize) -> Option<Box<dyn StagingBuffer>> {
        let mut kept = self.lock();
        let at = (0..kept.len())
            .filter(|&i| kept[i].size() >= len)
            .min_by_key(|&i| kept[i].size())?;
        Some(kept.swap_remove(at))
    }

    /// Keeps `staging` if the budget has room for it (else frees it).
    pub(crate) fn keep(&self, staging: Box<dyn StagingBuffer>) {
        let mut kept = self.lock();
        let held: usize = kept.iter().map(|b| b.size()).sum();
        if held + staging.size() <= self.budget {
            kept.push(staging);
        }
    }

    /// Bytes kept now.
    pub(crate) fn bytes(&self) -> usize {
        self.lock().iter().map(|b| b.size()).sum()
    }
}

/// Checks a copy request against its buffers (every target does the same).
pub(crate) fn check_copy(len: usize, staging: usize, offset: usize, dst: usize) -> Result<()> {
    if len > staging || offset.checked_add(len).is_none_or(|end| end > dst) {
        return Err(Error::Device(format!(
            "copy of {len} bytes to offset {offset} does not fit (staging {staging}, destination {dst})"
        )));
    }
    Ok(())
}
