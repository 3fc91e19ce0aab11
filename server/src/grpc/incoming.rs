//! The gRPC listener's accept loop, with the bounds tonic's `TcpIncoming` does not have:
//!
//! * at most `max_connections` open connections; one more is accepted and closed at once;
//! * a connection must send its first bytes (the HTTP/2 preface) within
//!   `header_read_timeout`, or it is closed before tonic sees it: HTTP/2 keep-alive pings
//!   only start after the handshake, so a silent socket would otherwise be held for ever.
//!
//! Accepted connections are handed to tonic through a bounded channel as a stream of
//! [`Capped`] sockets; each holds its connection slot until tonic drops it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// The accept loop's bounds and socket options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncomingLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest wait for a new connection's first bytes.
    pub first_bytes_timeout: Duration,
    /// Idle time before TCP keepalive probes start.
    pub tcp_keepalive: Duration,
}

/// An accepted socket holding one of the listener's connection slots.
#[derive(Debug)]
pub struct Capped {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
}

impl Connected for Capped {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Capped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Capped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The stream of admitted connections tonic serves.
#[derive(Debug)]
pub struct Incoming {
    admitted: mpsc::Receiver<Capped>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Incoming {
    fn drop(&mut self) {
        // tonic drops the stream when it stops accepting (shutdown): stop the accept loop,
        // which closes the listening socket.
        self.accept.abort();
    }
}

impl futures_core::Stream for Incoming {
    type Item = io::Result<Capped>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.admitted.poll_recv(cx).map(|c| c.map(Ok))
    }
}

/// Accepts on `listener` under `limits` (see the module docs). Must be called inside a tokio
/// runtime.
pub fn incoming(listener: TcpListener, limits: IncomingLimits) -> Incoming {
    // Admitted connections wait here until tonic takes them; the slots bound how many.
    let (tx, admitted) = mpsc::channel(limits.max_connections.clamp(1, 1024));
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let accept = tokio::spawn(accept_loop(listener, limits, slots, tx));
    Incoming { admitted, accept }
}

async fn accept_loop(
    listener: TcpListener,
    limits: IncomingLimits,
    slots: Arc<Semaphore>,
    tx: mpsc::Sender<Capped>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors or a transient network error: back off a little.
                tracing::warn!(error = %e, "gRPC accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, max = limits.max_connections, "gRPC connection refused: at max_connections");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new().with_time(limits.tcp_keepalive);
        let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive);
        let tx = tx.clone();
        tokio::spawn(async move {
            // `peek` waits for real bytes (readiness alone can be spurious) and leaves them
            // for tonic; 0 is a client that closed at once.
            let mut first = [0u8; 1];
            match tokio::time::timeout(limits.first_bytes_timeout, stream.peek(&mut first)).await {
                Ok(Ok(0)) => {}
                Ok(Ok(_)) => {
                    // A send error means tonic stopped accepting: the connection is dropped.
                    let _ = tx
                        .send(Capped {
                            stream,
                            _slot: slot,
                        })
                        .await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "gRPC connection failed"),
                Err(_) => tracing::debug!(%peer, "gRPC connection sent nothing: closed"),
            }
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use futures_core::Stream;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn next(incoming: &mut Incoming) -> impl std::future::Future<Output = Option<Capped>> + '_ {
        std::future::poll_fn(move |cx| {
            Pin::new(&mut *incoming)
                .poll_next(cx)
                .map(|o| o.map(|r| r.unwrap()))
        })
    }

    #[tokio::test]
    async fn caps_connections_and_drops_silent_ones() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut inc = incoming(
            listener,
            IncomingLimits {
                max_connections: 2,
                first_bytes_timeout: Duration::from_millis(300),
                tcp_keepalive: Duration::from_secs(60),
            },
        );
        // A silent connection is closed after the timeout and never reaches the stream.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 8];
        let n = tokio::time::timeout(Duration::from_secs(3), silent.read(&mut buf))
            .await
            .expect("the silent connection was not closed");
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");

        // Two talking connections are admitted and hold both slots.
        let mut a = TcpStream::connect(addr).await.unwrap();
        a.write_all(b"PRI").await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        b.write_all(b"PRI").await.unwrap();
        let mut ca = next(&mut inc).await.unwrap();
        let _cb = next(&mut inc).await.unwrap();
        let mut got = [0u8; 3];
        ca.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"PRI");

        // A third is closed at once.
        let mut c = TcpStream::connect(addr).await.unwrap();
        let _ = c.write_all(b"PRI").await;
        let n = tokio::time::timeout(Duration::from_secs(3), c.read(&mut buf))
            .await
            .expect("the connection past the cap was not closed");
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");

        // Dropping one frees its slot.
        drop(ca);
        drop(a);
        let mut d = TcpStream::connect(addr).await.unwrap();
        d.write_all(b"PRI").await.unwrap();
        let admitted = tokio::time::timeout(Duration::from_secs(3), next(&mut inc)).await;
        assert!(
            matches!(admitted, Ok(Some(_))),
            "a freed slot was not reused"
        );
    }
}
