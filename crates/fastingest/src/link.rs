//! What the process has learned of the link to each store: how soon its
//! latest footer requests were answered.
//!
//! A read of one file of unknown size asks for the file's start and a longer
//! tail beside the footer request, but only once that request has gone
//! unanswered for [`START_AFTER`]: a store nearby answers sooner, and the
//! extra requests would only cost it CPU. Waiting costs a far store's reads
//! those milliseconds every time, so once footer answers from a store have
//! come late, later reads from it ask at once.
//!
//! One answer is a noisy measure of a link: MinIO on loopback answered one
//! footer in 16 ms among answers of 2, and through the emulated cloud link
//! (30 ms +-5) one answer in four of a steady read loop took over 60 ms,
//! which made that read plan for a store a region away (twice the requests,
//! [`crate::request::DISTANT_ANSWER`]). A hiccup only ever adds time, so the
//! quickest of a store's last few answers ([`RECENT_ANSWERS`]) is what the
//! link allows, as a TCP stack takes the least round trip it saw lately; a
//! store that answers quickly again is treated as near again at once. The
//! price: a link that has truly become slower is judged by its new answers
//! only once [`RECENT_ANSWERS`] of them have come.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use crate::fetch::START_AFTER;
use crate::source::Source;

/// How many of a store's latest footer answers its link is judged by.
pub(crate) const RECENT_ANSWERS: usize = 8;

/// Per store ([`crate::io::RangeSource::link_id`]): its latest footer
/// answers, oldest first, at most [`RECENT_ANSWERS`]. One entry per store
/// client, which the process keeps anyway.
static ANSWERS: Mutex<Option<HashMap<String, VecDeque<Duration>>>> = Mutex::new(None);

/// Records how long a footer request to `source`'s store took.
pub(crate) fn note_footer_answer(source: &Source, took: Duration) {
    let Some(id) = source.link_id() else {
        return;
    };
    let mut guard = ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    let recent = guard
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_default();
    if recent.len() == RECENT_ANSWERS {
        recent.pop_front();
    }
    recent.push_back(took);
}

/// The quickest of the latest footer answers from `source`'s store (`None`:
/// none recorded).
pub(crate) fn quickest_recent_answer(source: &Source) -> Option<Duration> {
    let id = source.link_id()?;
    let guard = ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_ref()?.get(&id)?.iter().min().copied()
}

/// Whether even the quickest of the latest footer answers from `source`'s
/// store came later than [`START_AFTER`].
pub(crate) fn known_far(source: &Source) -> bool {
    quickest_recent_answer(source).is_some_and(|took| took >= START_AFTER)
}
