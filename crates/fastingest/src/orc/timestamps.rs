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
//! instant ([`ZoneOffsets`]), from the system's zone file as that reader
//! takes it ([`super::zone_files`]).

use std::sync::Arc;

use arrow_array::types::TimestampNanosecondType;
use arrow_array::ArrayRef;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;

use super::columns::ColumnAt;
use super::streams::StripeStreams;
use super::zones::{ZoneOffsets, ZoneRules};

use super::integers::{primitive_column, readable, rle_into, rle_runs, validity, Rle};

/// 2015-01-01 00:00:00 UTC, ORC's epoch, in seconds since 1970.
pub(super) const ORC_EPOCH: i64 = 1_420_070_400;

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
    streams: &StripeStreams,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let Some(rle) = Rle::direct(column.encoding) else {
        return Ok(None);
    };
    // A `timestamp` is a wall-clock time in the writer's zone; one written
    // in UTC needs no shift (`with local time zone` is always UTC).
    let mut zone = match (column.orc, column.zone) {
        (OrcType::Timestamp { .. }, Some(zone)) if !UTC_ZONES.contains(&zone.name()) => {
            match ZoneOffsets::new(ZoneRules::of(zone)) {
                Some(zone) => Some(zone),
                None => return Ok(None),
            }
        }
        _ => None,
    };
    let epoch = zone.as_ref().map_or(ORC_EPOCH, |z| z.epoch);
    let rows = column.rows;
    let seconds = streams.get(column.id, Kind::Data);
    let nanos = streams.get(column.id, Kind::Secondary);
    let array =
        primitive_column::<TimestampNanosecondType>(validity(streams, column)?, rows, |n, out| {
            rle_into(rle, readable(seconds), n, out)?;
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
            rle_runs(rle, readable(nanos), "secondary", n, false, |run, start| {
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
        })?;
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
