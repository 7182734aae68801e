//! Decoded footers kept for the life of the process, so that a later read of
//! the same file (the next epoch) skips decoding its footer.
//!
//! Two kinds of entry share one store and one memory budget:
//! - an object with a version (ETag) is kept by identity and version;
//! - a local file, or an object without a version, is kept with the footer
//!   bytes it was decoded from, and reused only when a later read finds the
//!   same bytes (`get_by_bytes`): a file's mtime is too coarse to say it was
//!   not rewritten, but the same footer bytes always decode to the same
//!   metadata, and comparing them costs far less than decoding them again (a
//!   500-column footer: 494 KB).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::file::metadata::ParquetMetaData;

use crate::source::Source;

/// Footers kept at most (oldest dropped first).
const CAPACITY: usize = 1024;
/// Memory the kept footers may hold, their decoded form and (for the
/// unversioned ones) their bytes together (oldest dropped first). A
/// 500-column footer with 8 row groups holds about 2.5 MB.
const BUDGET: usize = 128 << 20;

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    /// An object's identity, its version's token, and whether the page
    /// index was loaded.
    Versioned(String, String, bool),
    /// An unversioned file's location and size.
    Unversioned(String, u64),
}

/// A decoded footer, the bytes it was decoded from when it has no version
/// to vouch for it, and the memory the two hold.
struct Kept {
    metadata: Arc<ParquetMetaData>,
    bytes: Option<Bytes>,
    held: usize,
    /// The footer read as Arrow (its schema and how its columns map to
    /// fields), made once per layout: for 500 columns that is 0.3 ms, a
    /// sixteenth of a warm read of ten of them.
    arrow: Vec<(String, ArrowReaderMetadata)>,
}

/// Arrow readings kept per footer at most (one per layout a process reads
/// the file with; oldest dropped first).
const ARROW_READINGS: usize = 4;

/// The kept footers, dropped oldest first past `budget` bytes held or
/// `CAPACITY` entries.
struct Memo {
    map: HashMap<Key, Kept>,
    order: VecDeque<Key>,
    held: usize,
    budget: usize,
}

impl Default for Memo {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
            held: 0,
            budget: BUDGET,
        }
    }
}

impl Memo {
    fn get(&self, key: &Key) -> Option<Arc<ParquetMetaData>> {
        self.map.get(key).map(|kept| Arc::clone(&kept.metadata))
    }

    fn get_by_bytes(&self, key: &Key, footer: &[u8]) -> Option<Arc<ParquetMetaData>> {
        self.map
            .get(key)
            .filter(|kept| kept.bytes.as_deref() == Some(footer))
            .map(|kept| Arc::clone(&kept.metadata))
    }

    /// Whether a footer of the object `identity` is kept, of any version.
    fn holds_object(&self, identity: &str, with_page_index: bool) -> bool {
        self.order.iter().any(|key| {
            matches!(key, Key::Versioned(id, _, index) if id == identity && *index == with_page_index)
        })
    }

    /// The kept entry of `metadata` (the same decoded footer, not an equal one).
    fn entry_of(&mut self, metadata: &Arc<ParquetMetaData>) -> Option<&mut Kept> {
        self.map
            .values_mut()
            .find(|kept| Arc::ptr_eq(&kept.metadata, metadata))
    }

    fn arrow_reading(
        &mut self,
        metadata: &Arc<ParquetMetaData>,
        layout: &str,
    ) -> Option<ArrowReaderMetadata> {
        let kept = self.entry_of(metadata)?;
        let (_, reading) = kept.arrow.iter().find(|(l, _)| l == layout)?;
        Some(reading.clone())
    }

    fn keep_arrow_reading(
        &mut self,
        metadata: &Arc<ParquetMetaData>,
        layout: String,
        reading: &ArrowReaderMetadata,
    ) {
        let Some(kept) = self.entry_of(metadata) else {
            return;
        };
        if kept.arrow.iter().any(|(l, _)| *l == layout) {
            return;
        }
        if kept.arrow.len() == ARROW_READINGS {
            kept.arrow.remove(0);
        }
        kept.arrow.push((layout, reading.clone()));
    }

    fn put(&mut self, key: Key, kept: Kept) {
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

static MEMO: Mutex<Option<(u32, Memo)>> = Mutex::new(None);

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

fn versioned_key(source: &Source, with_page_index: bool) -> Option<Key> {
    let identity = source.cache_identity()?;
    let version = source.version().filter(|v| v.is_cacheable())?;
    Some(Key::Versioned(
        identity.to_string(),
        version.token(),
        with_page_index,
    ))
}

/// Whether `source` has a versioned key (without building it).
fn versioned(source: &Source) -> bool {
    source.cache_identity().is_some() && source.version().is_some_and(|v| v.is_cacheable())
}

/// Where an unversioned footer is kept: never for a read that wants the page
/// index (it lies outside the footer, so equal footer bytes would not vouch
/// for it), nor for a source with a version (its versioned key has it).
fn unversioned_key(source: &Source, size: u64, with_page_index: bool) -> Option<Key> {
    if with_page_index || versioned(source) {
        return None;
    }
    Some(Key::Unversioned(source.location().to_string(), size))
}

/// The decoded footer of this version of `source`, if kept.
pub(crate) fn get(source: &Source, with_page_index: bool) -> Option<Arc<ParquetMetaData>> {
    let key = versioned_key(source, with_page_index)?;
    with_memo(|m| m.get(&key))
}

/// Whether a footer of the object `source` names is kept, of any version:
/// its next read will most likely find its footer here once the footer
/// request's answer tells the version.
pub(crate) fn holds_object(source: &Source, with_page_index: bool) -> bool {
    let Some(identity) = source.cache_identity() else {
        return false;
    };
    with_memo(|m| m.holds_object(identity, with_page_index))
}

/// The decoded footer of unversioned `source` (`size` bytes long), if one
/// was kept that was decoded from exactly these `footer` bytes.
pub(crate) fn get_by_bytes(
    source: &Source,
    size: u64,
    with_page_index: bool,
    footer: &[u8],
) -> Option<Arc<ParquetMetaData>> {
    let key = unversioned_key(source, size, with_page_index)?;
    with_memo(|m| m.get_by_bytes(&key, footer))
}

/// Keeps the footer of `source` (`size` bytes long) decoded from `footer`:
/// by version when it has one, else with a copy of those bytes (not a slice:
/// that would hold the whole tail buffer).
pub(crate) fn put(
    source: &Source,
    size: u64,
    with_page_index: bool,
    footer: &[u8],
    metadata: &Arc<ParquetMetaData>,
) {
    let (key, bytes) = match versioned_key(source, with_page_index) {
        Some(key) => (key, None),
        None => match unversioned_key(source, size, with_page_index) {
            Some(key) => (key, Some(Bytes::copy_from_slice(footer))),
            None => return,
        },
    };
    let held = metadata.memory_size() + bytes.as_ref().map_or(0, Bytes::len);
    let kept = Kept {
        metadata: Arc::clone(metadata),
        bytes,
        held,
        arrow: Vec::new(),
    };
    with_memo(|m| m.put(key, kept));
}

/// The Arrow reading of the kept footer `metadata` made for `layout` (a
/// text that names the layout), if one was kept.
pub(crate) fn arrow_reading(
    metadata: &Arc<ParquetMetaData>,
    layout: &str,
) -> Option<ArrowReaderMetadata> {
    with_memo(|m| m.arrow_reading(metadata, layout))
}

/// Keeps `reading`, made from the footer `metadata` for `layout`, while
/// the footer is kept; a footer that is not kept keeps nothing.
pub(crate) fn keep_arrow_reading(
    metadata: &Arc<ParquetMetaData>,
    layout: String,
    reading: &ArrowReaderMetadata,
) {
    with_memo(|m| m.keep_arrow_reading(metadata, layout, reading))
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

    fn unversioned(bytes: &'static [u8], held: usize) -> Kept {
        Kept {
            metadata: metadata(),
            bytes: Some(Bytes::from_static(bytes)),
            held,
            arrow: Vec::new(),
        }
    }

    fn by_version(held: usize) -> Kept {
        Kept {
            metadata: metadata(),
            bytes: None,
            held,
            arrow: Vec::new(),
        }
    }

    fn file(n: u64) -> Key {
        Key::Unversioned("/data/f.parquet".to_string(), n)
    }

    fn object(n: u64) -> Key {
        Key::Versioned("s3://b/f.parquet".to_string(), format!("etag-{n}"), false)
    }

    #[test]
    fn a_kept_footer_is_found_only_by_its_own_bytes() {
        let mut memo = Memo::default();
        memo.put(file(1), unversioned(b"footer one", 100));
        assert!(memo.get_by_bytes(&file(1), b"footer one").is_some());
        assert!(memo.get_by_bytes(&file(1), b"footer two").is_none());
        assert!(memo.get_by_bytes(&file(2), b"footer one").is_none());
        // Kept again under the same key: the new bytes replace the old.
        memo.put(file(1), unversioned(b"footer two", 300));
        assert!(memo.get_by_bytes(&file(1), b"footer one").is_none());
        assert!(memo.get_by_bytes(&file(1), b"footer two").is_some());
        assert_eq!((memo.held, memo.map.len(), memo.order.len()), (300, 1, 1));
    }

    #[test]
    fn an_object_is_known_by_any_of_its_versions_but_not_by_its_page_index_alone() {
        let mut memo = Memo::default();
        assert!(!memo.holds_object("s3://b/f.parquet", false));
        memo.put(object(1), by_version(100));
        memo.put(file(1), unversioned(b"footer", 100));
        assert!(memo.holds_object("s3://b/f.parquet", false));
        // Kept without its page index: a read that wants it is not served.
        assert!(!memo.holds_object("s3://b/f.parquet", true));
        assert!(!memo.holds_object("s3://b/g.parquet", false));
        // A local file's entry names no object.
        assert!(!memo.holds_object("/data/f.parquet", false));
    }

    #[test]
    fn a_footer_kept_by_version_is_never_taken_for_one_kept_by_bytes() {
        let mut memo = Memo::default();
        memo.put(object(1), by_version(100));
        assert!(memo.get(&object(1)).is_some());
        assert!(memo.get(&object(2)).is_none());
        // No bytes to compare: a lookup by bytes under its key finds nothing.
        assert!(memo.get_by_bytes(&object(1), b"").is_none());
    }

    #[test]
    fn the_oldest_footers_of_either_kind_go_first_past_the_budget() {
        let mut memo = Memo {
            budget: 1000,
            ..Memo::default()
        };
        for n in 0..5 {
            let (key, kept) = match n % 2 {
                0 => (object(n), by_version(200)),
                _ => (file(n), unversioned(b"f", 200)),
            };
            memo.put(key, kept);
        }
        assert_eq!(memo.held, 1000);
        memo.put(file(5), unversioned(b"f", 250));
        // 0 and 1 went: with 0 alone gone, 1,050 bytes were still held.
        assert!(memo.get(&object(0)).is_none());
        assert!(memo.get_by_bytes(&file(1), b"f").is_none());
        assert!(memo.get(&object(2)).is_some() && memo.get(&object(4)).is_some());
        assert!(memo.get_by_bytes(&file(3), b"f").is_some());
        assert!(memo.get_by_bytes(&file(5), b"f").is_some());
        assert_eq!(memo.held, 850);
        // A footer larger than a quarter of the budget is not kept at all.
        memo.put(object(9), by_version(251));
        assert!(memo.get(&object(9)).is_none());
        assert_eq!(memo.held, 850);
    }

    #[test]
    fn arrow_readings_are_kept_with_their_own_footer_per_layout() {
        use parquet::arrow::arrow_reader::ArrowReaderOptions;
        let mut memo = Memo::default();
        let kept = by_version(10);
        let metadata = Arc::clone(&kept.metadata);
        let reading = |m: &Arc<ParquetMetaData>| {
            ArrowReaderMetadata::try_new(Arc::clone(m), ArrowReaderOptions::new()).unwrap()
        };
        // Not kept before its footer is.
        memo.keep_arrow_reading(&metadata, "a".into(), &reading(&metadata));
        memo.put(object(1), kept);
        assert!(memo.arrow_reading(&metadata, "a").is_none());
        memo.keep_arrow_reading(&metadata, "a".into(), &reading(&metadata));
        let found = memo.arrow_reading(&metadata, "a").unwrap();
        assert!(Arc::ptr_eq(found.metadata(), &metadata));
        assert!(
            memo.arrow_reading(&metadata, "b").is_none(),
            "another layout"
        );
        // An equal footer decoded apart is not the kept one.
        let other = by_version(10).metadata;
        assert!(memo.arrow_reading(&other, "a").is_none());
        // A few layouts at most, the oldest dropped first.
        for layout in ["b", "c", "d", "e"] {
            memo.keep_arrow_reading(&metadata, layout.into(), &reading(&metadata));
        }
        assert!(memo.arrow_reading(&metadata, "a").is_none());
        assert!(memo.arrow_reading(&metadata, "e").is_some());
        // Gone with the footer.
        for n in 2..CAPACITY as u64 + 2 {
            memo.put(object(n), by_version(1));
        }
        assert!(memo.arrow_reading(&metadata, "e").is_none());
    }

    #[test]
    fn no_more_than_capacity_footers_are_kept() {
        let mut memo = Memo::default();
        for n in 0..CAPACITY as u64 + 3 {
            memo.put(object(n), by_version(1));
        }
        assert_eq!((memo.map.len(), memo.order.len()), (CAPACITY, CAPACITY));
        assert!(memo.get(&object(2)).is_none() && memo.get(&object(3)).is_some());
        assert_eq!(memo.held, CAPACITY);
    }
}
