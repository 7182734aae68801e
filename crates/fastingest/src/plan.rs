//! Format-agnostic read plans: which byte ranges a read needs, grouped into
//! units (Parquet row groups, ORC stripes), and the requests that fetch them.
//!
//! Small ranges close together are merged into one request while the merged
//! request stays within the slice size; a range longer than the slice size is
//! fetched as several slices in parallel into one contiguous buffer.

use std::ops::Range;

/// The bytes of one unit of decoding (a row group or stripe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanUnit {
    /// The unit's index in the file (row group or stripe number).
    pub index: usize,
    /// The byte ranges the unit needs (column chunks), in file order.
    pub ranges: Vec<Range<u64>>,
}

impl PlanUnit {
    /// The bytes of the unit's ranges (overlaps counted each time).
    pub fn bytes(&self) -> u64 {
        self.ranges
            .iter()
            .map(|r| r.end.saturating_sub(r.start))
            .sum()
    }
}

/// A contiguous range fetched into one buffer, as one or more slices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The bytes of the span.
    pub range: Range<u64>,
    /// The requests that bring it: consecutive, covering `range` exactly, each
    /// at most the slice size.
    pub slices: Vec<Range<u64>>,
}

/// The plan for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    /// The file, as the user named it.
    pub location: String,
    /// The file's size in bytes.
    pub file_size: u64,
    /// Units to decode, in output order.
    pub units: Vec<PlanUnit>,
    /// Spans to fetch, in file order.
    pub spans: Vec<Span>,
    /// The most bytes one request fetches (the slice size the plan was made
    /// with): a plan of some of its units is cut the same way.
    pub slice_size: u64,
}

impl FilePlan {
    /// Plans the fetch of `units` with the given hole limit and slice size.
    pub fn new(
        location: String,
        file_size: u64,
        units: Vec<PlanUnit>,
        hole_limit: u64,
        slice_size: u64,
    ) -> Self {
        let all: Vec<Range<u64>> = units
            .iter()
            .flat_map(|u| u.ranges.iter().cloned())
            .collect();
        let spans = coalesce(&all, hole_limit, slice_size)
            .into_iter()
            .map(|range| Span {
                slices: split(range.clone(), slice_size),
                range,
            })
            .collect();
        FilePlan {
            location,
            file_size,
            units,
            spans,
            slice_size,
        }
    }

    /// Bytes of the ranges of `units` (overlaps counted each time): the
    /// size of a read before its plan is made.
    pub fn bytes_of(units: &[PlanUnit]) -> u64 {
        units.iter().map(PlanUnit::bytes).sum()
    }

    /// Bytes the units need (overlaps counted once).
    pub fn bytes_needed(&self) -> u64 {
        let all: Vec<Range<u64>> = self
            .units
            .iter()
            .flat_map(|u| u.ranges.iter().cloned())
            .collect();
        coalesce(&all, 0, u64::MAX)
            .iter()
            .map(|r| r.end - r.start)
            .sum()
    }

    /// Bytes the requests will transfer (needed bytes plus merged holes).
    pub fn bytes_to_fetch(&self) -> u64 {
        self.spans.iter().map(|s| s.range.end - s.range.start).sum()
    }

    /// Number of requests (slices) the plan issues.
    pub fn num_requests(&self) -> usize {
        self.spans.iter().map(|s| s.slices.len()).sum()
    }

    /// Cuts the spans into more, shorter requests when the plan issues
    /// fewer than `requests`: as many as fit in `requests`, none shorter
    /// than `min_slice` (the spans stay as they are; only their slices
    /// change). Through a link with latency one connection brings a few
    /// tens of MB/s whatever the link allows, so a file of 16 column chunks
    /// of 8 MB, one request each, left half of 32 request slots unused.
    pub fn spread_to(&mut self, requests: usize, min_slice: u64) {
        let requests = requests as u64;
        let min_slice = min_slice.max(1);
        // A span's pieces with slices of at most `slice`, none under the floor.
        let pieces = |len: u64, slice: u64| len.div_ceil(slice).clamp(1, (len / min_slice).max(1));
        let count = |slice: u64| -> u64 {
            self.spans
                .iter()
                .map(|s| pieces(s.range.end - s.range.start, slice))
                .sum()
        };
        let now = self.num_requests() as u64;
        if now >= requests || count(1) <= now {
            return;
        }
        // The shortest slice whose requests fit.
        let longest = self.spans.iter().map(|s| s.range.end - s.range.start);
        let (mut low, mut high) = (1, longest.max().unwrap_or(1).max(1));
        while low < high {
            let mid = low + (high - low) / 2;
            match count(mid) <= requests {
                true => high = mid,
                false => low = mid + 1,
            }
        }
        for span in &mut self.spans {
            let n = pieces(span.range.end - span.range.start, low);
            if n as usize > span.slices.len() {
                span.slices = split_in(span.range.clone(), n);
            }
        }
    }

    /// Fits the plan to the `held` ranges (sorted by start) that what it
    /// reads from holds as units of its own, each read whole (the disk
    /// cache's entries): neighbouring spans that one held range reaches
    /// into both of are joined, with the bytes between them, and a span's
    /// requests are cut where held ranges begin and end, one request for
    /// each (bytes none holds keep requests of at most the slice size). A
    /// later read whose plan differs from the one that filled the cache (a
    /// store's answers, not the cache's, tell it the store is near, and
    /// near stores get longer requests) otherwise cut most of the cache's
    /// entries in two, and read each whole for either half.
    pub fn join_across(&mut self, held: &[Range<u64>]) {
        if held.is_empty() {
            return;
        }
        // The furthest end of the ranges starting before each point.
        let mut furthest = Vec::with_capacity(held.len() + 1);
        furthest.push(0u64);
        for range in held {
            let last = *furthest.last().unwrap_or(&0);
            furthest.push(last.max(range.end));
        }
        let mut joined: Vec<Span> = Vec::with_capacity(self.spans.len());
        for span in std::mem::take(&mut self.spans) {
            if let Some(last) = joined.last_mut() {
                let before = held.partition_point(|r| r.start < last.range.end);
                if furthest[before] > span.range.start {
                    last.range.end = span.range.end;
                    continue;
                }
            }
            joined.push(span);
        }
        for span in &mut joined {
            let pieces = cover(held, &span.range);
            if pieces.iter().any(|(_, by)| by.is_some()) {
                span.slices = pieces
                    .into_iter()
                    .flat_map(|(piece, by)| match by {
                        Some(_) => vec![piece],
                        None => split(piece, self.slice_size),
                    })
                    .collect();
            }
        }
        self.spans = joined;
    }

    /// Index of the span holding `range` entirely, if any.
    pub fn span_of(&self, range: &Range<u64>) -> Option<usize> {
        let i = self.spans.partition_point(|s| s.range.start <= range.start);
        let i = i.checked_sub(1)?;
        (self.spans[i].range.end >= range.end).then_some(i)
    }
}

/// Requests a small read is spread over.
const SPREAD: u64 = 8;

/// The smallest slice a small read is cut into: below it a request's time
/// is mostly its latency.
pub const MIN_SLICE: u64 = 1 << 20;

/// The slice size for a read of about `read_bytes` (all its files
/// together): `max_slice` for a large read; for a smaller one about a
/// `SPREAD`-th of it, no less than [`MIN_SLICE`], so that a file of a few
/// MB goes as several parallel requests and not as one or two long ones,
/// each at one connection's rate. A 20 MB file, fresh process, interleaved
/// medians: 182 -> 133 ms through the emulated cloud link, 401 -> 295 ms
/// through the far one, 88 -> 83 ms from MinIO on loopback. A spread of 16
/// was faster still through the far link (283 ms) but slower from MinIO
/// (120 ms), where every request costs the server CPU the reader shares.
pub fn slice_for(read_bytes: u64, max_slice: u64) -> u64 {
    (read_bytes / SPREAD).clamp(MIN_SLICE.min(max_slice), max_slice)
}

/// Sorts and merges ranges: overlapping ranges always merge; touching ranges
/// and ranges separated by at most `hole_limit` bytes merge while the result
/// is no longer than `max_merged`, so that adjacent column chunks of several
/// row groups do not collapse into one request that must finish before any
/// row group can be decoded.
pub fn coalesce(ranges: &[Range<u64>], hole_limit: u64, max_merged: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        if let Some(last) = out.last_mut() {
            let overlaps = r.start < last.end;
            let gap_ok = r.start - last.end.min(r.start) <= hole_limit;
            let merged_len = r.end.max(last.end) - last.start;
            if overlaps || (gap_ok && merged_len <= max_merged) {
                last.end = last.end.max(r.end);
                continue;
            }
        }
        out.push(r);
    }
    out
}

/// Appends `range` to `ranges`, extending the last one instead when `range`
/// starts where it ends (ranges built in order, end to end where they touch).
pub fn push_touching<T: Copy + PartialEq>(ranges: &mut Vec<Range<T>>, range: Range<T>) {
    match ranges.last_mut() {
        Some(last) if last.end == range.start => last.end = range.end,
        _ => ranges.push(range),
    }
}

/// Splits `range` into consecutive slices of at most `slice_size` bytes, of
/// near-equal length (no tiny last slice).
pub fn split(range: Range<u64>, slice_size: u64) -> Vec<Range<u64>> {
    let n = (range.end - range.start).div_ceil(slice_size.max(1));
    split_in(range, n)
}

/// Splits `range` into `n` consecutive slices of near-equal length (none
/// when it is empty).
fn split_in(range: Range<u64>, n: u64) -> Vec<Range<u64>> {
    let len = range.end - range.start;
    if len == 0 {
        return vec![];
    }
    let n = n.clamp(1, len);
    let base = len / n;
    let extra = len % n;
    let mut out = Vec::with_capacity(n as usize);
    let mut start = range.start;
    for i in 0..n {
        let l = base + u64::from(i < extra);
        out.push(start..start + l);
        start += l;
    }
    out
}

/// Covers `range` greedily with the `held` ranges (sorted by start) that
/// reach furthest: each piece with the held range it lies in, or `None`
/// for a gap none holds.
pub(crate) fn cover(
    held: &[Range<u64>],
    range: &Range<u64>,
) -> Vec<(Range<u64>, Option<Range<u64>>)> {
    // Only the ranges starting before `range` ends can lie under it.
    let held = &held[..held.partition_point(|h| h.start < range.end)];
    let mut pieces = Vec::new();
    let mut pos = range.start;
    while pos < range.end {
        let best = held
            .iter()
            .filter(|h| h.start <= pos && pos < h.end)
            .max_by_key(|h| h.end);
        match best {
            Some(h) => {
                let end = h.end.min(range.end);
                pieces.push((pos..end, Some(h.clone())));
                pos = end;
            }
            None => {
                let next = held
                    .iter()
                    .map(|h| h.start)
                    .filter(|&s| s > pos)
                    .min()
                    .unwrap_or(range.end)
                    .min(range.end);
                pieces.push((pos..next, None));
                pos = next;
            }
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_one_held_range_reaches_into_are_joined_and_requests_cut_at_held_ranges() {
        let span = |r: Range<u64>, slices: &[Range<u64>]| Span {
            range: r,
            slices: slices.to_vec(),
        };
        // A span fetched as one request.
        let whole = |r: Range<u64>| Span {
            slices: vec![r.clone()],
            range: r,
        };
        let plan = || FilePlan {
            location: "f".into(),
            file_size: 1_000,
            units: Vec::new(),
            spans: vec![
                span(0..100, &[0..50, 50..100]),
                whole(100..200),
                whole(250..300),
                whole(400..500),
                whole(600..700),
            ],
            slice_size: 100,
        };
        // 0..150 reaches into the first two; 260..420 into the third and
        // the fourth, over the gap between them; nothing into the fifth.
        // One request for each held range's part; bytes none holds as
        // planned (at most the slice size).
        let mut joined = plan();
        joined.join_across(&[0..150, 150..250, 260..420, 500..600]);
        assert_eq!(
            joined.spans,
            vec![
                span(0..200, &[0..150, 150..200]),
                span(250..500, &[250..260, 260..420, 420..500]),
                whole(600..700),
            ]
        );
        // Every span's slices still cover it exactly, in order.
        for s in &joined.spans {
            assert_eq!(s.slices.first().unwrap().start, s.range.start);
            assert_eq!(s.slices.last().unwrap().end, s.range.end);
            assert!(s.slices.windows(2).all(|w| w[0].end == w[1].start));
        }
        // Held ranges that end where spans do, or lie between them: the
        // spans as planned, the first read as its one held range.
        let mut apart = plan();
        apart.join_across(&[0..100, 100..200, 200..250, 300..400]);
        let mut want = plan().spans;
        want[0] = whole(0..100);
        assert_eq!(apart.spans, want);
        // A long range starting early reaches spans far on: all joined.
        let mut one = plan();
        one.join_across(&[0..10, 5..650]);
        assert_eq!(one.spans, vec![span(0..700, &[0..10, 10..650, 650..700])]);
    }

    #[test]
    fn pieces_cover_the_range_exactly() {
        let p = cover(&[], &(10..20));
        assert_eq!(p, vec![(10..20, None)]);
        let p = cover(&[0..12, 11..15, 18..30], &(10..20));
        assert_eq!(
            p,
            vec![
                (10..12, Some(0..12)),
                (12..15, Some(11..15)),
                (15..18, None),
                (18..20, Some(18..30)),
            ]
        );
        let whole: Vec<Range<u64>> = std::iter::once(10..20).collect();
        let p = cover(&whole, &(10..20));
        assert_eq!(p, vec![(10..20, Some(10..20))]);
        // Ranges starting at or past the end lie under none of it.
        let p = cover(&[0..5, 20..30], &(10..20));
        assert_eq!(p, vec![(10..20, None)]);
    }

    #[test]
    fn touching_ranges_are_pushed_as_one_and_apart_ones_apart() {
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for r in [0..4, 4..9, 10..12, 12..12, 12..20, 30..31] {
            push_touching(&mut ranges, r);
        }
        assert_eq!(ranges, vec![0..9, 10..20, 30..31]);
    }

    #[test]
    fn a_plan_of_few_requests_is_spread_over_the_slots_it_is_given() {
        const MIB: u64 = 1 << 20;
        let units = |lens: &[u64]| {
            let mut at = 0;
            let ranges = lens
                .iter()
                .map(|l| {
                    at += l;
                    at - l..at
                })
                .collect();
            vec![PlanUnit { index: 0, ranges }]
        };
        // 4 spans of 8 MiB (the hole limit keeps them apart: 0 here, and
        // the slice size stops touching ranges merging).
        let mut plan = FilePlan::new("f".into(), 1 << 30, units(&[8 * MIB; 4]), 0, 8 * MIB);
        assert_eq!(plan.num_requests(), 4);
        plan.spread_to(16, MIB);
        assert_eq!(plan.num_requests(), 16);
        assert!(plan.spans.iter().all(|s| s.slices.len() == 4));
        for span in &plan.spans {
            assert_eq!(span.slices.first().unwrap().start, span.range.start);
            assert_eq!(span.slices.last().unwrap().end, span.range.end);
            assert!(span.slices.windows(2).all(|w| w[0].end == w[1].start));
        }
        // Never shorter than the floor: 32 slots, 2 MiB slices at least.
        let mut floored = FilePlan::new("f".into(), 1 << 30, units(&[8 * MIB; 4]), 0, 8 * MIB);
        floored.spread_to(32, 2 * MIB);
        assert_eq!(floored.num_requests(), 16);
        // Unequal spans: as many requests as fit, never more.
        let lens = [8 * MIB, MIB, 3 * MIB];
        let mut mixed = FilePlan::new("f".into(), 1 << 30, units(&lens), 0, 8 * MIB);
        mixed.spread_to(8, MIB / 2);
        assert!((6..=8).contains(&mixed.num_requests()), "{:?}", mixed.spans);
        let shortest = mixed
            .spans
            .iter()
            .flat_map(|s| &s.slices)
            .map(|r| r.end - r.start);
        assert!(shortest.min().unwrap() >= MIB / 2);
        // Enough requests already, or spans too short to cut: unchanged.
        let mut many = FilePlan::new("f".into(), 1 << 30, units(&[8 * MIB; 4]), 0, 2 * MIB);
        let before = many.clone();
        many.spread_to(16, MIB);
        assert_eq!(many, before);
        let mut short = FilePlan::new("f".into(), 1 << 30, units(&[MIB / 2; 3]), 0, 8 * MIB);
        let before = short.clone();
        short.spread_to(32, MIB);
        assert_eq!(short, before, "1.5 MiB in slices of 1 MiB at least: one");
        let mut three = FilePlan::new("f".into(), 1 << 30, units(&[MIB; 3]), 0, 8 * MIB);
        three.spread_to(32, MIB);
        assert_eq!(
            three.spans[0].slices,
            vec![0..MIB, MIB..2 * MIB, 2 * MIB..3 * MIB]
        );
    }

    #[test]
    fn a_small_read_gets_smaller_slices_a_large_one_the_configured_size() {
        const MIB: u64 = 1 << 20;
        assert_eq!(slice_for(20 * MIB, 8 * MIB), 20 * MIB / 8);
        assert_eq!(slice_for(MIB, 8 * MIB), MIB, "never below 1 MiB");
        assert_eq!(slice_for(0, 8 * MIB), MIB);
        assert_eq!(slice_for(64 * MIB, 8 * MIB), 8 * MIB);
        assert_eq!(
            slice_for(10 << 30, 8 * MIB),
            8 * MIB,
            "never above the setting"
        );
        // A setting below 1 MiB is kept.
        assert_eq!(slice_for(20 * MIB, 256 << 10), 256 << 10);
        assert_eq!(slice_for(u64::MAX, 8 * MIB), 8 * MIB);
    }

    #[test]
    fn close_ranges_merge_far_ones_do_not() {
        let r = coalesce(&[0..10, 15..20, 100..110], 5, 1000);
        assert_eq!(r, vec![0..20, 100..110]);
    }

    #[test]
    fn merging_stops_at_max_merged() {
        let r = coalesce(&[0..6, 6..12, 12..18], 100, 12);
        assert_eq!(r, vec![0..12, 12..18]);
    }

    #[test]
    fn overlapping_ranges_always_merge() {
        assert_eq!(coalesce(&[0..10, 5..30], 0, 8), vec![0..30]);
    }

    #[test]
    fn split_balances_slices() {
        assert_eq!(split(0..10, 4), vec![0..4, 4..7, 7..10]);
        assert_eq!(split(5..5, 4), Vec::<Range<u64>>::new());
    }

    /// Random plans, seeded so that a failure repeats: 2,000 cases of up to
    /// 40 ranges, hole limits and slice sizes. (A plain loop rather than a
    /// property-testing crate: that crate's features would split the test
    /// build from the extension's build, and the one build is shared.)
    #[test]
    fn plan_covers_exactly_and_respects_limits() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
        for case in 0..2_000 {
            let n = rng.random_range(0..40);
            let rs: Vec<Range<u64>> = (0..n)
                .map(|_| {
                    let start = rng.random_range(0u64..10_000);
                    start..start + rng.random_range(1u64..3_000)
                })
                .collect();
            let hole = rng.random_range(0u64..500);
            let slice = rng.random_range(64u64..4000);
            let why = format!("case {case}: ranges {rs:?}, hole {hole}, slice {slice}");
            let unit = PlanUnit {
                index: 0,
                ranges: rs.clone(),
            };
            let plan = FilePlan::new("f".into(), 20_000, vec![unit], hole, slice);
            for span in &plan.spans {
                // Slices tile their span exactly and none exceeds the slice size.
                let mut at = span.range.start;
                for s in &span.slices {
                    assert_eq!(s.start, at, "{why}");
                    assert!(s.end - s.start <= slice, "{why}");
                    at = s.end;
                }
                assert_eq!(at, span.range.end, "{why}");
            }
            // Every needed byte is inside exactly one span.
            for r in &rs {
                assert!(plan.span_of(r).is_some(), "{why}");
            }
            // Spans are sorted, disjoint, and separated by more than the hole
            // limit unless merging would have exceeded the slice size.
            for w in plan.spans.windows(2) {
                let (a, b) = (&w[0].range, &w[1].range);
                assert!(a.end <= b.start, "{why}");
                let gap = b.start - a.end;
                assert!(
                    gap > hole || b.end - a.start > slice.max(a.end - a.start),
                    "{why}"
                );
            }
            // No byte is fetched that is not needed, except hole bytes.
            let needed = plan.bytes_needed();
            assert!(plan.bytes_to_fetch() >= needed, "{why}");
            let holes = plan.bytes_to_fetch() - needed;
            assert!(holes <= hole * rs.len() as u64, "{why}");
        }
    }
}
