//! Turning what the user passed (paths, URLs, globs, lists of them) into the
//! list of files to read, in order.

use std::path::PathBuf;
use std::sync::Arc;

use futures::TryStreamExt;
use globset::{GlobBuilder, GlobMatcher};
use object_store::path::Path;
use url::Url;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{
    classify_store_error, with_retries, HttpSource, LocalSource, RangeSource, StoreSource,
};
use crate::store::{http_client, store_for, StorageOptions};

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

/// Expands every entry of `specs` and opens the files, in order: a glob's
/// matches are sorted by name, and a list keeps the caller's order.
pub async fn resolve(
    specs: &[String],
    options: &StorageOptions,
    config: &Config,
) -> Result<Vec<Source>> {
    if specs.is_empty() {
        return Err(Error::InvalidArgument("no source given".into()));
    }
    let mut out = Vec::new();
    for spec in specs {
        out.extend(resolve_one(spec, options, config).await?);
    }
    Ok(out)
}

async fn resolve_one(spec: &str, options: &StorageOptions, config: &Config) -> Result<Vec<Source>> {
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
            Ok(vec![Arc::new(HttpSource::new(spec.to_string(), client))])
        }
        _ => resolve_store(spec, url, options, config).await,
    }
}

fn resolve_local(path: &str, location: String) -> Result<Vec<Source>> {
    if !has_glob(path) {
        let src = LocalSource::open(PathBuf::from(path), location)?;
        return Ok(vec![Arc::new(src)]);
    }
    let entries =
        glob::glob(path).map_err(|e| Error::InvalidArgument(format!("bad glob {path:?}: {e}")))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let p = entry.map_err(|e| Error::Io {
            location: path.to_string(),
            range: 0..0,
            attempts: 1,
            detail: e.to_string(),
            timed_out: false,
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
    files
        .into_iter()
        .map(|p| {
            let loc = p.to_string_lossy().into_owned();
            LocalSource::open(p, loc).map(|s| Arc::new(s) as Source)
        })
        .collect()
}

async fn resolve_store(
    spec: &str,
    url: Url,
    options: &StorageOptions,
    config: &Config,
) -> Result<Vec<Source>> {
    let (store, path) = store_for(&url, options, config)?;
    let raw_path = path.as_ref().to_string();
    if !has_glob(&raw_path) {
        return Ok(vec![Arc::new(StoreSource::new(
            store,
            path,
            spec.to_string(),
        ))]);
    }
    // List under the longest literal directory prefix, then match the pattern.
    let first_glob = raw_path.find(['*', '?', '[']).unwrap_or(raw_path.len());
    let prefix = match raw_path[..first_glob].rfind('/') {
        Some(i) => &raw_path[..i],
        None => "",
    };
    let m = matcher(&raw_path)?;
    let prefix_path = (!prefix.is_empty()).then(|| Path::from(prefix));
    // A listing is retried as a whole, like any other request.
    let stats = crate::stats::ReadStats::new();
    let listed: Vec<object_store::ObjectMeta> =
        with_retries(config, &stats, spec, 0..0, || async {
            store
                .list(prefix_path.as_ref())
                .try_collect()
                .await
                .map_err(|e| classify_store_error(spec, e))
        })
        .await
        .map_err(|e| e.reading("listing failed"))?;
    let mut keys: Vec<String> = listed
        .into_iter()
        .map(|meta| meta.location.as_ref().to_string())
        .filter(|k| m.is_match(k))
        .collect();
    keys.sort();
    if keys.is_empty() {
        return Err(Error::NotFound {
            location: spec.to_string(),
            detail: "no objects match the pattern".into(),
        });
    }
    let base = format!("{}://{}", url.scheme(), url.authority());
    Ok(keys
        .into_iter()
        .map(|k| {
            let loc = format!("{base}/{k}");
            Arc::new(StoreSource::new(
                Arc::clone(&store),
                Path::from(k.as_str()),
                loc,
            )) as Source
        })
        .collect())
}
