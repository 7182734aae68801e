//! Tuning knobs of a read, with defaults chosen from the benchmarks in `benches/`
//! and overridable from `FASTINGEST_*` environment variables.

use std::time::Duration;

use crate::error::{Error, Result};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// How a read plans and fetches its bytes.
///
/// `Config::default()` (the same as [`Config::builtin`]) is the built-in
/// defaults and never looks at the environment; [`Config::from_env`] applies
/// `FASTINGEST_*` environment variables over them (the Python binding does).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Bytes fetched from the end of a file in the first (speculative) request.
    pub footer_prefetch: u64,
    /// A file whose size no listing gave, whose footer request is not
    /// answered within 5 ms (a link with a round trip to speak of), gets a
    /// second request beside it for this many bytes of its end: a footer
    /// longer than `footer_prefetch` (wide or long files) then takes no
    /// further round trip, nor does the page index before it that a filter
    /// uses. It is cancelled as soon as the first answer shows the footer
    /// fits in it (with the page index wanted, once the footer says where
    /// that is). 0 (or anything up to `footer_prefetch`):
    /// never.
    pub long_footer_prefetch: u64,
    /// A remote file whose size a listing already gave and that is at most
    /// this big is fetched whole in that first request: footer and column
    /// chunks together, one request per file instead of two. So is a local
    /// file of at most this size read for all of its column chunks (one
    /// `pread` instead of two; a cold disk serves one request per file).
    pub small_file: u64,
    /// A read (a stream, or raw chunks) of all of one remote file whose size
    /// no listing gave asks, beside the footer request and before the size
    /// is known, for up to this many bytes of the file's start, in requests
    /// of 1 MiB:
    /// a file of about this size or less is read in one round trip instead
    /// of two, and a larger one's first row groups come a round trip early
    /// (see `FileScope::reads_whole_file` for when, and
    /// `Fetcher::fetch_tail_and_beside` for how soon). 0: never.
    pub start_prefetch: u64,
    /// Ranges of an object store or HTTP file whose gap is at most this many
    /// bytes are merged into one request. A request costs what 400-700 KB
    /// of transfer costs (MinIO on loopback, the emulated cloud and far
    /// links; docs/benchmarks.md), so a shorter gap is cheaper fetched
    /// than skipped.
    pub hole_limit: u64,
    /// Ranges of a local file whose gap is at most this many bytes are read
    /// together. A local read costs microseconds, and from a cold disk the
    /// bytes of a gap cost their time.
    pub local_hole_limit: u64,
    /// Largest single request; longer ranges are split into slices of this
    /// size. A smaller read gets smaller slices ([`crate::plan::slice_for`]);
    /// a read through a link that would issue fewer requests than its share
    /// of `max_in_flight` is cut into that many, of at least 1 MiB
    /// ([`crate::plan::FilePlan::spread_to`]). A near store has its own,
    /// `near_slice_size`.
    pub slice_size: u64,
    /// Largest single request to a near store: one that answered a footer
    /// request of the read within 5 ms (loopback, the same rack), where a
    /// request costs the server more than its round trip costs the link, so
    /// fewer, larger requests bring the bytes sooner (`Fetcher::max_slice`);
    /// and to a local file on a rotational disk ([`LocalDisk`]).
    /// At most `memory_budget`; 0: `slice_size`.
    pub near_slice_size: u64,
    /// Most requests in flight at once for one read (all files together);
    /// requests of at most 1 MiB count half and those of at most 256 KiB a
    /// quarter (they are bound by latency, not bandwidth), so up to twice
    /// and four times as many of those; from a store a region away each
    /// counts half again (see `request::slot_quarters`).
    pub max_in_flight: usize,
    /// Most bytes of requests in flight at once for one read.
    pub memory_budget: u64,
    /// Retries per request after the first attempt, for transient failures.
    pub max_retries: u32,
    /// First backoff delay; doubles each retry, with full jitter.
    pub retry_backoff: Duration,
    /// Ceiling of one backoff delay.
    pub retry_backoff_max: Duration,
    /// Timeout of one request, from sending it to the last body byte.
    pub request_timeout: Duration,
    /// Timeout of establishing a connection.
    pub connect_timeout: Duration,
    /// Row groups decoded at once (0: two per CPU core).
    pub decode_parallelism: usize,
    /// Whether a dataset's `_metadata` summary plans its files.
    pub summary_files: SummaryFiles,
    /// Whether local files are read through a memory mapping (no copy out of
    /// the page cache; a file cut short meanwhile fails the read) rather than
    /// with `pread`.
    pub map_local_files: bool,
    /// How local files' bytes that must come from disk are read: a
    /// rotational disk gets few long reads (see [`LocalDisk`]).
    pub local_disk: LocalDisk,
    /// Whether a filter's `==` and `in` values are looked up in the files'
    /// bloom filters, to skip the row groups that cannot hold them.
    pub bloom_filters: bool,
    /// Whether the CRC32 a Parquet page header carries (parquet-mr and
    /// Spark write one by default; pyarrow with `write_page_checksum`) is
    /// checked against the page's bytes before it is decoded, whichever
    /// decoder reads it: a mismatch fails the read, naming the file, the
    /// row group, the column and the page's bytes. Off by default, as in
    /// pyarrow (`page_checksum_verification`) and parquet-mr: object stores
    /// and TLS check the bytes in transit, and the CRC costs a pass over
    /// every page. Pages without one are read as they are.
    pub verify_checksums: bool,
}

/// What kind of device local files are read from, for how their bytes are
/// read from disk (bytes in the page cache are mapped either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalDisk {
    /// As the device says (Linux: `queue/rotational` in sysfs); solid when
    /// nothing says.
    #[default]
    Auto,
    /// Many reads at once (an SSD, NVMe: deep queues pay).
    Solid,
    /// Few long reads: a near store's slices (`near_slice_size`), and reads
    /// of 4 MiB or more two at a time (a disk that seeks, or a virtual disk
    /// that reads concurrent streams of a file slower than one after
    /// another).
    Rotational,
}

impl LocalDisk {
    /// The knob's text (`auto`, `ssd`, `rotational`).
    pub fn as_str(self) -> &'static str {
        match self {
            LocalDisk::Auto => "auto",
            LocalDisk::Solid => "ssd",
            LocalDisk::Rotational => "rotational",
        }
    }
}

/// What a read does with a `_metadata` summary file at the top of a
/// directory or prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SummaryFiles {
    /// Plans the files from it, except those modified after it (which read
    /// their own footer).
    #[default]
    Check,
    /// Plans the files from it whatever their modification times (a dataset
    /// copied to a store in another order than it was written).
    Trust,
    /// Never reads it: every file's own footer is read.
    Ignore,
}

impl SummaryFiles {
    /// The knob's text (`check`, `trust`, `ignore`).
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryFiles::Check => "check",
            SummaryFiles::Trust => "trust",
            SummaryFiles::Ignore => "ignore",
        }
    }
}

impl Config {
    /// The built-in defaults, ignoring the environment.
    pub fn builtin() -> Self {
        Config {
            footer_prefetch: 64 * KIB,
            long_footer_prefetch: MIB,
            small_file: MIB,
            start_prefetch: 16 * MIB,
            hole_limit: 512 * KIB,
            local_hole_limit: 64 * KIB,
            slice_size: 8 * MIB,
            near_slice_size: 16 * MIB,
            max_in_flight: 32,
            memory_budget: 512 * MIB,
            max_retries: 5,
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(5),
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            decode_parallelism: 0,
            summary_files: SummaryFiles::Check,
            map_local_files: true,
            local_disk: LocalDisk::Auto,
            bloom_filters: true,
            verify_checksums: false,
        }
    }

    /// The built-in defaults overridden by `FASTINGEST_*` environment variables.
    pub fn from_env() -> Result<Self> {
        let mut c = Config::builtin();
        for (key, value) in std::env::vars() {
            if let Some(name) = key.strip_prefix("FASTINGEST_") {
                let name = name.to_ascii_lowercase();
                if Self::KEYS.contains(&name.as_str()) {
                    c.set(&name, &value)?;
                }
            }
        }
        c.validate()?;
        Ok(c)
    }

    /// Names accepted by [`Config::set`] (and, upper-cased with a `FASTINGEST_`
    /// prefix, as environment variables).
    pub const KEYS: &'static [&'static str] = &[
        "footer_prefetch",
        "long_footer_prefetch",
        "small_file",
        "start_prefetch",
        "hole_limit",
        "local_hole_limit",
        "slice_size",
        "near_slice_size",
        "max_in_flight",
        "memory_budget",
        "max_retries",
        "retry_backoff",
        "retry_backoff_max",
        "request_timeout",
        "connect_timeout",
        "decode_parallelism",
        "summary_files",
        "map_local_files",
        "local_disk",
        "bloom_filters",
        "verify_checksums",
    ];

    /// Sets one knob from text: sizes take `K`/`M`/`G` suffixes (binary), and
    /// durations are seconds (fractions allowed).
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let bad =
            |what: &str| Error::InvalidConfig(format!("config {name}={value:?}: expected {what}"));
        let size = || parse_size(value).ok_or_else(|| bad("a byte size such as 65536 or 8M"));
        let count = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| bad("a whole number"))
        };
        let secs = || {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| bad("seconds"))
        };
        let flag = || match value.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Some(true),
            "0" | "false" | "no" | "off" => Some(false),
            _ => None,
        };
        let bad_flag = || bad("true or false (1 or 0)");
        match name {
            "footer_prefetch" => self.footer_prefetch = size()?,
            "long_footer_prefetch" => self.long_footer_prefetch = size()?,
            "small_file" => self.small_file = size()?,
            "start_prefetch" => self.start_prefetch = size()?,
            "hole_limit" => self.hole_limit = size()?,
            "local_hole_limit" => self.local_hole_limit = size()?,
            "slice_size" => self.slice_size = size()?,
            "near_slice_size" => self.near_slice_size = size()?,
            "max_in_flight" => self.max_in_flight = count()?,
            "memory_budget" => self.memory_budget = size()?,
            "max_retries" => self.max_retries = count()? as u32,
            "retry_backoff" => self.retry_backoff = secs()?,
            "retry_backoff_max" => self.retry_backoff_max = secs()?,
            "request_timeout" => self.request_timeout = secs()?,
            "connect_timeout" => self.connect_timeout = secs()?,
            "decode_parallelism" => self.decode_parallelism = count()?,
            "summary_files" => {
                use SummaryFiles::*;
                self.summary_files = named(value, &[Check, Trust, Ignore], SummaryFiles::as_str)
                    .ok_or_else(|| bad("\"check\", \"trust\" or \"ignore\""))?
            }
            "map_local_files" => self.map_local_files = flag().ok_or_else(&bad_flag)?,
            "bloom_filters" => self.bloom_filters = flag().ok_or_else(&bad_flag)?,
            "verify_checksums" => self.verify_checksums = flag().ok_or_else(&bad_flag)?,
            "local_disk" => {
                use LocalDisk::*;
                self.local_disk = named(value, &[Auto, Solid, Rotational], LocalDisk::as_str)
                    .ok_or_else(|| bad("\"auto\", \"ssd\" or \"rotational\""))?
            }
            _ => {
                return Err(Error::InvalidConfig(format!(
                    "unknown config key {name:?}; known keys: {}",
                    Self::KEYS.join(", ")
                )))
            }
        }
        Ok(())
    }

    /// Checks that the knobs make sense together.
    pub fn validate(&self) -> Result<()> {
        let fail = |m: &str| Err(Error::InvalidConfig(format!("invalid config: {m}")));
        if self.footer_prefetch < 8 {
            return fail("footer_prefetch must be at least 8 bytes");
        }
        if self.slice_size < 4 * KIB {
            return fail("slice_size must be at least 4 KiB");
        }
        if self.near_slice_size != 0 && self.near_slice_size < 4 * KIB {
            return fail("near_slice_size must be 0 or at least 4 KiB");
        }
        if self.max_in_flight == 0 {
            return fail("max_in_flight must be at least 1");
        }
        if self.memory_budget < self.slice_size {
            return fail("memory_budget must be at least slice_size");
        }
        if self.request_timeout.is_zero() || self.connect_timeout.is_zero() {
            return fail("timeouts must be positive");
        }
        Ok(())
    }

    /// Row groups decoded at once, resolving 0 to two per core: with one
    /// per core, the next unit waited for a round trip through the runtime
    /// after each decode (small row groups from MinIO: 11 % slower). They
    /// run on [`Config::decode_threads`] threads.
    pub fn effective_decode_parallelism(&self) -> usize {
        if self.decode_parallelism > 0 {
            self.decode_parallelism
        } else {
            2 * crate::runtime::cores()
        }
    }

    /// Threads that decode: one per core at most. More slots than threads
    /// keep a decoded unit's successor queued on a thread (no wake-up round
    /// trip between one decode and the next), and a unit's columns are
    /// shared out to threads that fall idle; more threads than cores only
    /// grew memory (each keeps its own allocator heap: steady peak RSS lower
    /// on 8 of 11 files, by 8-21 %, with one per core; reads as fast or
    /// faster except small row groups, see docs/benchmarks.md).
    pub fn decode_threads(&self) -> usize {
        self.effective_decode_parallelism()
            .min(crate::runtime::cores())
            .max(1)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::builtin()
    }
}

/// The one of `choices` whose knob text (`text_of`) `value` is, ignoring
/// case and surrounding spaces.
fn named<T: Copy>(value: &str, choices: &[T], text_of: fn(T) -> &'static str) -> Option<T> {
    let value = value.trim().to_ascii_lowercase();
    choices.iter().copied().find(|c| text_of(*c) == value)
}

/// Parses `65536`, `64K`, `8M`, `8MiB`, `1G` into bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], KIB),
        'm' | 'M' => (&t[..t.len() - 1], MIB),
        'g' | 'G' => (&t[..t.len() - 1], 1024 * MIB),
        _ => (t, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("8MiB"), Some(8 * MIB));
        assert_eq!(parse_size("1g"), Some(1024 * MIB));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn default_ignores_the_environment() {
        // A variable no other test reads, so setting it here races with nothing.
        std::env::set_var("FASTINGEST_FOOTER_PREFETCH", "1M");
        assert_eq!(Config::default(), Config::builtin());
        assert_eq!(Config::from_env().unwrap().footer_prefetch, MIB);
        std::env::remove_var("FASTINGEST_FOOTER_PREFETCH");
    }

    #[test]
    fn set_rejects_unknown_and_malformed() {
        let mut c = Config::builtin();
        c.set("slice_size", "4M").unwrap();
        assert_eq!(c.slice_size, 4 * MIB);
        assert!(c.set("slice_size", "four").is_err());
        c.set("near_slice_size", "0").unwrap();
        c.validate().unwrap();
        c.set("near_slice_size", "1K").unwrap();
        assert!(c.validate().is_err(), "a near slice of 1 KiB");
        c.set("near_slice_size", "32M").unwrap();
        assert_eq!(c.near_slice_size, 32 * MIB);
        assert!(c.set("no_such_key", "1").is_err());
        c.set("summary_files", "Trust").unwrap();
        assert_eq!(c.summary_files, SummaryFiles::Trust);
        assert!(c.set("summary_files", "always").is_err());
        assert_eq!(c.local_disk, LocalDisk::Auto);
        c.set("local_disk", " Rotational").unwrap();
        assert_eq!(c.local_disk, LocalDisk::Rotational);
        c.set("local_disk", "ssd").unwrap();
        assert_eq!(c.local_disk.as_str(), "ssd");
        assert!(c.set("local_disk", "hdd").is_err());
        c.max_in_flight = 0;
        assert!(c.validate().is_err());
    }
}
