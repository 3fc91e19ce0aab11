//! The resolved configuration: built-in defaults, overridden by the TOML config file, then by
//! `SIGHTLINE_*` environment variables and flags (clap reads both; flags win).
//!
//! ```toml
//! data_dir = "/var/lib/sightline"
//! http_addr = "127.0.0.1:4318"
//! grpc_addr = "127.0.0.1:4317"
//! auth_tokens_file = "/etc/sightline/tokens"
//! shutdown_timeout_secs = 30
//! detector_threads = 1   # 0 turns the anomaly detectors off
//!
//! [log]
//! format = "json"        # or "text"
//! level = "info,sightline_server=debug"
//!
//! [limits]               # see crate::limits for every key and default
//! max_body_bytes = 16777216
//!
//! [http]
//! allowed_hosts = ["sightline.internal"]   # besides loopback names, when auth is off on loopback
//! cors_allowed_origins = []                # origins whose pages may call the API
//! base_path = "/sightline"                 # serve every route under this prefix (default: /)
//!
//! [storage]
//! fsync = "always"       # "interval" | "never"
//! fsync_interval_ms = 100
//! memory_budget_bytes = 1073741824
//! scan_memory_bytes = 2147483648   # rows all running queries may hold
//! max_series_per_tenant = 1000000
//! flush_interval_secs = 300
//! retention_days = 30    # absent: keep forever
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sightline_storage::{FsyncPolicy, StoreConfig};

mod base_path;
mod flags;

pub use base_path::BasePath;
pub use flags::{FsyncMode, LogFormat, ServeArgs};

use crate::error::ConfigError;
use crate::limits::Limits;

/// Logging settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// Output format.
    pub format: LogFormat,
    /// EnvFilter directives.
    pub level: String,
}

/// Storage settings exposed by the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageSettings {
    /// WAL durability.
    pub fsync: FsyncMode,
    /// Period of background fsync with [`FsyncMode::Interval`].
    pub fsync_interval_ms: u64,
    /// Memory budget of all memtables.
    pub memory_budget_bytes: usize,
    /// Bytes of rows all running queries' scans may hold together.
    pub scan_memory_bytes: usize,
    /// Series limit per tenant.
    pub max_series_per_tenant: usize,
    /// Memtables older than this are flushed.
    pub flush_interval_secs: u64,
    /// Retention (None: keep forever).
    pub retention_days: Option<u64>,
}

/// Everything `sightline serve` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Data directory.
    pub data_dir: PathBuf,
    /// HTTP listener.
    pub http_addr: SocketAddr,
    /// gRPC listener.
    pub grpc_addr: SocketAddr,
    /// Tokens file (auth on when set).
    pub auth_tokens_file: Option<PathBuf>,
    /// Logging.
    pub log: LogConfig,
    /// Request limits.
    pub limits: Limits,
    /// Storage.
    pub storage: StorageSettings,
    /// Longest wait for in-flight requests at shutdown.
    pub shutdown_timeout: Duration,
    /// Worker threads of the detector scheduler (0: detectors off).
    pub detector_threads: usize,
    /// Host names answered besides loopback ones (auth off on a loopback listener).
    pub allowed_hosts: Vec<String>,
    /// Origins whose browser pages may call the API (CORS).
    pub cors_allowed_origins: Vec<String>,
    /// The path prefix every HTTP route answers under.
    pub http_base_path: BasePath,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    http_addr: Option<SocketAddr>,
    grpc_addr: Option<SocketAddr>,
    auth_tokens_file: Option<PathBuf>,
    shutdown_timeout_secs: Option<u64>,
    detector_threads: Option<usize>,
    #[serde(default)]
    log: FileLog,
    limits: Option<Limits>,
    #[serde(default)]
    storage: FileStorage,
    #[serde(default)]
    http: FileHttp,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHttp {
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    cors_allowed_origins: Vec<String>,
    base_path: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLog {
    format: Option<LogFormat>,
    level: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStorage {
    fsync: Option<FsyncMode>,
    fsync_interval_ms: Option<u64>,
    memory_budget_bytes: Option<usize>,
    scan_memory_bytes: Option<usize>,
    max_series_per_tenant: Option<usize>,
    flush_interval_secs: Option<u64>,
    retention_days: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("./sightline-data"),
            http_addr: SocketAddr::from(([127, 0, 0, 1], 4318)),
            grpc_addr: SocketAddr::from(([127, 0, 0, 1], 4317)),
            auth_tokens_file: None,
            log: LogConfig {
                format: LogFormat::Text,
                level: "info".into(),
            },
            limits: Limits::default(),
            storage: StorageSettings {
                fsync: FsyncMode::Always,
                fsync_interval_ms: 100,
                memory_budget_bytes: 1 << 30,
                scan_memory_bytes: 2 << 30,
                max_series_per_tenant: 1_000_000,
                flush_interval_secs: 300,
                retention_days: None,
            },
            shutdown_timeout: Duration::from_secs(30),
            detector_threads: 1,
            allowed_hosts: Vec::new(),
            cors_allowed_origins: Vec::new(),
            http_base_path: BasePath::default(),
        }
    }
}

fn read_file_config(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| ConfigError::Parse {
        path: path.to_owned(),
        source,
    })
}

impl Config {
    /// Defaults, then the config file named by `--config`, then environment and flags.
    pub fn resolve(args: &ServeArgs) -> Result<Self, ConfigError> {
        let file = match &args.config {
            Some(p) => read_file_config(p)?,
            None => FileConfig::default(),
        };
        let mut c = Self::default();
        // The config file, relative paths resolved against the file's directory.
        let base = args
            .config
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_owned)
            .unwrap_or_default();
        let rel = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        if let Some(v) = file.data_dir {
            c.data_dir = rel(v);
        }
        if let Some(v) = file.http_addr {
            c.http_addr = v;
        }
        if let Some(v) = file.grpc_addr {
            c.grpc_addr = v;
        }
        if let Some(v) = file.auth_tokens_file {
            c.auth_tokens_file = Some(rel(v));
        }
        if let Some(v) = file.shutdown_timeout_secs {
            c.shutdown_timeout = Duration::from_secs(v);
        }
        if let Some(v) = file.detector_threads {
            c.detector_threads = v;
        }
        if let Some(v) = file.log.format {
            c.log.format = v;
        }
        if let Some(v) = file.log.level {
            c.log.level = v;
        }
        if let Some(v) = file.limits {
            c.limits = v;
        }
        c.allowed_hosts = file.http.allowed_hosts;
        c.cors_allowed_origins = file.http.cors_allowed_origins;
        if let Some(b) = &file.http.base_path {
            c.http_base_path = BasePath::parse(b)
                .map_err(|e| ConfigError::Invalid(format!("http.base_path: {e}")))?;
        }
        let s = file.storage;
        let st = &mut c.storage;
        st.fsync = s.fsync.unwrap_or(st.fsync);
        st.fsync_interval_ms = s.fsync_interval_ms.unwrap_or(st.fsync_interval_ms);
        st.memory_budget_bytes = s.memory_budget_bytes.unwrap_or(st.memory_budget_bytes);
        st.scan_memory_bytes = s.scan_memory_bytes.unwrap_or(st.scan_memory_bytes);
        st.max_series_per_tenant = s.max_series_per_tenant.unwrap_or(st.max_series_per_tenant);
        st.flush_interval_secs = s.flush_interval_secs.unwrap_or(st.flush_interval_secs);
        st.retention_days = s.retention_days.or(st.retention_days);
        c.apply_args(args)?;
        c.validate()?;
        Ok(c)
    }

    fn apply_args(&mut self, a: &ServeArgs) -> Result<(), ConfigError> {
        fn set<T: Clone>(dst: &mut T, src: &Option<T>) {
            if let Some(v) = src {
                *dst = v.clone();
            }
        }
        set(&mut self.data_dir, &a.data_dir);
        set(&mut self.http_addr, &a.http_addr);
        set(&mut self.grpc_addr, &a.grpc_addr);
        if a.auth_tokens_file.is_some() {
            self.auth_tokens_file = a.auth_tokens_file.clone();
        }
        set(&mut self.log.format, &a.log_format);
        set(&mut self.log.level, &a.log_level);
        let l = &mut self.limits;
        set(&mut l.max_body_bytes, &a.max_body_bytes);
        set(&mut l.max_decompressed_bytes, &a.max_decompressed_bytes);
        set(&mut l.max_items_per_request, &a.max_items_per_request);
        set(&mut l.max_attributes_per_item, &a.max_attributes_per_item);
        set(
            &mut l.max_attribute_value_bytes,
            &a.max_attribute_value_bytes,
        );
        set(&mut l.max_future_skew_secs, &a.max_future_skew_secs);
        set(&mut l.max_inflight_requests, &a.max_inflight_requests);
        set(&mut l.query_timeout_secs, &a.query_timeout_secs);
        set(&mut l.max_concurrent_queries, &a.max_concurrent_queries);
        set(
            &mut l.max_concurrent_queries_per_tenant,
            &a.max_concurrent_queries_per_tenant,
        );
        set(&mut l.max_query_samples, &a.max_query_samples);
        set(&mut l.query_cache_bytes, &a.query_cache_bytes);
        set(&mut l.max_connections, &a.max_connections);
        set(&mut l.max_decoded_bytes, &a.max_decoded_bytes);
        set(
            &mut l.max_inflight_decoded_bytes,
            &a.max_inflight_decoded_bytes,
        );
        set(&mut l.header_read_timeout_secs, &a.header_read_timeout_secs);
        self.allowed_hosts.extend(a.allowed_hosts.iter().cloned());
        self.cors_allowed_origins
            .extend(a.cors_allowed_origins.iter().cloned());
        if let Some(b) = &a.http_base_path {
            self.http_base_path = BasePath::parse(b)
                .map_err(|e| ConfigError::Invalid(format!("--http-base-path: {e}")))?;
        }
        let s = &mut self.storage;
        set(&mut s.max_series_per_tenant, &a.max_series_per_tenant);
        set(&mut s.memory_budget_bytes, &a.memory_budget_bytes);
        set(&mut s.scan_memory_bytes, &a.scan_memory_bytes);
        set(&mut s.fsync, &a.fsync);
        set(&mut s.fsync_interval_ms, &a.fsync_interval_ms);
        set(&mut self.detector_threads, &a.detector_threads);
        if let Some(secs) = a.shutdown_timeout_secs {
            self.shutdown_timeout = Duration::from_secs(secs);
        }
        Ok(())
    }

    /// Checks the resolved values.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limits.validate()?;
        for o in &self.cors_allowed_origins {
            let ok = (o.starts_with("http://") || o.starts_with("https://"))
                && !o.ends_with('/')
                && axum::http::HeaderValue::from_str(o).is_ok();
            if !ok {
                return Err(ConfigError::Invalid(format!(
                    "http.cors_allowed_origins: {o:?} is not an origin (scheme://host[:port])"
                )));
            }
        }
        if self.http_addr == self.grpc_addr && self.http_addr.port() != 0 {
            return Err(ConfigError::Invalid(format!(
                "http_addr and grpc_addr are both {}",
                self.http_addr
            )));
        }
        if self.storage.memory_budget_bytes < (1 << 20) {
            return Err(ConfigError::Invalid(
                "storage.memory_budget_bytes must be at least 1 MiB".into(),
            ));
        }
        if self.storage.scan_memory_bytes < (1 << 20) {
            return Err(ConfigError::Invalid(
                "storage.scan_memory_bytes must be at least 1 MiB".into(),
            ));
        }
        if self.storage.max_series_per_tenant == 0 {
            return Err(ConfigError::Invalid(
                "storage.max_series_per_tenant must be positive".into(),
            ));
        }
        Ok(())
    }

    /// The storage configuration these settings describe.
    pub fn store_config(&self) -> StoreConfig {
        let s = &self.storage;
        let mut sc = StoreConfig {
            fsync: match s.fsync {
                FsyncMode::Always => FsyncPolicy::Always,
                FsyncMode::Interval => FsyncPolicy::Interval {
                    interval_ms: s.fsync_interval_ms.max(1),
                },
                FsyncMode::Never => FsyncPolicy::Never,
            },
            memory_budget_bytes: s.memory_budget_bytes,
            scan_memory_bytes: s.scan_memory_bytes,
            max_series_per_tenant: s.max_series_per_tenant,
            flush_interval: Duration::from_secs(s.flush_interval_secs.max(1)),
            ..StoreConfig::default()
        };
        sc.flush_threshold_bytes = sc.flush_threshold_bytes.min(s.memory_budget_bytes / 2);
        sc.retention.default_ttl = s
            .retention_days
            .map(|d| Duration::from_secs(d.saturating_mul(86_400)));
        sc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_flags() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            "data_dir = \"d\"\nhttp_addr = \"0.0.0.0:9000\"\n[limits]\nmax_items_per_request = 7\n[storage]\nfsync = \"never\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let args = ServeArgs {
            config: Some(path),
            grpc_addr: Some("127.0.0.1:9001".parse().unwrap_or_else(|e| panic!("{e}"))),
            max_body_bytes: Some(1 << 20),
            ..ServeArgs::default()
        };
        let c = Config::resolve(&args).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.data_dir, dir.path().join("d"));
        assert_eq!(c.http_addr.to_string(), "0.0.0.0:9000");
        assert_eq!(c.grpc_addr.to_string(), "127.0.0.1:9001");
        assert_eq!(c.limits.max_items_per_request, 7);
        assert_eq!(c.limits.max_body_bytes, 1 << 20);
        assert_eq!(c.limits.max_attribute_depth, 16);
        assert_eq!(c.storage.fsync, FsyncMode::Never);
    }

    #[test]
    fn unknown_keys_are_errors() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "data_dri = \"d\"\n").unwrap_or_else(|e| panic!("{e}"));
        let args = ServeArgs {
            config: Some(path),
            ..ServeArgs::default()
        };
        assert!(matches!(
            Config::resolve(&args),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn defaults_are_loopback() {
        let c = Config::resolve(&ServeArgs::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.http_addr.ip().is_loopback());
        assert!(c.grpc_addr.ip().is_loopback());
        assert_eq!(c.data_dir, PathBuf::from("./sightline-data"));
    }
}
