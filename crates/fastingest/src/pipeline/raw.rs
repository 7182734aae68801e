//! Raw reads: the planned bytes exactly as the file stores them, handed out
//! piece by piece (a column chunk, a stripe) as their spans arrive, for a
//! consumer that decodes them itself (a GPU decoder, a re-packer). The same
//! plan, fetcher, retries and cache as a decoded read.

use std::collections::HashMap;
use std::ops::Range;

use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::cache::Cache;
use crate::error::Result;
use crate::fetch::Fetcher;
use crate::known::Known;
use crate::plan::FilePlan;
use crate::source::Source;

/// One file of a raw read.
#[derive(Debug, Clone)]
pub(crate) struct RawFile {
    /// Where the bytes come from.
    pub source: Source,
    /// Its planned spans.
    pub plan: FilePlan,
    /// Bytes already in memory (from the metadata request) as
    /// `(offset, bytes)` spans.
    pub known: Known,
}

/// Pieces as they arrive: `(index into the pieces asked for, bytes)`, in
/// whatever order their spans complete.
pub type PieceReceiver = mpsc::Receiver<Result<(usize, Bytes)>>;

/// A span of a raw read: (file index, span index in that file's plan).
type SpanKey = (usize, usize);

/// Starts fetching every span of `files` in the background and sends each
/// of `pieces` (`(file index, byte range)`, each inside one planned span) as
/// soon as its span is in: views into the span, not copies. Dropping the
/// receiver cancels the fetch. The cache's counters are flushed at the end.
pub(crate) fn fetch_pieces(
    fetcher: Fetcher,
    files: Vec<RawFile>,
    pieces: &[(usize, Range<u64>)],
    cache: Option<Cache>,
) -> PieceReceiver {
    let (tx, rx) = mpsc::channel(64);
    // Which pieces each span of each file holds.
    let mut in_span: HashMap<SpanKey, Vec<(usize, Range<u64>)>> = HashMap::new();
    for (i, (file, range)) in pieces.iter().enumerate() {
        if let Some(s) = files[*file].plan.span_of(range) {
            in_span
                .entry((*file, s))
                .or_default()
                .push((i, range.clone()));
        }
    }
    tokio::spawn(async move {
        let mut guards = Vec::new();
        let mut pending = FuturesUnordered::new();
        for (f, file) in files.iter().enumerate() {
            let (spans, g) = fetcher.start_with(&file.source, &file.plan, &file.known);
            guards.push(g);
            for (s, fut) in spans.into_iter().enumerate() {
                let start = file.plan.spans[s].range.start;
                pending.push(async move { (f, s, start, fut.await) });
            }
        }
        while let Some((f, s, start, fetched)) = pending.next().await {
            // Raw chunks go to the user as they are: never a view of a
            // mapped file (copied out, and checked whole after the copy).
            let source = &files[f].source;
            let fetched = fetched.and_then(|bytes| {
                let bytes = match source.mapped() {
                    Some(map) => map.detach_bytes(bytes),
                    None => bytes,
                };
                match source.cut_short() {
                    false => Ok(bytes),
                    true => Err(crate::io::cut_short_error(
                        source.location(),
                        Some(start..start + bytes.len() as u64),
                    )),
                }
            });
            let message = fetched.map(|bytes| {
                in_span
                    .remove(&(f, s))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(i, r)| {
                        let from = (r.start - start) as usize;
                        (i, bytes.slice(from..from + (r.end - r.start) as usize))
                    })
                    .collect::<Vec<_>>()
            });
            match message {
                Ok(found) => {
                    for piece in found {
                        if tx.send(Ok(piece)).await.is_err() {
                            return; // nobody listens: stop fetching
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            }
        }
        if let Some(cache) = &cache {
            cache.flush_counters();
        }
        drop(guards);
    });
    rx
}
