//! An object's record: the version its cached bytes belong to and when that
//! version was last confirmed with the store. Small text files, replaced
//! atomically; anything unreadable counts as no record.

use std::io;
use std::path::Path;

use crate::io::ObjectVersion;

/// What the cache knows about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// The object's URL without credentials (for `fastingest cache info`).
    pub identity: String,
    /// The version the cached bytes are of.
    pub version: ObjectVersion,
    /// When the store last confirmed the version (Unix milliseconds).
    pub validated_at: u64,
}

const HEADER: &str = "fastingest-record 1";

fn escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn unescape(s: &str) -> String {
    url::form_urlencoded::parse(format!("v={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn optional(s: &Option<String>) -> String {
    s.as_deref()
        .map_or("-".to_string(), |v| format!("={}", escape(v)))
}

fn parse_optional(s: &str) -> Option<Option<String>> {
    match s {
        "-" => Some(None),
        _ => Some(Some(unescape(s.strip_prefix('=')?))),
    }
}

impl Record {
    fn to_text(&self) -> String {
        format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n{}\n",
            escape(&self.identity),
            self.version.size,
            optional(&self.version.etag),
            optional(&self.version.last_modified),
            self.validated_at
        )
    }

    fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        if lines.next()? != HEADER {
            return None;
        }
        let identity = unescape(lines.next()?);
        let size = lines.next()?.parse().ok()?;
        let etag = parse_optional(lines.next()?)?;
        let last_modified = parse_optional(lines.next()?)?;
        let validated_at = lines.next()?.parse().ok()?;
        Some(Record {
            identity,
            version: ObjectVersion {
                size,
                etag,
                last_modified,
            },
            validated_at,
        })
    }

    /// Reads the record at `path`; `None` when absent or unreadable.
    pub fn read(path: &Path) -> Option<Record> {
        let text = std::fs::read_to_string(path).ok()?;
        Record::parse(&text)
    }

    /// Replaces the record at `path` atomically.
    pub fn write(&self, tmp_dir: &Path, path: &Path) -> io::Result<()> {
        write_atomic(tmp_dir, path, self.to_text().as_bytes())
    }
}

/// Writes a small file through a temporary file and a rename.
pub(crate) fn write_atomic(tmp_dir: &Path, path: &Path, data: &[u8]) -> io::Result<()> {
    super::entry::write_file(tmp_dir, path, &[data])
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Writes a glob's listing (one object per line).
pub(crate) fn write_listing(
    tmp_dir: &Path,
    path: &Path,
    listing: &crate::source::Listing,
) -> io::Result<()> {
    let mut text = String::from("fastingest-listing 1\n");
    for (key, v) in listing {
        text.push_str(&format!(
            "{} {} {} {}\n",
            escape(key),
            v.size,
            optional(&v.etag),
            optional(&v.last_modified)
        ));
    }
    write_atomic(tmp_dir, path, text.as_bytes())
}

/// Reads a listing written by [`write_listing`]; `None` if absent or damaged.
pub(crate) fn read_listing(path: &Path) -> Option<crate::source::Listing> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "fastingest-listing 1" {
        return None;
    }
    lines
        .map(|line| {
            let mut words = line.split(' ');
            let key = unescape(words.next()?);
            let size = words.next()?.parse().ok()?;
            let etag = parse_optional(words.next()?)?;
            let last_modified = parse_optional(words.next()?)?;
            Some((
                key,
                ObjectVersion {
                    size,
                    etag,
                    last_modified,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_any_text() {
        let r = Record {
            identity: "s3://b/odd key\nwith newline%".into(),
            version: ObjectVersion {
                size: 42,
                etag: Some("\"a b\"".into()),
                last_modified: None,
            },
            validated_at: 1234,
        };
        assert_eq!(Record::parse(&r.to_text()), Some(r));
        assert_eq!(Record::parse("garbage"), None);
        assert_eq!(Record::parse(""), None);
    }
}
