//! Local files read through a memory mapping: the page cache's own pages are
//! the fetched bytes, so a read neither faults in fresh buffers nor copies
//! out of the page cache (on a warm page cache that was a fifth of a read).
//!
//! The hazard of a mapping is a file cut short while it is mapped: touching
//! a page past the new end raises `SIGBUS`, which kills the process. So a
//! handler (installed with the first mapping, and put back in place with
//! each later one should something have replaced it) maps a page of zeros
//! over a lost page of one of *our* mappings, marks that file damaged and
//! lets the decoder go on; the read then fails naming the file
//! ([`MappedFile::damaged`], checked by the pipeline after each unit). A
//! fault anywhere else goes to the handler that was there before ours (or
//! kills the process), as if ours had never been installed.
//!
//! Mapped bytes never reach the user: decoded batches that still point into
//! a mapping are copied out ([`MappedFile::detach_batch`]), and raw chunks
//! are copied ([`MappedFile::detach_bytes`]).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::{make_array, Array, ArrayRef, RecordBatch};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_schema::ArrowError;
use bytes::Bytes;

/// Mappings registered with the `SIGBUS` handler at once; a file opened when
/// all are taken is read with `pread` instead.
const SLOTS: usize = 256;

/// At most one page in this many of a range may be missing from the page
/// cache for the range to be mapped (see [`MappedFile::resident`]).
const MOST_PAGES_MISSING: usize = 32;

/// The pages of a longer range that [`MappedFile::resident`] asks about.
const SAMPLED_PAGES: usize = 64;

/// One registered mapping, as the signal handler sees it (atomics only: the
/// handler may not lock).
struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    /// Address of the mapping's `AtomicBool` damage flag (kept alive by the
    /// mapping while the slot is registered).
    flag: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    flag: AtomicUsize::new(0),
};
static REGISTRY: [Slot; SLOTS] = [FREE; SLOTS];

/// The page size, once mapping is known to work here (0 until then).
static PAGE: AtomicUsize = AtomicUsize::new(0);

/// What handled `SIGBUS` before ours, for faults that are not ours (a
/// leaked copy: replaced, rarely, when ours is installed again).
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());

/// Whether files can be mapped here: Linux (where the `SIGBUS` handler is
/// written and tested). Elsewhere files are read with `pread`.
#[cfg(not(target_os = "linux"))]
fn supported() -> bool {
    false
}

#[cfg(target_os = "linux")]
fn supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let ok = page > 0;
        if ok {
            PAGE.store(page as usize, Ordering::Release);
        }
        ok
    })
}

fn page_size() -> usize {
    PAGE.load(Ordering::Acquire).max(4096)
}

/// Makes sure ours is the process's `SIGBUS` handler, as each file is
/// mapped: something installed after ours (Python's `faulthandler.enable()`,
/// say) would otherwise get our faults, and kill the process. What it
/// replaces becomes the handler that faults not ours go to.
#[cfg(target_os = "linux")]
fn handler_in_place() -> bool {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|p| p.into_inner());
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) != 0 {
            return false;
        }
        if current.sa_sigaction == on_sigbus as *const () as usize {
            return true;
        }
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_sigbus as *const () as usize;
        ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        libc::sigemptyset(&mut ours.sa_mask);
        // Published before ours goes in, so the handler always finds it.
        let previous = Box::into_raw(Box::new(current));
        PREVIOUS.store(previous, Ordering::Release);
        libc::sigaction(libc::SIGBUS, &ours, std::ptr::null_mut()) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn handler_in_place() -> bool {
    false
}

/// The handler: async-signal-safe (atomic loads, `mmap`, `sigaction`).
#[cfg(target_os = "linux")]
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // A fault (not a `kill`): its address is where the access went.
    let fault = unsafe { (*info).si_code } > 0;
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in REGISTRY.iter().filter(|_| fault) {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || addr < start || addr >= slot.end.load(Ordering::Acquire) {
            continue;
        }
        // A page of ours the file no longer has: zeros in its place.
        let page = addr & !(page_size() - 1);
        let zeros = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                page_size(),
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            let flag = slot.flag.load(Ordering::Acquire);
            if flag != 0 {
                unsafe { &*(flag as *const AtomicBool) }.store(true, Ordering::Release);
            }
            return;
        }
    }
    // Not ours. A fault goes to the handler before ours, as if we were never
    // there: it happens again when this returns, and that handler gets it. A
    // `SIGBUS` sent by `kill` or `raise` takes the default action (sending it
    // on could bounce between ours and a handler that calls the one it
    // replaced, such as `faulthandler` installed after ours).
    unsafe {
        let previous = PREVIOUS.load(Ordering::Acquire);
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let restore = match previous.is_null() || !fault {
            true => &default,
            false => &*previous,
        };
        libc::sigaction(libc::SIGBUS, restore, std::ptr::null_mut());
        if !fault {
            libc::raise(sig);
        }
    }
}

/// The error of a read whose file was cut short under its mapping.
pub(crate) fn cut_short_error(location: &str, range: Option<Range<u64>>) -> crate::error::Error {
    crate::error::Error::Io {
        location: location.to_string(),
        range,
        attempts: 1,
        detail: "the file was cut short while it was being read".into(),
        timed_out: false,
        cause: None,
    }
}

/// A local file mapped whole, read-only, and registered with the handler.
#[derive(Debug)]
pub struct MappedFile {
    addr: usize,
    len: usize,
    slot: usize,
    /// Set by the handler when a page of this mapping was lost; shared with
    /// the source, which outlives its mappings.
    damaged: Arc<AtomicBool>,
    /// Pages of small dropped spans not yet given back (see [`MappedRange`]).
    unreleased: Mutex<Unreleased>,
}

/// Spans of at least this many bytes give their pages back as they are
/// dropped; smaller ones are gathered first (see [`MappedRange`]).
const RELEASE_ALONE: u64 = 1 << 20;
/// The bytes of small dropped spans whose pages stay mapped at most.
const UNRELEASED_MOST: u64 = 8 << 20;

/// Small dropped spans whose pages are still mapped: their bytes, and the
/// range from the first to the end of the last.
#[derive(Debug, Default)]
struct Unreleased {
    bytes: u64,
    around: Option<Range<u64>>,
}

impl Unreleased {
    /// Adds `pages`; returns the range to give back once the spans gathered
    /// hold [`UNRELEASED_MOST`] bytes.
    fn add(&mut self, pages: Range<u64>) -> Option<Range<u64>> {
        self.bytes += pages.end - pages.start;
        let around = match self.around.take() {
            Some(r) => r.start.min(pages.start)..r.end.max(pages.end),
            None => pages,
        };
        if self.bytes < UNRELEASED_MOST {
            self.around = Some(around);
            return None;
        }
        self.bytes = 0;
        Some(around)
    }
}

impl MappedFile {
    /// Maps `len` bytes of `fd`; `None` when mapping is not possible here
    /// (the read then uses `pread`).
    pub(crate) fn map(fd: libc::c_int, len: u64, damaged: Arc<AtomicBool>) -> Option<MappedFile> {
        if !supported() || !handler_in_place() {
            return None;
        }
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return None;
        }
        let addr = addr as usize;
        let Some(slot) = REGISTRY.iter().position(|s| {
            s.start
                .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            unsafe { libc::munmap(addr as *mut libc::c_void, len) };
            return None;
        };
        let s = &REGISTRY[slot];
        s.flag
            .store(Arc::as_ptr(&damaged) as usize, Ordering::Release);
        s.end.store(addr + len, Ordering::Release);
        Some(MappedFile {
            addr,
            len,
            slot,
            damaged,
            unreleased: Mutex::default(),
        })
    }

    /// Whether all but a few pages of `range` are in the page cache
    /// (`mincore`), so that mapping it costs little I/O. A range that must
    /// come from disk is better read with `pread`: faulting it in through
    /// the mapping reads around each fault (the disk's readahead window,
    /// megabytes), which made a cold read of 10 scattered columns of a wide
    /// file 10x slower. A few missing pages cost the same I/O either way:
    /// the page cache of a long-running machine (or a VM whose balloon
    /// takes pages back) is rarely whole, and requiring every page made a
    /// read of a file that had lost 1 % of its pages copy all of it.
    /// A range past the mapping's end is not: `pread` then reports the file
    /// shorter than its footer says.
    ///
    /// A long range is judged by [`SAMPLED_PAGES`] pages spread over it: on
    /// a fresh mapping `mincore` looks each page up in the page cache, and
    /// asking about every page was 7 % of a steady read's CPU.
    pub(crate) fn resident(&self, range: &Range<u64>) -> bool {
        if range.end > self.len as u64 {
            return false;
        }
        let page = page_size();
        let start = range.start as usize / page * page;
        let end = range.end as usize;
        if end <= start {
            return true;
        }
        let pages = (end - start).div_ceil(page);
        let in_cache = |first: usize, n: usize| -> Option<usize> {
            let mut vec = vec![0u8; n];
            let at = (self.addr + start + first * page) as *mut libc::c_void;
            let len = (n * page).min(end - start - first * page);
            let ok = unsafe { libc::mincore(at, len, vec.as_mut_ptr().cast()) } == 0;
            ok.then(|| vec.iter().filter(|v| *v & 1 == 1).count())
        };
        if pages <= SAMPLED_PAGES {
            return in_cache(0, pages).is_some_and(|n| pages - n <= pages / MOST_PAGES_MISSING);
        }
        let mut missing = 0;
        for i in 0..SAMPLED_PAGES {
            match in_cache(i * pages / SAMPLED_PAGES, 1) {
                Some(1) => {}
                Some(_) => missing += 1,
                None => return false,
            }
        }
        missing <= SAMPLED_PAGES / MOST_PAGES_MISSING
    }

    /// Reads `range` of the file into the page cache and maps its pages
    /// (`MADV_POPULATE_READ`, Linux 5.14), waiting for the disk: what a
    /// cold span needs before the decoder reads it through the mapping.
    /// An error where the kernel cannot (an older one: `EINVAL`), or where
    /// the file no longer holds the range (`EFAULT` instead of `SIGBUS`);
    /// the caller then reads the range with `pread`, which says which.
    pub(crate) fn populate(&self, range: &Range<u64>) -> std::io::Result<()> {
        const MADV_POPULATE_READ: libc::c_int = 22;
        if range.end > self.len as u64 || range.start >= range.end {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        let page = page_size();
        let start = range.start as usize / page * page;
        let len = range.end as usize - start;
        // SAFETY: whole pages of this live, read-only file mapping; the
        // call only faults them in.
        let done = unsafe {
            libc::madvise(
                (self.addr + start) as *mut libc::c_void,
                len,
                MADV_POPULATE_READ,
            )
        };
        match done {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    /// The mapped bytes of `range`, kept mapped while any slice of them
    /// lives (their pages are faulted in as they are read); `None` for a
    /// range that is not within the mapping.
    pub(crate) fn bytes(self: &Arc<Self>, range: Range<u64>) -> Option<Bytes> {
        (range.start <= range.end && range.end <= self.len as u64).then(|| {
            Bytes::from_owner(MappedRange {
                file: Arc::clone(self),
                range,
            })
        })
    }

    /// Gives back the whole pages within `range`, as a dropped span does
    /// (see [`MappedRange`]): for a caller done with a part of a span that
    /// lives on (a column chunk decoded while the rest of its row group's
    /// span is still read). The mapping is a read-only view of the file,
    /// so a later touch of those pages faults the same bytes in again from
    /// the page cache.
    pub(crate) fn release(&self, range: Range<u64>) {
        self.give_back(range.start..range.end.min(self.len as u64));
    }

    /// Drops the whole pages within `range` from the process's page tables:
    /// at once when they come to [`RELEASE_ALONE`], else once the small
    /// ranges given back hold [`UNRELEASED_MOST`] bytes.
    fn give_back(&self, range: Range<u64>) {
        let page = page_size() as u64;
        // Only pages wholly inside the range: a neighbour's page stays.
        let start = range.start.div_ceil(page) * page;
        let end = range.end / page * page;
        if end <= start {
            return;
        }
        let release = match end - start >= RELEASE_ALONE {
            true => Some(start..end),
            false => self
                .unreleased
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .add(start..end),
        };
        if let Some(pages) = release {
            self.drop_pages(pages);
        }
    }

    /// Drops the whole pages `pages` (page-aligned, within the mapping).
    fn drop_pages(&self, pages: Range<u64>) {
        let at = (self.addr + pages.start as usize) as *mut libc::c_void;
        // SAFETY: whole pages of this live, read-only file mapping.
        unsafe { libc::madvise(at, (pages.end - pages.start) as usize, libc::MADV_DONTNEED) };
    }

    /// Whether a page of this file was lost (the file cut short) while it was
    /// mapped: whatever was decoded from it is not the file's data.
    pub fn damaged(&self) -> bool {
        self.damaged.load(Ordering::Acquire)
    }

    fn holds(&self, ptr: *const u8) -> bool {
        let p = ptr as usize;
        p >= self.addr && p < self.addr + self.len
    }

    /// `bytes` in memory of their own when they are a view of this mapping.
    pub fn detach_bytes(&self, bytes: Bytes) -> Bytes {
        match self.holds(bytes.as_ptr()) {
            true => Bytes::copy_from_slice(&bytes),
            false => bytes,
        }
    }

    /// `batch` with every buffer that points into this mapping copied out
    /// (a decoder may hand out page bytes as they are: views of uncompressed
    /// pages), so that the user's data never depends on the file staying
    /// whole.
    pub fn detach_batch(&self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        if !batch
            .columns()
            .iter()
            .any(|c| self.points_into(&c.to_data()))
        {
            return Ok(batch);
        }
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| make_array(self.copied(c.to_data())))
            .collect();
        RecordBatch::try_new(batch.schema(), columns)
    }

    fn points_into(&self, data: &arrow_data::ArrayData) -> bool {
        data.buffers().iter().any(|b| self.holds(b.as_ptr()))
            || data
                .nulls()
                .is_some_and(|n| self.holds(n.buffer().as_ptr()))
            || data.child_data().iter().any(|c| self.points_into(c))
    }

    fn copied(&self, data: arrow_data::ArrayData) -> arrow_data::ArrayData {
        if !self.points_into(&data) {
            return data;
        }
        let own = |b: &Buffer| match self.holds(b.as_ptr()) {
            true => Buffer::from_slice_ref(b.as_slice()),
            false => b.clone(),
        };
        let nulls = data.nulls().map(|n| {
            let bits = n.inner();
            NullBuffer::new(arrow_buffer::BooleanBuffer::new(
                own(bits.inner()),
                bits.offset(),
                bits.len(),
            ))
        });
        let builder = data
            .clone()
            .into_builder()
            .buffers(data.buffers().iter().map(own).collect())
            .child_data(
                data.child_data()
                    .iter()
                    .map(|c| self.copied(c.clone()))
                    .collect(),
            )
            .nulls(nulls);
        // Same layout, same values: only where the bytes live changed.
        unsafe { builder.build_unchecked() }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        let s = &REGISTRY[self.slot];
        s.end.store(0, Ordering::Release);
        s.flag.store(0, Ordering::Release);
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        s.start.store(0, Ordering::Release);
    }
}

#[cfg(test)]
thread_local! {
    /// The views this thread offered [`release_view`] (address, length),
    /// mapped or not.
    pub(crate) static VIEWS_OFFERED: std::cell::RefCell<Vec<(usize, usize)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Gives back the whole pages of `view` when it lies within one of this
/// process's file mappings (the caller's slice of a mapped span keeps that
/// one alive) and they come to [`RELEASE_ALONE`] or more; memory of any
/// other kind is left alone. For a reader done with the first part of a
/// column chunk it still holds (`parquet::pages::ChunkPages`): the chunk's
/// pages already decompressed need not stay resident while the rest is
/// read. The mapping is a read-only view of the file, so a later touch
/// faults the same bytes in again.
pub(crate) fn release_view(view: &[u8]) {
    #[cfg(test)]
    VIEWS_OFFERED.with(|views| {
        views
            .borrow_mut()
            .push((view.as_ptr() as usize, view.len()))
    });
    let page = PAGE.load(Ordering::Acquire);
    if page == 0 || view.is_empty() {
        return; // nothing was ever mapped
    }
    let (start, end) = (view.as_ptr() as usize, view.as_ptr() as usize + view.len());
    let mapped = REGISTRY.iter().any(|slot| {
        let from = slot.start.load(Ordering::Acquire);
        from != 0 && from <= start && end <= slot.end.load(Ordering::Acquire)
    });
    let (first, last) = (start.div_ceil(page) * page, end / page * page);
    if !mapped || last <= first || ((last - first) as u64) < RELEASE_ALONE {
        return;
    }
    // SAFETY: whole pages within a live, read-only file mapping.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_DONTNEED,
        )
    };
}

/// The owner of a mapped span's `Bytes`: keeps the mapping, and drops the
/// span's pages from the process's page tables when the last slice goes,
/// so a long read's resident memory stays what it was with `pread`.
///
/// Each `madvise` that drops pages interrupts every other core the process
/// runs on (to flush their TLBs): for a read of many small spans (10 of 500
/// columns, 80 spans of 82 KB) those calls were a fifth of a steady read's
/// CPU. So a span under [`RELEASE_ALONE`] leaves its pages mapped until the
/// small spans dropped hold [`UNRELEASED_MOST`] bytes; then one call drops
/// the pages from the first of them to the end of the last (the mapping's
/// end does it for those left). Pages of spans still in use within that
/// range are dropped too: the mapping is a read-only view of the file, so
/// a later touch faults the same bytes in again from the page cache.
struct MappedRange {
    file: Arc<MappedFile>,
    range: Range<u64>,
}

impl AsRef<[u8]> for MappedRange {
    fn as_ref(&self) -> &[u8] {
        let len = (self.range.end - self.range.start) as usize;
        // In bounds: `MappedFile::bytes` checked the range.
        unsafe {
            std::slice::from_raw_parts(
                (self.file.addr + self.range.start as usize) as *const u8,
                len,
            )
        }
    }
}

impl Drop for MappedRange {
    fn drop(&mut self) {
        self.file.give_back(self.range.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsRawFd;

    use super::*;

    fn temp_file(len: usize) -> (std::path::PathBuf, std::fs::File) {
        let dir = std::env::temp_dir().join(format!("fastingest-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("f{len}"));
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&(0..len).map(|i| (i % 251) as u8 + 1).collect::<Vec<_>>())
            .unwrap();
        (path.clone(), std::fs::File::open(&path).unwrap())
    }

    #[test]
    fn a_file_cut_short_under_its_mapping_reads_zeros_and_is_marked_damaged() {
        let len = 64 * 1024;
        let (path, file) = temp_file(len);
        let damaged = Arc::new(AtomicBool::new(false));
        let Some(map) = MappedFile::map(file.as_raw_fd(), len as u64, Arc::clone(&damaged)) else {
            eprintln!("no mapping here");
            return;
        };
        let map = Arc::new(map);
        let bytes = map.bytes(0..len as u64).unwrap();
        assert_eq!(bytes[len - 1], ((len - 1) % 251) as u8 + 1);
        assert!(!map.damaged());
        // A range past the mapping is read, not mapped (`pread` then says
        // the file is shorter than its footer claims).
        assert!(!map.resident(&(0..len as u64 + 1)));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(100)
            .unwrap();
        // Past the new end: SIGBUS without the handler.
        let last = unsafe { std::ptr::read_volatile(bytes.as_ptr().add(len - 1)) };
        assert_eq!(last, 0);
        assert!(map.damaged() && damaged.load(Ordering::Acquire));
        assert_eq!(bytes[10], 11, "pages before the cut keep the file's bytes");
        drop(bytes);
        drop(map);
        assert!(damaged.load(Ordering::Acquire), "the source keeps the mark");
        std::fs::remove_file(path).unwrap();
    }

    /// Bytes of the mapping at `addr` this process has in its page tables
    /// (its `Rss` in `/proc/self/smaps`).
    fn mapped_bytes(addr: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        let start = format!("{addr:x}-");
        lines.find(|l| l.starts_with(&start)).expect("the mapping");
        let rss = lines.find(|l| l.starts_with("Rss:")).unwrap();
        rss.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<usize>()
            .unwrap()
            * 1024
    }

    #[test]
    fn small_spans_give_their_pages_back_together_and_large_ones_at_once() {
        let len = 24 << 20;
        let (path, file) = temp_file(len);
        let Some(map) = MappedFile::map(file.as_raw_fd(), len as u64, Default::default()) else {
            return;
        };
        let map = Arc::new(map);
        let touch = |range: Range<u64>| {
            let bytes = map.bytes(range).unwrap();
            let sum: u64 = bytes.iter().step_by(page_size()).map(|&b| b as u64).sum();
            assert!(sum > 0);
        };
        let span = 64 << 10;
        let small = (UNRELEASED_MOST / span) as usize;
        // All but the last small span: their pages stay mapped.
        for i in 0..small - 1 {
            touch(i as u64 * span..(i + 1) as u64 * span);
        }
        let held = mapped_bytes(map.addr);
        assert!(held >= (small - 1) * span as usize, "{held}");
        // The last one makes 8 MiB: all of them go in one call.
        touch((small - 1) as u64 * span..small as u64 * span);
        assert!(
            mapped_bytes(map.addr) < span as usize,
            "{}",
            mapped_bytes(map.addr)
        );
        // A span of 2 MiB goes as it is dropped.
        let large = UNRELEASED_MOST..UNRELEASED_MOST + 2 * RELEASE_ALONE;
        touch(large);
        assert!(
            mapped_bytes(map.addr) < span as usize,
            "{}",
            mapped_bytes(map.addr)
        );
        // A span still held inside the range that goes reads the same bytes
        // after (faulted in again).
        let live = map.bytes((16 << 20) + 4096..(16 << 20) + span).unwrap();
        let before = live.to_vec();
        for i in 0..small {
            touch((12 << 20) + i as u64 * span..(12 << 20) + (i + 1) as u64 * span);
        }
        assert!(
            mapped_bytes(map.addr) < span as usize,
            "{}",
            mapped_bytes(map.addr)
        );
        assert_eq!(&live[..], &before[..]);
        drop(live);
        std::fs::remove_file(path).unwrap();
    }

    /// A temporary file of `len` bytes (each test's of a length of its own:
    /// the name is made of it) mapped, a span of all of it, and its bytes
    /// read once (so every page is in the page tables); `None` where files
    /// are not mapped.
    fn mapped_whole(len: usize) -> Option<(std::path::PathBuf, Arc<MappedFile>, Bytes, Vec<u8>)> {
        let (path, file) = temp_file(len);
        let map = Arc::new(MappedFile::map(
            file.as_raw_fd(),
            len as u64,
            Default::default(),
        )?);
        let span = map.bytes(0..len as u64).unwrap();
        let before = span.to_vec();
        assert!(mapped_bytes(map.addr) >= len, "{}", mapped_bytes(map.addr));
        Some((path, map, span, before))
    }

    #[test]
    fn a_part_of_a_live_span_released_leaves_the_mapping_and_reads_the_same() {
        let len = 8 << 20;
        let Some((path, map, span, before)) = mapped_whole(len) else {
            return;
        };
        // 3 MiB from an odd offset: its whole pages go, the span stays.
        map.release(1_000..(3 << 20) + 1_000);
        let left = mapped_bytes(map.addr);
        // (The kernel may drop more of a large folio than asked.)
        assert!(left <= len - (3 << 20) + 2 * page_size(), "{left}");
        // Parts under a MiB are gathered: none goes until they make 8 MiB.
        map.release(4 << 20..(5 << 20) - 4096);
        assert_eq!(mapped_bytes(map.addr), left);
        for at in (5..8).map(|mib| mib << 20) {
            map.release(at..at + (1 << 20) - 4096);
        }
        assert_eq!(mapped_bytes(map.addr), left);
        // The bytes read again from the page cache are the file's.
        assert_eq!(&span[..], &before[..]);
        drop(span);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_view_is_given_back_only_when_it_lies_in_a_mapping() {
        let Some((path, map, span, before)) = mapped_whole(6 << 20) else {
            return;
        };
        let touched = mapped_bytes(map.addr);
        // Heap memory of the same bytes: left as it is.
        release_view(&before[..4 << 20]);
        assert_eq!(before, span.to_vec());
        assert_eq!(mapped_bytes(map.addr), touched);
        // Under a MiB of whole pages: left for the span.
        release_view(&span[100..(1 << 20) - 100]);
        assert_eq!(mapped_bytes(map.addr), touched);
        // 4 MiB of the mapping: gone from the page tables, read the same.
        release_view(&span[1 << 20..5 << 20]);
        let left = mapped_bytes(map.addr);
        assert!(left <= touched - (4 << 20), "{left} of {touched}");
        assert_eq!(&span[..], &before[..]);
        drop(span);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_range_missing_a_few_pages_counts_as_resident_and_a_cold_one_not() {
        let page = page_size();
        let len = 128 * page;
        let (path, file) = temp_file(len);
        // Written back, so that the kernel may drop the pages on request.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .sync_all()
            .unwrap();
        let Some(map) = MappedFile::map(file.as_raw_fd(), len as u64, Default::default()) else {
            return;
        };
        let drop_pages = |at: usize, n: usize| unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                at as libc::off_t,
                n as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            )
        };
        let whole = 0..len as u64;
        std::fs::read(&path).unwrap();
        assert!(map.resident(&whole));
        assert_eq!(drop_pages(0, len), 0);
        if map.resident(&whole) {
            eprintln!("this file system keeps pages it is asked to drop");
            return;
        }
        std::fs::read(&path).unwrap();
        // One page in 128 missing: mapped; one in 16: read.
        assert_eq!(drop_pages(40 * page, page), 0);
        assert!(map.resident(&whole));
        assert!(!map.resident(&(40 * page as u64..41 * page as u64)));
        for i in 0..8 {
            assert_eq!(drop_pages(i * 16 * page, page), 0);
        }
        assert!(!map.resident(&whole));
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn populating_a_cold_range_brings_it_into_the_page_cache_and_a_cut_one_fails() {
        let page = page_size();
        let len = 256 * page;
        let (path, file) = temp_file(len);
        let writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        writer.sync_all().unwrap();
        let damaged = Arc::new(AtomicBool::new(false));
        let Some(map) = MappedFile::map(file.as_raw_fd(), len as u64, Arc::clone(&damaged)) else {
            return;
        };
        // SAFETY: a hint about this file's cached pages.
        let dropped =
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(dropped, 0);
        let middle = (64 * page) as u64..(192 * page) as u64;
        if map.resident(&middle) {
            eprintln!("this file system keeps pages it is asked to drop");
            return;
        }
        match map.populate(&middle) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                eprintln!("this kernel cannot populate a mapping (before 5.14)");
                return;
            }
            done => done.unwrap(),
        }
        assert!(map.resident(&middle));
        let map = Arc::new(map);
        let bytes = map.bytes(middle.clone()).unwrap();
        assert!(bytes
            .iter()
            .enumerate()
            .all(|(i, &b)| b == ((middle.start as usize + i) % 251) as u8 + 1));
        // Cut short: the pages past the new end are gone, and populating
        // them fails instead of raising `SIGBUS`.
        writer.set_len((128 * page) as u64).unwrap();
        assert!(map.populate(&middle).is_err());
        assert!(map.populate(&(0..len as u64 + 1)).is_err());
        assert!(!damaged.load(Ordering::Acquire));
        drop(bytes);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn buffers_pointing_into_a_mapping_are_copied_out_and_others_kept() {
        let len = 8192;
        let (path, file) = temp_file(len);
        let Some(map) = MappedFile::map(file.as_raw_fd(), len as u64, Default::default()) else {
            return;
        };
        let map = Arc::new(map);
        let mapped = map.bytes(0..64).unwrap();
        assert!(map.bytes(0..len as u64 + 1).is_none());
        let values = Buffer::from(mapped.clone());
        let in_map = arrow_array::Int32Array::new(values.into(), None);
        let own = arrow_array::Int32Array::from(vec![7; 16]);
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("m", arrow_schema::DataType::Int32, false),
            arrow_schema::Field::new("o", arrow_schema::DataType::Int32, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(in_map.clone()), Arc::new(own.clone())],
        )
        .unwrap();
        let detached = map.detach_batch(batch.clone()).unwrap();
        assert_eq!(detached, batch, "same values");
        let col = |b: &RecordBatch, i: usize| b.column(i).to_data().buffers()[0].as_ptr();
        assert!(!map.holds(col(&detached, 0)));
        assert_eq!(
            col(&detached, 1),
            col(&batch, 1),
            "own buffers are not copied"
        );
        assert!(!map.holds(map.detach_bytes(mapped.clone()).as_ptr()));
        let other = Bytes::from_static(b"abc");
        assert_eq!(map.detach_bytes(other.clone()).as_ptr(), other.as_ptr());
        std::fs::remove_file(path).unwrap();
    }
}
