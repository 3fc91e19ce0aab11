//! Orderly shutdown: SIGTERM or SIGINT starts it; listeners stop accepting, in-flight
//! requests finish (up to `shutdown_timeout`), then the store is flushed and fsynced
//! ([`sightline_storage::Store::close`]) and the process exits 0.

use tokio::sync::watch;

/// Resolves on the first SIGTERM or SIGINT.
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                    _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
                }
            }
            _ => {
                tracing::warn!("cannot install signal handlers; falling back to ctrl-c");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A shutdown trigger shared by the listeners.
#[derive(Clone, Debug)]
pub struct Trigger {
    tx: watch::Sender<bool>,
}

impl Default for Trigger {
    fn default() -> Self {
        Self::new()
    }
}

impl Trigger {
    /// A trigger that has not fired.
    pub fn new() -> Self {
        Self {
            tx: watch::channel(false).0,
        }
    }

    /// Fires it.
    pub fn fire(&self) {
        self.tx.send_replace(true);
    }

    /// Resolves once fired.
    pub fn wait(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            let _ = rx.wait_for(|fired| *fired).await;
        }
    }
}
