//! Top-level timestamp columns of an ORC stripe (`timestamp` written in
//! UTC, and `timestamp with local time zone`), decoded here rather than by
//! `orc-rust`.
//!
//! Why: `orc-rust` converts every value of a `timestamp` column from the
//! writer's time zone through `chrono-tz`, even when that zone is UTC (as
//! pyarrow's writer records it), and reads both streams through its
//! integer decoder's `std::io::Read`: a profile of a steady read of three
//! timestamp columns had 45 % of the read in the zone conversion and 23 % in
//! `read_ints`, and the read at 0.28× pyarrow's.
//!
//! How a value is stored: seconds since 2015-01-01 00:00:00 in the writer's
//! zone (UTC for `timestamp with local time zone`) in the data stream
//! (signed run length encoding v2), and nanoseconds in the secondary stream
//! (unsigned encoding, whose 64 bits are read as signed), with their
//! trailing decimal zeros cut off and counted in the low 3 bits.
//!
//! A `timestamp` written in another zone (Hive and Spark write the JVM's)
//! reads as that zone's wall clock, as the ORC C++ reader (pyarrow's) and
//! `orc-rust` read it: the instant, plus the zone's offset from UTC at that
//! instant ([`ZoneOffsets`]).

use std::sync::Arc;

use arrow_array::types::TimestampNanosecondType;
use arrow_array::ArrayRef;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use orc_rust::proto::column_encoding::Kind as EncodingKind;
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;
use orc_rust::stripe::Stripe;

use super::streams::StripeStreams;

use super::integers::{primitive_column, readable, rle_v2_into, rle_v2_runs, validity};

/// 2015-01-01 00:00:00 UTC, ORC's epoch, in seconds since 1970.
const ORC_EPOCH: i64 = 1_420_070_400;

/// The zones that are UTC at every instant (the IANA names and links).
const UTC_ZONES: [&str; 18] = [
    "UTC",
    "Etc/UTC",
    "UCT",
    "Etc/UCT",
    "GMT",
    "Etc/GMT",
    "GMT0",
    "Etc/GMT0",
    "GMT+0",
    "Etc/GMT+0",
    "GMT-0",
    "Etc/GMT-0",
    "Greenwich",
    "Etc/Greenwich",
    "Universal",
    "Etc/Universal",
    "Zulu",
    "Etc/Zulu",
];

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here (when its stripe's encoding and writer's zone are ones
/// read here too).
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    match (orc, arrow) {
        (OrcType::Timestamp { .. }, ArrowType::Timestamp(TimeUnit::Nanosecond, None)) => true,
        (
            OrcType::TimestampWithLocalTimezone { .. },
            ArrowType::Timestamp(TimeUnit::Nanosecond, Some(zone)),
        ) => zone.as_ref() == "UTC",
        _ => false,
    }
}

/// Column `index` of `stripe`, read as Arrow type `arrow` (one
/// [`may_decode`] accepted), decoded whole (`None`: its encoding or its
/// writer's zone is not one read here).
pub(super) fn decode(
    stripe: &Stripe,
    streams: &StripeStreams,
    index: usize,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let column = &stripe.columns()[index];
    if column.encoding().kind() != EncodingKind::DirectV2 {
        return Ok(None);
    }
    // A `timestamp` is a wall-clock time in the writer's zone; one written
    // in UTC needs no shift (`with local time zone` is always UTC).
    let mut zone = match (column.data_type(), stripe.writer_tz()) {
        (OrcType::Timestamp { .. }, Some(zone)) if !UTC_ZONES.contains(&zone.name()) => {
            match ZoneOffsets::new(zone) {
                Some(zone) => Some(zone),
                None => return Ok(None),
            }
        }
        _ => None,
    };
    let epoch = zone.as_ref().map_or(ORC_EPOCH, |z| z.epoch);
    let rows = stripe.number_of_rows();
    let seconds = streams.get(column.column_id(), Kind::Data);
    let nanos = streams.get(column.column_id(), Kind::Secondary);
    let array = primitive_column::<TimestampNanosecondType>(
        validity(stripe, streams, index)?,
        rows,
        |n, out| {
            rle_v2_into(readable(seconds), n, out)?;
            if let Some(zone) = &mut zone {
                // To the zone's wall clock, before the nanoseconds are
                // added: where the ORC C++ reader shifts them.
                let mut fits = true;
                for slot in out.iter_mut() {
                    let (value, ok) = zone.wall_clock(*slot);
                    fits &= ok;
                    *slot = value;
                }
                if !fits {
                    return Err("a timestamp past what the zone's wall clock holds".into());
                }
            }
            let mut at = 0;
            rle_v2_runs(readable(nanos), "secondary", n, false, |run, start| {
                let slots = &mut out[at..at + run.len()];
                at += run.len();
                // Checked once a run, as the integers are.
                let mut fits = true;
                for (slot, &encoded) in slots.iter_mut().zip(run) {
                    let (value, ok) = nanoseconds_since_1970(*slot, encoded, epoch);
                    fits &= ok;
                    *slot = value;
                }

                if fits {
                    return Ok(());
                }
                Err(format!(
                    "a timestamp past what timestamp[ns] holds (years 1677-2262) (run at byte \
                 {start} of the secondary stream)"
                ))
            })
        },
    )?;
    Ok(Some(Arc::new(array.with_data_type(arrow.clone()))))
}

/// Powers of ten by the 3-bit count of cut zeros: a count of `z` (1 to 7)
/// stands for `z + 1` zeros.
const ZEROS: [u64; 8] = [
    1,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

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
struct ZoneOffsets {
    zone: chrono_tz::Tz,
    /// 2015-01-01 00:00:00 in the zone, in seconds since 1970 (UTC).
    epoch: i64,
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
    fn new(zone: chrono_tz::Tz) -> Option<ZoneOffsets> {
        use chrono::TimeZone;
        let epoch = zone
            .with_ymd_and_hms(2015, 1, 1, 0, 0, 0)
            .single()?
            .timestamp();
        Some(ZoneOffsets {
            zone,
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

    /// The zone's offset from UTC at `second` (since 1970, UTC).
    fn offset_at(&self, second: i64) -> i64 {
        use chrono::{Offset, TimeZone};
        chrono::DateTime::from_timestamp(second, 0).map_or(0, |utc| {
            let offset = self.zone.offset_from_utc_datetime(&utc.naive_utc());
            i64::from(offset.fix().local_minus_utc())
        })
    }

    /// `seconds` since ORC's epoch in the zone (as the data stream holds
    /// them) moved by the zone's offset at that instant: the wall clock,
    /// still counted from [`Self::epoch`]; and whether it fits an `i64`.
    #[inline]
    fn wall_clock(&mut self, seconds: i64) -> (i64, bool) {
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

/// The nanoseconds since 1970 of the value of `seconds` since ORC's epoch
/// (`epoch`: 2015-01-01 00:00:00 in the writer's zone, in seconds since 1970)
/// and `encoded` nanoseconds, and whether they fit an `i64`.
///
/// The nanoseconds are read as signed, as the ORC C++ reader does: its
/// writer (pyarrow's) stores a time before 1970 as seconds cut towards zero
/// and negative nanoseconds (-1.5 s as -1 s and -0.5 s), which read as
/// unsigned came back 2^61 ns off. A Java writer's are never negative.
#[inline]
fn nanoseconds_since_1970(seconds: i64, encoded: i64, epoch: i64) -> (i64, bool) {
    // In `i64`s with the overflows gathered (`i128` arithmetic was a third
    // of the decode).
    let (nanos, o1) = (encoded >> 3).overflowing_mul(ZEROS[(encoded & 7) as usize] as i64);
    let (seconds, o2) = seconds.overflowing_add(epoch);
    // Writers before ORC-763 stored a time before 1970 with a fraction of
    // more than a millisecond one second late; readers take it back.
    let late = (seconds < 0 && nanos > 999_999) as i64;
    let (seconds, o3) = seconds.overflowing_sub(late);
    let (value, o4) = seconds.overflowing_mul(1_000_000_000);
    let (value, o5) = value.overflowing_add(nanos);
    (value, !(o1 | o2 | o3 | o4 | o5))
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
            let mut offsets = ZoneOffsets::new(zone).unwrap();
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
        let la = ZoneOffsets::new(chrono_tz::America::Los_Angeles).unwrap();
        assert_eq!(la.epoch, ORC_EPOCH + 8 * 3600);
        let mut la = la;
        assert!(!la.wall_clock(i64::MAX).1);
    }

    /// Every zone's transitions, 1800-2037, an hour at a time: no two come
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
            for hour in (-5_364_662_400i64..2_145_916_800).step_by(3600) {
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

    #[test]
    fn seconds_and_cut_zeros_make_nanoseconds_since_1970() {
        // 2015-01-01 00:00:00.5: 5 with 8 zeros cut (count 7).
        assert_eq!(
            nanoseconds_since_1970(0, 5 << 3 | 7, ORC_EPOCH),
            (ORC_EPOCH * 1_000_000_000 + 500_000_000, true)
        );
        // 123 ns: no zeros cut.
        assert_eq!(
            nanoseconds_since_1970(1, 123 << 3, ORC_EPOCH),
            ((ORC_EPOCH + 1) * 1_000_000_000 + 123, true)
        );
        // 1969-12-31 23:59:58.5 (-2 s and 0.5 s), stored one second late
        // (ORC-763).
        let stored = -1 - ORC_EPOCH;
        assert_eq!(
            nanoseconds_since_1970(stored, 5 << 3 | 7, ORC_EPOCH),
            (-2_000_000_000 + 500_000_000, true)
        );
        // A microsecond before 1970 is not moved (under a millisecond).
        assert_eq!(
            nanoseconds_since_1970(-ORC_EPOCH - 1, 999_999 << 3, ORC_EPOCH),
            (-1_000_000_000 + 999_999, true)
        );
        // -1.5 s as the C++ writer stores it: -1 s, and -0.5 s as -5 with
        // 8 zeros cut (-5 << 3 | 7 = -33).
        assert_eq!(
            nanoseconds_since_1970(-1 - ORC_EPOCH, -33, ORC_EPOCH),
            (-1_500_000_000, true)
        );
        // -1 ns: 0 s and -1 ns, no zeros cut.
        assert_eq!(
            nanoseconds_since_1970(-ORC_EPOCH, -8, ORC_EPOCH),
            (-1, true)
        );
        // Past 2262, and past what the seconds hold.
        assert!(!nanoseconds_since_1970(10_000_000_000, 0, ORC_EPOCH).1);
        assert!(!nanoseconds_since_1970(i64::MIN, 5 << 3 | 7, ORC_EPOCH).1);
        assert!(!nanoseconds_since_1970(0, i64::MAX, ORC_EPOCH).1);
    }
}
