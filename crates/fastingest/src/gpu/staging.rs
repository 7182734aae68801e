//! The upload pipeline: chunks arrive (in any order, as their spans are
//! fetched), are cut into parts, and each part is copied into one of a
//! bounded pool of pinned staging buffers and leaves for the device on a copy
//! stream while the next parts are staged. A staging buffer is reused once
//! its copy has completed, so host memory in flight stays at
//! `staging_buffers × staging_size` however large the read.
//!
//! Why several staging threads: one thread copies into pinned memory at
//! ~9 GB/s, a fifth of what a PCIe 5 link moves, and that copy was most of
//! an upload's time (measured on an H100: 22.7 ms of 36 ms for 206 MB).
//! Why the target keeps its buffers between uploads: page-locking memory
//! costs about as much as copying it, and it was paid again on every call.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    /// Threads copying parts into staging buffers (at most one per buffer).
    pub staging_threads: usize,
    /// Each chunk starts at a multiple of this in device memory.
    pub alignment: usize,
}

impl Default for UploadOptions {
    fn default() -> Self {
        // 8 MiB parts: large enough for full PCIe speed, small enough that
        // the first copy starts early; two buffers per staging thread, so
        // each thread fills one while the other's copy runs.
        let threads = default_staging_threads();
        UploadOptions {
            staging_size: 8 << 20,
            staging_buffers: 2 * threads,
            streams: 2,
            staging_threads: threads,
            alignment: 256,
        }
    }
}

/// Staging threads by default: the cores, up to 8 (on an H200 machine,
/// copying into pinned memory ran at 10.5 GB/s on 1 thread, 21 on 4 and 36
/// on 8, against the link's 55).
fn default_staging_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// What an upload did, for tests and benchmarks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UploadReport {
    /// Bytes copied to the device.
    pub bytes: u64,
    /// Copies issued (a chunk larger than a staging buffer takes several).
    pub copies: u64,
    /// Staging buffers used (never more than the option allows; taken from
    /// the ones the target kept from earlier uploads where it can).
    pub staging_allocated: usize,
    /// Times a copy had to wait for a staging buffer to come back.
    pub staging_waits: u64,
    /// Copies issued before the last chunk arrived: with a fetch still
    /// running, this shows the upload overlapping it.
    pub copies_before_last_arrival: u64,
    /// Seconds spent waiting for chunks to arrive.
    pub wait_for_data_s: f64,
    /// Seconds spent copying into staging buffers, summed over the staging
    /// threads.
    pub staging_copy_s: f64,
    /// Staging threads used.
    pub staging_threads: usize,
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
    I::IntoIter: Send,
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
    let size = options.staging_size.min(largest.max(1));
    // No more threads than parts to copy, nor than buffers: a thread holds
    // one buffer at a time, so with at most one per buffer a thread that
    // finds none free always finds one in flight to wait for.
    let parts: usize = lengths.iter().map(|&l| (l as usize).div_ceil(size)).sum();
    let threads = options
        .staging_threads
        .min(options.staging_buffers)
        .min(parts)
        .max(1);
    let pool = Pool::new(target, size, options.staging_buffers);
    let uploader = Uploader {
        target,
        memory: memory.as_ref(),
        lengths,
        offsets: &offsets,
        size,
        pool: &pool,
        work: Mutex::new(Work {
            arrivals: arriving.into_iter(),
            exhausted: false,
            parts: VecDeque::new(),
            seen: vec![false; lengths.len()],
            wait_for_data: Duration::ZERO,
            copies_before_last_arrival: 0,
        }),
        copies: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        staging_nanos: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        failure: Mutex::new(None),
    };
    std::thread::scope(|scope| {
        for stream in 1..threads {
            let uploader = &uploader;
            scope.spawn(move || uploader.run(stream));
        }
        uploader.run(0);
    });
    if let Some(failure) = lock(&uploader.failure).take() {
        return Err(failure);
    }
    let work = uploader
        .work
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(missing) = work.seen.iter().position(|s| !s) {
        return Err(Error::InvalidArgument(format!(
            "chunk {missing} never arrived (the fetch ended early)"
        )));
    }
    pool.drain()?;
    target.synchronize()?;
    let report = UploadReport {
        bytes: uploader.bytes.into_inner(),
        copies: uploader.copies.into_inner(),
        staging_allocated: lock(&pool.state).allocated,
        staging_waits: pool.waits.load(Ordering::Relaxed),
        copies_before_last_arrival: work.copies_before_last_arrival,
        wait_for_data_s: work.wait_for_data.as_secs_f64(),
        staging_copy_s: Duration::from_nanos(uploader.staging_nanos.into_inner()).as_secs_f64(),
        staging_threads: threads,
        total_s: started.elapsed().as_secs_f64(),
    };
    Ok(DeviceChunks {
        device: target.device(),
        memory,
        offsets,
        lengths: lengths.iter().map(|&l| l as usize).collect(),
        report,
    })
}

/// A mutex's guard, whether or not a thread panicked holding it (the data
/// it guards stays consistent: counters and queues).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// One part of a chunk: at most a staging buffer's worth, and where it goes.
struct Part {
    bytes: Bytes,
    at: usize,
}

/// What the staging threads share under one lock: the arrivals, and the
/// parts cut from them that no thread has taken yet.
struct Work<I> {
    arrivals: I,
    exhausted: bool,
    parts: VecDeque<Part>,
    seen: Vec<bool>,
    wait_for_data: Duration,
    copies_before_last_arrival: u64,
}

/// One upload, run by every staging thread.
struct Uploader<'a, I> {
    target: &'a dyn DeviceTarget,
    memory: &'a dyn DeviceMemory,
    lengths: &'a [u64],
    offsets: &'a [usize],
    size: usize,
    pool: &'a Pool<'a>,
    work: Mutex<Work<I>>,
    copies: AtomicU64,
    bytes: AtomicU64,
    staging_nanos: AtomicU64,
    /// Set by the first thread that fails; the others stop at their next part.
    failed: AtomicBool,
    failure: Mutex<Option<Error>>,
}

impl<I> Uploader<'_, I>
where
    I: Iterator<Item = Result<(usize, Bytes)>>,
{
    /// Stages and copies parts until there are none left (or one thread
    /// failed), issuing copies on `stream`.
    fn run(&self, stream: usize) {
        while !self.failed.load(Ordering::Relaxed) {
            let part = match self.next_part() {
                Ok(Some(part)) => part,
                Ok(None) => return,
                Err(e) => return self.fail(e),
            };
            if let Err(e) = self.send(stream, part) {
                return self.fail(e);
            }
        }
    }

    fn fail(&self, error: Error) {
        self.failed.store(true, Ordering::Relaxed);
        lock(&self.failure).get_or_insert(error);
    }

    /// The next part to copy: one already cut, or the first of the next
    /// chunk to arrive (waited for with the lock held: the other threads
    /// have nothing to do until it comes).
    fn next_part(&self) -> Result<Option<Part>> {
        let mut work = lock(&self.work);
        loop {
            if let Some(part) = work.parts.pop_front() {
                return Ok(Some(part));
            }
            if work.exhausted || self.failed.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let waited = Instant::now();
            let next = work.arrivals.next();
            work.wait_for_data += waited.elapsed();
            let Some(next) = next else {
                work.exhausted = true;
                return Ok(None);
            };
            let (i, bytes) = next?;
            if i >= self.lengths.len() || work.seen[i] || bytes.len() as u64 != self.lengths[i] {
                return Err(Error::InvalidArgument(format!(
                    "chunk {i} arrived twice, out of range, or with {} bytes instead of its length",
                    bytes.len()
                )));
            }
            work.seen[i] = true;
            work.copies_before_last_arrival = self.copies.load(Ordering::Relaxed);
            let mut at = 0;
            while at < bytes.len() {
                let end = (at + self.size).min(bytes.len());
                work.parts.push_back(Part {
                    bytes: bytes.slice(at..end),
                    at: self.offsets[i] + at,
                });
                at = end;
            }
        }
    }

    /// Stages `part` and starts its copy on `stream`.
    fn send(&self, stream: usize, part: Part) -> Result<()> {
        let mut buf = self.pool.take()?;
        let staged = Instant::now();
        buf.as_mut_slice()[..part.bytes.len()].copy_from_slice(&part.bytes);
        let nanos = u64::try_from(staged.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.staging_nanos.fetch_add(nanos, Ordering::Relaxed);
        let stream = stream % self.target.streams().max(1);
        let ticket = self
            .target
            .copy(stream, buf.as_mut(), part.bytes.len(), self.memory, part.at);
        match ticket {
            Ok(ticket) => lock(&self.pool.state).in_flight.push_back((buf, ticket)),
            Err(e) => {
                // Nothing reads the buffer: it may be handed out again.
                lock(&self.pool.state).free.push(buf);
                return Err(e);
            }
        }
        self.copies.fetch_add(1, Ordering::Relaxed);
        self.bytes
            .fetch_add(part.bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Uploads a chunk set already in host memory: straight from it when all
/// of it is page-locked (a set from [`pin_set`]), else through staging.
pub fn upload_set(
    target: &dyn DeviceTarget,
    set: &ChunkSet,
    options: &UploadOptions,
) -> Result<DeviceChunks> {
    let lengths: Vec<u64> = set.bytes.iter().map(|b| b.len() as u64).collect();
    if !set.bytes.is_empty()
        && set
            .bytes
            .iter()
            .all(|b| b.is_empty() || target.is_pinned(b))
    {
        return upload_pinned(target, set, &lengths, options);
    }
    upload(
        target,
        &lengths,
        set.bytes.iter().cloned().enumerate().map(Ok),
        options,
    )
}

/// [`upload_set`] of a page-locked set: one copy per chunk, spread over the
/// streams, with no staging.
fn upload_pinned(
    target: &dyn DeviceTarget,
    set: &ChunkSet,
    lengths: &[u64],
    options: &UploadOptions,
) -> Result<DeviceChunks> {
    let started = Instant::now();
    let (offsets, total) = pack(lengths, options.alignment)?;
    let memory = target.alloc(total)?;
    let mut tickets = Vec::with_capacity(set.bytes.len());
    let mut report = UploadReport::default();
    let waited = |tickets: Vec<Box<dyn Ticket>>| tickets.into_iter().try_for_each(|t| t.wait());
    for (i, bytes) in set.bytes.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
        let stream = i % target.streams().max(1);
        match target.copy_pinned(stream, bytes, memory.as_ref(), offsets[i]) {
            Ok(ticket) => tickets.push(ticket),
            Err(e) => {
                // Copies already started read the set: let them finish.
                let _ = waited(tickets);
                return Err(e);
            }
        }
        report.copies += 1;
        report.bytes += bytes.len() as u64;
    }
    waited(tickets)?;
    target.synchronize()?;
    report.total_s = started.elapsed().as_secs_f64();
    Ok(DeviceChunks {
        device: target.device(),
        memory,
        offsets,
        lengths: lengths.iter().map(|&l| l as usize).collect(),
        report,
    })
}

/// A copy of `set` whose bytes lie in one page-locked block of `target`'s
/// (copied on up to `threads` threads), so that [`upload_set`] copies it to
/// the device straight from there, as fast as the link goes: for a set
/// uploaded more than once, or read ahead of its upload. The block is freed
/// when the last of its chunks is dropped.
pub fn pin_set(target: &dyn DeviceTarget, set: &ChunkSet, threads: usize) -> Result<ChunkSet> {
    /// Parts copied by one thread at a time.
    const PART: usize = 8 << 20;
    let lengths: Vec<u64> = set.bytes.iter().map(|b| b.len() as u64).collect();
    let (offsets, total) = pack(&lengths, 64)?;
    let mut block = target.alloc_pinned(total)?;
    {
        // Each chunk's bytes and its room in the block, cut into parts.
        let mut parts: Vec<(&[u8], &mut [u8])> = Vec::new();
        let mut rest = block.as_mut_slice();
        let mut at = 0;
        for (bytes, &offset) in set.bytes.iter().zip(&offsets) {
            let (_, room) = std::mem::take(&mut rest).split_at_mut(offset - at);
            let (room, after) = room.split_at_mut(bytes.len());
            rest = after;
            at = offset + bytes.len();
            parts.extend(bytes.chunks(PART).zip(room.chunks_mut(PART)));
        }
        let threads = threads.clamp(1, parts.len().max(1));
        let mut shares: Vec<Vec<(&[u8], &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, part) in parts.into_iter().enumerate() {
            shares[k % threads].push(part);
        }
        std::thread::scope(|scope| {
            for share in shares {
                scope.spawn(move || {
                    for (src, dst) in share {
                        dst.copy_from_slice(src);
                    }
                });
            }
        });
    }
    let block = Bytes::from_owner(PinnedBlock(block));
    let bytes = offsets
        .iter()
        .zip(&set.bytes)
        .map(|(&offset, b)| block.slice(offset..offset + b.len()))
        .collect();
    Ok(ChunkSet {
        layout: set.layout.clone(),
        bytes,
    })
}

/// A page-locked block as the owner of [`Bytes`].
struct PinnedBlock(Box<dyn StagingBuffer>);

impl AsRef<[u8]> for PinnedBlock {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
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
    // Staging copies and waits for copies block: threads of their own, fed
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

/// Staging buffers, shared by the staging threads: free ones, and those
/// whose copy may still be running (oldest first).
struct Pool<'a> {
    target: &'a dyn DeviceTarget,
    size: usize,
    max: usize,
    state: Mutex<PoolState>,
    waits: AtomicU64,
}

#[derive(Default)]
struct PoolState {
    allocated: usize,
    free: Vec<Box<dyn StagingBuffer>>,
    in_flight: VecDeque<(Box<dyn StagingBuffer>, Box<dyn Ticket>)>,
}

impl<'a> Pool<'a> {
    fn new(target: &'a dyn DeviceTarget, size: usize, max: usize) -> Self {
        Pool {
            target,
            size,
            max,
            state: Mutex::new(PoolState::default()),
            waits: AtomicU64::new(0),
        }
    }

    /// A buffer to fill: a free one, a new one while under the limit, or the
    /// oldest in flight once its copy completes (waited for without the
    /// lock, so the other threads go on meanwhile).
    fn take(&self) -> Result<Box<dyn StagingBuffer>> {
        let oldest = {
            let mut state = lock(&self.state);
            if let Some(b) = state.free.pop() {
                return Ok(b);
            }
            if state.allocated < self.max {
                state.allocated += 1;
                drop(state);
                return self.target.alloc_staging(self.size);
            }
            state.in_flight.pop_front()
        };
        let (buf, ticket) = oldest.ok_or_else(|| Error::Device("staging pool is empty".into()))?;
        self.waits.fetch_add(1, Ordering::Relaxed);
        ticket.wait()?;
        Ok(buf)
    }

    /// Waits for every copy in flight.
    fn drain(&self) -> Result<()> {
        loop {
            let Some((buf, ticket)) = lock(&self.state).in_flight.pop_front() else {
                return Ok(());
            };
            ticket.wait()?;
            lock(&self.state).free.push(buf);
        }
    }
}

impl Drop for Pool<'_> {
    /// On an error, copies may still read from staging buffers: wait for
    /// them before the buffers are freed. Buffers no copy reads go back to
    /// the target for the next upload.
    fn drop(&mut self) {
        let _ = self.drain();
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for buf in state.free.drain(..) {
            self.target.recycle_staging(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::host::{HostStaging, HostTarget};
    use crate::gpu::target::KeptStaging;
    use crate::parquet::chunks::ChunkLayout;
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
            staging_threads: 2,
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
    fn parts_spread_over_staging_threads_land_where_they_belong() {
        let target = HostTarget::new(2);
        let sizes = [3 << 20, 1, 700_000, (5 << 20) + 3, 0, 64 << 10];
        let chunks: Vec<Bytes> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| data(n, 7 * i as u8))
            .collect();
        let lengths: Vec<u64> = sizes.iter().map(|&n| n as u64).collect();
        let options = UploadOptions {
            staging_size: 256 << 10,
            staging_buffers: 6,
            streams: 2,
            staging_threads: 4,
            alignment: 512,
        };
        let arriving = chunks.iter().cloned().enumerate().rev().map(Ok);
        let up = upload(&target, &lengths, arriving, &options).unwrap();
        assert_eq!(up.report.staging_threads, 4);
        assert!(up.report.staging_allocated <= 6);
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(up.offsets[i] % 512, 0);
            assert_eq!(read_back(&up, i), chunk.to_vec(), "chunk {i}");
        }
        let parts: usize = sizes.iter().map(|n| n.div_ceil(256 << 10)).sum();
        assert_eq!(up.report.copies, parts as u64);
        assert_eq!(up.report.bytes, sizes.iter().sum::<usize>() as u64);
    }

    #[test]
    fn staging_buffers_are_kept_for_the_next_upload_within_a_budget() {
        let target = HostTarget::new(2);
        let lengths = vec![1 << 20; 6];
        let options = UploadOptions {
            staging_size: 256 << 10,
            staging_buffers: 3,
            staging_threads: 3,
            ..UploadOptions::default()
        };
        let arriving = || (0..6).map(|i| Ok((i, data(1 << 20, i as u8))));
        let first = upload(&target, &lengths, arriving(), &options).unwrap();
        let kept = target.kept_staging_bytes();
        assert_eq!(kept, first.report.staging_allocated * (256 << 10));
        let second = upload(&target, &lengths, arriving(), &options).unwrap();
        // The second upload took the kept buffers instead of new ones: as
        // many are kept after it as before.
        assert_eq!(target.kept_staging_bytes(), kept);
        for i in 0..6 {
            assert_eq!(read_back(&second, i), data(1 << 20, i as u8).to_vec());
        }
        let budget = KeptStaging::new(10);
        budget.keep(Box::new(HostStaging(vec![0; 4])));
        budget.keep(Box::new(HostStaging(vec![0; 8]))); // over the budget: freed
        budget.keep(Box::new(HostStaging(vec![0; 6])));
        assert_eq!(budget.bytes(), 10);
        assert!(budget.take(7).is_none());
        assert_eq!(
            budget.take(5).map(|b| b.size()),
            Some(6),
            "the smallest that fits"
        );
        assert_eq!(budget.take(1).map(|b| b.size()), Some(4));
    }

    #[test]
    fn a_pinned_set_is_uploaded_straight_from_its_block() {
        let target = HostTarget::new(2);
        let sizes = [(9 << 20) + 5, 0, 1, 300_000, 64];
        let set = ChunkSet {
            layout: ChunkLayout::default(),
            bytes: sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| data(n, 3 * i as u8))
                .collect(),
        };
        let options = UploadOptions::default();
        let staged = upload_set(&target, &set, &options).unwrap();
        assert!(
            staged.report.staging_allocated > 0,
            "ordinary memory is staged"
        );
        let pinned = pin_set(&target, &set, 3).unwrap();
        assert_eq!(pinned.bytes, set.bytes);
        assert!(pinned
            .bytes
            .iter()
            .all(|b| target.is_pinned(b) || b.is_empty()));
        let direct = upload_set(&target, &pinned, &options).unwrap();
        assert_eq!(direct.report.staging_allocated, 0);
        assert_eq!(direct.report.copies, 4, "one copy per chunk that has bytes");
        for (i, chunk) in set.bytes.iter().enumerate() {
            assert_eq!(direct.offsets[i] % 256, 0);
            assert_eq!(read_back(&direct, i), chunk.to_vec(), "chunk {i}");
        }
        // A chunk of the set in ordinary memory: the whole set is staged.
        let mut mixed = pinned.clone();
        mixed.bytes[3] = set.bytes[3].clone();
        let staged = upload_set(&target, &mixed, &options).unwrap();
        assert!(staged.report.staging_allocated > 0);
        assert_eq!(read_back(&staged, 0), set.bytes[0].to_vec());
    }

    #[test]
    fn a_failed_arrival_stops_every_staging_thread() {
        let target = HostTarget::new(2);
        let lengths = vec![2 << 20; 8];
        let options = UploadOptions {
            staging_size: 128 << 10,
            staging_buffers: 4,
            staging_threads: 4,
            ..UploadOptions::default()
        };
        let arriving = (0..8).map(|i| {
            if i == 5 {
                Err(Error::InvalidArgument("fetch failed at chunk 5".into()))
            } else {
                Ok((i, data(2 << 20, i as u8)))
            }
        });
        let err = upload(&target, &lengths, arriving, &options).unwrap_err();
        assert!(err.to_string().contains("fetch failed at chunk 5"), "{err}");
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
