//! The flags of `sightline serve`. Every flag can also come from an environment variable
//! (`SIGHTLINE_*`, shown in `--help`) or from the config file; flags win over the environment,
//! which wins over the file, which wins over the built-in defaults ([`super::Config::resolve`]).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::ValueEnum;

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// WAL durability policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncMode {
    /// Acknowledge only after fdatasync (group commit). Never loses an acknowledged write.
    Always,
    /// Acknowledge after write(2), fsync every `--fsync-interval-ms` in the background.
    Interval,
    /// Never fsync (tests and throw-away data only).
    Never,
}

/// Flags of `sightline serve`. `None` means "not given here": the environment, then the
/// config file, then the default decides.
#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// TOML configuration file (keys as in the flags, with `[limits]`, `[storage]` and `[log]`
    /// tables; see server/README-ingest.md).
    #[arg(long, env = "SIGHTLINE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Data directory (created if missing) [default: ./sightline-data].
    #[arg(long, env = "SIGHTLINE_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Address of the HTTP listener: OTLP/HTTP (/v1/traces, /v1/metrics, /v1/logs), /metrics,
    /// /health, /ready [default: 127.0.0.1:4318]. Use 0.0.0.0:4318 to accept remote clients.
    #[arg(long, env = "SIGHTLINE_HTTP_ADDR", value_name = "ADDR")]
    pub http_addr: Option<SocketAddr>,

    /// Address of the OTLP/gRPC listener [default: 127.0.0.1:4317].
    #[arg(long, env = "SIGHTLINE_GRPC_ADDR", value_name = "ADDR")]
    pub grpc_addr: Option<SocketAddr>,

    /// Bearer tokens file: one `TOKEN TENANT` pair per line, `#` starts a comment. When given,
    /// every request needs `Authorization: Bearer TOKEN` (401 otherwise) and the token picks
    /// the tenant. Without it auth is off and `X-Scope-OrgID` picks the tenant (`default`
    /// when absent).
    #[arg(long, env = "SIGHTLINE_AUTH_TOKENS_FILE", value_name = "FILE")]
    pub auth_tokens_file: Option<PathBuf>,

    /// Log format [default: text].
    #[arg(long, env = "SIGHTLINE_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,

    /// Log filter, in `tracing-subscriber` EnvFilter syntax [default: info].
    #[arg(long, env = "SIGHTLINE_LOG_LEVEL", value_name = "FILTER")]
    pub log_level: Option<String>,

    /// Largest request body on the wire, in bytes [default: 16777216].
    #[arg(long, env = "SIGHTLINE_MAX_BODY_BYTES", value_name = "BYTES")]
    pub max_body_bytes: Option<usize>,

    /// Largest request body after gzip decompression, in bytes [default: 67108864].
    #[arg(long, env = "SIGHTLINE_MAX_DECOMPRESSED_BYTES", value_name = "BYTES")]
    pub max_decompressed_bytes: Option<usize>,

    /// Most spans / log records / data points per request [default: 100000].
    #[arg(long, env = "SIGHTLINE_MAX_ITEMS_PER_REQUEST", value_name = "N")]
    pub max_items_per_request: Option<usize>,

    /// Most attributes per resource, scope, span, event, link, log record or data point; an
    /// item over it is rejected (counted in partial_success) [default: 1024].
    #[arg(long, env = "SIGHTLINE_MAX_ATTRIBUTES_PER_ITEM", value_name = "N")]
    pub max_attributes_per_item: Option<usize>,

    /// Longest string or bytes attribute value (and log body), in bytes; an item over it is
    /// rejected [default: 262144].
    #[arg(
        long,
        env = "SIGHTLINE_MAX_ATTRIBUTE_VALUE_BYTES",
        value_name = "BYTES"
    )]
    pub max_attribute_value_bytes: Option<usize>,

    /// Reject items whose timestamps are more than this many seconds ahead of the server
    /// clock [default: 3600].
    #[arg(long, env = "SIGHTLINE_MAX_FUTURE_SKEW_SECS", value_name = "SECS")]
    pub max_future_skew_secs: Option<u64>,

    /// Most export requests processed at once; more get 429 / RESOURCE_EXHAUSTED with a retry
    /// hint [default: 1024].
    #[arg(long, env = "SIGHTLINE_MAX_INFLIGHT_REQUESTS", value_name = "N")]
    pub max_inflight_requests: Option<usize>,

    /// Longest evaluation of one PromQL query, in seconds; the `timeout` request parameter can
    /// only lower it [default: 120].
    #[arg(long, env = "SIGHTLINE_QUERY_TIMEOUT_SECS", value_name = "SECS")]
    pub query_timeout_secs: Option<u64>,

    /// Most memory one decoded export request may take (estimated from its wire bytes before
    /// decoding); more answer 413 [default: 268435456].
    #[arg(long, env = "SIGHTLINE_MAX_DECODED_BYTES", value_name = "BYTES")]
    pub max_decoded_bytes: Option<usize>,

    /// Memory for all export requests being decoded and stored at once; past it 429 with a
    /// retry hint [default: 1073741824].
    #[arg(
        long,
        env = "SIGHTLINE_MAX_INFLIGHT_DECODED_BYTES",
        value_name = "BYTES"
    )]
    pub max_inflight_decoded_bytes: Option<usize>,

    /// Seconds a client has to send a request's headers; also how long an idle keep-alive
    /// connection stays open [default: 30].
    #[arg(long, env = "SIGHTLINE_HEADER_READ_TIMEOUT_SECS", value_name = "SECS")]
    pub header_read_timeout_secs: Option<u64>,

    /// Most query, metadata and detect computations running at once, all tenants together;
    /// more wait for a slot within their deadline [default: 20].
    #[arg(long, env = "SIGHTLINE_MAX_CONCURRENT_QUERIES", value_name = "N")]
    pub max_concurrent_queries: Option<usize>,

    /// Most of those one tenant may run at once, so one tenant cannot block the others
    /// [default: 10].
    #[arg(
        long,
        env = "SIGHTLINE_MAX_CONCURRENT_QUERIES_PER_TENANT",
        value_name = "N"
    )]
    pub max_concurrent_queries_per_tenant: Option<usize>,

    /// Most samples one PromQL query may hold; more answer 422 [default: 50000000].
    #[arg(long, env = "SIGHTLINE_MAX_QUERY_SAMPLES", value_name = "N")]
    pub max_query_samples: Option<usize>,

    /// Bytes of range query answers kept for repeated dashboard queries, all tenants
    /// together; 0 turns the cache off [default: 67108864].
    #[arg(long, env = "SIGHTLINE_QUERY_CACHE_BYTES", value_name = "BYTES")]
    pub query_cache_bytes: Option<usize>,

    /// Most open connections per listener (HTTP and gRPC each); more are closed at accept.
    /// Keep the process' open-files limit (systemd `LimitNOFILE`) above twice this plus 1024
    /// [default: 4096].
    #[arg(long, env = "SIGHTLINE_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,

    /// A host name (without port) the HTTP listener answers besides loopback names when auth
    /// is off on a loopback address (DNS-rebinding protection); repeatable.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,

    /// An origin (`https://grafana.example:3000`) whose browser pages may call the API: CORS
    /// headers are sent for it and its cross-origin writes are accepted; repeatable. None by
    /// default.
    #[arg(long = "cors-allowed-origin", value_name = "ORIGIN")]
    pub cors_allowed_origins: Vec<String>,

    /// Serve every HTTP route (API, OTLP, web UI) under this path prefix, for a reverse proxy
    /// that passes `/PREFIX/...` through unchanged (`/sightline`); `/PREFIX` redirects to
    /// `/PREFIX/` and other paths answer 404 [default: /].
    #[arg(long, env = "SIGHTLINE_HTTP_BASE_PATH", value_name = "PREFIX")]
    pub http_base_path: Option<String>,

    /// Most metric series per tenant [default: 1000000].
    #[arg(long, env = "SIGHTLINE_MAX_SERIES_PER_TENANT", value_name = "N")]
    pub max_series_per_tenant: Option<usize>,

    /// Memory for unflushed data of all tenants; past it ingest answers 503 + Retry-After
    /// [default: 1073741824].
    #[arg(long, env = "SIGHTLINE_MEMORY_BUDGET_BYTES", value_name = "BYTES")]
    pub memory_budget_bytes: Option<usize>,

    /// Memory for the rows all running queries read; a query that would pass it is refused
    /// (422 alone, 503 + Retry-After while others hold it) [default: 2147483648].
    #[arg(long, env = "SIGHTLINE_SCAN_MEMORY_BYTES", value_name = "BYTES")]
    pub scan_memory_bytes: Option<usize>,

    /// WAL durability [default: always].
    #[arg(long, env = "SIGHTLINE_FSYNC", value_enum)]
    pub fsync: Option<FsyncMode>,

    /// Background fsync period with `--fsync interval` [default: 100].
    #[arg(long, env = "SIGHTLINE_FSYNC_INTERVAL_MS", value_name = "MS")]
    pub fsync_interval_ms: Option<u64>,

    /// How long shutdown waits for in-flight requests before flushing anyway [default: 30].
    #[arg(long, env = "SIGHTLINE_SHUTDOWN_TIMEOUT_SECS", value_name = "SECS")]
    pub shutdown_timeout_secs: Option<u64>,

    /// Worker threads that train and score anomaly detectors in the background; 0 turns the
    /// scheduler off (definitions stay readable) [default: 1].
    #[arg(long, env = "SIGHTLINE_DETECTOR_THREADS", value_name = "N")]
    pub detector_threads: Option<usize>,
}
