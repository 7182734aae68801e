//! Where things live in a cache directory. Every name below `objects/` is a
//! hash or a pair of numbers, so no object name can reach outside the cache.
//!
//! ```text
//! <root>/CACHEDIR.TAG                    tells backup tools to skip the cache
//! <root>/objects/<h(url)>/record         the object's version and when it was validated
//! <root>/objects/<h(url)>/lock           held while validating the object
//! <root>/objects/<h(url)>/<h(version)>/<start>-<end>       cached bytes
//! <root>/objects/<h(url)>/<h(version)>/<start>-<end>.lock  held while fetching them
//! <root>/listings/<h(glob)>              glob listings (trusted under "immutable")
//! <root>/tmp/                            writes in progress (renamed into place)
//! <root>/stats, stats.lock               hit/miss counters of all processes
//! <root>/evict.lock                      held by the one process evicting
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_128;

use crate::io::ObjectVersion;

/// The paths of one cache directory.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub root: PathBuf,
}

/// A 128-bit hash as 32 hex digits: file names that say nothing about the key.
pub(crate) fn hashed(key: &str) -> String {
    format!("{:032x}", xxh3_128(key.as_bytes()))
}

impl Layout {
    pub fn new(root: PathBuf) -> Self {
        Layout { root }
    }
    pub fn objects(&self) -> PathBuf {
        self.root.join("objects")
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    pub fn listings(&self) -> PathBuf {
        self.root.join("listings")
    }
    pub fn object_dir(&self, identity: &str) -> PathBuf {
        self.objects().join(hashed(identity))
    }
    pub fn version_dir(&self, identity: &str, version: &ObjectVersion) -> PathBuf {
        self.object_dir(identity).join(hashed(&version.token()))
    }
    pub fn listing(&self, key: &str) -> PathBuf {
        self.listings().join(hashed(key))
    }
}

/// The file name of the entry holding `range`.
pub(crate) fn entry_name(range: &Range<u64>) -> String {
    format!("{}-{}", range.start, range.end)
}

/// The range an entry's file name stands for (`None` for other files).
pub(crate) fn parse_entry_name(name: &str) -> Option<Range<u64>> {
    let (a, b) = name.split_once('-')?;
    let (start, end) = (a.parse().ok()?, b.parse().ok()?);
    (start < end).then_some(start..end)
}

/// The lock file that guards fetching `entry`.
pub(crate) fn lock_path(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_escape_the_cache() {
        let layout = Layout::new(PathBuf::from("/c"));
        let dir = layout.object_dir("s3://b/../../etc/passwd");
        assert_eq!(dir.parent().unwrap(), Path::new("/c/objects"));
        assert_eq!(dir.file_name().unwrap().len(), 32);
        assert!(dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .chars()
            .all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn entry_names_round_trip() {
        assert_eq!(parse_entry_name(&entry_name(&(5..900))), Some(5..900));
        assert_eq!(parse_entry_name("5-900.lock"), None);
        assert_eq!(parse_entry_name("record"), None);
        assert_eq!(parse_entry_name("9-9"), None);
    }
}
