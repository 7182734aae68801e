//! Measuring the cache and evicting least-recently-used entries.
//!
//! An entry's modification time is its last use (reads touch it). Deleting an
//! entry never breaks a reader: a reader that has the file open keeps reading
//! the unlinked inode, and one that looks it up afterwards misses and
//! refetches.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::layout::{lock_path, parse_entry_name, Layout};

/// One cached entry as found on disk.
#[derive(Debug)]
pub(crate) struct EntryFile {
    pub path: PathBuf,
    pub bytes: u64,
    pub used: SystemTime,
}

/// What a walk over the cache found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub entries: Vec<EntryFile>,
    pub bytes: u64,
    pub objects: usize,
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Walks every entry of the cache.
pub(crate) fn scan(layout: &Layout) -> Scan {
    let mut scan = Scan::default();
    for object in subdirs(&layout.objects()) {
        scan.objects += 1;
        for version in subdirs(&object) {
            let Ok(dir) = std::fs::read_dir(&version) else {
                continue;
            };
            for item in dir.flatten() {
                let name = item.file_name();
                if name.to_str().and_then(parse_entry_name).is_none() {
                    continue;
                }
                let Ok(meta) = item.metadata() else { continue };
                scan.bytes += meta.len();
                scan.entries.push(EntryFile {
                    path: item.path(),
                    bytes: meta.len(),
                    used: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                });
            }
        }
    }
    scan
}

/// Bytes available to this user on the file system holding `path`.
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// What an eviction did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Evicted {
    pub entries: u64,
    pub bytes: u64,
    /// Bytes left in the cache.
    pub remaining: u64,
}

/// Deletes least-recently-used entries until the cache holds at most
/// `target` bytes and, when `need_free` is set, the disk has that much free.
pub(crate) fn evict(layout: &Layout, target: u64, need_free: Option<u64>) -> Evicted {
    let mut scan = scan(layout);
    scan.entries.sort_by_key(|e| e.used);
    let mut free = need_free
        .and_then(|_| free_bytes(&layout.root))
        .unwrap_or(0);
    let mut out = Evicted {
        remaining: scan.bytes,
        ..Default::default()
    };
    for entry in &scan.entries {
        let over_size = out.remaining > target;
        let short_of_space = need_free.is_some_and(|n| free < n);
        if !over_size && !short_of_space {
            break;
        }
        if std::fs::remove_file(&entry.path).is_ok() {
            let _ = std::fs::remove_file(lock_path(&entry.path));
            out.entries += 1;
            out.bytes += entry.bytes;
            out.remaining -= entry.bytes;
            free += entry.bytes;
        }
    }
    remove_empty_dirs(layout);
    out
}

/// Removes version directories left empty (lock files aside) and objects
/// with no versions left.
fn remove_empty_dirs(layout: &Layout) {
    for object in subdirs(&layout.objects()) {
        for version in subdirs(&object) {
            let only_locks = std::fs::read_dir(&version).is_ok_and(|d| {
                d.flatten()
                    .all(|e| e.file_name().to_string_lossy().ends_with(".lock"))
            });
            if only_locks {
                let _ = std::fs::remove_dir_all(&version);
            }
        }
        if subdirs(&object).is_empty() {
            let _ = std::fs::remove_dir_all(&object);
        }
    }
}

/// Deletes every entry, record and listing.
pub(crate) fn clear(layout: &Layout) -> Evicted {
    let scan = scan(layout);
    for dir in [layout.objects(), layout.listings()] {
        for sub in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let _ =
                std::fs::remove_dir_all(sub.path()).or_else(|_| std::fs::remove_file(sub.path()));
        }
    }
    Evicted {
        entries: scan.entries.len() as u64,
        bytes: scan.bytes,
        remaining: 0,
    }
}
