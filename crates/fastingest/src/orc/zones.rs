//! A writer's time zone for ORC `timestamp` columns: its offset from UTC
//! at any instant, looked up fast ([`ZoneOffsets`]), from the system's zone
//! file as the ORC C++ reader reads it ([`super::zone_files`]), or where
//! there is none from `chrono-tz`'s tables, by the zone's rule of today
//! past the years they hold ([`within_tables`]).

use std::sync::Arc;

use chrono::Datelike;

use super::timestamps::ORC_EPOCH;
use super::zone_files::{zone_file, ZoneFile};

/// The last year whose transitions `chrono-tz`'s tables hold: they are
/// worked out from the tz database's rules through 2099, and after the last
/// one the zone keeps that offset for ever
/// (`the_tables_end_with_this_year_and_no_later`). The ORC C++ reader
/// (pyarrow's) goes on with the zone's rule instead, as the POSIX string at
/// the end of a compiled zone file says: summer times after 2099 would read
/// an hour off.
const LAST_TABLE_YEAR: i32 = 2099;

/// The first second after [`LAST_TABLE_YEAR`]: 2100-01-01 00:00:00 UTC
/// (`the_tables_end_with_this_year_and_no_later`).
const PAST_TABLES: i64 = 4_102_444_800;

/// `second` (since 1970, UTC) or, past [`LAST_TABLE_YEAR`], the same moment
/// of the calendar in one of the tables' last years, whose offset is the
/// zone's under its rule of today.
///
/// A rule names its days by month, day and weekday ("the second Sunday of
/// March"), so a day maps to the latest table year where the same date
/// falls on the same weekday, moved by whole weeks. Up to February 28 the
/// dates line up with a year whose January 1 is the same weekday; from
/// February 29 or March 1 on, with one whose March 1 is (leap days then lie
/// behind both). Within 11 years every weekday comes as each
/// (`every_day_after_the_tables_has_a_match_in_their_last_years`).
fn within_tables(second: i64) -> i64 {
    // Most seconds, without a date computed for them.
    if second < PAST_TABLES {
        return second;
    }
    let Some(date) = chrono::DateTime::from_timestamp(second, 0).map(|utc| utc.date_naive()) else {
        return second;
    };
    let month = if date.month() >= 3 || (date.month(), date.day()) == (2, 29) {
        3
    } else {
        1
    };
    let anchor = |year: i32| chrono::NaiveDate::from_ymd_opt(year, month, 1);
    let Some(here) = anchor(date.year()) else {
        return second;
    };
    let there = (LAST_TABLE_YEAR - 13..=LAST_TABLE_YEAR)
        .rev()
        .filter_map(anchor)
        .find(|there| there.weekday() == here.weekday());
    match there {
        Some(there) => second - (here - there).num_seconds(),
        None => second,
    }
}

/// Where a zone's offsets come from.
pub(super) enum ZoneRules {
    /// The zone's file in the system's tz database, as the ORC C++ reader
    /// (pyarrow's) reads it.
    File(Arc<ZoneFile>),
    /// `chrono-tz`'s tables, where the system has no file for the zone.
    Tables(chrono_tz::Tz),
}

impl ZoneRules {
    /// The system's file for `zone`, else `chrono-tz`'s tables.
    pub(super) fn of(zone: chrono_tz::Tz) -> ZoneRules {
        zone_file(zone.name()).map_or(ZoneRules::Tables(zone), ZoneRules::File)
    }

    /// The offset from UTC at `second` (since 1970, UTC); past `chrono-tz`'s
    /// tables, the zone's rule of today (see [`within_tables`]).
    fn offset_at(&self, second: i64) -> i64 {
        use chrono::{Offset, TimeZone};
        match self {
            ZoneRules::File(file) => file.offset_at(second),
            ZoneRules::Tables(zone) => chrono::DateTime::from_timestamp(within_tables(second), 0)
                .map_or(0, |utc| {
                    let offset = zone.offset_from_utc_datetime(&utc.naive_utc());
                    i64::from(offset.fix().local_minus_utc())
                }),
        }
    }

    /// 2015-01-01 00:00:00 in the zone, in seconds since 1970 (UTC): ORC's
    /// epoch (`None` when it is not one instant there).
    fn epoch(&self) -> Option<i64> {
        use chrono::TimeZone;
        match self {
            // As the ORC C++ reader takes it: that time in UTC, less the
            // offset at that instant.
            ZoneRules::File(file) => Some(ORC_EPOCH - file.offset_at(ORC_EPOCH)),
            ZoneRules::Tables(zone) => Some(
                zone.with_ymd_and_hms(2015, 1, 1, 0, 0, 0)
                    .single()?
                    .timestamp(),
            ),
        }
    }
}

/// A writer's zone: ORC's epoch in it, and its offsets from UTC.
///
/// Why: `chrono-tz` finds a zone's offset at an instant by a search of its
/// transitions after turning the instant into a date, 40 ns a lookup here
/// (the 45 % of a read that `orc-rust` spent converting zones). So offsets
/// are kept two ways:
/// - by hour, in a small table: an hour whose first and last second have the
///   same offset has it throughout (no zone changes its offset twice within
///   a day: `no_zone_changes_its_offset_twice_within_a_day`); an hour with a
///   change in it is looked up second by second;
/// - by span of 2^25 s (about 388 days), once values have missed the hours
///   kept [`SPAN_AFTER_MISSES`] times in it: the span's transitions, found a
///   day at a time and each to its second. Values spread over decades then
///   cost a table lookup each, not two searches.
pub(super) struct ZoneOffsets {
    rules: ZoneRules,
    /// 2015-01-01 00:00:00 in the zone, in seconds since 1970 (UTC).
    pub(super) epoch: i64,
    /// By hour since 1970 modulo [`HOURS_KEPT`]: the hour, and its offset
    /// in seconds (`i64::MIN`: none kept).
    hours: Vec<(i64, i64)>,
    /// By span (second >> [`SPAN_SHIFT`]), from [`FIRST_SPAN`].
    spans: Vec<Span>,
}

/// Hours whose offsets are kept (about 5.6 months of distinct hours).
const HOURS_KEPT: usize = 4096;

/// A span covers 2^25 seconds.
const SPAN_SHIFT: u32 = 25;

/// Misses of the kept hours in a span before its transitions are found
/// (which takes about 400 lookups).
const SPAN_AFTER_MISSES: u32 = 64;

/// The spans kept: those of the seconds a `timestamp[ns]` holds (years
/// 1677-2262, spans -275 to 274), and more; seconds outside them are looked
/// up one by one (their values overflow anyway).
const FIRST_SPAN: i64 = -512;
const SPANS: usize = 1024;

enum Span {
    /// Misses so far.
    Counting(u32),
    /// The offsets in force, each from the second it starts (the first from
    /// the span's start).
    Known(Vec<(i64, i64)>),
}

impl ZoneOffsets {
    /// `None` when ORC's epoch is not one instant in the zone.
    pub(super) fn new(rules: ZoneRules) -> Option<ZoneOffsets> {
        let epoch = rules.epoch()?;
        Some(ZoneOffsets {
            rules,
            epoch,
            hours: vec![(i64::MIN, 0); HOURS_KEPT],
            spans: (0..SPANS).map(|_| Span::Counting(0)).collect(),
        })
    }

    /// The offsets in force in span `key`: its start's, then one a
    /// transition, found by looking a day ahead and, where the offset
    /// changed, halving the day to the second.
    fn transitions(&self, key: i64) -> Vec<(i64, i64)> {
        const DAY: i64 = 86_400;
        let start = key << SPAN_SHIFT;
        let end = start + (1 << SPAN_SHIFT) - 1;
        let mut current = self.offset_at(start);
        let mut changes = vec![(start, current)];
        let mut at = start;
        while at < end {
            let next = (at + DAY).min(end);
            let offset = self.offset_at(next);
            if offset != current {
                // offset(lo) == current, offset(hi) != current.
                let (mut lo, mut hi) = (at, next);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if self.offset_at(mid) == current {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                changes.push((hi, offset));
                current = offset;
            }
            at = next;
        }
        changes
    }

    fn offset_at(&self, second: i64) -> i64 {
        self.rules.offset_at(second)
    }

    /// `seconds` since ORC's epoch in the zone (as the data stream holds
    /// them) moved by the zone's offset at that instant: the wall clock,
    /// still counted from [`Self::epoch`]; and whether it fits an `i64`.
    #[inline]
    pub(super) fn wall_clock(&mut self, seconds: i64) -> (i64, bool) {
        let Some(second) = seconds.checked_add(self.epoch) else {
            return (seconds, false);
        };
        let span = usize::try_from((second >> SPAN_SHIFT) - FIRST_SPAN)
            .ok()
            .filter(|&i| i < SPANS);
        let offset = match span.map(|i| &self.spans[i]) {
            Some(Span::Known(changes)) => changes
                .iter()
                .rev()
                .find(|&&(from, _)| from <= second)
                .map_or(0, |&(_, offset)| offset),
            Some(Span::Counting(_)) => self.offset_by_hour(second, span.unwrap_or(0)),
            None => self.offset_at(second),
        };
        let (value, overflow) = seconds.overflowing_add(offset);
        (value, !overflow)
    }

    /// The offset at `second`, from the kept hours (or looked up and kept),
    /// counting a miss against its span (at `span`): enough misses, and the
    /// span's transitions are found.
    fn offset_by_hour(&mut self, second: i64, span: usize) -> i64 {
        let hour = second.div_euclid(3600);
        let slot = hour.rem_euclid(HOURS_KEPT as i64) as usize;
        let (kept, offset) = self.hours[slot];
        if kept == hour {
            return offset;
        }
        if let Span::Counting(misses) = &mut self.spans[span] {
            *misses += 1;
            if *misses >= SPAN_AFTER_MISSES {
                let key = span as i64 + FIRST_SPAN;
                self.spans[span] = Span::Known(self.transitions(key));
            }
        }
        let first = self.offset_at(hour * 3600);
        if first == self.offset_at(hour * 3600 + 3599) {
            self.hours[slot] = (hour, first);
            first
        } else {
            self.offset_at(second)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_clock_of_a_zone_is_chronos_through_transitions_and_kept_hours() {
        use chrono::TimeZone;
        let zones = [
            chrono_tz::America::Los_Angeles,
            chrono_tz::Europe::Dublin,
            chrono_tz::Australia::Lord_Howe,
            chrono_tz::Asia::Kolkata,
        ];
        for zone in zones {
            let mut offsets = ZoneOffsets::new(ZoneRules::Tables(zone)).unwrap();
            let epoch = offsets.epoch;
            let want = |second: i64| {
                zone.timestamp_opt(second, 0)
                    .unwrap()
                    .naive_local()
                    .and_utc()
                    .timestamp()
            };
            // Around the transitions of 2021 and 1883 (local mean time to
            // standard time, at an odd second), every 7 s; then again, from
            // the kept hours; and across 1850-2100 a day and a second apart.
            let spans = [
                (1_615_680_000, 1_615_720_000),
                (1_636_239_600, 1_636_279_600),
                (1_616_850_000, 1_616_900_000),
                (-2_717_640_000, -2_717_600_000),
            ];
            for _ in 0..2 {
                for (from, to) in spans {
                    for second in (from..to).step_by(7) {
                        let (got, ok) = offsets.wall_clock(second - epoch);
                        assert!(ok);
                        assert_eq!(got + epoch, want(second), "{zone} at {second}");
                    }
                }
            }
            for second in (-3_786_825_600i64..4_102_444_800).step_by(86_401) {
                assert_eq!(offsets.wall_clock(second - epoch).0 + epoch, want(second));
            }
        }
        // 2015-01-01 00:00:00 in Los Angeles is 08:00:00 UTC.
        let la = ZoneOffsets::new(ZoneRules::Tables(chrono_tz::America::Los_Angeles)).unwrap();
        assert_eq!(la.epoch, ORC_EPOCH + 8 * 3600);
        let mut la = la;
        assert!(!la.wall_clock(i64::MAX).1);
    }

    /// The same through a zone file's offsets: US Eastern's rule (no
    /// transitions listed), across the transitions of 2021 and over
    /// 1850-2100 a day and a second apart.
    #[test]
    fn the_wall_clock_from_a_zone_file_is_its_offsets() {
        let eastern = tz::TimeZone::from_posix_tz("EST5EDT,M3.2.0,M11.1.0").unwrap();
        let file = Arc::new(ZoneFile::new(eastern));
        let mut offsets = ZoneOffsets::new(ZoneRules::File(Arc::clone(&file))).unwrap();
        let epoch = offsets.epoch;
        assert_eq!(epoch, ORC_EPOCH + 5 * 3600);
        let seconds = (1_615_600_000i64..1_615_800_000)
            .step_by(13)
            .chain((1_636_200_000..1_636_300_000).step_by(11))
            .chain((-3_786_825_600i64..4_102_444_800).step_by(86_401));
        for second in seconds {
            let (got, ok) = offsets.wall_clock(second - epoch);
            assert!(ok);
            assert_eq!(got + epoch, second + file.offset_at(second), "at {second}");
        }
        assert_eq!(file.offset_at(1_615_800_000), -4 * 3600);
        assert_eq!(file.offset_at(1_615_600_000), -5 * 3600);
    }

    /// Every zone's transitions, 1800-2099 (and so those its rule of today
    /// makes after: [`within_tables`]), an hour at a time: no two come
    /// within a day of each other, so `ZoneOffsets::transitions`, looking a
    /// day ahead, misses none (zones split over the cores: 20-40 s).
    #[test]
    fn no_zone_changes_its_offset_twice_within_a_day() {
        use chrono::{Offset, TimeZone};
        let closest_in = |zone: &chrono_tz::Tz| {
            let offset = |s: i64| {
                let utc = chrono::DateTime::from_timestamp(s, 0).unwrap().naive_utc();
                zone.offset_from_utc_datetime(&utc).fix().local_minus_utc()
            };
            let mut closest = i64::MAX;
            let mut last_change = i64::MIN / 2;
            let mut previous = offset(-5_364_662_400);
            for hour in (-5_364_662_400i64..4_102_444_800).step_by(3600) {
                let now = offset(hour);
                if now != previous {
                    closest = closest.min(hour - last_change);
                    last_change = hour;
                    previous = now;
                }
            }
            (closest, zone.name())
        };
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let share = chrono_tz::TZ_VARIANTS.len().div_ceil(cores);
        let closest = std::thread::scope(|scope| {
            let workers: Vec<_> = chrono_tz::TZ_VARIANTS
                .chunks(share)
                .map(|zones| scope.spawn(move || zones.iter().map(closest_in).min()))
                .collect();
            workers.into_iter().filter_map(|w| w.join().unwrap()).min()
        });
        let (gap, zone) = closest.unwrap();
        assert!(gap > 86_400, "{zone}: transitions {gap} s apart");
    }

    /// The transitions of years past the tables as Python's `zoneinfo`
    /// gives them (the system's tz database 2025b, the zone files' POSIX
    /// rules), each the second it starts and the offset from it.
    #[test]
    fn summer_times_after_the_tables_follow_the_zones_rule() {
        let zones: [(chrono_tz::Tz, [(i64, i64); 6]); 4] = [
            (
                chrono_tz::America::Los_Angeles,
                [
                    (4_108_701_600, -25_200), // 2100-03-14 10:00 UTC
                    (4_129_261_200, -28_800), // 2100-11-07 09:00
                    (7_390_346_400, -25_200), // 2204-03-11 10:00 (leap year)
                    (7_410_906_000, -28_800),
                    (9_220_471_200, -25_200), // 2262-03-09 10:00
                    (9_241_030_800, -28_800),
                ],
            ),
            (
                chrono_tz::Australia::Sydney,
                [
                    (4_110_451_200, 36_000), // 2100-04-03 16:00 UTC
                    (4_126_176_000, 39_600), // 2100-10-02 16:00
                    (7_392_096_000, 36_000), // 2204-03-31 16:00 (April 1, local)
                    (7_408_425_600, 39_600),
                    (9_222_825_600, 36_000),
                    (9_238_550_400, 39_600),
                ],
            ),
            (
                chrono_tz::Australia::Lord_Howe,
                [
                    (4_110_447_600, 37_800), // half an hour of summer time
                    (4_126_174_200, 39_600),
                    (7_392_092_400, 37_800),
                    (7_408_423_800, 39_600),
                    (9_222_822_000, 37_800),
                    (9_238_548_600, 39_600),
                ],
            ),
            (
                chrono_tz::America::Santiago,
                [
                    (4_110_490_800, -14_400),
                    (4_123_800_000, -10_800),
                    (7_392_740_400, -14_400),
                    (7_405_444_800, -10_800),
                    (9_222_865_200, -14_400),
                    (9_236_174_400, -10_800),
                ],
            ),
        ];
        for (zone, changes) in zones {
            // Looked up directly, and through the kept hours and spans
            // (twice: the second pass finds the spans' transitions).
            let mut offsets = ZoneOffsets::new(ZoneRules::Tables(zone)).unwrap();
            for pass in 0..3 {
                for (at, offset) in changes {
                    // A zone's offsets alternate between two.
                    let before = if offset == changes[0].1 {
                        changes[1].1
                    } else {
                        changes[0].1
                    };
                    let wall = |offsets: &mut ZoneOffsets, s: i64| {
                        let (got, ok) = offsets.wall_clock(s - offsets.epoch);
                        assert!(ok);
                        got + offsets.epoch - s
                    };
                    assert_eq!(offsets.offset_at(at), offset, "{zone} at {at}");
                    assert_eq!(
                        wall(&mut offsets, at),
                        offset,
                        "{zone} at {at}, pass {pass}"
                    );
                    assert_eq!(wall(&mut offsets, at + 3_000_000), offset, "{zone}");
                    assert_eq!(offsets.offset_at(at - 1), before, "{zone} before {at}");
                    assert_eq!(wall(&mut offsets, at - 1), before, "{zone} before {at}");
                }
                // Enough lookups in each span that its transitions are found.
                for (at, _) in changes {
                    for k in 0..(2 * SPAN_AFTER_MISSES as i64) {
                        let _ = offsets.wall_clock(at - offsets.epoch + k * 7_200);
                    }
                }
            }
        }
    }

    /// Each weekday falls on January 1 and on March 1 within the 11 years up
    /// to [`LAST_TABLE_YEAR`], so every day after the tables maps into them,
    /// on a date of the same weekday; and the days before it stay.
    #[test]
    fn every_day_after_the_tables_has_a_match_in_their_last_years() {
        const DAY: i64 = 86_400;
        let first = 4_102_444_800; // 2100-01-01
        for day in 0..(400 * 366) {
            let second = first + day * DAY + 12_345;
            let moved = within_tables(second);
            let (from, to) = (
                chrono::DateTime::from_timestamp(second, 0).unwrap(),
                chrono::DateTime::from_timestamp(moved, 0).unwrap(),
            );
            assert!(
                (LAST_TABLE_YEAR - 10..=LAST_TABLE_YEAR).contains(&to.year()),
                "{from}"
            );
            assert_eq!(from.weekday(), to.weekday(), "{from}");
            assert_eq!(from.time(), to.time(), "{from}");
            let same_date = (from.month(), from.day()) == (to.month(), to.day());
            // February 29 lands on the day before March 1.
            let leap_day = (from.month(), from.day()) == (2, 29)
                && to.date_naive().succ_opt().unwrap().day() == 1;
            assert!(same_date || leap_day, "{from} to {to}");
        }
        for second in [i64::MIN, -1, 0, 4_102_444_799] {
            assert_eq!(within_tables(second), second);
        }
    }

    /// `chrono-tz` holds the transitions through [`LAST_TABLE_YEAR`] and
    /// none after: a newer release that goes further should move it.
    #[test]
    fn the_tables_end_with_this_year_and_no_later() {
        use chrono::{Offset, TimeZone};
        let la = chrono_tz::America::Los_Angeles;
        let offset = |year: i32, month: u32| {
            let utc = chrono::NaiveDate::from_ymd_opt(year, month, 15)
                .unwrap()
                .and_hms_opt(12, 0, 0)
                .unwrap();
            la.offset_from_utc_datetime(&utc).fix().local_minus_utc()
        };
        assert_eq!(offset(LAST_TABLE_YEAR, 7), -7 * 3600);
        assert_eq!(offset(LAST_TABLE_YEAR, 12), -8 * 3600);
        assert_eq!(
            offset(LAST_TABLE_YEAR + 1, 7),
            -8 * 3600,
            "the tables go past 2099 now"
        );
        let first = chrono::NaiveDate::from_ymd_opt(LAST_TABLE_YEAR + 1, 1, 1).unwrap();
        assert_eq!(
            first.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp(),
            PAST_TABLES
        );
    }
}
