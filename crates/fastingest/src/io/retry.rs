//! Retries with exponential backoff and full jitter, and a timeout on every
//! attempt. Sources report each failure as transient or permanent; only
//! transient ones are retried.

use std::future::Future;
use std::ops::Range;
use std::time::Duration;

use rand::Rng;

use crate::config::Config;
use crate::error::{Cause, Error};
use crate::stats::ReadStats;

/// Why one attempt failed.
#[derive(Debug)]
pub enum Failure {
    /// Worth trying again: 5xx, 429/SlowDown, connection reset, timeout, a
    /// body cut short.
    Transient {
        /// What failed, in words.
        detail: String,
        /// Whether the attempt ran out of time.
        timed_out: bool,
        /// The client's own error, kept as the final error's source.
        cause: Option<Cause>,
    },
    /// Trying again will not help: not found, denied, bad request, changed
    /// object, bad range. Carries the final error.
    Permanent(Error),
}

impl Failure {
    pub(crate) fn transient(detail: impl Into<String>) -> Self {
        Failure::Transient {
            detail: detail.into(),
            timed_out: false,
            cause: None,
        }
    }
}

/// The retry loop's state for one request, for callers whose attempts borrow
/// something (a destination buffer) and so cannot be a reusable closure.
pub(crate) struct Retry<'a> {
    config: &'a Config,
    stats: &'a ReadStats,
    location: &'a str,
    range: Option<Range<u64>>,
    tries: u32,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(
        config: &'a Config,
        stats: &'a ReadStats,
        location: &'a str,
        range: Option<Range<u64>>,
    ) -> Self {
        Retry {
            config,
            stats,
            location,
            range,
            tries: 0,
        }
    }

    /// Runs one attempt under the request timeout, counting it (and
    /// logging it when it took longer than [`SLOW_REQUEST`]).
    pub(crate) async fn attempt<T>(
        &mut self,
        fut: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        self.tries += 1;
        self.stats.add_request();
        let started = std::time::Instant::now();
        let result = match tokio::time::timeout(self.config.request_timeout, fut).await {
            Ok(result) => result,
            Err(_) => Err(Failure::Transient {
                detail: format!("no response within {:?}", self.config.request_timeout),
                timed_out: true,
                cause: None,
            }),
        };
        let took = started.elapsed();
        if took >= SLOW_REQUEST {
            log::info!(
                target: "fastingest::request",
                "{}: slow request: {} took {:.1} s",
                self.location,
                describe(&self.range),
                took.as_secs_f64()
            );
        }
        result
    }

    /// After a failed attempt: sleeps and returns `Ok` when another attempt
    /// should be made, or returns the final error.
    pub(crate) async fn failed(&mut self, failure: Failure) -> Result<(), Error> {
        match failure {
            Failure::Permanent(mut err) => {
                if let Error::Io { range, .. } = &mut err {
                    if range.is_none() {
                        range.clone_from(&self.range);
                    }
                }
                Err(err)
            }
            Failure::Transient {
                detail,
                timed_out,
                cause,
            } => {
                if self.tries > self.config.max_retries {
                    return Err(Error::Io {
                        location: self.location.to_string(),
                        range: self.range.clone(),
                        attempts: self.tries,
                        detail,
                        timed_out,
                        cause,
                    });
                }
                self.stats.add_retry();
                let delay = backoff(self.config, self.tries);
                log::warn!(
                    target: "fastingest::retry",
                    "{}: {} failed (attempt {} of {}): {detail}; retrying in {:.2} s",
                    self.location,
                    describe(&self.range),
                    self.tries,
                    self.config.max_retries + 1,
                    delay.as_secs_f64()
                );
                tokio::time::sleep(delay).await;
                Ok(())
            }
        }
    }
}

/// A request taking this long is logged (at INFO, `fastingest.request`).
pub const SLOW_REQUEST: Duration = Duration::from_secs(10);

fn describe(range: &Option<Range<u64>>) -> String {
    match range {
        Some(r) => format!("read of bytes {}..{}", r.start, r.end),
        None => "request".into(),
    }
}

/// Runs `attempt` until it succeeds, fails permanently, or the retries run
/// out. The final error names `location` and `range`.
pub(crate) async fn with_retries<T, F, Fut>(
    config: &Config,
    stats: &ReadStats,
    location: &str,
    range: Option<Range<u64>>,
    mut attempt: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut retry = Retry::new(config, stats, location, range);
    loop {
        match retry.attempt(attempt()).await {
            Ok(value) => return Ok(value),
            Err(failure) => retry.failed(failure).await?,
        }
    }
}

/// Full jitter: uniform in [0, min(max, base * 2^(n-1))].
fn backoff(config: &Config, attempt: u32) -> Duration {
    let exp = config
        .retry_backoff
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let cap = exp.min(config.retry_backoff_max);
    if cap.is_zero() {
        return cap;
    }
    let nanos = rand::rng().random_range(0..=cap.as_nanos() as u64);
    Duration::from_nanos(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fast_config(retries: u32) -> Config {
        Config {
            max_retries: retries,
            retry_backoff: Duration::from_millis(1),
            retry_backoff_max: Duration::from_millis(2),
            request_timeout: Duration::from_millis(200),
            ..Config::builtin()
        }
    }

    #[tokio::test]
    async fn transient_failures_are_retried_then_succeed() {
        let calls = AtomicU32::new(0);
        let stats = ReadStats::new();
        let out = with_retries(&fast_config(3), &stats, "x", Some(0..1), || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(Failure::transient("reset"))
            } else {
                Ok(7)
            }
        })
        .await
        .unwrap();
        assert_eq!(out, 7);
        assert_eq!(stats.snapshot().retries, 2);
        assert_eq!(stats.snapshot().requests, 3);
    }

    #[tokio::test]
    async fn exhausted_retries_name_location_and_range() {
        let stats = ReadStats::new();
        let err = with_retries(
            &fast_config(2),
            &stats,
            "s3://b/k",
            Some(10..20),
            || async { Err::<(), _>(Failure::transient("503 SlowDown")) },
        )
        .await
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("s3://b/k") && msg.contains("10..20") && msg.contains("SlowDown"),
            "{msg}"
        );
        assert!(msg.contains("3 attempt"), "{msg}");
    }

    #[tokio::test]
    async fn the_last_failures_own_error_is_the_source() {
        let stats = ReadStats::new();
        let err = with_retries(&fast_config(1), &stats, "s3://b/k", None, || async {
            let store_error = object_store::Error::Generic {
                store: "S3",
                source: "connection reset by peer".into(),
            };
            Err::<(), _>(super::super::object::classify("s3://b/k", store_error))
        })
        .await
        .unwrap_err();
        assert!(matches!(err, Error::Io { attempts: 2, .. }), "{err}");
        let source = std::error::Error::source(&err).expect("the store's error is kept");
        assert!(source.to_string().contains("connection reset"), "{source}");
    }

    #[test]
    fn local_io_errors_keep_the_os_error() {
        let os = std::io::Error::other("disk on fire");
        let err = super::super::local::io_error("/data/x.parquet", os);
        let source = std::error::Error::source(&err).expect("the OS error is kept");
        assert_eq!(source.to_string(), "disk on fire");
    }

    #[tokio::test]
    async fn permanent_failures_are_not_retried() {
        let calls = AtomicU32::new(0);
        let stats = ReadStats::new();
        let err = with_retries(&fast_config(5), &stats, "x", Some(0..1), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(Failure::Permanent(Error::NotFound {
                location: "x".into(),
                detail: "gone".into(),
            }))
        })
        .await
        .unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn hung_attempts_time_out_and_count_as_transient() {
        let stats = ReadStats::new();
        let err = with_retries(&fast_config(1), &stats, "x", Some(0..1), || async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<(), Failure>(())
        })
        .await
        .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Io {
                    timed_out: true,
                    attempts: 2,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn backoff_is_capped() {
        let c = fast_config(10);
        for n in 1..30 {
            assert!(backoff(&c, n) <= c.retry_backoff_max);
        }
    }
}
