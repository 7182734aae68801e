//! Decoded footers kept for the life of the process, keyed by object identity
//! and version: a later read of the same object version (the next epoch)
//! skips decoding its footer. Local files and objects without a version are
//! kept with the footer bytes they were decoded from, and reused only when a
//! later read finds the same bytes (`get_by_bytes`): a file's mtime is too
//! coarse to say it was not rewritten, but the same footer bytes always
//! decode to the same metadata, and comparing them costs far less than
//! decoding them again (a 500-column footer: 494 KB).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::file::metadata::ParquetMetaData;

use crate::source::Source;

/// Footers kept at most (oldest dropped first).
const CAPACITY: usize = 1024;
/// Memory the unversioned footers may hold, their bytes and decoded form
/// together (oldest dropped first).
const UNVERSIONED_BYTES: usize = 64 << 20;

type Key = (String, String, bool);
/// An unversioned file's location and size.
type BytesKey = (String, u64);

#[derive(Default)]
struct Memo {
    map: HashMap<Key, Arc<ParquetMetaData>>,
    order: VecDeque<Key>,
    by_bytes: ByBytes,
}

/// The unversioned footers, dropped oldest first past `budget` bytes held or
/// `CAPACITY` entries.
struct ByBytes {
    map: HashMap<BytesKey, KeptFooter>,
    order: VecDeque<BytesKey>,
    held: usize,
    budget: usize,
}

impl Default for ByBytes {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
            held: 0,
            budget: UNVERSIONED_BYTES,
        }
    }
}

impl ByBytes {
    fn get(&self, key: &BytesKey, footer: &[u8]) -> Option<Arc<ParquetMetaData>> {
        self.map
            .get(key)
            .filter(|kept| kept.bytes.as_ref() == footer)
            .map(|kept| Arc::clone(&kept.metadata))
    }

    fn put(&mut self, key: BytesKey, kept: KeptFooter) {
        if kept.held > self.budget / 4 {
            return; // one footer would push out most of the others
        }
        self.held += kept.held;
        match self.map.insert(key.clone(), kept) {
            Some(old) => self.held -= old.held,
            None => self.order.push_back(key),
        }
        while self.held > self.budget || self.order.len() > CAPACITY {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(old) = self.map.remove(&old) {
                self.held -= old.held;
            }
        }
    }
}

/// An unversioned footer: the bytes it was decoded from, what they decoded
/// to, and the memory the two hold.
struct KeptFooter {
    bytes: Bytes,
    metadata: Arc<ParquetMetaData>,
    held: usize,
}

static MEMO: Mutex<Option<(u32, Memo)>> = Mutex::new(None);

fn key(source: &Source, with_page_index: bool) -> Option<Key> {
    let identity = source.cache_identity()?;
    let version = source.version().filter(|v| v.is_cacheable())?;
    Some((identity.to_string(), version.token(), with_page_index))
}

/// Whether `source` has a key in the versioned memo (without building it).
fn versioned(source: &Source) -> bool {
    source.cache_identity().is_some() && source.version().is_some_and(|v| v.is_cacheable())
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

/// Where an unversioned footer is kept: never for a read that wants the page
/// index (it lies outside the footer, so equal footer bytes would not vouch
/// for it), nor for a source with a version (the versioned memo has it).
fn bytes_key(source: &Source, size: u64, with_page_index: bool) -> Option<BytesKey> {
    if with_page_index || versioned(source) {
        return None;
    }
    Some((source.location().to_string(), size))
}

/// The decoded footer of `source` (`size` bytes long), if one was kept that
/// was decoded from exactly these `footer` bytes.
pub(crate) fn get_by_bytes(
    source: &Source,
    size: u64,
    with_page_index: bool,
    footer: &[u8],
) -> Option<Arc<ParquetMetaData>> {
    let key = bytes_key(source, size, with_page_index)?;
    with_memo(|m| m.by_bytes.get(&key, footer))
}

/// Keeps the footer decoded from `footer`, with a copy of those bytes (not a
/// slice: that would hold the whole tail buffer).
pub(crate) fn put_by_bytes(
    source: &Source,
    size: u64,
    with_page_index: bool,
    footer: &[u8],
    metadata: &Arc<ParquetMetaData>,
) {
    let Some(key) = bytes_key(source, size, with_page_index) else {
        return;
    };
    let kept = KeptFooter {
        bytes: Bytes::copy_from_slice(footer),
        metadata: Arc::clone(metadata),
        held: footer.len() + metadata.memory_size(),
    };
    with_memo(|m| m.by_bytes.put(key, kept));
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::metadata::{FileMetaData, ParquetMetaDataBuilder};
    use parquet::schema::{parser::parse_message_type, types::SchemaDescriptor};

    fn metadata() -> Arc<ParquetMetaData> {
        let schema = parse_message_type("message m { required int32 a; }").unwrap();
        let schema = Arc::new(SchemaDescriptor::new(Arc::new(schema)));
        let file = FileMetaData::new(1, 0, None, None, schema, None);
        Arc::new(ParquetMetaDataBuilder::new(file).build())
    }

    fn kept(bytes: &'static [u8], held: usize) -> KeptFooter {
        KeptFooter {
            bytes: Bytes::from_static(bytes),
            metadata: metadata(),
            held,
        }
    }

    fn key(n: u64) -> BytesKey {
        ("/data/f.parquet".to_string(), n)
    }

    #[test]
    fn a_kept_footer_is_found_only_by_its_own_bytes() {
        let mut memo = ByBytes::default();
        memo.put(key(1), kept(b"footer one", 100));
        assert!(memo.get(&key(1), b"footer one").is_some());
        assert!(memo.get(&key(1), b"footer two").is_none());
        assert!(memo.get(&key(2), b"footer one").is_none());
        // Kept again under the same key: the new bytes replace the old.
        memo.put(key(1), kept(b"footer two", 300));
        assert!(memo.get(&key(1), b"footer one").is_none());
        assert!(memo.get(&key(1), b"footer two").is_some());
        assert_eq!((memo.held, memo.map.len(), memo.order.len()), (300, 1, 1));
    }

    #[test]
    fn the_oldest_footers_go_first_past_the_budget() {
        let mut memo = ByBytes {
            budget: 1000,
            ..ByBytes::default()
        };
        for n in 0..5 {
            memo.put(key(n), kept(b"f", 200));
        }
        assert_eq!(memo.held, 1000);
        memo.put(key(5), kept(b"f", 250));
        // 0 and 1 went: with 0 alone gone, 1,050 bytes were still held.
        assert!(memo.get(&key(0), b"f").is_none() && memo.get(&key(1), b"f").is_none());
        assert!((2..6).all(|n| memo.get(&key(n), b"f").is_some()));
        assert_eq!(memo.held, 850);
        // A footer larger than a quarter of the budget is not kept at all.
        memo.put(key(9), kept(b"f", 251));
        assert!(memo.get(&key(9), b"f").is_none());
        assert_eq!(memo.held, 850);
    }
}
