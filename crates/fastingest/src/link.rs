//! What the process has learned of the link to each store: whether its
//! footer requests were answered later than [`START_AFTER`] (a region away,
//! not loopback).
//!
//! A read of one file of unknown size asks for the file's start and a longer
//! tail beside the footer request, but only once that request has gone
//! unanswered for [`START_AFTER`]: a store nearby answers sooner, and the
//! extra requests would only cost it CPU. Waiting costs a far store's reads
//! those milliseconds every time, so once a footer answer from a store has
//! come late, later reads from it ask at once. The latest answer decides: a
//! store that answers a footer quickly again is treated as near again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::fetch::START_AFTER;
use crate::source::Source;

/// Per store ([`crate::io::RangeSource::link_id`]): whether its latest
/// footer answer came later than [`START_AFTER`]. One entry per store client,
/// which the process keeps anyway.
static FAR: Mutex<Option<HashMap<String, bool>>> = Mutex::new(None);

/// Records how long a footer request to `source`'s store took.
pub(crate) fn note_footer_answer(source: &Source, took: Duration) {
    let Some(id) = source.link_id() else {
        return;
    };
    let far = took >= START_AFTER;
    let mut guard = FAR.lock().unwrap_or_else(|e| e.into_inner());
    let known = guard.get_or_insert_with(HashMap::new);
    known.insert(id, far);
}

/// Whether the latest footer answer from `source`'s store came later than
/// [`START_AFTER`].
pub(crate) fn known_far(source: &Source) -> bool {
    let Some(id) = source.link_id() else {
        return false;
    };
    let guard = FAR.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().and_then(|k| k.get(&id)).copied() == Some(true)
}
