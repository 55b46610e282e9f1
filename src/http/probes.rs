//! What an orchestrator and a scraper ask the HTTP service, beside MCP: `/healthz`
//! (the process serves), `/readyz` (it takes new sessions) and `/metrics`.
//!
//! The probes need no token: a kubelet or a load balancer has none, and they tell
//! nothing but up or down. `/metrics` tells what users do (how many calls, of what
//! outcome), so on the service's address it needs the token; `--metrics ADDR:PORT`
//! serves it alone, without one, on an address the operator keeps inside the cluster.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{Body, Gate, HEADER_TIMEOUT, plain};
use crate::metrics;

/// The liveness probe's path: 200 while the process serves.
pub const HEALTHZ: &str = "/healthz";

/// The readiness probe's path: 200 when a new session would be taken, else 503.
pub const READYZ: &str = "/readyz";

/// The metrics' path.
pub const METRICS: &str = "/metrics";

/// Connections the `--metrics` address serves at once: a scraper or two, and room.
const MAX_METRICS_CONNECTIONS: usize = 16;

impl Gate {
    /// The answer to a probe or a metrics request, or `None` for any other path.
    pub(super) fn probe<B>(&self, request: &Request<B>) -> Option<Response<Body>> {
        let path = request.uri().path();
        if ![HEALTHZ, READYZ, METRICS].contains(&path) {
            return None;
        }
        if request.method() != Method::GET && request.method() != Method::HEAD {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: use GET",
            );
            let allow = HeaderValue::from_static("GET, HEAD");
            response.headers_mut().insert(header::ALLOW, allow);
            return Some(response);
        }
        Some(match path {
            HEALTHZ => plain(StatusCode::OK, "ok"),
            READYZ => self.readiness(),
            _ if !self.admits(request.headers()) => super::unauthorized(),
            _ => self.metrics(),
        })
    }

    /// 200 while new sessions are taken; 503 draining or at `--http-max-sessions`.
    fn readiness(&self) -> Response<Body> {
        if self.draining.is_cancelled() {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "draining: the server is stopping and takes no new session",
            );
        }
        if self.open_sessions() >= self.max_sessions {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "full: --http-max-sessions sessions are open",
            );
        }
        plain(StatusCode::OK, "ready")
    }

    /// The metrics, with this service's sessions and users.
    fn metrics(&self) -> Response<Body> {
        let text = metrics::encode(metrics::Service {
            sessions: self.open_sessions(),
            users: self.workspaces.users_open(),
            draining: self.draining.is_cancelled(),
        });
        let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(metrics::CONTENT_TYPE),
        );
        response
    }

    /// Sessions that have not ended.
    fn open_sessions(&self) -> usize {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .values()
            .filter(|b| !b.ended.is_cancelled())
            .count()
    }
}

/// Serves `/metrics` without a token on `listener` (`--metrics`) until `ended`, on a
/// task of its own.
pub(super) fn spawn_metrics(
    listener: TcpListener,
    gate: Arc<Gate>,
    ended: CancellationToken,
) -> io::Result<()> {
    tracing::info!(metrics = %listener.local_addr()?, "serving {METRICS} without a token");
    tokio::spawn(async move {
        if let Err(e) = serve_metrics(listener, gate, ended).await {
            tracing::warn!(error = %e, "the metrics address stopped serving");
        }
    });
    Ok(())
}

/// Serves `/metrics` on `listener` until `ended`: nothing else, a few connections at
/// once.
async fn serve_metrics(
    listener: TcpListener,
    gate: Arc<Gate>,
    ended: CancellationToken,
) -> io::Result<()> {
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_METRICS_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            () = ended.cancelled() => return Ok(()),
            permit = connections.clone().acquire_owned() => permit.map_err(io::Error::other)?,
        };
        let stream = tokio::select! {
            () = ended.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept a metrics connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (gate, ended) = (gate.clone(), ended.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<_>| {
                let response = match request.uri().path() {
                    METRICS if request.method() == Method::GET => gate.metrics(),
                    _ => plain(StatusCode::NOT_FOUND, "Not Found: GET /metrics"),
                };
                async move { Ok::<_, Infallible>(response) }
            });
            // One request a connection: an idle one never holds a permit.
            let serving = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = serving => {}
                () = ended.cancelled() => {}
            }
            drop(permit);
        });
    }
}
