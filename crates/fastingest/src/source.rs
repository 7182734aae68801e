//! Turning what the user passed (paths, URLs, globs, directories, prefixes,
//! lists of them) into the list of files to read, in order.
//!
//! A directory (or a prefix: a URL ending in `/`) stands for every data file
//! under it, recursively, in name order; names beginning with `_` or `.`
//! (`_SUCCESS`, `_metadata`, `.crc`, ...) at any level below it are skipped,
//! as pyarrow does. A prefix costs one recursive listing (pages of 1,000
//! keys), never one per directory. A `_metadata` summary at the top of a
//! directory or prefix is not data either, but its files carry it (see
//! [`SourceFile::summary`]).

use std::path::PathBuf;
use std::sync::Arc;

use futures::TryStreamExt;
use globset::{GlobBuilder, GlobMatcher};
use object_store::path::Path;
use url::Url;

use crate::clients::{http_client, store_for, StorageOptions};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{
    classify_store_error, redact_url, version_of, with_retries, HttpSource, LocalSource,
    ObjectStoreSource, ObjectVersion, RangeSource,
};
use crate::stats::ReadStats;

/// Where the bytes of one file come from, shared by every task of a read.
pub type Source = Arc<dyn RangeSource>;

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn matcher(pattern: &str) -> Result<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| Error::InvalidArgument(format!("bad glob {pattern:?}: {e}")))
}

/// A glob's matches: object keys and the versions the listing reported.
pub type Listing = Vec<(String, ObjectVersion)>;

/// What resolving asks of a cache: glob listings kept from earlier reads,
/// and which objects it will want validated.
pub trait Listings: Send + Sync + std::fmt::Debug {
    /// A glob's listing kept from an earlier read, when it may be trusted.
    fn cached_listing(&self, key: &str) -> Option<Listing>;
    /// Keeps a glob's listing for later reads.
    fn store_listing(&self, key: &str, listing: &Listing);
    /// Whether reading the object with this identity will ask the store for
    /// its version (then one listing may do for several objects).
    fn needs_validation(&self, identity: &str) -> bool;
}

/// What resolving sources needs besides the specs.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Options for the object stores.
    pub options: &'a StorageOptions,
    /// Timeouts and retries of listings.
    pub config: &'a Config,
    /// Where listings are counted.
    pub stats: &'a ReadStats,
    /// The read's cache: glob listings may come from it, and validating many
    /// cached objects may use one listing.
    pub listings: Option<&'a dyn Listings>,
}

/// One file to read, and where it was found.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Where its bytes come from.
    pub source: Source,
    /// The file's path as partition keys are read from it: below the
    /// directory or prefix it was listed under, else its whole path (local
    /// path, or object key).
    pub path: String,
    /// Whether it was found by listing a directory or prefix (hive
    /// partitioning is on by default for those).
    pub in_directory: bool,
    /// The `_metadata` summary file at the top of that directory or prefix,
    /// when it has one (Parquet footers of every file, written by Spark,
    /// Dask or pyarrow); [`path`](Self::path) names the file in it.
    pub summary: Option<Source>,
}

/// Expands every entry of `specs` and opens the files, in order: a glob's
/// matches and a directory's files are sorted by name, and a list keeps the
/// caller's order.
pub async fn resolve(specs: &[String], cx: Context<'_>) -> Result<Vec<SourceFile>> {
    if specs.is_empty() {
        return Err(Error::InvalidArgument("no source given".into()));
    }
    let mut out = Vec::new();
    for spec in specs {
        out.extend(resolve_one(spec, cx).await?);
    }
    if let Some(listings) = cx.listings {
        validate_by_listing(&mut out, listings, cx).await;
    }
    Ok(out.into_iter().map(Resolved::into_file).collect())
}

/// Whether `spec` names a remote object by its key alone (no glob, no
/// trailing `/`): such a name may also be a prefix, which is only known once
/// the object turns out not to exist.
pub fn may_be_prefix(spec: &str) -> bool {
    match Url::parse(spec) {
        Ok(u) if u.scheme().len() > 1 => {
            !matches!(u.scheme(), "file" | "http" | "https")
                && !has_glob(u.path())
                && !u.path().ends_with('/')
                && u.path().len() > 1
        }
        _ => false,
    }
}

/// `spec` spelt as a prefix (`s3://b/t` → `s3://b/t/`).
pub fn as_prefix(spec: &str) -> String {
    format!("{spec}/")
}

/// A resolved file; objects in a store stay typed until validation by
/// listing has seen them.
struct Resolved {
    kind: ResolvedKind,
    path: String,
    in_directory: bool,
    summary: Option<Source>,
}

enum ResolvedKind {
    Object(ObjectStoreSource),
    Other(Source),
}

impl Resolved {
    fn other(source: Source, path: String, in_directory: bool) -> Self {
        Resolved {
            kind: ResolvedKind::Other(source),
            path,
            in_directory,
            summary: None,
        }
    }

    fn object(source: ObjectStoreSource, path: String, in_directory: bool) -> Self {
        Resolved {
            kind: ResolvedKind::Object(source),
            path,
            in_directory,
            summary: None,
        }
    }

    fn with_summary(mut self, summary: Option<Source>) -> Self {
        self.summary = summary;
        self
    }

    fn into_file(self) -> SourceFile {
        let source: Source = match self.kind {
            ResolvedKind::Object(o) => Arc::new(o),
            ResolvedKind::Other(s) => s,
        };
        SourceFile {
            source,
            path: self.path,
            in_directory: self.in_directory,
            summary: self.summary,
        }
    }

    fn as_object(&self) -> Option<&ObjectStoreSource> {
        match &self.kind {
            ResolvedKind::Object(o) => Some(o),
            ResolvedKind::Other(_) => None,
        }
    }
}

/// Whether a path below a directory or prefix names a data file: no part of
/// it begins with `_` or `.` (pyarrow's rule: `_SUCCESS`, `_metadata`,
/// `_temporary/`, `.crc`, `.hidden/` are not data).
pub(crate) fn is_data_path(relative: &str) -> bool {
    relative
        .split('/')
        .all(|part| !part.is_empty() && !part.starts_with(['_', '.']))
}

/// The name of a dataset's summary file, at the top of its directory.
const SUMMARY_NAME: &str = "_metadata";

/// The cache identity of an object in a store: its URL plus the settings
/// that say which server it is on (never credentials).
fn store_identity(url_base: &str, key: &str, server: &str) -> String {
    format!("{url_base}/{key}{server}")
}

/// The part of a cache identity that says which server holds the objects:
/// the endpoint and account settings among the options and environment,
/// never credentials. Computed once per source spec, not per object.
fn server_of(options: &StorageOptions) -> String {
    let locates = |k: &str| {
        let k = k.to_ascii_lowercase();
        (k.contains("endpoint") || k.contains("account_name") || k.contains("emulator"))
            && !["key", "secret", "token", "sas", "password"]
                .iter()
                .any(|s| k.contains(s))
    };
    let mut parts: Vec<String> = options
        .iter()
        .filter(|(k, _)| locates(k))
        .map(|(k, v)| format!("{k}={}", redact_url(v)))
        .collect();
    let mut env: Vec<String> = std::env::vars()
        .filter(|(k, _)| {
            ["AWS_", "AZURE_", "GOOGLE_"]
                .iter()
                .any(|p| k.starts_with(p))
                && locates(k)
        })
        .map(|(k, v)| format!("{k}={}", redact_url(&v)))
        .collect();
    env.sort();
    parts.extend(env);
    if parts.is_empty() {
        String::new()
    } else {
        format!(" @ {}", parts.join(" "))
    }
}

async fn resolve_one(spec: &str, cx: Context<'_>) -> Result<Vec<Resolved>> {
    let config = cx.config;
    let url = match Url::parse(spec) {
        // A Windows-style drive letter or a bare path is not a URL.
        Ok(u) if u.scheme().len() > 1 => Some(u),
        _ => None,
    };
    let Some(url) = url else {
        return resolve_local(spec, spec.to_string());
    };
    match url.scheme() {
        "file" => {
            let path = url
                .to_file_path()
                .map_err(|_| Error::InvalidArgument(format!("{spec}: not a valid file URL")))?;
            resolve_local(&path.to_string_lossy(), spec.to_string())
        }
        "http" | "https" => {
            if has_glob(url.path()) {
                return Err(Error::InvalidArgument(format!(
                    "{spec}: globs are not supported for http(s) URLs (there is no listing)"
                )));
            }
            let client = http_client(config)?;
            let source = Arc::new(HttpSource::new(spec.to_string(), client));
            Ok(vec![Resolved::other(source, url.path().to_string(), false)])
        }
        _ => resolve_store(spec, url, cx).await,
    }
}

fn local_file(path: PathBuf, relative: Option<String>) -> Result<Resolved> {
    let location = path.to_string_lossy().into_owned();
    let source = Arc::new(LocalSource::open(path, location.clone())?);
    Ok(match relative {
        Some(r) => Resolved::other(source, r, true),
        None => Resolved::other(source, location.replace('\\', "/"), false),
    })
}

fn resolve_local(path: &str, location: String) -> Result<Vec<Resolved>> {
    if !has_glob(path) {
        let p = PathBuf::from(path);
        if p.is_dir() {
            return resolve_local_directory(&p, path);
        }
        let src = LocalSource::open(p, location)?;
        return Ok(vec![Resolved::other(
            Arc::new(src),
            path.replace('\\', "/"),
            false,
        )]);
    }
    let entries =
        glob::glob(path).map_err(|e| Error::InvalidArgument(format!("bad glob {path:?}: {e}")))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let p = entry.map_err(|e| Error::Io {
            location: path.to_string(),
            range: None,
            attempts: 1,
            detail: e.to_string(),
            timed_out: false,
            cause: Some(std::sync::Arc::new(e)),
        })?;
        if p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(Error::NotFound {
            location: path.to_string(),
            detail: "no files match the pattern".into(),
        });
    }
    files.into_iter().map(|p| local_file(p, None)).collect()
}

/// Every data file under directory `root`, recursively, by relative path.
fn resolve_local_directory(root: &std::path::Path, spec: &str) -> Result<Vec<Resolved>> {
    let io_error = |e: std::io::Error| Error::Io {
        location: spec.to_string(),
        range: None,
        attempts: 1,
        detail: format!("listing the directory failed: {e}"),
        timed_out: false,
        cause: Some(std::sync::Arc::new(e)),
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, relative)) = pending.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(['_', '.']) {
                continue;
            }
            let path = entry.path();
            let below = if relative.is_empty() {
                name
            } else {
                format!("{relative}/{name}")
            };
            // Follows links, as pyarrow does.
            if path.is_dir() {
                pending.push((path, below));
            } else if path.is_file() {
                files.push((below, path));
            }
        }
    }
    if files.is_empty() {
        return Err(Error::NotFound {
            location: spec.to_string(),
            detail: "the directory holds no data files".into(),
        });
    }
    files.sort();
    let summary_path = root.join(SUMMARY_NAME);
    let summary: Option<Source> = if summary_path.is_file() {
        let location = summary_path.to_string_lossy().into_owned();
        LocalSource::open(summary_path, location)
            .ok()
            .map(|s| Arc::new(s) as Source)
    } else {
        None
    };
    files
        .into_iter()
        .map(|(relative, p)| Ok(local_file(p, Some(relative))?.with_summary(summary.clone())))
        .collect()
}

async fn resolve_store(spec: &str, url: Url, cx: Context<'_>) -> Result<Vec<Resolved>> {
    let (options, config) = (cx.options, cx.config);
    let (store, path) = store_for(&url, options, config)?;
    let raw_path = path.as_ref().to_string();
    let base = format!("{}://{}", url.scheme(), url.authority());
    let is_prefix = url.path().ends_with('/') || raw_path.is_empty();
    if !has_glob(&raw_path) && !is_prefix {
        let identity = store_identity(&base, &raw_path, &server_of(options));
        let source = ObjectStoreSource::new(store, path, spec.to_string(), identity);
        return Ok(vec![Resolved::object(source, raw_path, false)]);
    }
    // List under the longest literal directory prefix, then match the
    // pattern (a prefix: everything under it that is data).
    let (prefix, m) = if is_prefix {
        (raw_path.as_str(), None)
    } else {
        let first_glob = raw_path.find(['*', '?', '[']).unwrap_or(raw_path.len());
        let prefix = match raw_path[..first_glob].rfind('/') {
            Some(i) => &raw_path[..i],
            None => "",
        };
        (prefix, Some(matcher(&raw_path)?))
    };
    // A prefix's listing keeps its summary file too (split off below).
    let summary_key = if prefix.is_empty() {
        SUMMARY_NAME.to_string()
    } else {
        format!("{prefix}/{SUMMARY_NAME}")
    };
    let wanted = |key: &str| match &m {
        Some(m) => m.is_match(key),
        None => is_data_path(below(prefix, key)) || key == summary_key,
    };
    let prefix_path = (!prefix.is_empty()).then(|| Path::from(prefix));
    let server = server_of(options);
    let listing_key = if is_prefix {
        store_identity(&base, &format!("{raw_path}/"), &server)
    } else {
        store_identity(&base, &raw_path, &server)
    };
    let listing: Listing = match cx.listings.and_then(|c| c.cached_listing(&listing_key)) {
        Some(cached) => cached,
        None => {
            // A listing is retried as a whole, like any other request.
            let listed: Vec<object_store::ObjectMeta> =
                with_retries(config, cx.stats, spec, None, || async {
                    store
                        .list(prefix_path.as_ref())
                        .try_collect()
                        .await
                        .map_err(|e| classify_store_error(spec, e))
                })
                .await
                .map_err(|e| e.reading("listing failed"))?;
            let mut listing: Listing = listed
                .iter()
                .filter(|meta| wanted(meta.location.as_ref()))
                .map(|meta| (meta.location.as_ref().to_string(), version_of(meta)))
                .collect();
            listing.sort_by(|a, b| a.0.cmp(&b.0));
            if let Some(listings) = cx.listings {
                listings.store_listing(&listing_key, &listing);
            }
            listing
        }
    };
    let mut summary: Option<Source> = None;
    let mut listing = listing;
    if let Some(at) = listing
        .iter()
        .position(|(k, _)| is_prefix && *k == summary_key)
    {
        let (key, version) = listing.remove(at);
        let source = ObjectStoreSource::new(
            Arc::clone(&store),
            listed_path(&key),
            format!("{base}/{key}"),
            store_identity(&base, &key, &server),
        )
        .with_listed(version);
        summary = Some(Arc::new(source));
    }
    if listing.is_empty() {
        let detail = if is_prefix {
            "no data objects under the prefix"
        } else {
            "no objects match the pattern"
        };
        return Err(Error::NotFound {
            location: spec.to_string(),
            detail: detail.into(),
        });
    }
    Ok(listing
        .into_iter()
        .map(|(k, version)| {
            let loc = format!("{base}/{k}");
            let identity = store_identity(&base, &k, &server);
            let path = if is_prefix {
                below(prefix, &k).to_string()
            } else {
                k.clone()
            };
            let source = ObjectStoreSource::new(Arc::clone(&store), listed_path(&k), loc, identity)
                .with_listed(version);
            Resolved::object(source, path, is_prefix).with_summary(summary.clone())
        })
        .collect())
}

/// A listed key as a path: taken as it is (`Path::from` would escape a `%`
/// in it a second time, and the request would name another object).
fn listed_path(key: &str) -> Path {
    Path::parse(key).unwrap_or_else(|_| Path::from(key))
}

/// `key` below `prefix` (an object store prefix, without its `/`).
fn below<'k>(prefix: &str, key: &'k str) -> &'k str {
    if prefix.is_empty() {
        return key;
    }
    key.strip_prefix(prefix)
        .and_then(|k| k.strip_prefix('/'))
        .unwrap_or(key)
}

/// Validates cached objects named one by one with a listing of their common
/// prefix where that takes fewer requests than one HEAD per object: the
/// listing is abandoned as soon as its pages would outnumber the HEADs.
async fn validate_by_listing(sources: &mut [Resolved], listings: &dyn Listings, cx: Context<'_>) {
    const PAGE: usize = 1000;
    // (store, prefix) -> indices of sources needing validation.
    let mut groups: std::collections::BTreeMap<(usize, String), Vec<usize>> = Default::default();
    for (i, s) in sources.iter().enumerate() {
        let Some(object) = s.as_object() else {
            continue;
        };
        if object.listed_version().is_some() {
            continue;
        }
        let Some(identity) = object.cache_identity() else {
            continue;
        };
        if !listings.needs_validation(identity) {
            continue;
        }
        let key = object.path().as_ref();
        let prefix = key.rsplit_once('/').map_or("", |(p, _)| p).to_string();
        let store = Arc::as_ptr(object.store()) as *const () as usize;
        groups.entry((store, prefix)).or_default().push(i);
    }
    for ((_, prefix), members) in groups {
        if members.len() < 2 {
            continue;
        }
        let Some(first) = sources[members[0]].as_object() else {
            continue;
        };
        let store = Arc::clone(first.store());
        let location = first.location().to_string();
        let wanted: std::collections::HashMap<String, usize> = members
            .iter()
            .filter_map(|&i| {
                sources[i]
                    .as_object()
                    .map(|o| (o.path().as_ref().to_string(), i))
            })
            .collect();
        let prefix_path = (!prefix.is_empty()).then(|| Path::from(prefix.as_str()));
        let limit = PAGE * (members.len() - 1);
        let listed = with_retries(cx.config, cx.stats, &location, None, || async {
            let mut found = Vec::new();
            let mut stream = store.list(prefix_path.as_ref());
            let mut seen = 0usize;
            while let Some(meta) = stream
                .try_next()
                .await
                .map_err(|e| classify_store_error(&location, e))?
            {
                seen += 1;
                if seen > limit {
                    // More pages than HEADs: not worth it.
                    return Ok(None);
                }
                if let Some(&i) = wanted.get(meta.location.as_ref()) {
                    found.push((i, version_of(&meta)));
                }
            }
            Ok(Some(found))
        })
        .await;
        // A failed or abandoned listing leaves validation to one HEAD per object.
        if let Ok(Some(found)) = listed {
            for (i, version) in found {
                if let ResolvedKind::Object(o) = &mut sources[i].kind {
                    *o = o.relisted(version);
                }
            }
        }
    }
}
