//! A writer's zone as the system's tz database compiles it (a TZif file),
//! read the way the ORC C++ reader (pyarrow's) reads it.
//!
//! Why: the ORC C++ reader finds a zone's offsets in the zone file of the
//! machine it runs on, not in a database of its own. `chrono-tz`'s tables
//! (the tz database as its release compiled it) read differently in two
//! ways:
//! - before a zone's first transition (local mean time, before about 1900)
//!   the ORC C++ reader uses the first standard time the zone changed to,
//!   not local mean time: Asia/Taipei 6 minutes on, Asia/Seoul 3 back;
//! - names that are links in one build of the database and zones of their
//!   own in another (`CET`, `EET`, `WET`, `EST`, `MST`, `HST`: links to a
//!   city since the tz database 2024b, their own zones in Debian's build):
//!   `CET` as Europe/Brussels read times of 1892-1940 an hour off.
//!
//! Where the zone has no readable file, [`super::zones`] falls back to
//! `chrono-tz` (where the ORC C++ reader refuses the file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A zone file's offsets.
pub(super) struct ZoneFile {
    zone: tz::TimeZone,
    /// The first transition (`i64::MIN`: none, so the file's rule or its
    /// one type holds at every time).
    first_transition: i64,
    /// The offset before it: that of the first standard (not summer) time
    /// a transition leads to, as the ORC C++ reader takes it (the file's
    /// first type otherwise).
    ancient: i64,
    /// The offset after the last transition where the file gives no rule
    /// for later times.
    last: i64,
}

impl ZoneFile {
    /// The zone of a TZif file's bytes (`None`: not one).
    pub(super) fn from_bytes(bytes: &[u8]) -> Option<ZoneFile> {
        tz::TimeZone::from_tz_data(bytes).ok().map(ZoneFile::new)
    }

    pub(super) fn new(zone: tz::TimeZone) -> ZoneFile {
        let (first_transition, ancient, last) = {
            let rules = zone.as_ref();
            let types = rules.local_time_types();
            let offset_of = |index: usize| types.get(index).map_or(0, |t| i64::from(t.ut_offset()));
            let transitions = rules.transitions();
            let ancient = transitions
                .iter()
                .map(|t| t.local_time_type_index())
                .find(|&index| types.get(index).is_some_and(|t| !t.is_dst()))
                .map_or_else(|| offset_of(0), offset_of);
            let first = transitions.first().map_or(i64::MIN, |t| t.unix_leap_time());
            let last = transitions
                .last()
                .map_or_else(|| offset_of(0), |t| offset_of(t.local_time_type_index()));
            (first, ancient, last)
        };
        ZoneFile {
            zone,
            first_transition,
            ancient,
            last,
        }
    }

    /// The offset from UTC at `second` (since 1970, UTC).
    pub(super) fn offset_at(&self, second: i64) -> i64 {
        if second < self.first_transition {
            return self.ancient;
        }
        self.zone
            .find_local_time_type(second)
            .map_or(self.last, |t| i64::from(t.ut_offset()))
    }
}

/// Where the ORC C++ reader looks for zone files: `TZDIR`, else an active
/// conda environment's, else the system's.
fn zone_directory() -> PathBuf {
    if let Some(dir) = std::env::var_os("TZDIR") {
        return PathBuf::from(dir);
    }
    if let Some(prefix) = std::env::var_os("CONDA_PREFIX") {
        return Path::new(&prefix).join("share").join("zoneinfo");
    }
    PathBuf::from("/usr/share/zoneinfo")
}

/// The zone file of zone `name` (an IANA name, as `chrono-tz` parsed it
/// from the file), read once per path a process sees (`None`: none there,
/// or not a zone file).
pub(super) fn zone_file(name: &str) -> Option<Arc<ZoneFile>> {
    static READ: OnceLock<Mutex<HashMap<PathBuf, Option<Arc<ZoneFile>>>>> = OnceLock::new();
    // An IANA name is relative and never climbs out of the directory.
    if name.is_empty() || name.starts_with('/') || name.split('/').any(|part| part == "..") {
        return None;
    }
    let path = zone_directory().join(name);
    let read = READ.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(known) = read.lock().ok()?.get(&path) {
        return known.clone();
    }
    let zone = std::fs::read(&path)
        .ok()
        .and_then(|bytes| ZoneFile::from_bytes(&bytes))
        .map(Arc::new);
    read.lock().ok()?.insert(path, zone.clone());
    zone
}

#[cfg(test)]
mod tests {
    use super::*;
    use tz::timezone::{LocalTimeType, Transition};

    /// A zone of local mean time, then a summer time first, then standard
    /// and summer times, and no rule for later.
    fn zone() -> ZoneFile {
        let types = vec![
            LocalTimeType::new(1_000, false, Some(b"LMT")).unwrap(),
            LocalTimeType::new(7_200, true, Some(b"XST")).unwrap(),
            LocalTimeType::new(3_600, false, Some(b"XT")).unwrap(),
        ];
        let transitions = vec![
            Transition::new(-1_000_000, 1),
            Transition::new(-500_000, 2),
            Transition::new(0, 1),
            Transition::new(500_000, 2),
        ];
        ZoneFile::new(tz::TimeZone::new(transitions, types, vec![], None).unwrap())
    }

    #[test]
    fn before_the_first_transition_the_first_standard_time_applies() {
        let zone = zone();
        // Not local mean time (1000 s), nor the summer time it changed to.
        assert_eq!(zone.offset_at(-5_000_000_000), 3_600);
        assert_eq!(zone.offset_at(-1_000_001), 3_600);
        assert_eq!(zone.offset_at(-1_000_000), 7_200);
        assert_eq!(zone.offset_at(-500_001), 7_200);
        assert_eq!(zone.offset_at(-500_000), 3_600);
        assert_eq!(zone.offset_at(0), 7_200);
        // After the last, without a rule: its offset for ever.
        assert_eq!(zone.offset_at(499_999), 7_200);
        assert_eq!(zone.offset_at(500_000), 3_600);
        assert_eq!(zone.offset_at(5_000_000_000), 3_600);
    }

    #[test]
    fn a_zone_of_summer_times_alone_starts_with_its_first_type() {
        let types = vec![
            LocalTimeType::new(600, true, None).unwrap(),
            LocalTimeType::new(1_200, true, None).unwrap(),
        ];
        let transitions = vec![Transition::new(100, 1)];
        let zone = ZoneFile::new(tz::TimeZone::new(transitions, types, vec![], None).unwrap());
        assert_eq!(zone.offset_at(99), 600);
        assert_eq!(zone.offset_at(100), 1_200);
        let fixed = ZoneFile::new(tz::TimeZone::fixed(-3_600).unwrap());
        assert_eq!(fixed.offset_at(i64::MIN / 2), -3_600);
        assert_eq!(fixed.offset_at(0), -3_600);
    }

    #[test]
    fn a_later_rule_and_bytes_that_are_no_zone_file() {
        // A POSIX rule for the times after the transitions: US Eastern.
        let zone = tz::TimeZone::from_posix_tz("EST5EDT,M3.2.0,M11.1.0").unwrap();
        let zone = ZoneFile::new(zone);
        // 2150-07-01 and 2150-12-01 12:00 UTC.
        assert_eq!(zone.offset_at(5_695_920_000 + 43_200), -4 * 3600);
        assert_eq!(zone.offset_at(5_709_139_200 + 43_200), -5 * 3600);
        assert!(ZoneFile::from_bytes(b"not a zone file").is_none());
        assert!(ZoneFile::from_bytes(b"TZif2").is_none());
    }

    #[test]
    fn names_that_climb_out_of_the_directory_are_not_looked_up() {
        for name in ["", "/etc/passwd", "../../etc/passwd", "Europe/../../x"] {
            assert!(zone_file(name).is_none(), "{name}");
        }
    }
}
