//! Object versions (what the cache keys bytes by) and URL redaction (what the
//! cache may write down about an object).

use url::Url;

/// Which version of an object a read sees. The cache keys entries by it and
/// revalidates against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// Size in bytes.
    pub size: u64,
    /// Entity tag, as the store sent it.
    pub etag: Option<String>,
    /// Last-modified time, as the store reported it (only compared with
    /// what the same kind of source reports).
    pub last_modified: Option<String>,
}

impl ObjectVersion {
    /// Whether the version identifies content: the size alone does not.
    pub fn is_cacheable(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some()
    }

    /// Whether both name the same content. ETags are compared without quotes
    /// (listings and GET responses quote them differently on some stores);
    /// the modification time is used only when an ETag is missing.
    pub fn same_as(&self, other: &ObjectVersion) -> bool {
        if self.size != other.size {
            return false;
        }
        match (self.etag(), other.etag()) {
            (Some(a), Some(b)) => a == b,
            (None, None) => {
                self.last_modified.is_some() && self.last_modified == other.last_modified
            }
            _ => false,
        }
    }

    fn etag(&self) -> Option<&str> {
        self.etag
            .as_deref()
            .map(|e| e.trim_start_matches("W/").trim_matches('"'))
    }

    /// A stable text that names this version, for cache keys.
    pub fn token(&self) -> String {
        match self.etag() {
            Some(e) => format!("{}:etag:{e}", self.size),
            None => format!(
                "{}:mtime:{}",
                self.size,
                self.last_modified.as_deref().unwrap_or("")
            ),
        }
    }
}

/// Query parameters that carry signatures or credentials (presigned S3 and
/// GCS URLs, Azure SAS tokens) and so are not part of an object's identity.
fn is_secret_param(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "signature",
        "expires",
        "awsaccesskeyid",
        "googleaccessid",
        "sig",
        "se",
        "st",
        "sp",
        "sv",
        "sr",
        "spr",
        "ss",
        "srt",
        "sip",
        "si",
        "skoid",
        "sktid",
        "skt",
        "ske",
        "sks",
        "skv",
        "sdd",
        "token",
        "access_token",
        "key",
    ];
    let n = name.to_ascii_lowercase();
    n.starts_with("x-amz-") || n.starts_with("x-goog-") || EXACT.contains(&n.as_str())
}

/// `url` without user info and without signature/credential query
/// parameters: safe to write down, and the same for every presigning of one
/// object.
pub(crate) fn redact_url(url: &str) -> String {
    let Ok(mut u) = Url::parse(url) else {
        return url.to_string();
    };
    let _ = u.set_username("");
    let _ = u.set_password(None);
    let kept: Vec<(String, String)> = u
        .query_pairs()
        .filter(|(k, _)| !is_secret_param(k))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if kept.is_empty() {
        u.set_query(None);
    } else {
        u.query_pairs_mut().clear().extend_pairs(kept);
    }
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(size: u64, etag: Option<&str>, lm: Option<&str>) -> ObjectVersion {
        ObjectVersion {
            size,
            etag: etag.map(str::to_string),
            last_modified: lm.map(str::to_string),
        }
    }

    #[test]
    fn etags_compare_without_quotes() {
        assert!(v(5, Some("\"abc\""), None).same_as(&v(5, Some("abc"), Some("x"))));
        assert!(!v(5, Some("abc"), None).same_as(&v(6, Some("abc"), None)));
        assert!(!v(5, Some("abc"), None).same_as(&v(5, Some("abd"), None)));
        assert!(v(5, None, Some("t1")).same_as(&v(5, None, Some("t1"))));
        assert!(!v(5, None, None).same_as(&v(5, None, None)));
        assert!(!v(5, None, None).is_cacheable());
        assert_eq!(
            v(5, Some("\"a\""), None).token(),
            v(5, Some("a"), None).token()
        );
    }

    #[test]
    fn presigned_urls_lose_their_signatures() {
        let a =
            redact_url("https://h/b/k.parquet?X-Amz-Signature=s&X-Amz-Credential=c&versionId=3");
        assert_eq!(a, "https://h/b/k.parquet?versionId=3");
        let b = redact_url("https://user:pw@h/c/k?sv=1&sig=abc&se=2");
        assert_eq!(b, "https://h/c/k");
    }
}
