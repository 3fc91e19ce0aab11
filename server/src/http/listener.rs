//! The HTTP listener's accept loop, with the connection bounds axum's `serve` does not have:
//!
//! * at most `max_connections` open connections; one more is accepted and closed at once (so
//!   the kernel's backlog does not fill with clients that wait for ever);
//! * `header_read_timeout_secs` to send a request's headers, counted from the start of the
//!   connection or the end of the previous response, so it is also the keep-alive idle
//!   timeout: a connection that sends nothing is closed after it;
//! * HTTP/1.1 only (the OTLP/HTTP, Prometheus, Loki and Tempo clients all speak it; gRPC has
//!   its own listener): sniffing for an HTTP/2 preface would wait on a silent connection with
//!   no timeout;
//! * the request body timeout is a layer of the router (`body_read_timeout_secs`, 408).
//!
//! Shutdown stops accepting, lets in-flight requests finish, and closes idle connections.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The listener's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest wait for a request's headers (and on an idle keep-alive connection).
    pub header_read_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains (see the module docs).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ListenerLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors or a transient network error: back off a little
                    // instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, max = limits.max_connections, "connection refused: at max_connections");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let svc = TowerToHyperService::new(app.clone());
        let builder = Arc::clone(&builder);
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The soft limit on open files of this process, from `/proc/self/limits` (Linux).
pub fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}
