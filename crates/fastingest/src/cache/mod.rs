//! The on-disk cache of fetched byte ranges, shared by threads and processes.
//!
//! Every remote read goes through the fetcher; with a cache, the fetcher
//! reads through [`CachedBytes`], the cache in front of the store's requests
//! (`Cache::in_front_of`), which serves what it holds and passes the rest down. Bytes are keyed by the
//! object's identity (its URL without credentials) and version (ETag, or
//! modification time and size), so a changed object never matches old bytes.
//! When an object is validated against the store is the [`Validate`] policy.
//!
//! Safety across processes rests on three things: entries are written to a
//! temporary file and renamed into place; every entry carries a checksum that
//! is verified on each read; and the fetch of a range is guarded by an
//! `flock`, which the kernel releases when its holder dies.
//!
//! Limits: eviction starts in the background when the cache passes
//! [`HIGH_WATERMARK`] of `max_bytes` and removes least-recently-used entries
//! down to [`LOW_WATERMARK`]; a write that would pass `max_bytes`, or leave
//! less than `min_free_bytes` free on the disk, is skipped (that range is
//! read uncached).
//!
//! ```no_run
//! # async fn demo() -> fastingest::Result<()> {
//! use fastingest::{read_parquet, Cache, CacheOptions, ReadOptions, Validate};
//! let mut cache = CacheOptions::new("/nvme/fastingest-cache");
//! cache.max_bytes = Some(200 << 30);
//! cache.validate = Validate::Immutable;
//! let options = ReadOptions {
//!     cache: Some(Cache::open(cache)?),
//!     ..Default::default()
//! };
//! for _epoch in 0..3 {
//!     read_parquet(&["s3://bucket/train/*.parquet".to_string()], &options).await?;
//! }
//! # Ok(()) }
//! ```

mod entry;
mod evict;
mod layout;
mod lock;
mod read;
mod record;

pub use read::CachedBytes;

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::error::{Error, Result};
use layout::Layout;
use record::{now_ms, write_atomic};

/// Eviction starts when the cache holds more than this share of `max_bytes`.
pub const HIGH_WATERMARK: f64 = 0.90;
/// Eviction stops when the cache holds at most this share of `max_bytes`.
pub const LOW_WATERMARK: f64 = 0.75;
/// Default for `min_free_bytes`: the cache never fills the last GiB of a disk.
pub const DEFAULT_MIN_FREE_BYTES: u64 = 1 << 30;
/// How long a failed write (full disk, read-only directory) pauses writing.
const WRITE_PAUSE_MS: u64 = 30_000;

/// When cached objects are checked against the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validate {
    /// Never: once cached, an object is trusted (warm reads make no request;
    /// glob listings are cached too).
    Immutable,
    /// Once per process (a validation by another process after this one
    /// started counts).
    Once,
    /// On every read.
    Always,
    /// When the last validation is older than this.
    Ttl(Duration),
}

impl FromStr for Validate {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "immutable" => Ok(Validate::Immutable),
            "once" => Ok(Validate::Once),
            "always" => Ok(Validate::Always),
            _ => s
                .parse::<u64>()
                .map(|n| Validate::Ttl(Duration::from_secs(n)))
                .map_err(|_| {
                    Error::InvalidArgument(format!(
                        "validate must be \"immutable\", \"once\", \"always\" or a number of seconds, not {s:?}"
                    ))
                }),
        }
    }
}

/// How to open a cache.
#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// The cache directory (created with mode 0700 when missing).
    pub path: PathBuf,
    /// Most bytes the cache may hold (`None`: limited by `min_free_bytes` only).
    pub max_bytes: Option<u64>,
    /// Bytes the cache leaves free on its disk, whatever `max_bytes` says.
    pub min_free_bytes: u64,
    /// When cached objects are revalidated.
    pub validate: Validate,
}

impl CacheOptions {
    /// Defaults for `path`: no size limit, 1 GiB kept free, `Once`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        CacheOptions {
            path: path.into(),
            max_bytes: None,
            min_free_bytes: DEFAULT_MIN_FREE_BYTES,
            validate: Validate::Once,
        }
    }
}

/// Sizes and counters of a cache directory, as `fastingest cache info` shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheInfo {
    /// Bytes on disk in entries.
    pub bytes: u64,
    /// Cached ranges.
    pub entries: u64,
    /// Objects with something cached.
    pub objects: u64,
    /// Lookups served from the cache, by every process that used it.
    pub hits: u64,
    /// Lookups that went to the store.
    pub misses: u64,
    /// Bytes served from the cache.
    pub bytes_served: u64,
    /// Entries found corrupt (and refetched).
    pub corrupt: u64,
}

impl CacheInfo {
    /// `hits / (hits + misses)`, 0 when nothing was looked up.
    pub fn hit_ratio(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

/// An open cache directory. Cheap to clone; share one per directory in a
/// process so its validation state ("once") and size estimate are shared.
#[derive(Debug, Clone)]
pub struct Cache(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    options: CacheOptions,
    layout: Layout,
    /// Why the directory cannot be used (reads then run uncached).
    unusable: Option<String>,
    /// Bytes in the cache as last measured plus what this process wrote since.
    usage: AtomicU64,
    evicting: Arc<AtomicBool>,
    /// Writes are skipped until this time (ms) after a write failed.
    writes_paused_until: AtomicU64,
    warned: Mutex<BTreeSet<&'static str>>,
    warnings: Mutex<Vec<String>>,
    /// Counter deltas not yet added to the shared `stats` file.
    pending: Counters,
}

#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    bytes_served: AtomicU64,
    corrupt: AtomicU64,
}

/// Creates `dir` (and parents) with mode 0700: cached data may be private.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// The time this process started using caches; "once" trusts validations
/// made after it. A forked child (a DataLoader worker, a pool process) keeps
/// its parent's: it is a copy of the same program run, and trusts what the
/// parent validated as the parent itself does. A newly started program
/// validates again.
fn process_epoch_ms() -> u64 {
    static EPOCH: OnceLock<u64> = OnceLock::new();
    *EPOCH.get_or_init(now_ms)
}

impl Cache {
    /// Opens (creating when needed) the cache at `options.path`, removes what
    /// crashed writers left, and measures its size. A directory that cannot
    /// be created or written does not fail: reads run uncached with a warning.
    pub fn open(mut options: CacheOptions) -> Result<Cache> {
        // Absolute, so that a later change of working directory does not
        // move the cache.
        if let Ok(path) = std::path::absolute(&options.path) {
            options.path = path;
        }
        if options.max_bytes == Some(0) {
            return Err(Error::InvalidArgument(
                "cache max_bytes must be positive (pass no cache to disable caching)".into(),
            ));
        }
        process_epoch_ms();
        let layout = Layout::new(options.path.clone());
        let unusable = prepare_dir(&layout).err().map(|e| {
            format!(
                "cache directory {} is not usable ({e}); reading without a cache",
                layout.root.display()
            )
        });
        let usage = if unusable.is_none() {
            entry::remove_orphans(&layout.tmp());
            evict::scan(&layout).bytes
        } else {
            0
        };
        let cache = Cache(Arc::new(Inner {
            options,
            layout,
            usage: AtomicU64::new(usage),
            evicting: Arc::new(AtomicBool::new(false)),
            writes_paused_until: AtomicU64::new(0),
            warned: Mutex::new(BTreeSet::new()),
            warnings: Mutex::new(Vec::new()),
            pending: Counters::default(),
            unusable: unusable.clone(),
        }));
        if let Some(msg) = unusable {
            cache.warn_once("unusable", msg);
        }
        cache.maybe_evict();
        Ok(cache)
    }

    /// The options the cache was opened with.
    pub fn options(&self) -> &CacheOptions {
        &self.0.options
    }

    /// The cache directory.
    pub fn path(&self) -> &Path {
        &self.0.layout.root
    }

    fn layout(&self) -> &Layout {
        &self.0.layout
    }

    fn usable(&self) -> bool {
        self.0.unusable.is_none()
    }

    /// Whether a record validated at `validated_at` may be trusted now.
    fn trusts(&self, validated_at: u64) -> bool {
        match self.0.options.validate {
            Validate::Immutable => true,
            Validate::Once => validated_at >= process_epoch_ms(),
            Validate::Always => false,
            Validate::Ttl(ttl) => now_ms().saturating_sub(validated_at) < ttl.as_millis() as u64,
        }
    }

    /// Warnings raised since the last call (each kind once per cache).
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn warn_once(&self, kind: &'static str, message: String) {
        let first = self
            .0
            .warned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kind);
        if first {
            self.0
                .warnings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(message);
        }
    }

    /// Sizes and counters (all processes' counters, as flushed so far).
    pub fn info(&self) -> CacheInfo {
        self.flush_counters();
        let scan = evict::scan(self.layout());
        let [hits, misses, bytes_served, corrupt] = read_counters(self.layout());
        CacheInfo {
            bytes: scan.bytes,
            entries: scan.entries.len() as u64,
            objects: scan.objects as u64,
            hits,
            misses,
            bytes_served,
            corrupt,
        }
    }

    /// Evicts least-recently-used entries down to `max_bytes` (default: the
    /// low watermark of the configured limit; without one, nothing).
    /// Returns the entries and bytes removed.
    pub fn prune(&self, max_bytes: Option<u64>) -> (u64, u64) {
        let target = max_bytes.or_else(|| self.low_watermark());
        let Some(target) = target else { return (0, 0) };
        let _lock = lock::acquire_blocking(&self.layout().root.join("evict.lock"));
        let before = self.0.usage.load(Relaxed);
        let done = evict::evict(self.layout(), target, None);
        self.settle_usage(before, done.remaining);
        (done.entries, done.bytes)
    }

    /// Deletes everything cached (entries, records, listings, counters).
    /// Returns the entries and bytes removed.
    pub fn clear(&self) -> (u64, u64) {
        let _lock = lock::acquire_blocking(&self.layout().root.join("evict.lock"));
        let done = evict::clear(self.layout());
        let _ = std::fs::remove_file(self.layout().root.join("stats"));
        self.0.usage.store(0, Relaxed);
        (done.entries, done.bytes)
    }

    fn low_watermark(&self) -> Option<u64> {
        self.0
            .options
            .max_bytes
            .map(|m| (m as f64 * LOW_WATERMARK) as u64)
    }

    /// Reserves room for an entry of `len` bytes: counts it in the cache's
    /// size unless that would pass `max_bytes` (then starts an eviction and
    /// says no), or the disk is short of `min_free_bytes`. Reserving before
    /// writing keeps concurrent writers of this process within the limit.
    fn reserve(&self, len: u64) -> bool {
        if !self.usable() || now_ms() < self.0.writes_paused_until.load(Relaxed) {
            return false;
        }
        let size = HEADER_BYTES + len;
        let free = evict::free_bytes(&self.layout().root).unwrap_or(u64::MAX);
        if free < self.0.options.min_free_bytes.saturating_add(size) {
            self.warn_once(
                "disk-full",
                format!(
                    "cache disk at {} has {free} bytes free, less than min_free_bytes ({}); \
                     reading without caching until space is freed",
                    self.layout().root.display(),
                    self.0.options.min_free_bytes
                ),
            );
            self.maybe_evict();
            return false;
        }
        let max = self.0.options.max_bytes.unwrap_or(u64::MAX);
        let reserved = self
            .0
            .usage
            .fetch_update(Relaxed, Relaxed, |used| {
                used.checked_add(size).filter(|&total| total <= max)
            })
            .is_ok();
        if !reserved {
            self.maybe_evict();
        }
        reserved
    }

    /// Gives back a reservation whose write did not happen.
    fn unreserve(&self, len: u64) {
        let size = HEADER_BYTES + len;
        let _ = self
            .0
            .usage
            .fetch_update(Relaxed, Relaxed, |used| Some(used.saturating_sub(size)));
    }

    /// After measuring the cache (`measured` bytes at the time its scan
    /// started, when this process's estimate was `before`): the new estimate
    /// is the measurement plus what this process reserved since.
    fn settle_usage(&self, before: u64, measured: u64) {
        let _ = self.0.usage.fetch_update(Relaxed, Relaxed, |now| {
            Some(measured + now.saturating_sub(before))
        });
    }

    /// Notes a failed write: warn once and stop writing for a while.
    fn write_failed(&self, err: &io::Error) {
        self.0
            .writes_paused_until
            .store(now_ms() + WRITE_PAUSE_MS, Relaxed);
        self.warn_once(
            "write-failed",
            format!(
                "cannot write to the cache at {} ({err}); reading without caching",
                self.layout().root.display()
            ),
        );
    }

    /// Starts a background eviction when over the high watermark or short of
    /// free disk, unless one is running (in this process or another).
    fn maybe_evict(&self) {
        let opts = &self.0.options;
        let over = opts
            .max_bytes
            .is_some_and(|m| self.0.usage.load(Relaxed) as f64 > m as f64 * HIGH_WATERMARK);
        let free = evict::free_bytes(&self.layout().root).unwrap_or(u64::MAX);
        let short = free < opts.min_free_bytes;
        if !(over || short) || !self.usable() || self.0.evicting.swap(true, Relaxed) {
            return;
        }
        let cache = self.clone();
        let spawned = std::thread::Builder::new()
            .name("fastingest-evict".into())
            .spawn(move || {
                let inner = &cache.0;
                let mut progress = false;
                if let Ok(Some(_lock)) = lock::try_acquire(&inner.layout.root.join("evict.lock")) {
                    let target = cache.low_watermark().unwrap_or(u64::MAX);
                    // Free a little more than the minimum, so that eviction
                    // does not restart at once.
                    let need_free = short
                        .then(|| inner.options.min_free_bytes + inner.options.min_free_bytes / 10);
                    let before = inner.usage.load(Relaxed);
                    let done = evict::evict(&inner.layout, target, need_free);
                    // Writes made while it ran still count.
                    cache.settle_usage(before, done.remaining);
                    progress = done.entries > 0;
                }
                inner.evicting.store(false, Relaxed);
                // Writes during the eviction may have passed the watermark
                // again: another round, as long as rounds free something.
                if progress {
                    cache.maybe_evict();
                }
            });
        if spawned.is_err() {
            self.0.evicting.store(false, Relaxed);
        }
    }

    /// Adds this process's counters to the directory's `stats` file.
    pub fn flush_counters(&self) {
        if !self.usable() {
            return;
        }
        let p = &self.0.pending;
        let delta = [
            p.hits.swap(0, Relaxed),
            p.misses.swap(0, Relaxed),
            p.bytes_served.swap(0, Relaxed),
            p.corrupt.swap(0, Relaxed),
        ];
        if delta == [0; 4] {
            return;
        }
        let layout = self.layout();
        let Ok(_lock) = lock::acquire_blocking(&layout.root.join("stats.lock")) else {
            return;
        };
        let mut totals = read_counters(layout);
        for (t, d) in totals.iter_mut().zip(delta) {
            *t += d;
        }
        let text = totals.map(|n| n.to_string()).join(" ");
        let _ = write_atomic(&layout.tmp(), &layout.root.join("stats"), text.as_bytes());
    }
}

/// Bytes of an entry's header, counted in the cache's size.
const HEADER_BYTES: u64 = entry::HEADER_LEN as u64;

fn read_counters(layout: &Layout) -> [u64; 4] {
    let text = std::fs::read_to_string(layout.root.join("stats")).unwrap_or_default();
    let mut out = [0u64; 4];
    for (slot, word) in out.iter_mut().zip(text.split_whitespace()) {
        *slot = word.parse().unwrap_or(0);
    }
    out
}

fn prepare_dir(layout: &Layout) -> io::Result<()> {
    for dir in [layout.objects(), layout.tmp(), layout.listings()] {
        create_private_dir(&dir)?;
    }
    let tag = layout.root.join("CACHEDIR.TAG");
    if !tag.exists() {
        // The standard tag (bford.info/cachedir) that backup tools skip.
        write_atomic(
            &layout.tmp(),
            &tag,
            b"Signature: 8a477f597d28d172789f06886806bc55\n# fastingest cache: safe to delete.\n",
        )?;
    }
    // Probe that the directory is writable now, not at the first write.
    let probe = layout.tmp().join(entry::temp_name());
    std::fs::write(&probe, b"")?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
