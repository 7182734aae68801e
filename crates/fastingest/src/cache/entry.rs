//! One cached byte range on disk: a checksummed header and the bytes.
//!
//! Entries are written to a temporary file and renamed into place, so a
//! reader sees a whole entry or none; the checksum catches what a crash, a
//! full disk or a bad sector leaves behind (a truncated, zeroed or flipped
//! file), and such an entry is reported as corrupt, never returned.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use bytes::BytesMut;
use xxhash_rust::xxh3::xxh3_64;

/// "fastingest cache entry", format 1.
const MAGIC: &[u8; 8] = b"FIENTRY1";
/// magic | start | end | checksum of the bytes | checksum of the header so far.
pub(crate) const HEADER_LEN: usize = 40;

/// What looking up an entry found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The bytes are in the buffer, verified.
    Hit,
    /// No such entry.
    Missing,
    /// The file exists but is not a valid entry for the range (and was removed).
    Corrupt(String),
}

fn header(range: &Range<u64>, data: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..16].copy_from_slice(&range.start.to_le_bytes());
    h[16..24].copy_from_slice(&range.end.to_le_bytes());
    h[24..32].copy_from_slice(&xxh3_64(data).to_le_bytes());
    let own = xxh3_64(&h[..32]);
    h[32..40].copy_from_slice(&own.to_le_bytes());
    h
}

/// Reads the entry at `path` for `range` into `dst` (exactly `range` long)
/// and verifies it. A corrupt entry is deleted so the caller refetches it.
/// A hit refreshes the file's modification time: eviction is by last use.
pub(crate) fn read_into(path: &Path, range: &Range<u64>, dst: &mut [u8]) -> Lookup {
    // SAFETY: the entry's bytes are written over initialised ones, and
    // nothing uninitialised is written into `dst`.
    let room = unsafe { &mut *(dst as *mut [u8] as *mut [MaybeUninit<u8>]) };
    read_into_room(path, range, room)
}

/// [`read_into`], appending the entry's bytes to `dst` on a hit, into its
/// spare capacity as it is, not cleared first (a warm-cache read spent a
/// seventh of its CPU clearing the buffers its entries were read into).
/// On a miss `dst` is left as it was.
pub(crate) fn read_appended(path: &Path, range: &Range<u64>, dst: &mut BytesMut) -> Lookup {
    let n = (range.end - range.start) as usize;
    dst.reserve(n);
    let at = dst.len();
    let found = read_into_room(path, range, &mut dst.spare_capacity_mut()[..n]);
    if matches!(found, Lookup::Hit) {
        // SAFETY: a hit wrote all `n` bytes of the spare capacity.
        unsafe { dst.set_len(at + n) };
    }
    found
}

fn read_into_room(path: &Path, range: &Range<u64>, dst: &mut [MaybeUninit<u8>]) -> Lookup {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Missing,
        Err(e) => return Lookup::Corrupt(format!("cannot open: {e}")),
    };
    match verify_into(&file, range, dst) {
        Ok(()) => {
            // Best effort: a failed touch only makes eviction less exact.
            let _ = file.set_modified(SystemTime::now());
            Lookup::Hit
        }
        Err(detail) => {
            let _ = std::fs::remove_file(path);
            Lookup::Corrupt(detail)
        }
    }
}

fn verify_into(file: &File, range: &Range<u64>, dst: &mut [MaybeUninit<u8>]) -> Result<(), String> {
    let want = range.end - range.start;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len != HEADER_LEN as u64 + want {
        return Err(format!(
            "entry is {len} bytes, expected {}",
            HEADER_LEN as u64 + want
        ));
    }
    let mut h = [0u8; HEADER_LEN];
    file.read_exact_at(&mut h, 0).map_err(|e| e.to_string())?;
    let word = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    if &h[..8] != MAGIC || word(32) != xxh3_64(&h[..32]) {
        return Err("bad entry header".into());
    }
    if word(8) != range.start || word(16) != range.end {
        return Err(format!(
            "entry holds bytes {}..{}, not {}..{}",
            word(8),
            word(16),
            range.start,
            range.end
        ));
    }
    crate::io::pread_exact(file, dst, HEADER_LEN as u64).map_err(|e| e.to_string())?;
    // SAFETY: `pread_exact` wrote every byte of `dst`.
    let dst = unsafe { &*(dst as *const [MaybeUninit<u8>] as *const [u8]) };
    if xxh3_64(dst) != word(24) {
        return Err("checksum mismatch".into());
    }
    Ok(())
}

/// Writes `data` as the entry for `range` at `path`: into a locked temporary
/// file in `tmp_dir` first, then renamed into place. The lock tells start-up
/// cleanup that the writer is alive; a writer killed mid-write leaves an
/// unlocked temporary file, which cleanup removes.
pub(crate) fn write(
    tmp_dir: &Path,
    path: &Path,
    range: &Range<u64>,
    data: &[u8],
) -> io::Result<()> {
    write_file(tmp_dir, path, &[&header(range, data), data])
}

/// Writes `parts` to `path` through a locked temporary file in `tmp_dir` and a
/// rename: readers see the old file or the whole new one, never a part.
pub(crate) fn write_file(tmp_dir: &Path, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
    let tmp = tmp_dir.join(temp_name());
    let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let result = (|| {
        file.lock()?;
        for part in parts {
            file.write_all(part)?;
        }
        rename_into(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Renames `tmp` to `path`, creating the parent again if an eviction removed
/// it in between.
pub(crate) fn rename_into(tmp: &Path, path: &Path) -> io::Result<()> {
    match std::fs::rename(tmp, path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                super::create_private_dir(parent)?;
            }
            std::fs::rename(tmp, path)
        }
        other => other,
    }
}

/// A temporary file name no other writer (thread or process) uses.
pub(crate) fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{:016x}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        rand::random::<u64>()
    )
}

/// A writer holds its temporary file's lock from just after creating it; a
/// file younger than this may be in that instant.
const YOUNG: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether process `pid` (from a temporary file's name) is gone.
fn writer_is_dead(name: &str) -> bool {
    let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes temporary files whose writer is gone: unlocked, and either their
/// writer process no longer exists or they are too old to be mid-creation.
pub(crate) fn remove_orphans(tmp_dir: &Path) -> usize {
    let Ok(dir) = std::fs::read_dir(tmp_dir) else {
        return 0;
    };
    let mut removed = 0;
    for item in dir.flatten() {
        let path = item.path();
        let name = item.file_name().to_string_lossy().into_owned();
        let old = item
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > YOUNG);
        if !old && !writer_is_dead(&name) {
            continue;
        }
        let Ok(file) = OpenOptions::new().write(true).open(&path) else {
            continue;
        };
        if file.try_lock().is_ok() && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempdir::Dir, std::path::PathBuf) {
        let d = tempdir::Dir::new();
        std::fs::create_dir_all(d.0.join("tmp")).unwrap();
        let p = d.0.join("10-20");
        (d, p)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                let p = std::env::temp_dir().join(format!("fi-entry-{}", super::temp_name()));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_hit_is_appended_and_a_miss_leaves_the_buffer_as_it_was() {
        let (d, p) = setup();
        let data: Vec<u8> = (100..110u8).collect();
        write(&d.0.join("tmp"), &p, &(10..20), &data).unwrap();
        let mut buf = BytesMut::with_capacity(4);
        buf.extend_from_slice(b"head");
        assert!(matches!(
            read_appended(&p, &(10..20), &mut buf),
            Lookup::Hit
        ));
        assert_eq!(&buf[..4], b"head");
        assert_eq!(&buf[4..], &data[..]);
        // Damaged: removed, and nothing appended (the room past the length
        // holds whatever was read, which no one sees).
        let mut raw = std::fs::read(&p).unwrap();
        raw[HEADER_LEN + 9] ^= 0x01;
        std::fs::write(&p, &raw).unwrap();
        let mut buf = BytesMut::new();
        assert!(matches!(
            read_appended(&p, &(10..20), &mut buf),
            Lookup::Corrupt(_)
        ));
        assert!(buf.is_empty());
        assert!(matches!(
            read_appended(&p, &(10..20), &mut buf),
            Lookup::Missing
        ));
        assert!(buf.is_empty());
    }

    #[test]
    fn round_trip_and_damage_detection() {
        let (d, p) = setup();
        let data: Vec<u8> = (0..10u8).collect();
        write(&d.0.join("tmp"), &p, &(10..20), &data).unwrap();
        let mut buf = vec![0u8; 10];
        assert!(matches!(read_into(&p, &(10..20), &mut buf), Lookup::Hit));
        assert_eq!(buf, data);
        // The wrong range is never served.
        assert!(matches!(
            read_into(&p, &(11..21), &mut buf),
            Lookup::Corrupt(_)
        ));
        assert!(matches!(
            read_into(&p, &(10..20), &mut buf),
            Lookup::Missing
        ));

        // A flipped bit in the data.
        write(&d.0.join("tmp"), &p, &(10..20), &data).unwrap();
        let mut raw = std::fs::read(&p).unwrap();
        raw[HEADER_LEN + 3] ^= 0x10;
        std::fs::write(&p, &raw).unwrap();
        assert!(matches!(
            read_into(&p, &(10..20), &mut buf),
            Lookup::Corrupt(_)
        ));
        assert!(!p.exists(), "a corrupt entry is removed");

        // Truncated and empty files.
        for len in [0usize, 5, HEADER_LEN, HEADER_LEN + 9] {
            write(&d.0.join("tmp"), &p, &(10..20), &data).unwrap();
            let raw = std::fs::read(&p).unwrap();
            std::fs::write(&p, &raw[..len]).unwrap();
            assert!(matches!(
                read_into(&p, &(10..20), &mut buf),
                Lookup::Corrupt(_)
            ));
        }
        assert_eq!(std::fs::read_dir(d.0.join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn orphaned_temporary_files_are_removed_live_ones_kept() {
        let (d, _) = setup();
        let tmp = d.0.join("tmp");
        // A writer that no longer exists (pids never reach 2^31-2).
        std::fs::write(tmp.join("2147483646-0-dead.tmp"), b"x").unwrap();
        // This process, just created (not yet locked): left alone.
        let young = tmp.join(temp_name());
        std::fs::write(&young, b"x").unwrap();
        // This process, locked: left alone whatever its age.
        let live_path = tmp.join(temp_name());
        let live = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&live_path)
            .unwrap();
        live.lock().unwrap();
        let long_ago = SystemTime::now() - std::time::Duration::from_secs(60);
        live.set_modified(long_ago).unwrap();
        assert_eq!(remove_orphans(&tmp), 1);
        assert!(young.exists() && live_path.exists());
        // Once old and unlocked, it is an orphan.
        drop(live);
        assert_eq!(remove_orphans(&tmp), 1);
        assert!(young.exists());
    }
}
