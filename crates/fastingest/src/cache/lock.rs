//! Advisory file locks (`flock`) shared by threads and processes. The kernel
//! drops a lock when its holder dies, SIGKILL included, so a killed process
//! never leaves the others waiting.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// A held lock; released when dropped.
#[derive(Debug)]
pub(crate) struct FileLock(#[allow(dead_code)] File);

fn open(path: &Path) -> io::Result<File> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
    {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                super::create_private_dir(parent)?;
            }
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
        }
        other => other,
    }
}

/// Takes the lock if it is free.
pub(crate) fn try_acquire(path: &Path) -> io::Result<Option<FileLock>> {
    let file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(FileLock(file))),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Waits up to `wait` for the lock without blocking a runtime thread.
/// `Ok(None)`: still held by someone else after `wait` (the caller goes on
/// without it: at worst a range is fetched twice, never served wrong).
pub(crate) async fn acquire(path: &Path, wait: Duration) -> io::Result<Option<FileLock>> {
    let file = open(path)?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(FileLock(file))),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        if started.elapsed() >= wait {
            return Ok(None);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

/// Waits for the lock, blocking the thread (for short, rare sections:
/// eviction, counters, management commands).
pub(crate) fn acquire_blocking(path: &Path) -> io::Result<FileLock> {
    let file = open(path)?;
    file.lock()?;
    Ok(FileLock(file))
}
