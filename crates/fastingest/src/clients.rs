//! Building object-store clients from a URL and `storage_options`, and keeping
//! them for the life of the process so connections stay warm between reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use crate::config::Config;
use crate::error::{Error, Result};

/// `storage_options`: keys object_store accepts for the URL's backend
/// (`access_key_id`, `endpoint_url`, `region`, `allow_http`, ...).
pub type StorageOptions = BTreeMap<String, String>;

type ClientKey = (String, StorageOptions, u64, u64);

static CLIENTS: Mutex<Option<HashMap<ClientKey, Arc<dyn ObjectStore>>>> = Mutex::new(None);
static MEMORY: OnceLock<Arc<InMemory>> = OnceLock::new();

/// The process-wide in-memory store behind `memory://` URLs (for tests).
pub fn memory_store() -> Arc<InMemory> {
    Arc::clone(MEMORY.get_or_init(|| Arc::new(InMemory::new())))
}

/// Drops cached clients: after `fork()` their connection pools belong to the
/// parent's runtime and must not be used.
pub(crate) fn forget_cached_clients() {
    let mut guard = CLIENTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(map) = guard.take() {
        std::mem::forget(map);
    }
}

/// The store serving `url` and the object's path inside it.
pub fn store_for(
    url: &Url,
    options: &StorageOptions,
    config: &Config,
) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let (scheme, path) = ObjectStoreScheme::parse(url)
        .map_err(|e| Error::InvalidConfig(format!("{url}: not a supported storage URL ({e})")))?;
    if scheme == ObjectStoreScheme::Memory {
        // memory://bucket/key and memory:///key share one process-wide store.
        let full = format!("{}{}", url.host_str().unwrap_or(""), url.path());
        let path = Path::parse(full.trim_start_matches('/'))
            .map_err(|e| Error::InvalidConfig(format!("{url}: {e}")))?;
        return Ok((memory_store(), path));
    }
    let key: ClientKey = (
        format!("{}://{}", url.scheme(), url.authority()),
        options.clone(),
        config.connect_timeout.as_millis() as u64,
        config.request_timeout.as_millis() as u64,
    );
    let mut guard = CLIENTS.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some(store) = cache.get(&key) {
        return Ok((Arc::clone(store), path));
    }
    let store = build(scheme, url, options, config)?;
    cache.insert(key, Arc::clone(&store));
    Ok((store, path))
}

fn client_options(config: &Config) -> ClientOptions {
    // The request timeout is enforced per attempt by our retry layer; the
    // client's own is a backstop a little longer than it.
    ClientOptions::new()
        .with_connect_timeout(config.connect_timeout)
        .with_timeout(config.request_timeout + std::time::Duration::from_secs(5))
}

fn no_retries() -> RetryConfig {
    // Retries happen in one place (io::retry), per slice, counted in stats.
    RetryConfig {
        max_retries: 0,
        ..Default::default()
    }
}

fn unknown(backend: &str, key: &str, err: object_store::Error) -> Error {
    Error::InvalidConfig(format!(
        "storage option {key:?} is not valid for {backend}: {err}"
    ))
}

fn build(
    scheme: ObjectStoreScheme,
    url: &Url,
    options: &StorageOptions,
    config: &Config,
) -> Result<Arc<dyn ObjectStore>> {
    let base = format!("{}://{}", url.scheme(), url.authority());
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            let mut b = AmazonS3Builder::from_env()
                .with_url(base.as_str())
                .with_client_options(client_options(config))
                .with_retry(no_retries());
            for (k, v) in options {
                let key: AmazonS3ConfigKey = k.parse().map_err(|e| unknown("S3", k, e))?;
                b = b.with_config(key, v);
            }
            Arc::new(b.build().map_err(|e| build_error(url, e))?)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_url(base.as_str())
                .with_client_options(client_options(config))
                .with_retry(no_retries());
            for (k, v) in options {
                let key: GoogleConfigKey = k.parse().map_err(|e| unknown("GCS", k, e))?;
                b = b.with_config(key, v);
            }
            Arc::new(b.build().map_err(|e| build_error(url, e))?)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(base.as_str())
                .with_client_options(client_options(config))
                .with_retry(no_retries());
            for (k, v) in options {
                let key: AzureConfigKey = k.parse().map_err(|e| unknown("Azure", k, e))?;
                b = b.with_config(key, v);
            }
            Arc::new(b.build().map_err(|e| build_error(url, e))?)
        }
        other => {
            return Err(Error::InvalidConfig(format!(
                "{url}: scheme {other:?} is not served by an object store here"
            )))
        }
    };
    Ok(store)
}

fn build_error(url: &Url, e: object_store::Error) -> Error {
    Error::InvalidConfig(format!("{url}: cannot configure the store: {e}"))
}

/// A reqwest client for plain `http(s)://` sources, shared like the stores.
pub(crate) fn http_client(config: &Config) -> Result<reqwest::Client> {
    static HTTP: Mutex<Option<(u32, u64, reqwest::Client)>> = Mutex::new(None);
    let pid = std::process::id();
    let connect = config.connect_timeout.as_millis() as u64;
    let mut guard = HTTP.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, c, client)) = guard.as_ref() {
        if *p == pid && *c == connect {
            return Ok(client.clone());
        }
    }
    let client = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .http1_only()
        .build()
        .map_err(|e| Error::InvalidConfig(format!("cannot build HTTP client: {e}")))?;
    if let Some(stale) = guard.take() {
        std::mem::forget(stale);
    }
    *guard = Some((pid, connect, client.clone()));
    Ok(client)
}
