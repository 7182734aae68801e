//! The one error type of the core. Every variant names the object it is about,
//! so that a user reading the message knows which file (and which bytes) failed.

use std::ops::Range;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from a library underneath (the Parquet, Arrow or ORC decoder),
/// kept as the source of ours.
pub type Cause = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// What went wrong, with the object (and byte range where it matters) it concerns.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The object or file does not exist.
    #[error("{location}: not found ({detail})")]
    NotFound {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// What went wrong, in words.
        detail: String,
    },

    /// Access denied or credentials rejected.
    #[error("{location}: permission denied ({detail})")]
    PermissionDenied {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// What went wrong, in words.
        detail: String,
    },

    /// The file is not a valid file of its format: bad magic, truncated,
    /// corrupt footer or page, footer length beyond the file.
    #[error("{location}: corrupt or invalid file{}: {detail}", fmt_range(range))]
    Corrupt {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// The damaged bytes, where known.
        range: Option<Range<u64>>,
        /// What went wrong, in words.
        detail: String,
        /// The decoder's own error, when one said so.
        #[source]
        cause: Option<Cause>,
    },

    /// The file is not of the format it was read as (its magic bytes say
    /// otherwise): a Parquet file given to the ORC reader, or the reverse.
    #[error("{location}: not a valid {expected} file: {detail}")]
    WrongFormat {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// The format it was read as (`Parquet`, `ORC`).
        expected: &'static str,
        /// What the file holds instead, in words.
        detail: String,
    },

    /// The file uses a feature this reader does not support (e.g. encryption).
    #[error("{location}: unsupported: {detail}")]
    Unsupported {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// What went wrong, in words.
        detail: String,
        /// The decoder's own error, when one said so.
        #[source]
        cause: Option<Cause>,
    },

    /// A requested column does not exist.
    #[error("{location}: no column named {column:?}; available columns: {}", available.join(", "))]
    ColumnNotFound {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// The column asked for.
        column: String,
        /// The file's columns.
        available: Vec<String>,
    },

    /// Files of one read do not share a schema.
    #[error("{location}: schema differs from the first file's ({first}): {detail}")]
    SchemaMismatch {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// The read's first file, whose schema the others must share.
        first: String,
        /// What went wrong, in words.
        detail: String,
    },

    /// A remote or local read failed after all retries.
    #[error(
        "{location}: {} failed after {attempts} attempt(s): {detail}",
        describe_read(range)
    )]
    Io {
        /// The file or object, as the user named it (credentials and URL
        /// signatures removed).
        location: String,
        /// The bytes being read, when the request was for a range (not a
        /// listing or a HEAD).
        range: Option<Range<u64>>,
        /// Attempts made, the first included.
        attempts: u32,
        /// The last failure.
        detail: String,
        /// Whether the last failure was a timeout.
        timed_out: bool,
        /// The last failure's own error (the store client's, the OS's), when
        /// there was one.
        #[source]
        cause: Option<Cause>,
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

/// What a caught panic said (its `&str` or `String` payload), for messages.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the decoder panicked".into())
}

fn describe_read(range: &Option<Range<u64>>) -> String {
    match range {
        Some(r) => format!("read of bytes {}..{}", r.start, r.end),
        None => "read".to_string(),
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
            | Error::WrongFormat { location, .. }
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

    /// One error of every variant, for tests that each is handled (the
    /// Python binding maps every one to an exception class).
    #[doc(hidden)]
    pub fn one_of_each() -> Vec<Error> {
        let s = |t: &str| t.to_string();
        vec![
            Error::NotFound {
                location: s("f"),
                detail: s("d"),
            },
            Error::PermissionDenied {
                location: s("f"),
                detail: s("d"),
            },
            Error::Corrupt {
                location: s("f"),
                range: Some(0..4),
                detail: s("d"),
                cause: None,
            },
            Error::Unsupported {
                location: s("f"),
                detail: s("d"),
                cause: None,
            },
            Error::ColumnNotFound {
                location: s("f"),
                column: s("c"),
                available: vec![],
            },
            Error::SchemaMismatch {
                location: s("f"),
                first: s("g"),
                detail: s("d"),
            },
            Error::Io {
                location: s("f"),
                range: None,
                attempts: 1,
                detail: s("d"),
                timed_out: false,
                cause: None,
            },
            Error::InvalidArgument(s("d")),
            Error::InvalidConfig(s("d")),
            Error::Unavailable(s("d")),
            Error::Device(s("d")),
            Error::WrongFormat {
                location: s("f"),
                expected: "Parquet",
                detail: s("d"),
            },
        ]
    }

    /// The variant's position in the enum and its name. The match has no
    /// wildcard, so a new variant must be named here (and then listed in
    /// `one_of_each`, which a test checks).
    #[doc(hidden)]
    pub fn variant(&self) -> (usize, &'static str) {
        match self {
            Error::NotFound { .. } => (0, "NotFound"),
            Error::PermissionDenied { .. } => (1, "PermissionDenied"),
            Error::Corrupt { .. } => (2, "Corrupt"),
            Error::Unsupported { .. } => (3, "Unsupported"),
            Error::ColumnNotFound { .. } => (4, "ColumnNotFound"),
            Error::SchemaMismatch { .. } => (5, "SchemaMismatch"),
            Error::Io { .. } => (6, "Io"),
            Error::InvalidArgument(_) => (7, "InvalidArgument"),
            Error::InvalidConfig(_) => (8, "InvalidConfig"),
            Error::Unavailable(_) => (9, "Unavailable"),
            Error::Device(_) => (10, "Device"),
            Error::WrongFormat { .. } => (11, "WrongFormat"),
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
                cause,
            } => Error::Io {
                location,
                range,
                attempts,
                detail: format!("{what}: {detail}"),
                timed_out,
                cause,
            },
            other => other,
        }
    }

    /// Classifies an error raised by the `parquet` crate while reading `location`.
    pub(crate) fn from_parquet(location: &str, err: parquet::errors::ParquetError) -> Error {
        use parquet::errors::ParquetError as P;
        let detail = err.to_string();
        match err {
            // An External error is one of ours travelling through the parquet
            // crate (a fetch that failed inside the decoder): unwrap it.
            P::External(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Corrupt {
                    location: location.to_string(),
                    range: None,
                    detail: other.to_string(),
                    cause: Some(std::sync::Arc::from(other)),
                },
            },
            P::NYI(_) => Error::Unsupported {
                location: location.to_string(),
                detail,
                cause: Some(std::sync::Arc::new(err)),
            },
            _ => Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail,
                cause: Some(std::sync::Arc::new(err)),
            },
        }
    }

    /// Classifies an error raised by an Arrow kernel or the Arrow side of a
    /// decoder while reading `location`.
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
                        cause: Some(std::sync::Arc::from(other)),
                    },
                },
            },
            A::NotYetImplemented(_) => Error::Unsupported {
                location: location.to_string(),
                detail: err.to_string(),
                cause: Some(std::sync::Arc::new(err)),
            },
            other => Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: other.to_string(),
                cause: Some(std::sync::Arc::new(other)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_each_lists_every_variant_once() {
        let indices: Vec<usize> = Error::one_of_each().iter().map(|e| e.variant().0).collect();
        let expected: Vec<usize> = (0..indices.len()).collect();
        assert_eq!(indices, expected);
        let names: std::collections::BTreeSet<&str> =
            Error::one_of_each().iter().map(|e| e.variant().1).collect();
        assert_eq!(names.len(), indices.len());
    }

    #[test]
    fn decoder_errors_are_kept_as_the_source() {
        use std::error::Error as _;
        let e = Error::from_parquet(
            "f",
            parquet::errors::ParquetError::General("bad page".into()),
        );
        assert!(matches!(e, Error::Corrupt { .. }));
        let source = e.source().expect("the parquet error is kept");
        assert!(source.to_string().contains("bad page"));
        let e = Error::from_arrow("f", arrow_schema::ArrowError::NotYetImplemented("x".into()));
        assert!(matches!(e, Error::Unsupported { .. }) && e.source().is_some());
        // One of ours travelling through the decoder comes back as itself.
        let ours = Error::InvalidArgument("mine".into());
        let wrapped = parquet::errors::ParquetError::External(Box::new(ours));
        assert!(
            matches!(Error::from_parquet("f", wrapped), Error::InvalidArgument(m) if m == "mine")
        );
    }

    #[test]
    fn messages_name_the_file_and_the_range() {
        let e = Error::Io {
            location: "s3://b/k".into(),
            range: Some(10..20),
            attempts: 3,
            detail: "reset".into(),
            timed_out: false,
            cause: None,
        };
        assert_eq!(
            e.to_string(),
            "s3://b/k: read of bytes 10..20 failed after 3 attempt(s): reset"
        );
        let listing = Error::Io {
            location: "s3://b/*".into(),
            range: None,
            attempts: 1,
            detail: "denied".into(),
            timed_out: false,
            cause: None,
        };
        assert_eq!(
            listing.to_string(),
            "s3://b/*: read failed after 1 attempt(s): denied"
        );
    }
}
