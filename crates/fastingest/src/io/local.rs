//! Local files: one open file handle per read, read through a mapping
//! (see [`super::mapped`]) or by positional reads (`pread`) on the blocking
//! pool, issued in parallel by the fetcher.

use std::fs::File;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::BytesMut;
use futures::future::BoxFuture;
use futures::FutureExt;

use super::{Failure, MappedFile, RangeSource, Tail};
use crate::error::Error;

/// A local file opened once and read at offsets.
#[derive(Debug)]
pub struct LocalSource {
    location: String,
    file: Arc<File>,
    size: u64,
    modified_millis: Option<i64>,
    /// The file's mapping while bytes read through it live (mapped again
    /// when needed after that, so a long read does not keep every file
    /// mapped).
    mapping: Mutex<Weak<MappedFile>>,
    /// Set when the file was cut short under one of its mappings.
    cut_short: Arc<AtomicBool>,
    /// Whether its device says it is rotational.
    rotational: bool,
}

impl LocalSource {
    /// Opens `path`; `location` is the name used in errors.
    pub fn open(path: PathBuf, location: String) -> Result<Self, Error> {
        let file = File::open(&path).map_err(|e| io_error(&location, e))?;
        let meta = file.metadata().map_err(|e| io_error(&location, e))?;
        if meta.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{location}: is a directory; pass a glob such as {location}/*.parquet"
            )));
        }
        let modified_millis = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        Ok(LocalSource {
            location,
            file: Arc::new(file),
            size: meta.len(),
            modified_millis,
            mapping: Mutex::new(Weak::new()),
            cut_short: Arc::default(),
            rotational: super::disk::device_is_rotational(meta.dev()),
        })
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// A failed read of `range` of a local file; a file that ends before the
/// range does says so.
fn range_error(location: &str, range: &Range<u64>, e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let detail = match e.kind() {
        K::NotFound | K::PermissionDenied => return io_error(location, e),
        K::UnexpectedEof => format!("file is shorter than {} bytes", range.end),
        _ => e.to_string(),
    };
    Error::Io {
        location: location.to_string(),
        range: Some(range.clone()),
        attempts: 1,
        detail,
        timed_out: false,
        cause: Some(Arc::new(e)),
    }
}

pub(crate) fn io_error(location: &str, e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let detail = e.to_string();
    let location = location.to_string();
    match e.kind() {
        K::NotFound => Error::NotFound { location, detail },
        K::PermissionDenied => Error::PermissionDenied { location, detail },
        _ => Error::Io {
            location,
            range: None,
            attempts: 1,
            detail,
            timed_out: false,
            cause: Some(std::sync::Arc::new(e)),
        },
    }
}

/// A range no longer than this is first read from the page cache on the
/// calling (runtime) thread: a copy this short takes microseconds, less
/// than handing the read to the blocking pool and waking for its answer.
const MOST_READ_IN_PLACE: usize = 256 * 1024;

/// How much of `room` (for the file's bytes from `offset` on) was written
/// from the page cache without waiting for the disk (`RWF_NOWAIT`), from
/// its start: all of it, a part, or nothing (an error, pages not cached, a
/// range too long to read in place, a kernel without the flag); the caller
/// reads the rest.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn read_cached(file: &File, room: &mut [MaybeUninit<u8>], offset: u64) -> usize {
    if room.len() > MOST_READ_IN_PLACE {
        return 0;
    }
    let mut done = 0;
    while done < room.len() {
        let iov = libc::iovec {
            iov_base: room[done..].as_mut_ptr().cast(),
            iov_len: room.len() - done,
        };
        let at = (offset + done as u64) as libc::off_t;
        // SAFETY: one iovec over the unwritten part of `room`, which
        // outlives the call; the kernel writes at most `iov_len` bytes into
        // it (uninitialised memory may be written).
        let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
        if n <= 0 {
            break; // EAGAIN (not cached), end of file, or any error
        }
        done += n as usize;
    }
    done
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn read_cached(_file: &File, _room: &mut [MaybeUninit<u8>], _offset: u64) -> usize {
    0
}

impl RangeSource for LocalSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>> {
        let len = len.min(self.size);
        let start = self.size - len;
        async move {
            let mut buf = BytesMut::with_capacity(len as usize);
            self.read_into(start..self.size, &mut buf).await?;
            Ok(Tail {
                bytes: buf.freeze(),
                size: self.size,
            })
        }
        .boxed()
    }

    fn read_into<'a>(
        &'a self,
        range: Range<u64>,
        dst: &'a mut BytesMut,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        async move {
            let file = Arc::clone(&self.file);
            let want = (range.end - range.start) as usize;
            let at = dst.len();
            dst.reserve(want);
            // What the page cache holds is copied here and now; only the
            // rest waits for the disk, on the blocking pool.
            let cached = read_cached(&file, &mut dst.spare_capacity_mut()[..want], range.start);
            // SAFETY: `read_cached` wrote the first `cached` bytes past the
            // length, within the capacity reserved.
            unsafe { dst.set_len(at + cached) };
            if cached == want {
                return Ok(());
            }
            // The blocking pool needs an owned buffer: swap it out and back.
            let mut buf = std::mem::take(dst);
            let (from, rest) = (range.start + cached as u64, want - cached);
            let (buf, res) = tokio::task::spawn_blocking(move || {
                let res = super::pread_exact(&file, &mut buf.spare_capacity_mut()[..rest], from);
                if res.is_ok() {
                    // SAFETY: `pread_exact` wrote the `rest` bytes past the
                    // length, within the capacity reserved above.
                    unsafe { buf.set_len(buf.len() + rest) };
                }
                (buf, res)
            })
            .await
            .map_err(|e| Failure::transient(format!("read task failed: {e}")))?;
            *dst = buf;
            res.map_err(|e| {
                // The file held the range when it was opened: it was cut
                // short since, which the same read through a mapping
                // reports in the same words.
                let cut = e.kind() == std::io::ErrorKind::UnexpectedEof && range.end <= self.size;
                Failure::Permanent(match cut {
                    true => super::cut_short_error(&self.location, Some(range.clone())),
                    false => range_error(&self.location, &range, e),
                })
            })
        }
        .boxed()
    }

    fn map(&self) -> Option<Arc<MappedFile>> {
        let mut mapping = self.mapping.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(live) = mapping.upgrade() {
            return Some(live);
        }
        let fresh = Arc::new(MappedFile::map(
            self.file.as_raw_fd(),
            self.size,
            Arc::clone(&self.cut_short),
        )?);
        *mapping = Arc::downgrade(&fresh);
        Some(fresh)
    }

    fn mapped(&self) -> Option<Arc<MappedFile>> {
        let mapping = self.mapping.lock().unwrap_or_else(|p| p.into_inner());
        mapping.upgrade()
    }

    fn cut_short(&self) -> bool {
        self.cut_short.load(Ordering::Acquire)
    }

    fn is_local(&self) -> bool {
        true
    }

    fn on_rotational_disk(&self) -> bool {
        self.rotational
    }

    fn known_size(&self) -> Option<u64> {
        Some(self.size)
    }

    fn modified_millis(&self) -> Option<i64> {
        self.modified_millis
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_cut_short_after_opening_says_so_and_a_short_one_says_how_short() {
        let dir = std::env::temp_dir().join(format!("fastingest-local-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.bin");
        std::fs::write(&path, vec![7u8; 10_000]).unwrap();
        let source = LocalSource::open(path.clone(), "cut.bin".into()).unwrap();
        let detail = |failure: Failure| match failure {
            Failure::Permanent(e) => e.to_string(),
            other => panic!("not a permanent failure: {other:?}"),
        };
        // Past the end it had when opened: the file is short.
        let mut buf = BytesMut::with_capacity(100);
        let past = source.read_into(9_950..10_050, &mut buf).await.unwrap_err();
        assert!(detail(past).contains("shorter than 10050 bytes"));
        // Within that end, but cut since: cut short while being read.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(5_000)
            .unwrap();
        let mut buf = BytesMut::with_capacity(1_000);
        let cut = source.read_into(6_000..7_000, &mut buf).await.unwrap_err();
        let cut = detail(cut);
        assert!(cut.contains("cut short while it was being read"), "{cut}");
        assert!(cut.contains("cut.bin"), "{cut}");
        std::fs::remove_file(path).unwrap();
    }

    #[tokio::test]
    async fn cached_bytes_are_read_in_place_and_the_rest_as_before() {
        let dir = std::env::temp_dir().join(format!("fastingest-local-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cached.bin");
        let bytes: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        // Just written, so in the page cache: read whole, in place (a
        // kernel without RWF_NOWAIT reads nothing here, and the caller the
        // rest, as checked below).
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 100_000];
        let n = read_cached(&file, &mut buf, 1_000);
        assert!(n == 0 || n == buf.len(), "{n}");
        if n > 0 {
            // SAFETY: all of `buf` was written.
            let read: Vec<u8> = buf.iter().map(|b| unsafe { b.assume_init() }).collect();
            assert_eq!(read, bytes[1_000..101_000]);
        }
        // Past the end: what there is, then nothing more.
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 1_000];
        let n = read_cached(&file, &mut buf, 599_500);
        assert!(n == 0 || n == 500, "{n}");
        // Longer than is read in place: left to the blocking pool.
        let mut buf = vec![MaybeUninit::<u8>::uninit(); MOST_READ_IN_PLACE + 1];
        assert_eq!(read_cached(&file, &mut buf, 0), 0);
        // Through the source, every length and offset brings the file's
        // bytes, appended after what the buffer held.
        let source = LocalSource::open(path.clone(), "cached.bin".into()).unwrap();
        for range in [0..10, 4_095..70_001, 0..600_000, 333_333..599_999] {
            let mut buf = BytesMut::with_capacity(3);
            buf.extend_from_slice(b"abc");
            source.read_into(range.clone(), &mut buf).await.unwrap();
            assert_eq!(&buf[..3], b"abc");
            assert_eq!(&buf[3..], &bytes[range.start as usize..range.end as usize]);
        }
        std::fs::remove_file(path).unwrap();
    }
}
