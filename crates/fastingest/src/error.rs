//! The one error type of the core. Every variant names the object it is about,
//! so that a user reading the message knows which file (and which bytes) failed.

use std::ops::Range;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, with the object (and byte range where it matters) it concerns.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The object or file does not exist.
    #[error("{location}: not found ({detail})")]
    NotFound { location: String, detail: String },

    /// Access denied or credentials rejected.
    #[error("{location}: permission denied ({detail})")]
    PermissionDenied { location: String, detail: String },

    /// The file is not a valid file of its format: bad magic, truncated,
    /// corrupt footer or page, footer length beyond the file.
    #[error("{location}: corrupt or invalid file{}: {detail}", fmt_range(range))]
    Corrupt {
        location: String,
        range: Option<Range<u64>>,
        detail: String,
    },

    /// The file uses a feature this reader does not support (e.g. encryption).
    #[error("{location}: unsupported: {detail}")]
    Unsupported { location: String, detail: String },

    /// A requested column does not exist.
    #[error("{location}: no column named {column:?}; available columns: {}", available.join(", "))]
    ColumnNotFound {
        location: String,
        column: String,
        available: Vec<String>,
    },

    /// Files of one read do not share a schema.
    #[error("{location}: schema differs from the first file's ({first}): {detail}")]
    SchemaMismatch {
        location: String,
        first: String,
        detail: String,
    },

    /// A remote or local read failed after all retries.
    #[error(
        "{location}: {} failed after {attempts} attempt(s): {detail}",
        describe_read(range)
    )]
    Io {
        location: String,
        range: Range<u64>,
        attempts: u32,
        detail: String,
        /// Whether the last failure was a timeout.
        timed_out: bool,
    },

    /// The caller asked for something that does not make sense.
    #[error("{0}")]
    InvalidArgument(String),

    /// A storage URL or option is malformed or unknown.
    #[error("{0}")]
    InvalidConfig(String),

    /// What the call needs is not on this machine (a GPU, the CUDA driver,
    /// a build feature).
    #[error("{0}")]
    Unavailable(String),

    /// A device call failed (allocation, copy, synchronisation).
    #[error("{0}")]
    Device(String),
}

fn describe_read(range: &Range<u64>) -> String {
    if range.is_empty() {
        "read".to_string()
    } else {
        format!("read of bytes {}..{}", range.start, range.end)
    }
}

fn fmt_range(range: &Option<Range<u64>>) -> String {
    match range {
        Some(r) => format!(" (bytes {}..{})", r.start, r.end),
        None => String::new(),
    }
}

impl Error {
    /// The location (file path or URL) the error concerns, when it names one.
    pub fn location(&self) -> Option<&str> {
        match self {
            Error::NotFound { location, .. }
            | Error::PermissionDenied { location, .. }
            | Error::Corrupt { location, .. }
            | Error::Unsupported { location, .. }
            | Error::ColumnNotFound { location, .. }
            | Error::SchemaMismatch { location, .. }
            | Error::Io { location, .. } => Some(location),
            Error::InvalidArgument(_)
            | Error::InvalidConfig(_)
            | Error::Unavailable(_)
            | Error::Device(_) => None,
        }
    }

    /// Says what was being read when an I/O error happened (other errors
    /// already say it).
    pub(crate) fn reading(self, what: &str) -> Error {
        match self {
            Error::Io {
                location,
                range,
                attempts,
                detail,
                timed_out,
            } => Error::Io {
                location,
                range,
                attempts,
                detail: format!("{what}: {detail}"),
                timed_out,
            },
            other => other,
        }
    }

    /// Classifies an error raised by the `parquet` crate while reading `location`.
    pub(crate) fn from_parquet(location: &str, err: parquet::errors::ParquetError) -> Error {
        use parquet::errors::ParquetError as P;
        let detail = err.to_string();
        let lower = detail.to_ascii_lowercase();
        if lower.contains("encrypt") {
            return Error::Unsupported {
                location: location.to_string(),
                detail: format!("encrypted Parquet files are not supported ({detail})"),
            };
        }
        match err {
            P::NYI(_) => Error::Unsupported {
                location: location.to_string(),
                detail,
            },
            // An External error is one of ours travelling through the parquet
            // crate (a fetch that failed inside the decoder): unwrap it.
            P::External(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Corrupt {
                    location: location.to_string(),
                    range: None,
                    detail: other.to_string(),
                },
            },
            _ => Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail,
            },
        }
    }

    /// Classifies an Arrow error raised while decoding or filtering `location`.
    pub(crate) fn from_arrow(location: &str, err: arrow_schema::ArrowError) -> Error {
        use arrow_schema::ArrowError as A;
        match err {
            A::ExternalError(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => match other.downcast::<parquet::errors::ParquetError>() {
                    Ok(pq) => Error::from_parquet(location, *pq),
                    Err(other) => Error::Corrupt {
                        location: location.to_string(),
                        range: None,
                        detail: other.to_string(),
                    },
                },
            },
            A::NotYetImplemented(detail) => Error::Unsupported {
                location: location.to_string(),
                detail,
            },
            A::ParquetError(detail) if detail.to_ascii_lowercase().contains("encrypt") => {
                Error::Unsupported {
                    location: location.to_string(),
                    detail,
                }
            }
            other => Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: other.to_string(),
            },
        }
    }
}
