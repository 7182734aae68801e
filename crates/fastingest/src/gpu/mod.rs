//! Moving column-chunk bytes into device memory: a bounded pool of pinned
//! staging buffers, several copy streams, and copies that start while later
//! chunks are still on the network.
//!
//! [`staging`] is the pipeline, written against the [`DeviceTarget`] trait;
//! [`host`] is a target in host memory (copies on worker threads standing in
//! for streams), which is how the pipeline is tested on machines without a
//! GPU; `cuda` (feature `cuda`) is the CUDA target through cudarc, with
//! libcuda loaded at run time.

pub mod host;
pub mod staging;
pub mod target;

#[cfg(feature = "cuda")]
pub mod cuda;

pub use staging::{
    pin_set, read_chunks_to_device, upload, upload_set, DeviceChunks, UploadOptions, UploadReport,
};
pub use target::{Device, DeviceMemory, DeviceTarget, StagingBuffer, Ticket};

use std::sync::Arc;

use crate::error::Result;

/// Whether CUDA uploads can run here: built with the `cuda` feature, libcuda
/// present, and at least one device.
pub fn cuda_available() -> bool {
    cuda_device_count().map(|n| n > 0).unwrap_or(false)
}

/// Number of CUDA devices (an error says why there are none to use).
pub fn cuda_device_count() -> Result<usize> {
    #[cfg(feature = "cuda")]
    {
        cuda::device_count()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(crate::error::Error::Unavailable(
            "this build of fastingest has no CUDA support (built without the `cuda` feature)"
                .into(),
        ))
    }
}

/// The target for `device`, with `streams` copy streams. A CUDA target is
/// made once per device and stream count and kept for the process: its
/// streams and pinned staging buffers then serve every later upload.
pub fn target_for(device: Device, streams: usize) -> Result<Arc<dyn DeviceTarget>> {
    match device {
        Device::Cpu => Ok(Arc::new(host::HostTarget::new(streams))),
        #[cfg(feature = "cuda")]
        Device::Cuda(ordinal) => Ok(kept_cuda_target(ordinal, streams)?),
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => Err(crate::error::Error::Unavailable(
            "CUDA uploads need fastingest built with the `cuda` feature".into(),
        )),
    }
}

/// The CUDA target for `ordinal` and `streams`, made on first use.
#[cfg(feature = "cuda")]
fn kept_cuda_target(ordinal: usize, streams: usize) -> Result<Arc<cuda::CudaTarget>> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Targets = HashMap<(usize, usize), Arc<cuda::CudaTarget>>;
    static KEPT: Mutex<Option<(u32, Targets)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if kept.as_ref().is_some_and(|(owner, _)| *owner != pid) {
        // A forked child: the parent's CUDA objects mean nothing here, and
        // releasing them through the driver is not safe either.
        std::mem::forget(kept.take());
    }
    let (_, targets) = kept.get_or_insert_with(|| (pid, HashMap::new()));
    if let Some(target) = targets.get(&(ordinal, streams)) {
        return Ok(Arc::clone(target));
    }
    let target = Arc::new(cuda::CudaTarget::new(ordinal, streams)?);
    targets.insert((ordinal, streams), Arc::clone(&target));
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_and_print() {
        assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
        assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda(0));
        assert_eq!("cuda:3".parse::<Device>().unwrap(), Device::Cuda(3));
        assert_eq!("1".parse::<Device>().unwrap(), Device::Cuda(1));
        assert!("tpu".parse::<Device>().is_err());
        assert_eq!(Device::Cuda(2).to_string(), "cuda:2");
    }

    /// Without a GPU (CI), asking for one is an error, never a panic.
    #[test]
    fn cuda_without_a_gpu_is_an_error() {
        if cuda_available() {
            return; // a GPU machine: covered by the Python GPU tests
        }
        let err = target_for(Device::Cuda(0), 2).err().expect("no GPU here");
        assert!(matches!(
            err,
            crate::error::Error::Unavailable(_) | crate::error::Error::InvalidArgument(_)
        ));
    }
}
