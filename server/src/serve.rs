//! Starting and stopping the server: open the store, bind both listeners, serve until
//! shutdown, drain, close the store.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use sightline_storage::Store;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::auth::Auth;
use crate::config::Config;
use crate::error::ServeError;
use crate::grpc::OtlpGrpc;
use crate::ingest::Ingest;
use crate::shutdown::Trigger;
use crate::telemetry::Telemetry;

/// A started server.
#[derive(Debug)]
pub struct Server {
    /// Bound HTTP address (the real port when 0 was asked for).
    pub http_addr: SocketAddr,
    /// Bound gRPC address.
    pub grpc_addr: SocketAddr,
    ingest: Arc<Ingest>,
    trigger: Trigger,
    http: JoinHandle<std::io::Result<()>>,
    grpc: JoinHandle<Result<(), tonic::transport::Error>>,
    config: Config,
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Opens the store and starts both listeners.
pub async fn start(config: Config) -> Result<Server, ServeError> {
    let auth = match &config.auth_tokens_file {
        Some(p) => Auth::from_file(p)?,
        None => Auth::Off,
    };
    let dir = config.data_dir.clone();
    let store_config = config.store_config();
    let store = tokio::task::spawn_blocking(move || Store::open(dir, store_config))
        .await
        .map_err(|e| ServeError::Server(format!("store open task failed: {e}")))??;
    let report = store.open_report();
    tracing::info!(data_dir = %config.data_dir.display(), report = ?report, "store open");
    let http_listener = bind(config.http_addr).await?;
    let grpc_listener = bind(config.grpc_addr).await?;
    let local = |l: &TcpListener, addr| {
        l.local_addr()
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let http_addr = local(&http_listener, config.http_addr)?;
    let grpc_addr = local(&grpc_listener, config.grpc_addr)?;
    let auth_enabled = auth.enabled();
    let loopback = http_addr.ip().is_loopback() && grpc_addr.ip().is_loopback();
    if !auth_enabled && !loopback {
        tracing::warn!(
            "listening beyond loopback without auth: anyone who can reach the port can write any tenant"
        );
    }
    let telemetry = Arc::new(Telemetry::new());
    let ingest = Arc::new(Ingest::new(
        Arc::new(store),
        config.limits.clone(),
        auth,
        telemetry,
    ));
    let detectors = {
        let store = ingest.store().clone();
        let threads = config.detector_threads;
        let limits = sightline_detectors::DetectorLimits::from(&config.limits);
        tokio::task::spawn_blocking(move || {
            sightline_detectors::Detectors::start(store, threads, limits)
        })
        .await
        .map_err(|e| ServeError::Server(format!("detector start task failed: {e}")))?
        .map_err(|e| ServeError::Server(format!("detectors: {e}")))?
    };
    ingest.set_detectors(detectors);
    let assembler = crate::assembly::Assembler::new(
        ingest.store().clone(),
        crate::assembly::AssemblyConfig::from(&config.limits),
    );
    assembler
        .start()
        .map_err(|e| ServeError::Server(format!("assembly worker: {e}")))?;
    ingest.set_assembler(assembler);
    let trigger = Trigger::new();

    let limits = ingest.limits().clone();
    let settings = crate::http::guard::HttpSettings {
        check_host: !auth_enabled && http_addr.ip().is_loopback(),
        check_origin: !auth_enabled,
        allowed_hosts: config.allowed_hosts.clone(),
        cors_allowed_origins: config.cors_allowed_origins.clone(),
        base_path: config.http_base_path.clone(),
    };
    let app = crate::http::router(crate::http::AppState::new(ingest.clone(), settings));
    if let Some(nofile) = crate::http::listener::open_files_limit() {
        // Each listener holds up to max_connections sockets.
        let need = u64::try_from(limits.max_connections)
            .unwrap_or(u64::MAX)
            .saturating_mul(2)
            .saturating_add(1024);
        if nofile < need {
            tracing::warn!(
                nofile,
                max_connections = limits.max_connections,
                "the open-files limit is below 2 x max_connections + 1024 (HTTP and gRPC): raise it (systemd LimitNOFILE, ulimit -n) or lower --max-connections"
            );
        }
    }
    let http = tokio::spawn(crate::http::listener::serve(
        http_listener,
        app,
        crate::http::listener::ListenerLimits {
            max_connections: limits.max_connections,
            header_read_timeout: std::time::Duration::from_secs(limits.header_read_timeout_secs),
        },
        trigger.wait(),
    ));
    let (traces, metrics, logs) = OtlpGrpc::new(ingest.clone()).services();
    let transport = crate::grpc::GrpcTransport::default();
    let incoming = crate::grpc::incoming::incoming(
        grpc_listener,
        crate::grpc::incoming::IncomingLimits {
            max_connections: limits.max_connections,
            first_bytes_timeout: std::time::Duration::from_secs(limits.header_read_timeout_secs),
            tcp_keepalive: transport.tcp_keepalive,
        },
    );
    let grpc = tokio::spawn(
        transport
            .builder()
            .add_service(traces)
            .add_service(metrics)
            .add_service(logs)
            .serve_with_incoming_shutdown(incoming, trigger.wait()),
    );
    tracing::info!(%http_addr, %grpc_addr, auth = if auth_enabled { "tokens" } else { "off (X-Scope-OrgID)" }, "sightline listening");
    Ok(Server {
        http_addr,
        grpc_addr,
        ingest,
        trigger,
        http,
        grpc,
        config,
    })
}

impl Server {
    /// The ingest pipeline (and through it the store), for tests.
    pub fn ingest(&self) -> &Arc<Ingest> {
        &self.ingest
    }

    /// Serves until `stop` resolves, then shuts down in order: stop accepting, let in-flight
    /// requests finish (bounded by `shutdown_timeout`), close (flush + fsync) the store.
    pub async fn run_until(self, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
        let Server {
            ingest,
            trigger,
            mut http,
            mut grpc,
            config,
            ..
        } = self;
        let mut early: Option<ServeError> = None;
        tokio::select! {
            () = stop => {}
            r = &mut http => early = Some(ServeError::Server(format!("HTTP server stopped: {r:?}"))),
            r = &mut grpc => early = Some(ServeError::Server(format!("gRPC server stopped: {r:?}"))),
        }
        ingest.begin_shutdown();
        trigger.fire();
        let drain = async {
            if !http.is_finished() {
                let _ = (&mut http).await;
            }
            if !grpc.is_finished() {
                let _ = (&mut grpc).await;
            }
        };
        if tokio::time::timeout(config.shutdown_timeout, drain)
            .await
            .is_err()
        {
            tracing::warn!(timeout = ?config.shutdown_timeout, "in-flight requests did not finish; closing anyway");
            http.abort();
            grpc.abort();
        }
        if let Some(a) = ingest.assembler().cloned() {
            tokio::task::spawn_blocking(move || a.shutdown())
                .await
                .map_err(|e| ServeError::Server(format!("assembly stop task failed: {e}")))?;
        }
        if let Some(d) = ingest.detectors().cloned() {
            tokio::task::spawn_blocking(move || d.shutdown())
                .await
                .map_err(|e| ServeError::Server(format!("detector stop task failed: {e}")))?;
        }
        let store = ingest.store().clone();
        tokio::task::spawn_blocking(move || store.close())
            .await
            .map_err(|e| ServeError::Server(format!("store close task failed: {e}")))??;
        tracing::info!("store flushed and closed");
        match early {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Starts the server and runs it until SIGTERM or SIGINT.
pub async fn run(config: Config) -> Result<(), ServeError> {
    let server = start(config).await?;
    server.run_until(crate::shutdown::signal()).await
}
