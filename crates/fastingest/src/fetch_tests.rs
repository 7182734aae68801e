//! The fetcher against an instrumented source: bytes land in the right
//! place, the in-flight bound holds, and transient faults are retried.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::fetch::Fetcher;
use crate::fetch::{Beside, FooterRound};
use crate::io::{Failure, Guess, Guessed, ObjectVersion, RangeSource, Tail};
use crate::known::Known;
use crate::plan::{FilePlan, PlanUnit};
use crate::source::Source;
use crate::{Config, ReadStats};
use bytes::{Bytes, BytesMut};
use futures::future::{join_all, BoxFuture};
use futures::FutureExt;

/// A fake object whose byte i is `i % 251`, that counts requests in flight
/// and, when `fail_every` > 0, fails the first attempt at every
/// `fail_every`-th distinct range once (the retry of that range succeeds).
#[derive(Debug)]
struct Instrumented {
    size: u64,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    calls: AtomicUsize,
    largest: AtomicUsize,
    fail_every: usize,
    failed_once: Mutex<HashSet<u64>>,
    /// Every range asked of `read_into`.
    asked: Mutex<Vec<Range<u64>>>,
    /// The etag speculative reads report (the tail's is "a").
    guess_etag: &'static str,
    /// How long the tail takes (the link's round trip).
    tail_delay: Duration,
    /// How long a speculative read takes.
    guess_delay: Duration,
    /// Every speculative read asked for, and how many were answered.
    guesses: Mutex<Vec<Guess>>,
    guesses_answered: AtomicUsize,
    /// When each speculative read was asked for.
    guessed_at: Mutex<Vec<tokio::time::Instant>>,
    /// The store it says it is in (`RangeSource::link_id`).
    link: Option<&'static str>,
}

impl Instrumented {
    fn new(size: u64, fail_every: usize) -> Self {
        Instrumented {
            size,
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
            fail_every,
            failed_once: Mutex::new(HashSet::new()),
            asked: Mutex::new(Vec::new()),
            guess_etag: "a",
            tail_delay: Duration::ZERO,
            guess_delay: Duration::ZERO,
            guesses: Mutex::new(Vec::new()),
            guesses_answered: AtomicUsize::new(0),
            guessed_at: Mutex::new(Vec::new()),
            link: None,
        }
    }
}

fn byte_at(i: u64) -> u8 {
    (i % 251) as u8
}

fn version_with(size: u64, etag: &str) -> ObjectVersion {
    ObjectVersion {
        size,
        etag: Some(etag.into()),
        last_modified: None,
    }
}

impl RangeSource for Instrumented {
    fn location(&self) -> &str {
        "instrumented://object"
    }

    fn version(&self) -> Option<ObjectVersion> {
        Some(version_with(self.size, "a"))
    }

    fn link_id(&self) -> Option<String> {
        self.link.map(String::from)
    }

    fn read_guess(&self, guess: Guess) -> Option<Guessed<'_>> {
        self.guesses.lock().unwrap().push(guess.clone());
        self.guessed_at
            .lock()
            .unwrap()
            .push(tokio::time::Instant::now());
        // As a store answers: cut at the object's end, 416 past it.
        let range = match guess {
            Guess::Range(range) => range,
            Guess::Last(len) => self.size - len.min(self.size)..self.size,
        };
        let answer = match range.start < self.size {
            true => {
                let bytes: Bytes = (range.start..range.end.min(self.size))
                    .map(byte_at)
                    .collect::<Vec<_>>()
                    .into();
                Ok((bytes, version_with(self.size, self.guess_etag)))
            }
            false => Err(Failure::Permanent(crate::Error::InvalidArgument(
                "416 Range Not Satisfiable".into(),
            ))),
        };
        Some(
            async move {
                tokio::time::sleep(self.guess_delay).await;
                self.guesses_answered.fetch_add(1, SeqCst);
                answer
            }
            .boxed(),
        )
    }

    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>> {
        let start = self.size - len.min(self.size);
        let bytes: Bytes = (start..self.size).map(byte_at).collect::<Vec<_>>().into();
        let size = self.size;
        let delay = self.tail_delay;
        async move {
            tokio::time::sleep(delay).await;
            Ok(Tail { bytes, size })
        }
        .boxed()
    }

    fn read_into<'a>(
        &'a self,
        range: Range<u64>,
        dst: &'a mut BytesMut,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        async move {
            let now = self.in_flight.fetch_add(1, SeqCst) + 1;
            self.max_in_flight.fetch_max(now, SeqCst);
            self.largest
                .fetch_max((range.end - range.start) as usize, SeqCst);
            self.calls.fetch_add(1, SeqCst);
            self.asked.lock().unwrap().push(range.clone());
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.in_flight.fetch_sub(1, SeqCst);
            let pick =
                self.fail_every > 0 && (range.start / 1000).is_multiple_of(self.fail_every as u64);
            if pick && self.failed_once.lock().unwrap().insert(range.start) {
                // Half-written, then a reset: the retry must start over.
                let half = (range.end - range.start) / 2;
                dst.extend((range.start..range.start + half).map(|at| !byte_at(at)));
                return Err(Failure::Transient {
                    detail: "connection reset by peer".into(),
                    timed_out: false,
                    cause: None,
                });
            }
            dst.extend(range.map(byte_at));
            Ok(())
        }
        .boxed()
    }
}

fn config(max_in_flight: usize, slice: u64) -> Config {
    Config {
        max_in_flight,
        slice_size: slice,
        hole_limit: 100,
        memory_budget: 64 << 20,
        retry_backoff: Duration::from_millis(1),
        retry_backoff_max: Duration::from_millis(5),
        ..Config::builtin()
    }
}

async fn run(
    source: Arc<Instrumented>,
    cfg: Config,
    units: Vec<PlanUnit>,
) -> (FilePlan, Vec<Bytes>, ReadStats) {
    let stats = ReadStats::new();
    let fetcher = Fetcher::new(cfg.clone(), stats.clone());
    let plan = FilePlan::new(
        "x".into(),
        source.size,
        units,
        cfg.hole_limit,
        cfg.slice_size,
    );
    let src: Source = source;
    let (futs, _guards) = fetcher.start(&src, &plan);
    let spans = join_all(futs)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (plan, spans, stats)
}

fn units() -> Vec<PlanUnit> {
    // Three "row groups" of column chunks of mixed sizes with small holes.
    (0..3u64)
        .map(|rg| {
            let base = rg * 3_000_000;
            PlanUnit {
                index: rg as usize,
                ranges: vec![
                    base..base + 50,
                    base + 120..base + 900_000,
                    base + 900_010..base + 2_500_000,
                ],
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spans_hold_the_right_bytes_and_bounds_hold() {
    let source = Arc::new(Instrumented::new(10_000_000, 0));
    let (plan, spans, stats) = run(Arc::clone(&source), config(3, 256 * 1024), units()).await;
    for (span, bytes) in plan.spans.iter().zip(&spans) {
        assert_eq!(bytes.len() as u64, span.range.end - span.range.start);
        for (k, b) in bytes.iter().enumerate().step_by(997) {
            assert_eq!(*b, byte_at(span.range.start + k as u64));
        }
    }
    // Requests of at most 256 KiB take a quarter slot: 12 of these at once.
    assert!(
        source.max_in_flight.load(SeqCst) <= 12,
        "in-flight bound broken"
    );
    assert!(
        source.max_in_flight.load(SeqCst) >= 2,
        "requests never overlapped"
    );
    assert!(
        source.largest.load(SeqCst) <= 256 * 1024,
        "a slice exceeded the slice size"
    );
    assert_eq!(stats.snapshot().requests as usize, plan.num_requests());
    assert_eq!(source.calls.load(SeqCst), plan.num_requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_requests_keep_the_whole_in_flight_bound() {
    // 2 MiB slices: each takes a whole slot, 3 at once.
    let source = Arc::new(Instrumented::new(40_000_000, 0));
    let units = vec![PlanUnit {
        index: 0,
        ranges: vec![0..20_000_000, 20_000_000..30_000_000],
    }];
    let (_, spans, _) = run(Arc::clone(&source), config(3, 2 << 20), units).await;
    assert_eq!(spans.iter().map(|s| s.len()).sum::<usize>(), 30_000_000);
    let most = source.max_in_flight.load(SeqCst);
    assert!((2..=3).contains(&most), "{most} requests in flight");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tiny_requests_go_four_to_a_slot_and_small_ones_two() {
    // 64 KiB slices: a quarter slot each, so 2 slots hold 8 at once; 1 MiB
    // slices: half a slot, 4 at once.
    for (slice, widest) in [(64 << 10, 8), (1 << 20, 4)] {
        let source = Arc::new(Instrumented::new(40_000_000, 0));
        let units = vec![PlanUnit {
            index: 0,
            ranges: std::iter::once(0..40 * slice).collect(),
        }];
        let (_, spans, _) = run(Arc::clone(&source), config(2, slice), units).await;
        assert_eq!(
            spans.iter().map(|s| s.len() as u64).sum::<u64>(),
            40 * slice
        );
        let most = source.max_in_flight.load(SeqCst);
        assert!(
            most > widest / 2 && most <= widest,
            "{most} requests of {slice} bytes in flight, at most {widest} allowed"
        );
    }
}

#[test]
fn a_request_takes_a_quarter_half_or_whole_slot_by_its_size() {
    use crate::request::slot_quarters;
    assert_eq!(slot_quarters(0, false), 1);
    assert_eq!(slot_quarters(256 << 10, false), 1);
    assert_eq!(slot_quarters((256 << 10) + 1, false), 2);
    assert_eq!(slot_quarters(1 << 20, false), 2);
    assert_eq!(slot_quarters((1 << 20) + 1, false), 4);
    assert_eq!(slot_quarters(8 << 20, false), 4);
    // From a distant store each takes half as much, a quarter at least.
    assert_eq!(slot_quarters(256 << 10, true), 1);
    assert_eq!(slot_quarters(1 << 20, true), 1);
    assert_eq!(slot_quarters(8 << 20, true), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transient_failures_are_retried_without_corrupting_bytes() {
    let source = Arc::new(Instrumented::new(10_000_000, 3));
    let (plan, spans, stats) = run(Arc::clone(&source), config(8, 128 * 1024), units()).await;
    for (span, bytes) in plan.spans.iter().zip(&spans) {
        for (k, b) in bytes.iter().enumerate() {
            assert_eq!(
                *b,
                byte_at(span.range.start + k as u64),
                "byte {k} of span {:?}",
                span.range
            );
        }
    }
    let s = stats.snapshot();
    assert!(s.retries > 0);
    assert_eq!(s.requests, plan.num_requests() as u64 + s.retries);
}

#[test]
fn fetched_spans_serve_a_range_across_spans_that_touch_and_not_across_a_gap() {
    use crate::fetch::FetchedSpans;
    let byte = |i: u64| (i % 251) as u8;
    let span = |r: Range<u64>| (r.clone(), Bytes::from(r.map(byte).collect::<Vec<u8>>()));
    // 100..200 and 200..300 touch; 350..400 lies after a gap.
    let spans = FetchedSpans::new(vec![span(200..300), span(100..200), span(350..400)]);
    let expect = |r: Range<u64>| Some(Bytes::from(r.map(byte).collect::<Vec<u8>>()));
    assert_eq!(spans.get(&(120..180)), expect(120..180));
    assert_eq!(spans.get(&(150..260)), expect(150..260));
    assert_eq!(spans.get(&(100..300)), expect(100..300));
    assert_eq!(spans.get(&(250..360)), None, "across the gap");
    assert_eq!(spans.get(&(300..360)), None, "starts in the gap");
    assert_eq!(spans.get(&(380..420)), None, "past the end");
    assert_eq!(spans.get(&(50..120)), None, "before the first");
    // `holds` says the same as `get` without copying anything.
    for r in [
        120..180,
        150..260,
        100..300,
        250..360,
        300..360,
        380..420,
        50..120,
    ] {
        assert_eq!(spans.holds(&r), spans.get(&r).is_some(), "{r:?}");
    }
    // Within one span: the span's own bytes, not a copy.
    let inner = spans.get(&(360..390)).unwrap();
    assert_eq!(
        inner.as_ptr(),
        spans.get(&(350..400)).unwrap()[10..].as_ptr()
    );
}

/// An object behind a link whose footer request takes longer than
/// `START_AFTER`, so that a read asks for the file's start beside it.
fn slow_link(size: u64) -> Instrumented {
    let mut source = Instrumented::new(size, 0);
    source.tail_delay = crate::fetch::START_AFTER * 4;
    source
}

fn whole_file_unit(size: u64) -> Vec<PlanUnit> {
    // Column chunks from just after the magic to just before a 4 KiB footer.
    let end = size - 4096;
    let step = (end - 4) / 5;
    vec![PlanUnit {
        index: 0,
        ranges: (0..5)
            .map(|i| 4 + i * step..(4 + (i + 1) * step).min(end))
            .collect(),
    }]
}

/// The footer's round trip with a start of `start_len` bytes, then the
/// whole plan of the file's chunks; checks every byte.
async fn read_with_start(
    source: &Arc<Instrumented>,
    start_len: u64,
    slice: u64,
) -> Vec<Range<u64>> {
    let cfg = config(8, 8 << 20);
    let fetcher = Fetcher::new(cfg.clone(), ReadStats::new());
    let src: Source = source.clone();
    let beside = Beside {
        start: start_len,
        long_tail: None,
    };
    let FooterRound { tail, start, .. } = fetcher
        .fetch_tail_and_beside(&src, 64 * 1024, beside)
        .await
        .unwrap();
    assert_eq!(tail.size, source.size);
    let known = Known {
        spans: vec![(tail.size - tail.bytes.len() as u64, tail.bytes)],
        start,
    };
    let plan = FilePlan::new(
        "x".into(),
        source.size,
        whole_file_unit(source.size),
        cfg.hole_limit,
        slice,
    );
    let (futs, _guards) = fetcher.start_with(&src, &plan, &known);
    let spans = join_all(futs).await;
    for (span, bytes) in plan.spans.iter().zip(spans) {
        let bytes = bytes.unwrap();
        assert_eq!(bytes.len() as u64, span.range.end - span.range.start);
        let wrong = bytes
            .iter()
            .enumerate()
            .find(|(k, b)| **b != byte_at(span.range.start + *k as u64));
        assert_eq!(wrong, None, "span {:?}", span.range);
    }
    let asked = source.asked.lock().unwrap();
    asked.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_small_file_s_start_and_tail_come_in_one_round_trip_and_serve_the_whole_plan() {
    // Slices of 1 MiB from byte 4: two whole, one cut at the file's end, one
    // past it (refused, as a store answers 416). Plan spans of 1 MiB cross
    // the slices' boundaries.
    let source = Arc::new(slow_link(2_500_000));
    let asked = read_with_start(&source, 4 << 20, 1 << 20).await;
    assert_eq!(asked, vec![], "nothing left to fetch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_large_file_s_start_serves_the_first_spans_and_the_rest_is_fetched_from_its_end() {
    let size = 20_000_000;
    let source = Arc::new(slow_link(size));
    let asked = read_with_start(&source, 4 << 20, 3 << 20).await;
    let start_end = 4 + (4 << 20);
    assert!(
        asked.iter().all(|r| r.start >= start_end),
        "{asked:?} asks again for the start"
    );
    let fetched: u64 = asked.iter().map(|r| r.end - r.start).sum();
    assert_eq!(fetched, size - 4096 - start_end);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_start_of_another_version_than_the_tail_is_fetched_again() {
    let mut source = slow_link(2_500_000);
    source.guess_etag = "b";
    assert_fetched_as_planned(source).await;
}

/// A 2.5 MB file read with a 4 MiB start: every chunk byte is fetched by
/// the plan (none served by a start).
async fn assert_fetched_as_planned(source: Instrumented) {
    let source = Arc::new(source);
    let asked = read_with_start(&source, 4 << 20, 1 << 20).await;
    let fetched: u64 = asked.iter().map(|r| r.end - r.start).sum();
    assert_eq!(fetched, source.size - 4096 - 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_footer_that_answers_at_once_gets_no_start_beside_it() {
    // A store on loopback: the start's requests would only cost its CPU.
    assert_fetched_as_planned(Instrumented::new(2_500_000, 0)).await;
}

#[tokio::test(start_paused = true)]
async fn a_store_whose_footer_answered_late_gets_the_next_start_asked_with_the_footer() {
    // Two sources in one store: one behind a slow link, one answering at
    // once. How long after the footer request the first request for the
    // file's start goes (None: none goes), read after read; the long tail
    // always waits for the gate.
    let store = Some("instrumented://a-store-far-then-near");
    let mut slow = slow_link(2_500_000);
    slow.link = store;
    let mut quick = Instrumented::new(2_500_000, 0);
    quick.link = store;
    let (slow, quick) = (Arc::new(slow), Arc::new(quick));
    let fetcher = Fetcher::new(config(8, 8 << 20), ReadStats::new());
    let beside = Beside {
        start: 4 << 20,
        long_tail: Some(1 << 20),
    };
    let after = crate::fetch::START_AFTER;
    for (read, source, want) in [
        (1, &slow, Some(after)),
        (2, &slow, Some(Duration::ZERO)),
        (3, &quick, Some(Duration::ZERO)),
        (4, &quick, None),
        (5, &slow, Some(after)),
    ] {
        source.guessed_at.lock().unwrap().clear();
        source.guesses.lock().unwrap().clear();
        let src: Source = source.clone();
        let asked = tokio::time::Instant::now();
        let round = fetcher
            .fetch_tail_and_beside(&src, 64 * 1024, beside)
            .await
            .unwrap();
        assert_eq!(round.tail.size, source.size);
        // The speculative requests are tasks of their own: let them start.
        tokio::task::yield_now().await;
        let guesses = source.guesses.lock().unwrap().clone();
        let at = source.guessed_at.lock().unwrap().clone();
        let start_at = guesses
            .iter()
            .zip(&at)
            .filter(|(g, _)| matches!(g, Guess::Range(_)))
            .map(|(_, at)| *at - asked)
            .min();
        assert_eq!(start_at, want, "read {read}");
        let long_tail_at = guesses
            .iter()
            .zip(&at)
            .find(|(g, _)| matches!(g, Guess::Last(_)))
            .map(|(_, at)| *at - asked);
        let slow_one = Arc::ptr_eq(source, &slow);
        assert_eq!(long_tail_at, slow_one.then_some(after), "read {read}");
        source.guesses.lock().unwrap().clear();
    }
}

/// The footer's round trip of `source` with a 1 MiB long tail beside a
/// 64 KiB tail, then the file's bytes from `from` on out of it; checks
/// every byte and returns the ranges fetched outside the round trip.
async fn tail_from_after_long_tail(source: &Arc<Instrumented>, from: u64) -> Vec<Range<u64>> {
    let fetcher = Fetcher::new(config(8, 8 << 20), ReadStats::new());
    let src: Source = source.clone();
    let beside = Beside {
        start: 0,
        long_tail: Some(1 << 20),
    };
    let round = fetcher
        .fetch_tail_and_beside(&src, 64 * 1024, beside)
        .await
        .unwrap();
    assert!(round.start.is_empty());
    let tail = fetcher
        .tail_from(&src, round.tail, round.long_tail, from)
        .await
        .unwrap();
    assert_eq!(tail.size, source.size);
    assert!(tail.start() <= from, "{} > {from}", tail.start());
    let wrong = tail
        .bytes
        .iter()
        .enumerate()
        .find(|(k, b)| **b != byte_at(tail.start() + *k as u64));
    assert_eq!(wrong, None);
    let asked = source.asked.lock().unwrap();
    asked.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_footer_comes_from_the_long_tail_asked_beside_the_first() {
    let size = 5_000_000;
    let source = Arc::new(slow_link(size));
    let asked = tail_from_after_long_tail(&source, size - 600_000).await;
    assert_eq!(asked, vec![], "no further request");
    assert_eq!(*source.guesses.lock().unwrap(), vec![Guess::Last(1 << 20)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_footer_longer_than_the_long_tail_is_fetched_in_one_more_request() {
    let size = 5_000_000;
    let source = Arc::new(slow_link(size));
    let from = size - (3 << 20);
    let asked = tail_from_after_long_tail(&source, from).await;
    assert_eq!(asked, vec![from..size - 64 * 1024]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_tail_of_another_version_than_the_first_is_not_used() {
    let size = 5_000_000;
    let mut source = slow_link(size);
    source.guess_etag = "b";
    let source = Arc::new(source);
    let from = size - 600_000;
    let asked = tail_from_after_long_tail(&source, from).await;
    assert_eq!(asked, vec![from..size - 64 * 1024]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_footer_that_answers_at_once_gets_no_long_tail_beside_it() {
    let size = 5_000_000;
    let source = Arc::new(Instrumented::new(size, 0));
    let from = size - 600_000;
    let asked = tail_from_after_long_tail(&source, from).await;
    assert_eq!(asked, vec![from..size - 64 * 1024]);
    assert_eq!(*source.guesses.lock().unwrap(), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_tail_not_needed_is_cancelled() {
    // The footer fits in the first tail: the long tail's request, still on
    // its way, is dropped rather than brought in.
    let size = 5_000_000;
    let mut source = slow_link(size);
    source.guess_delay = Duration::from_millis(100);
    let source = Arc::new(source);
    let asked = tail_from_after_long_tail(&source, size - 1000).await;
    assert_eq!(asked, vec![]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(source.guesses.lock().unwrap().len(), 1, "it was asked for");
    assert_eq!(
        source.guesses_answered.load(SeqCst),
        0,
        "it was not brought"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_start_nobody_holds_any_more_is_cancelled() {
    // A read abandoned after the footer's round trip: the start's requests
    // still on their way are dropped, not brought in.
    let mut source = slow_link(20_000_000);
    source.guess_delay = Duration::from_millis(100);
    let source = Arc::new(source);
    let fetcher = Fetcher::new(config(8, 8 << 20), ReadStats::new());
    let src: Source = source.clone();
    let beside = Beside {
        start: 4 << 20,
        long_tail: None,
    };
    let round = fetcher
        .fetch_tail_and_beside(&src, 64 * 1024, beside)
        .await
        .unwrap();
    assert_eq!(round.start.len(), 4);
    drop(round);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        source.guesses.lock().unwrap().len(),
        4,
        "they were asked for"
    );
    assert_eq!(source.guesses_answered.load(SeqCst), 0, "none was brought");
}

// The clock paused: the answer times are the sources' own (none, or the
// slow link's sleep), whatever else the machine is doing.
#[tokio::test(start_paused = true)]
async fn a_store_that_answers_the_footer_at_once_is_near_and_gets_its_own_slices() {
    let cfg = Config {
        near_slice_size: 8 << 20,
        ..config(8, 4 << 20)
    };
    for (source, near) in [
        (Instrumented::new(1 << 20, 0), true),
        (slow_link(1 << 20), false),
    ] {
        let fetcher = Fetcher::new(cfg.clone(), ReadStats::new());
        assert!(!fetcher.store_is_near(), "no footer answered yet");
        assert_eq!(fetcher.max_slice(), 4 << 20);
        let src: Source = Arc::new(source);
        fetcher.fetch_tail(&src, 64 * 1024).await.unwrap();
        assert_eq!(fetcher.store_is_near(), near);
        let planned = crate::pipeline::checked_plan(&src, 1 << 30, vec![], &fetcher, 1).unwrap();
        assert_eq!(planned.slice_size, 1 << 20, "a small read keeps its spread");
        let big = vec![PlanUnit {
            index: 0,
            ranges: std::iter::once(0..(256 << 20)).collect(),
        }];
        let planned = crate::pipeline::checked_plan(&src, 1 << 30, big, &fetcher, 1).unwrap();
        let want = if near { 8 << 20 } else { 4 << 20 };
        assert_eq!((fetcher.max_slice(), planned.slice_size), (want, want));
        assert_eq!(planned.num_requests() as u64, (256 << 20) / want);
    }
}

// A large read of few long column chunks through a link fills the request
// slots (its share of them when several files share them); a near store's
// plan keeps one request a chunk.
#[tokio::test(start_paused = true)]
async fn a_large_plan_of_few_requests_is_spread_over_the_slots_through_a_link() {
    const MIB: u64 = 1 << 20;
    let cfg = Config {
        near_slice_size: 8 * MIB,
        ..config(16, 8 * MIB)
    };
    // 8 column chunks of 8 MiB, gaps between them past the hole limit.
    let chunks = || {
        vec![PlanUnit {
            index: 0,
            ranges: (0..8).map(|i| i * 9 * MIB..i * 9 * MIB + 8 * MIB).collect(),
        }]
    };
    for (source, near) in [
        (Instrumented::new(1 << 30, 0), true),
        (slow_link(1 << 30), false),
    ] {
        let fetcher = Fetcher::new(cfg.clone(), ReadStats::new());
        let src: Source = Arc::new(source);
        fetcher.fetch_tail(&src, 64 * 1024).await.unwrap();
        let one = crate::pipeline::checked_plan(&src, 1 << 30, chunks(), &fetcher, 1).unwrap();
        assert_eq!(one.spans.len(), 8);
        match near {
            true => assert_eq!(one.num_requests(), 8),
            false => {
                assert_eq!(one.num_requests(), 16);
                assert!(one.spans.iter().all(|s| s.slices.len() == 2));
            }
        }
        // Two files share the 16 slots: 8 each, as planned.
        let two = crate::pipeline::checked_plan(&src, 1 << 30, chunks(), &fetcher, 2).unwrap();
        assert_eq!(two.num_requests(), 8);
    }
}

// A store a region away (its quickest footer answer 100 ms, past
// `DISTANT_ANSWER`): a large request takes half a slot, so the plan is
// spread over twice the slots and twice as many requests go out at once;
// one a cloud region's round trip away (20 ms) keeps a slot a request.
#[tokio::test(start_paused = true)]
async fn a_distant_store_gets_twice_as_many_large_requests_in_flight() {
    const MIB: u64 = 1 << 20;
    let cfg = config(8, 8 * MIB);
    for (answer, distant) in [
        (Duration::from_millis(100), true),
        (crate::fetch::START_AFTER * 4, false),
    ] {
        let mut source = Instrumented::new(1 << 30, 0);
        source.tail_delay = answer;
        let source = Arc::new(source);
        let fetcher = Fetcher::new(cfg.clone(), ReadStats::new());
        let src: Source = source.clone();
        fetcher.fetch_tail(&src, 64 * 1024).await.unwrap();
        assert_eq!(fetcher.store_is_distant(), distant);
        assert!(!fetcher.store_is_near());
        // 8 column chunks of 8 MiB, gaps between them past the hole limit.
        let chunks = vec![PlanUnit {
            index: 0,
            ranges: (0..8).map(|i| i * 9 * MIB..i * 9 * MIB + 8 * MIB).collect(),
        }];
        let plan = crate::pipeline::checked_plan(&src, 1 << 30, chunks, &fetcher, 1).unwrap();
        let width = if distant { 16 } else { 8 };
        assert_eq!(plan.num_requests(), width);
        let (futs, _guards) = fetcher.start(&src, &plan);
        let spans = join_all(futs).await;
        assert!(spans
            .iter()
            .all(|s| s.as_ref().is_ok_and(|b| b.len() as u64 == 8 * MIB)));
        assert_eq!(source.max_in_flight.load(SeqCst), width);
    }
}

// A store is judged by the quickest of its latest footer answers, not by
// the read's alone: one late answer (a busy store, a delayed packet) makes
// no read plan for another link, a quicker answer counts at once, and only
// answers that stay late for `RECENT_ANSWERS` reads make a store distant.
#[tokio::test(start_paused = true)]
async fn a_store_is_judged_by_the_quickest_of_its_latest_footer_answers() {
    use crate::link::RECENT_ANSWERS;
    let ms = Duration::from_millis;
    // (near, distant, the read's quickest answer in whole ms) of a read
    // whose footer the store answers in `answer`.
    let read = |answer: Duration| async move {
        let mut source = Instrumented::new(1 << 20, 0);
        source.tail_delay = answer;
        source.link = Some("instrumented://a-store-with-hiccups");
        let src: Source = Arc::new(source);
        let fetcher = Fetcher::new(config(8, 8 << 20), ReadStats::new());
        fetcher.fetch_tail(&src, 64 * 1024).await.unwrap();
        let quickest = fetcher.quickest_answer().map(|d| d.as_millis());
        (
            fetcher.store_is_near(),
            fetcher.store_is_distant(),
            quickest,
        )
    };
    // A cloud region's round trip, then one answer as late as a distant
    // store's: still planned as the cloud region.
    assert_eq!(read(ms(30)).await, (false, false, Some(30)));
    assert_eq!(read(ms(100)).await, (false, false, Some(30)));
    // Quicker again: near at once, and a hiccup keeps it near.
    assert_eq!(read(ms(1)).await, (true, false, Some(1)));
    assert_eq!(read(ms(16)).await, (true, false, Some(1)));
    // Late answers push the quick ones out, one read at a time: after
    // `RECENT_ANSWERS - 1` of them the 16 ms answer is the quickest left.
    let mut last = None;
    for _ in 0..RECENT_ANSWERS - 1 {
        last = Some(read(ms(100)).await);
    }
    assert_eq!(last, Some((false, false, Some(16))));
    assert_eq!(read(ms(100)).await, (false, true, Some(100)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_local_file_does_not_make_the_store_near() {
    let dir = std::env::temp_dir().join(format!("fastingest-near-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("file.bin");
    std::fs::write(&path, vec![7u8; 100_000]).unwrap();
    let src: Source =
        Arc::new(crate::io::LocalSource::open(path.clone(), "file.bin".into()).unwrap());
    let fetcher = Fetcher::new(config(8, 4 << 20), ReadStats::new());
    let tail = fetcher.fetch_tail(&src, 4096).await.unwrap();
    assert_eq!(tail.size, 100_000);
    // Local reads are planned as before: no store was asked anything.
    assert!(!fetcher.store_is_near());
    assert_eq!(fetcher.max_slice(), 4 << 20);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_range_in_many_slices_is_read_into_one_buffer_whole() {
    let dir = std::env::temp_dir().join(format!("fastingest-slices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("file.bin");
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let src: Source = Arc::new(crate::io::LocalSource::open(path, "file.bin".into()).unwrap());
    // Read, not mapped; slices of 64 KiB whatever the disk says it is.
    let cfg = Config {
        map_local_files: false,
        local_disk: crate::config::LocalDisk::Solid,
        ..config(8, 64 << 10)
    };
    let stats = ReadStats::new();
    let fetcher = Fetcher::new(cfg, stats.clone());
    let got = fetcher.fetch_range(&src, 1_000..900_001).await.unwrap();
    assert_eq!(&got[..], &data[1_000..900_001]);
    let slices = crate::plan::split(1_000..900_001, 64 << 10).len() as u64;
    assert!(slices > 10);
    assert_eq!(stats.snapshot().requests, slices);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_local_file_on_a_rotational_disk_gets_a_near_store_s_slices() {
    use crate::config::LocalDisk;
    let dir = std::env::temp_dir().join(format!("fastingest-spin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("file.bin");
    std::fs::write(&path, vec![7u8; 4096]).unwrap();
    let local: Source = Arc::new(crate::io::LocalSource::open(path, "file.bin".into()).unwrap());
    let remote: Source = Arc::new(Instrumented::new(1 << 20, 0));
    for (disk, near_slice_size, budget, want_local) in [
        (LocalDisk::Solid, 16 << 20, 512 << 20, 4 << 20),
        (LocalDisk::Rotational, 16 << 20, 512 << 20, 16 << 20),
        (LocalDisk::Rotational, 32 << 20, 12 << 20, 12 << 20),
        (LocalDisk::Rotational, 0, 512 << 20, 4 << 20),
    ] {
        let cfg = Config {
            local_disk: disk,
            near_slice_size,
            memory_budget: budget,
            ..config(8, 4 << 20)
        };
        let fetcher = Fetcher::new(cfg, ReadStats::new());
        assert_eq!(fetcher.max_slice_for(&local), want_local, "{disk:?}");
        assert_eq!(
            fetcher.max_slice_for(&remote),
            4 << 20,
            "a far store is no disk"
        );
    }
    // `auto` is what the device says.
    let auto = Fetcher::new(config(8, 4 << 20), ReadStats::new());
    let says = match local.on_rotational_disk() {
        true => auto.config().near_slice_size,
        false => 4 << 20,
    };
    assert_eq!(auto.max_slice_for(&local), says);
    std::fs::remove_dir_all(&dir).unwrap();
}

// The clock paused: the in-memory store answers at once whatever else the
// machine is doing (on the real clock a loaded machine made it "far").
#[tokio::test(start_paused = true)]
async fn a_near_store_s_slices_stay_within_the_memory_budget_and_0_means_slice_size() {
    for (near_slice_size, memory_budget, want) in [
        (32 << 20, 12 << 20, 12 << 20),
        (0, 64 << 20, 4 << 20),
        (16 << 20, 64 << 20, 16 << 20),
    ] {
        let cfg = Config {
            near_slice_size,
            memory_budget,
            ..config(8, 4 << 20)
        };
        let fetcher = Fetcher::new(cfg, ReadStats::new());
        let src: Source = Arc::new(Instrumented::new(1 << 20, 0));
        fetcher.fetch_tail(&src, 64 * 1024).await.unwrap();
        assert!(fetcher.store_is_near());
        assert_eq!(
            fetcher.max_slice(),
            want,
            "near_slice_size {near_slice_size}"
        );
    }
}

#[test]
fn rooms_cut_from_one_buffer_rejoin_where_they_were_written() {
    let mut rest = BytesMut::with_capacity(1_000);
    let start = rest.as_ptr();
    // The head is the caller's to fill; each slice's room is written by
    // appending, as a request does.
    let mut head = super::take_room(&mut rest, 100);
    head.resize(head.capacity(), 1);
    let mut rooms: Vec<BytesMut> = [300, 0, 600]
        .into_iter()
        .map(|n| super::take_room(&mut rest, n))
        .collect();
    for (k, room) in (2u8..).zip(rooms.iter_mut()) {
        assert!(room.is_empty());
        let n = room.capacity();
        room.extend(std::iter::repeat_n(k, n));
    }
    let mut whole = head;
    for room in rooms {
        whole.unsplit(room);
    }
    // One buffer, where it was allocated: nothing was copied.
    assert_eq!(whole.as_ptr(), start);
    assert_eq!(whole.len(), 1_000);
    assert!(whole[..100].iter().all(|&b| b == 1));
    assert!(whole[100..400].iter().all(|&b| b == 2));
    assert!(whole[400..].iter().all(|&b| b == 4));
}

#[test]
fn a_span_s_buffer_reads_as_its_bytes_and_its_drop_puts_the_freeing_mark_back() {
    for once_decoded in [
        super::OnceDecoded::Reused,
        super::OnceDecoded::PagesReleased,
    ] {
        let bytes = Bytes::from_owner(super::SpanBuffer {
            bytes: BytesMut::from(&b"span"[..]),
            once_decoded,
        });
        assert_eq!(&bytes[..], b"span");
        assert_eq!(&bytes.slice(1..3)[..], b"pa");
        drop(bytes);
        assert!(!crate::reuse::freeing_span());
    }
}
