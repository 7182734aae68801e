//! Decoded footers kept for the life of the process, keyed by object identity
//! and version: a later read of the same object version (the next epoch)
//! skips decoding its footer. Local files and objects without a version are
//! not kept.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use parquet::file::metadata::ParquetMetaData;

use crate::source::Source;

/// Footers kept at most (oldest dropped first).
const CAPACITY: usize = 1024;

type Key = (String, String, bool);

#[derive(Default)]
struct Memo {
    map: HashMap<Key, Arc<ParquetMetaData>>,
    order: VecDeque<Key>,
}

static MEMO: Mutex<Option<(u32, Memo)>> = Mutex::new(None);

fn key(source: &Source, with_page_index: bool) -> Option<Key> {
    let identity = source.cache_identity()?;
    let version = source.version().filter(|v| v.is_cacheable())?;
    Some((identity.to_string(), version.token(), with_page_index))
}

fn with_memo<T>(f: impl FnOnce(&mut Memo) -> T) -> T {
    let pid = std::process::id();
    let mut guard = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    // A forked child starts empty: the memo is per process, like the runtime.
    if guard.as_ref().is_some_and(|(p, _)| *p != pid) {
        *guard = None;
    }
    let (_, memo) = guard.get_or_insert_with(|| (pid, Memo::default()));
    f(memo)
}

/// The decoded footer of this version of `source`, if kept.
pub(crate) fn get(source: &Source, with_page_index: bool) -> Option<Arc<ParquetMetaData>> {
    let key = key(source, with_page_index)?;
    with_memo(|m| m.map.get(&key).cloned())
}

/// Keeps the decoded footer of this version of `source`.
pub(crate) fn put(source: &Source, with_page_index: bool, metadata: &Arc<ParquetMetaData>) {
    let Some(key) = key(source, with_page_index) else {
        return;
    };
    with_memo(|m| {
        if m.map.insert(key.clone(), Arc::clone(metadata)).is_none() {
            m.order.push_back(key);
            while m.order.len() > CAPACITY {
                if let Some(old) = m.order.pop_front() {
                    m.map.remove(&old);
                }
            }
        }
    });
}
