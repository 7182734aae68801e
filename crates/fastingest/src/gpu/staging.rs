//! The upload pipeline: chunks arrive (in any order, as their spans are
//! fetched), are copied into one of a bounded pool of pinned staging buffers,
//! and leave for the device on a copy stream while the next ones arrive.
//! A staging buffer is reused once its copy has completed, so host memory in
//! flight stays at `staging_buffers × staging_size` however large the read.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::target::{Device, DeviceMemory, DeviceTarget, StagingBuffer, Ticket};
use crate::error::{Error, Result};
use crate::parquet::chunks::{plan_chunks_fetched_next, ChunkLayout, ChunkSet};
use crate::pipeline::ReadOptions;

/// Tuning of the upload pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOptions {
    /// Bytes per staging buffer (a chunk larger than this is copied in parts).
    pub staging_size: usize,
    /// Staging buffers at most (allocated as needed, reused).
    pub staging_buffers: usize,
    /// Copy streams.
    pub streams: usize,
    /// Each chunk starts at a multiple of this in device memory.
    pub alignment: usize,
}

impl Default for UploadOptions {
    fn default() -> Self {
        // 8 MiB parts: large enough for full PCIe speed, small enough that
        // the first copy starts early; 4 buffers let two streams each have
        // one copy running and one being filled.
        UploadOptions {
            staging_size: 8 << 20,
            staging_buffers: 4,
            streams: 2,
            alignment: 256,
        }
    }
}

/// What an upload did, for tests and benchmarks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UploadReport {
    /// Bytes copied to the device.
    pub bytes: u64,
    /// Copies issued (a chunk larger than a staging buffer takes several).
    pub copies: u64,
    /// Staging buffers allocated (never more than the option allows).
    pub staging_allocated: usize,
    /// Times a copy had to wait for a staging buffer to come back.
    pub staging_waits: u64,
    /// Copies issued before the last chunk arrived: with a fetch still
    /// running, this shows the upload overlapping it.
    pub copies_before_last_arrival: u64,
    /// Seconds spent waiting for chunks to arrive.
    pub wait_for_data_s: f64,
    /// Seconds spent copying into staging buffers.
    pub staging_copy_s: f64,
    /// Seconds from the start to the end of the last copy.
    pub total_s: f64,
}

/// Chunks in device memory: one allocation, each chunk at its offset.
#[derive(Debug, Clone)]
pub struct DeviceChunks {
    /// Where the memory is.
    pub device: Device,
    /// The allocation holding every chunk.
    pub memory: Arc<dyn DeviceMemory>,
    /// Each chunk's offset in `memory`.
    pub offsets: Vec<usize>,
    /// Each chunk's length.
    pub lengths: Vec<usize>,
    /// How the upload went.
    pub report: UploadReport,
}

impl DeviceChunks {
    /// The device address of chunk `i`.
    pub fn ptr(&self, i: usize) -> u64 {
        self.memory.ptr() + self.offsets[i] as u64
    }
}

/// Offsets of `lengths` packed with `alignment`, and the total size.
fn pack(lengths: &[u64], alignment: usize) -> Result<(Vec<usize>, usize)> {
    let align = alignment.max(1);
    let mut offsets = Vec::with_capacity(lengths.len());
    let mut at = 0usize;
    for &len in lengths {
        let len = usize::try_from(len)
            .map_err(|_| Error::InvalidArgument(format!("chunk of {len} bytes is too large")))?;
        offsets.push(at);
        at = at
            .checked_add(len)
            .and_then(|e| e.checked_next_multiple_of(align))
            .ok_or_else(|| Error::InvalidArgument("chunks too large to upload".into()))?;
    }
    Ok((offsets, at))
}

/// Uploads chunks of `lengths` as they come from `arriving` (`(index,
/// bytes)`, any order, each once) to `target`; returns when all are on the
/// device and every copy has completed.
pub fn upload<I>(
    target: &dyn DeviceTarget,
    lengths: &[u64],
    arriving: I,
    options: &UploadOptions,
) -> Result<DeviceChunks>
where
    I: IntoIterator<Item = Result<(usize, Bytes)>>,
{
    if options.staging_size == 0 || options.staging_buffers == 0 {
        return Err(Error::InvalidArgument(
            "staging_size and staging_buffers must be positive".into(),
        ));
    }
    let started = Instant::now();
    let (offsets, total) = pack(lengths, options.alignment)?;
    let memory = target.alloc(total)?;
    // No staging buffer larger than the largest chunk: a small read does not
    // pin megabytes it never uses.
    let largest = lengths.iter().copied().max().unwrap_or(0) as usize;
    let mut pool = Pool::new(target, options.staging_size.min(largest.max(1)), options);
    let mut report = UploadReport::default();
    let mut seen = vec![false; lengths.len()];
    let mut arrivals = arriving.into_iter();
    loop {
        let waited = Instant::now();
        let Some(next) = arrivals.next() else { break };
        report.wait_for_data_s += waited.elapsed().as_secs_f64();
        let (i, bytes) = next?;
        if i >= lengths.len() || seen[i] || bytes.len() as u64 != lengths[i] {
            return Err(Error::InvalidArgument(format!(
                "chunk {i} arrived twice, out of range, or with {} bytes instead of its length",
                bytes.len()
            )));
        }
        seen[i] = true;
        report.copies_before_last_arrival = report.copies;
        for (part, piece) in bytes.chunks(pool.size).enumerate() {
            let mut buf = pool.take(&mut report)?;
            let staged = Instant::now();
            buf.as_mut_slice()[..piece.len()].copy_from_slice(piece);
            report.staging_copy_s += staged.elapsed().as_secs_f64();
            let stream = (report.copies as usize) % target.streams().max(1);
            let at = offsets[i] + part * pool.size;
            let ticket = target.copy(stream, buf.as_mut(), piece.len(), memory.as_ref(), at)?;
            pool.in_flight.push_back((buf, ticket));
            report.copies += 1;
            report.bytes += piece.len() as u64;
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(Error::InvalidArgument(format!(
            "chunk {missing} never arrived (the fetch ended early)"
        )));
    }
    pool.drain()?;
    target.synchronize()?;
    report.staging_allocated = pool.allocated;
    report.total_s = started.elapsed().as_secs_f64();
    Ok(DeviceChunks {
        device: target.device(),
        memory,
        offsets,
        lengths: lengths.iter().map(|&l| l as usize).collect(),
        report,
    })
}

/// Uploads a chunk set already in host memory.
pub fn upload_set(
    target: &dyn DeviceTarget,
    set: &ChunkSet,
    options: &UploadOptions,
) -> Result<DeviceChunks> {
    let lengths: Vec<u64> = set.bytes.iter().map(|b| b.len() as u64).collect();
    upload(
        target,
        &lengths,
        set.bytes.iter().cloned().enumerate().map(Ok),
        options,
    )
}

/// Reads the column chunks `options` select straight to `target`: each
/// chunk is staged and copied as soon as its span arrives, while later spans
/// are still being fetched.
pub async fn read_chunks_to_device(
    sources: &[String],
    options: &ReadOptions,
    target: Arc<dyn DeviceTarget>,
    upload_options: UploadOptions,
) -> Result<(ChunkLayout, DeviceChunks)> {
    let plan = plan_chunks_fetched_next(sources, options).await?;
    let (layout, mut arriving) = plan.fetch();
    let lengths: Vec<u64> = layout.chunks.iter().map(|c| c.length).collect();
    // Staging copies and waits for copies block: a thread of their own, fed
    // by the fetch running on the runtime.
    let chunks = tokio::task::spawn_blocking(move || {
        upload(
            target.as_ref(),
            &lengths,
            std::iter::from_fn(|| arriving.blocking_recv()),
            &upload_options,
        )
    })
    .await
    .map_err(|e| Error::Device(format!("the upload thread failed: {e}")))??;
    Ok((layout, chunks))
}

/// Staging buffers: free ones, and those whose copy may still be running
/// (oldest first).
struct Pool<'a> {
    target: &'a dyn DeviceTarget,
    size: usize,
    max: usize,
    allocated: usize,
    free: Vec<Box<dyn StagingBuffer>>,
    in_flight: VecDeque<(Box<dyn StagingBuffer>, Box<dyn Ticket>)>,
}

impl<'a> Pool<'a> {
    fn new(target: &'a dyn DeviceTarget, size: usize, options: &UploadOptions) -> Self {
        Pool {
            target,
            size,
            max: options.staging_buffers,
            allocated: 0,
            free: Vec::new(),
            in_flight: VecDeque::new(),
        }
    }

    /// A buffer to fill: a free one, a new one while under the limit, or the
    /// oldest in flight once its copy completes.
    fn take(&mut self, report: &mut UploadReport) -> Result<Box<dyn StagingBuffer>> {
        if let Some(b) = self.free.pop() {
            return Ok(b);
        }
        if self.allocated < self.max {
            self.allocated += 1;
            return self.target.alloc_staging(self.size);
        }
        let (buf, ticket) = self
            .in_flight
            .pop_front()
            .ok_or_else(|| Error::Device("staging pool is empty".into()))?;
        report.staging_waits += 1;
        ticket.wait()?;
        Ok(buf)
    }

    /// Waits for every copy in flight.
    fn drain(&mut self) -> Result<()> {
        while let Some((buf, ticket)) = self.in_flight.pop_front() {
            ticket.wait()?;
            self.free.push(buf);
        }
        Ok(())
    }
}

impl Drop for Pool<'_> {
    /// On an error, copies may still read from staging buffers: wait for
    /// them before the buffers are freed.
    fn drop(&mut self) {
        let _ = self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::host::HostTarget;
    use std::sync::mpsc;
    use std::time::Duration;

    fn read_back(chunks: &DeviceChunks, i: usize) -> Vec<u8> {
        // SAFETY: host target; the upload completed.
        unsafe {
            std::slice::from_raw_parts(chunks.ptr(i) as *const u8, chunks.lengths[i]).to_vec()
        }
    }

    fn data(n: usize, seed: u8) -> Bytes {
        Bytes::from(
            (0..n)
                .map(|i| (i as u8).wrapping_mul(31) ^ seed)
                .collect::<Vec<u8>>(),
        )
    }

    #[test]
    fn chunks_land_at_aligned_offsets_in_any_order() {
        let target = HostTarget::new(3);
        let sizes = [1000usize, 0, 70_000, 5, 300_000];
        let chunks: Vec<Bytes> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| data(n, i as u8))
            .collect();
        let lengths: Vec<u64> = sizes.iter().map(|&n| n as u64).collect();
        let order = [4usize, 0, 3, 1, 2];
        let options = UploadOptions {
            staging_size: 64 << 10,
            staging_buffers: 2,
            streams: 3,
            alignment: 256,
        };
        let arriving = order.iter().map(|&i| Ok((i, chunks[i].clone())));
        let up = upload(&target, &lengths, arriving, &options).unwrap();
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(up.offsets[i] % 256, 0);
            assert_eq!(read_back(&up, i), chunk.to_vec(), "chunk {i}");
        }
        // 300 000 bytes in 64 KiB parts = 5 copies, 70 000 = 2, others 1 each (0 bytes: none).
        assert_eq!(up.report.copies, 5 + 2 + 1 + 1);
        assert!(up.report.staging_allocated <= 2);
        assert!(
            up.report.staging_waits > 0,
            "9 copies through 2 buffers must wait"
        );
        assert_eq!(up.report.bytes, sizes.iter().sum::<usize>() as u64);
    }

    #[test]
    fn copies_start_before_the_last_chunk_arrives() {
        let target = HostTarget::new(2);
        let lengths = vec![1 << 20; 4];
        let (tx, rx) = mpsc::channel();
        let feeder = std::thread::spawn(move || {
            for i in 0..4 {
                tx.send(Ok((i, data(1 << 20, i as u8)))).unwrap();
                std::thread::sleep(Duration::from_millis(30));
            }
        });
        let up = upload(&target, &lengths, rx, &UploadOptions::default()).unwrap();
        feeder.join().unwrap();
        assert_eq!(up.report.copies_before_last_arrival, 3);
        assert!(up.report.wait_for_data_s > 0.05);
        for i in 0..4 {
            assert_eq!(read_back(&up, i), data(1 << 20, i as u8).to_vec());
        }
    }

    #[test]
    fn wrong_or_missing_chunks_are_errors() {
        let target = HostTarget::new(1);
        let opts = UploadOptions::default();
        let short = upload(&target, &[10], vec![Ok((0, data(9, 0)))], &opts);
        assert!(short
            .unwrap_err()
            .to_string()
            .contains("instead of its length"));
        let missing = upload(&target, &[10, 10], vec![Ok((0, data(10, 0)))], &opts);
        assert!(missing.unwrap_err().to_string().contains("never arrived"));
        let twice = upload(
            &target,
            &[10],
            vec![Ok((0, data(10, 0))), Ok((0, data(10, 0)))],
            &opts,
        );
        assert!(twice.is_err());
        let failed = upload(
            &target,
            &[10],
            vec![Err(Error::InvalidArgument("fetch failed".into()))],
            &opts,
        );
        assert!(failed.unwrap_err().to_string().contains("fetch failed"));
    }
}
