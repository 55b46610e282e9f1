//! The Streamable HTTP transport (`--http ADDR:PORT`): MCP at `/mcp`, served by rmcp's
//! [`StreamableHttpService`] behind a gate of this server's.
//!
//! The gate comes first, for every request:
//!
//! - the path is `/mcp`, else 404;
//! - the bearer token matches (compared in constant time), else 401 and nothing runs;
//! - a POST body is at most [`MAX_BODY_BYTES`] (else 413) and passes the same checks as
//!   a stdio line ([`check::check_line`]); a refusal is answered as a JSON-RPC error,
//!   and what passes reaches rmcp as the message the checks read;
//! - with per-user paths, `X-User-ID` names a valid user (else 400) when a session
//!   starts, and the same user for the rest of the session (else 403).
//!
//! rmcp then checks the `Host` header (DNS rebinding), refuses any `Origin` (a
//! browser has no business here), keeps the sessions and their streams. Each session
//! has a [`Session`] handler: the [`Server`] of its user's workspace, a cancellation
//! token and a [`Scope`] of its own. When the session ends (a DELETE, its idle expiry,
//! the server's shutdown) its running commands are cancelled as by
//! `notifications/cancelled`, and what they left in the background is killed.
//! Every session shares `--max-concurrent`, the containment and the shutdown.
//!
//! Beside MCP, `/healthz`, `/readyz` and `/metrics` answer an orchestrator and a
//! scraper ([`probes`]); a stop signal drains the service before it stops ([`drain`]).
//!
//! Opening a connection needs no token: until it sends an authenticated request a
//! connection is a stranger, bounded per peer address and in all apart from the
//! trusted ones ([`MAX_STRANGERS_PER_PEER`], [`MAX_STRANGERS`], [`HEADER_TIMEOUT`]),
//! so that idle strangers never keep a user out.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage,
    ListToolsResult, PaginatedRequestParams, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::check::{self, Accepted, Refusal};
use crate::config::{self, Config};
use crate::contain::Scope;
use crate::descriptors::{self, Budget};
use crate::server::{Server, TOOL};
use crate::workspace::Workspaces;

mod drain;
pub mod probes;

pub use drain::Stop;

/// Longest request body accepted: the longest stdio line.
pub const MAX_BODY_BYTES: usize = crate::stdio::MAX_LINE_BYTES;

/// The path MCP is served at.
pub const PATH: &str = "/mcp";

/// The header that names a session's user.
pub const USER_HEADER: &str = "x-user-id";

const SESSION_HEADER: &str = "mcp-session-id";

/// Sessions one user may have at once; a new one past it ends their oldest.
pub const MAX_USER_SESSIONS: usize = 16;

/// Connections that sent an authenticated request, served at once; past it, a new
/// one's request is refused (503).
pub const MAX_CONNECTIONS: usize = 4096;

/// Connections that have not sent a complete, authenticated request yet ("strangers",
/// no token needed to open one) kept at once, all peers together; a new one past it
/// ends the oldest. Never more than a quarter of the open-file limit.
pub const MAX_STRANGERS: usize = 1024;

/// Strangers kept at once from one peer address; a new one past it ends that peer's
/// oldest.
pub const MAX_STRANGERS_PER_PEER: usize = 64;

/// On shutdown, once running commands are stopped, how long their answers get to go
/// out.
const FLUSH_GRACE: Duration = Duration::from_millis(150);

/// How long a client may take to send a request's headers, and a new connection to
/// send its first authenticated request: a client that means to talk sends one at
/// once.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

type Body = BoxBody<Bytes, Infallible>;

/// A bearer token. Never printed.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// A token, once it is not empty.
    pub fn new(token: &str) -> Option<Token> {
        let token = token.trim();
        (!token.is_empty()).then(|| Token(token.as_bytes().to_vec()))
    }

    /// Whether `Authorization` carries this token as a bearer token. The comparison
    /// takes the same time wherever the first difference is.
    fn admits(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(value) = authorization.map(HeaderValue::as_bytes) else {
            return false;
        };
        let Some(given) = value
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|_| value[7..].trim_ascii())
        else {
            return false;
        };
        let mut difference = u8::from(given.len() != self.0.len());
        for (i, expected) in self.0.iter().enumerate() {
            difference |= expected ^ given.get(i).copied().unwrap_or(0);
        }
        std::hint::black_box(difference) == 0
    }
}

/// How the HTTP transport is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    pub addr: SocketAddr,
    /// `None` only with `--http-insecure-no-token` on a loopback address.
    pub token: Option<Token>,
    pub allowed_hosts: Vec<String>,
    pub session_idle: Duration,
    pub max_sessions: usize,
    /// How long running calls may go on after a stop signal (`--shutdown-grace-secs`).
    pub grace: Duration,
    /// Where `/metrics` is served without a token (`--metrics`).
    pub metrics: Option<SocketAddr>,
}

/// Why the HTTP transport cannot start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "--http needs a bearer token: set FORGE_BASH_HTTP_TOKEN or --http-token-file (or give --http-insecure-no-token, for a loopback address only)"
    )]
    NoToken,
    #[error("--http-insecure-no-token: {0} is not a loopback address; a token is required")]
    NotLoopback(SocketAddr),
    #[error("the token is given twice: FORGE_BASH_HTTP_TOKEN and --http-token-file; give one")]
    TwoTokens,
    #[error("--http-token-file {0}: {1}")]
    TokenFile(String, io::Error),
    #[error("--http-token-file {0}: the file holds no token")]
    EmptyTokenFile(String),
    #[error(
        "--http-token-file {file}: sandboxed commands can read it (it is under {under}), and with the token a command could act as any user; keep it outside the directories commands may read"
    )]
    TokenReadable { file: String, under: String },
    #[error(
        "--http-token-file {file}: commands run as {others} could read it (owner {owner}, group {group}, mode {mode:o}), and with the token a command could act as any user; make it the server's alone: chmod 600 {file}"
    )]
    TokenReadableByUids {
        file: String,
        others: crate::users::Others,
        owner: u32,
        group: u32,
        mode: u32,
    },
    #[error(
        "--http-token-file {file}: commands run as {others} could replace it, since they may write {dir} (owner {owner}, mode {mode:o}), and choose the token the next start reads; keep it in a directory that is the server's alone (chmod go-w {dir})"
    )]
    TokenReplaceable {
        file: String,
        others: crate::users::Others,
        dir: String,
        owner: u32,
        mode: u32,
    },
    #[error("FORGE_BASH_HTTP_TOKEN is empty")]
    EmptyToken,
}

impl Settings {
    /// The settings of `config`, with the token given in the environment (`from_env`,
    /// already taken out of it) or in the token file.
    pub fn new(
        config: &Config,
        addr: SocketAddr,
        from_env: Option<String>,
    ) -> Result<Settings, Error> {
        let from_file = match &config.http_token_file {
            Some(path) => Some(token_file(config, path)?),
            None => None,
        };
        let from_env = match from_env {
            Some(token) => Some(Token::new(&token).ok_or(Error::EmptyToken)?),
            None => None,
        };
        let token = match (from_env, from_file) {
            (Some(_), Some(_)) => return Err(Error::TwoTokens),
            (token @ Some(_), None) | (None, token @ Some(_)) => token,
            (None, None) if !config.http_insecure_no_token => return Err(Error::NoToken),
            (None, None) if !addr.ip().is_loopback() => return Err(Error::NotLoopback(addr)),
            (None, None) => None,
        };
        if token.as_ref().is_some_and(|t| t.0.len() < 16) {
            tracing::warn!("the HTTP token is shorter than 16 bytes: use a long random one");
        }
        let allowed_hosts = if config.http_allowed_host.is_empty() {
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
        } else {
            config.http_allowed_host.clone()
        };
        // A running command is not idleness: the session outlives the longest one.
        let session_idle = Duration::from_secs(
            config
                .http_session_idle_secs
                .max(config.timeout_secs.saturating_add(5)),
        );
        Ok(Settings {
            addr,
            token,
            allowed_hosts,
            session_idle,
            max_sessions: config.http_max_sessions as usize,
            grace: Duration::from_secs(config.shutdown_grace_secs),
            metrics: config.metrics,
        })
    }
}

/// The token in the first line of `path`, once no command could read the file: under
/// the sandbox, a path commands may read; as other uids, what [`out_of_reach`] checks.
fn token_file(config: &Config, path: &std::path::Path) -> Result<Token, Error> {
    let shown = path.display().to_string();
    if config.sandbox != crate::sandbox::Mode::Off {
        let roots = [&config.workdir, &config.state_dir]
            .into_iter()
            .chain(&config.readable)
            .chain(&config.writable)
            .map(std::path::PathBuf::as_path);
        if let Some(under) = crate::sandbox::readable_through(path, roots) {
            let under = under.display().to_string();
            return Err(Error::TokenReadable { file: shown, under });
        }
    }
    if let Some(others) = config.others(crate::users::euid()) {
        out_of_reach(path, others)?;
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::TokenFile(shown.clone(), e))?;
    let first = text.lines().next().unwrap_or_default().to_owned();
    Token::new(&first).ok_or(Error::EmptyTokenFile(shown))
}

/// Refuses a token file that commands running as `others` could read (its mode bits
/// give them read, as others, as its group or as its owner) or replace (a directory
/// on its path they may write): with the token, one user's command could open a
/// session as any other.
fn out_of_reach(path: &std::path::Path, others: crate::users::Others) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let file = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| Error::TokenFile(file.clone(), e))?;
    if others.may(&meta, 0o4) || others.has_uid(meta.uid()) {
        return Err(Error::TokenReadableByUids {
            file,
            others,
            owner: meta.uid(),
            group: meta.gid(),
            mode: meta.mode() & 0o7777,
        });
    }
    if let Some((dir, meta)) = others.could_replace(path) {
        return Err(Error::TokenReplaceable {
            file,
            others,
            dir: dir.display().to_string(),
            owner: meta.uid(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// What binds a session to its user: set by the gate, read by the session's handler.
#[derive(Debug)]
struct Binding {
    /// `None` when the workspace is shared by every session.
    user: Option<String>,
    server: OnceLock<Server>,
    /// Cancelled when the session ends: its running commands stop.
    ended: CancellationToken,
    scope: Arc<Scope>,
    started: std::time::Instant,
}

impl Binding {
    fn new(user: Option<String>) -> Arc<Binding> {
        Arc::new(Binding {
            user,
            server: OnceLock::new(),
            ended: CancellationToken::new(),
            scope: Arc::new(Scope::default()),
            started: std::time::Instant::now(),
        })
    }

    /// The session is over: its running commands are cancelled, and what its calls
    /// left running is killed (off the runtime's thread: it may sweep `/proc`).
    fn end(&self) {
        self.end_with_server(false);
    }

    /// The session ends, with the server when `keep` says the server keeps background
    /// jobs: then what its answered calls left running is let go instead of killed.
    /// Only the first end does anything.
    fn end_with_server(&self, keep: bool) {
        if self.ended.is_cancelled() {
            return;
        }
        self.ended.cancel();
        tracing::info!(user = self.user.as_deref().unwrap_or("-"), "session ended");
        let scope = self.scope.clone();
        if keep {
            return scope.let_go();
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || scope.end())),
            Err(_) => scope.end(),
        }
    }
}

tokio::task_local! {
    /// The binding of the request rmcp is handling, for the handler it makes for it.
    static BINDING: Arc<Binding>;
}

/// The handler of one session: its user's server, its scope and its end.
#[derive(Debug)]
pub struct Session {
    binding: Arc<Binding>,
    server: Server,
}

impl Session {
    /// Made by rmcp for a new session (or a request served without one), inside the
    /// gate's [`BINDING`]. The user's workspace is made here, after rmcp's own checks.
    fn make(workspaces: &Workspaces) -> io::Result<Session> {
        let binding = BINDING
            .try_with(Arc::clone)
            .map_err(|_| io::Error::other("a request reached rmcp without the gate"))?;
        let server = workspaces
            .server(binding.user.as_deref().unwrap_or("-"))
            .map_err(io::Error::other)?;
        let _ = binding.server.set(server.clone());
        Ok(Session { binding, server })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.binding.end();
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.server.list_tools(request, ctx).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.get_tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // Cancelled by the client's cancellation or by the session's end.
        let cancel = self.binding.ended.child_token();
        let _link = {
            let (request, cancel) = (ctx.ct.clone(), cancel.clone());
            AbortOnDropHandle::new(tokio::spawn(async move {
                request.cancelled().await;
                cancel.cancel();
            }))
        };
        ctx.ct = cancel;
        ctx.extensions.insert(self.binding.scope.clone());
        self.server.call_tool(request, ctx).await
    }
}

/// The gate in front of rmcp's service.
struct Gate {
    service: StreamableHttpService<Session, LocalSessionManager>,
    manager: Arc<LocalSessionManager>,
    token: Option<Token>,
    per_user: bool,
    /// `--http-max-sessions`, or fewer when the descriptor limit holds fewer.
    max_sessions: usize,
    /// The descriptor limit and what is set aside in it.
    files: Budget,
    /// Each session's binding, by session id: the gate knows every session, and
    /// answers 404 for any other id before rmcp sees it.
    sessions: Mutex<HashMap<String, Arc<Binding>>>,
    /// Opened here for a new session's user, so that a workspace that cannot be
    /// served answers with its reason rather than rmcp's 500.
    workspaces: Arc<Workspaces>,
    /// Cancelled while the service drains: new sessions are refused.
    draining: CancellationToken,
}

/// A checked POST body: the message for rmcp, and whether it starts a session.
struct Checked {
    message: Bytes,
    initialize: bool,
}

impl Gate {
    /// rmcp's service, its sessions expiring after `settings.session_idle` and ending
    /// with `shutdown`, behind the gate of `settings`.
    fn new(
        workspaces: &Arc<Workspaces>,
        settings: Settings,
        files: Budget,
        shutdown: &CancellationToken,
    ) -> Gate {
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(settings.session_idle);
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(settings.allowed_hosts)
            .enforce_origin_validation()
            .with_max_request_body_bytes(MAX_BODY_BYTES)
            .with_cancellation_token(shutdown.child_token());
        let factory = {
            let workspaces = workspaces.clone();
            move || Session::make(&workspaces)
        };
        let manager = Arc::new(sessions);
        Gate {
            service: StreamableHttpService::new(factory, manager.clone(), config),
            manager,
            token: settings.token,
            per_user: workspaces.per_user(),
            workspaces: workspaces.clone(),
            max_sessions: settings.max_sessions.min(files.sessions()),
            files,
            sessions: Mutex::new(HashMap::new()),
            draining: CancellationToken::new(),
        }
    }

    /// Whether `request` carries the token (any request does without one).
    fn authenticated(&self, request: &Request<Incoming>) -> bool {
        self.admits(request.headers())
    }

    /// Whether `headers` carry the token (any do without one).
    fn admits(&self, headers: &http::HeaderMap) -> bool {
        self.token
            .as_ref()
            .is_none_or(|token| token.admits(headers.get(header::AUTHORIZATION)))
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if let Some(response) = self.probe(&request) {
            return response;
        }
        if request.uri().path() != PATH {
            return plain(StatusCode::NOT_FOUND, "Not Found: MCP is served at /mcp");
        }
        if !self.admits(request.headers()) {
            return unauthorized();
        }
        let user = match self.user(request.headers()) {
            Ok(user) => user,
            Err(response) => return response,
        };
        let session = match request.headers().get(SESSION_HEADER) {
            None => None,
            Some(id) => match id
                .to_str()
                .ok()
                .and_then(|id| self.binding(id).map(|b| (id.to_owned(), b)))
            {
                Some(known) => Some(known),
                None => return plain(StatusCode::NOT_FOUND, "Not Found: Session not found"),
            },
        };
        if let Some((_, bound)) = &session
            && self.per_user
            && bound.user != user
        {
            return plain(
                StatusCode::FORBIDDEN,
                "Forbidden: X-User-ID must name the session's user; a session cannot change its user",
            );
        }
        let (parts, body) = request.into_parts();
        let checked = if parts.method == Method::POST {
            match self.check(body).await {
                Ok(Some(checked)) => Some(checked),
                Ok(None) => return empty(StatusCode::ACCEPTED),
                Err(response) => return response,
            }
        } else {
            None
        };
        match session {
            Some((id, bound)) => self.in_session(parts, checked, &id, &bound).await,
            None => self.start(parts, checked, user).await,
        }
    }

    /// A request of a session the gate knows. rmcp never makes a handler here: one
    /// made outside [`BINDING`] fails, so no request can end another's session.
    async fn in_session(
        &self,
        parts: http::request::Parts,
        checked: Option<Checked>,
        id: &str,
        bound: &Binding,
    ) -> Response<Body> {
        let deletes = parts.method == Method::DELETE;
        let body = checked.map_or_else(Bytes::new, |c| c.message);
        let mut response = self
            .forward(Request::from_parts(parts, Full::new(body)))
            .await;
        // Ended only once rmcp has ended it: a DELETE it refuses ends nothing.
        if deletes && response.status().is_success() {
            self.forget(id);
            bound.end();
            crate::server::release_memory_when_idle(self.workspaces.shared());
            // rmcp answers 202; clients expect 200 or 204 (the Python SDK warns on
            // anything else), and nothing is left to do.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        response
    }

    /// A request without a session: only an `initialize` POST, which starts one bound
    /// to its user.
    async fn start(
        &self,
        parts: http::request::Parts,
        checked: Option<Checked>,
        user: Option<String>,
    ) -> Response<Body> {
        let Some(Checked {
            message,
            initialize: true,
        }) = checked
        else {
            return plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: Mcp-Session-Id is missing; a session starts with an initialize request",
            );
        };
        if self.per_user && user.is_none() {
            return plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: the X-User-ID header must name the session's user",
            );
        }
        if self.draining.is_cancelled() {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: this server is stopping and takes no new session; retry (another replica takes it)",
            );
        }
        if let Err(response) = self.make_room(user.as_deref()).await {
            return response;
        }
        if let Err(full) = self.room_for_files() {
            tracing::warn!(error = %full, "a new session is refused");
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("Service Unavailable: {full}; retry once sessions have ended"),
            );
        }
        if let Some(user) = user.as_deref().filter(|_| self.per_user)
            && let Err(e) = self.workspaces.server(user)
        {
            return unserved(user, &e);
        }
        let binding = Binding::new(if self.per_user { user } else { None });
        let request = Request::from_parts(parts, Full::new(message));
        let response = BINDING.scope(binding.clone(), self.forward(request)).await;
        if let Some(id) = response.headers().get(SESSION_HEADER)
            && let Ok(id) = id.to_str()
        {
            let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            sessions.insert(id.to_owned(), binding);
        }
        response
    }

    async fn forward(&self, request: Request<Full<Bytes>>) -> Response<Body> {
        let mut service = self.service.clone();
        let Ok(response) = tower_service::Service::call(&mut service, request).await;
        response
    }

    /// Room for one more session: ended ones are let go; a user at
    /// [`MAX_USER_SESSIONS`] loses their oldest session; past `--http-max-sessions`
    /// in all, the new one is refused (503).
    #[allow(clippy::result_large_err)]
    async fn make_room(&self, user: Option<&str>) -> Result<(), Response<Body>> {
        let oldest = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            sessions.retain(|_, binding| !binding.ended.is_cancelled());
            if sessions.len() >= self.max_sessions && self.max_sessions < self.files.sessions() {
                return Err(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions; end one (DELETE) or wait for one to expire",
                ));
            }
            if sessions.len() >= self.max_sessions {
                let limit = self.files.limit;
                return Err(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!(
                        "Service Unavailable: {} sessions are open, as many as the open-file limit (RLIMIT_NOFILE {limit}) can hold; end one (DELETE) or wait for one to expire",
                        sessions.len()
                    ),
                ));
            }
            let mine: Vec<(&String, &Arc<Binding>)> = sessions
                .iter()
                .filter(|(_, binding)| binding.user.as_deref() == user)
                .collect();
            (user.is_some() && mine.len() >= MAX_USER_SESSIONS)
                .then(|| {
                    mine.iter()
                        .min_by_key(|(_, b)| b.started)
                        .map(|(id, _)| (*id).clone())
                })
                .flatten()
        };
        if let Some(id) = oldest
            && let Some(binding) = self.forget(&id)
        {
            tracing::info!(
                user = user.unwrap_or("-"),
                "a user's oldest session ends: too many sessions"
            );
            binding.end();
            let _ = self.manager.close_session(&id.into()).await;
        }
        Ok(())
    }

    /// The user a request names, when users have workspaces of their own. A header
    /// given twice is refused: a proxy that appends one must not change the user.
    #[allow(clippy::result_large_err)]
    fn user(&self, headers: &http::HeaderMap) -> Result<Option<String>, Response<Body>> {
        if !self.per_user {
            return Ok(None);
        }
        let mut values = headers.get_all(USER_HEADER).iter();
        let Some(value) = values.next() else {
            return Ok(None);
        };
        match value.to_str() {
            Ok(user) if config::valid_user(user) && values.next().is_none() => {
                Ok(Some(user.to_owned()))
            }
            _ => Err(plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: X-User-ID must be given once, 1 to 64 of A-Z a-z 0-9 . _ - (and not . or ..)",
            )),
        }
    }

    /// Room for one more session's descriptors: what is open now and what is set
    /// aside for running commands and new connections, within the limit. When it is
    /// short, users no session uses are released first.
    fn room_for_files(&self) -> Result<(), descriptors::Full> {
        let Ok(open) = descriptors::open_now() else {
            return Ok(());
        };
        if self.files.admits_session(open).is_ok() || self.workspaces.release_unused() == 0 {
            return self.files.admits_session(open);
        }
        self.files
            .admits_session(descriptors::open_now().unwrap_or(open))
    }

    /// Lets go of the sessions that ended without a DELETE (expired, or their handler
    /// gone): rmcp keeps an expired session's handle until it is closed.
    async fn close_ended(&self) {
        let ended: Vec<String> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            let ended = sessions
                .iter()
                .filter(|(_, binding)| binding.ended.is_cancelled())
                .map(|(id, _)| id.clone())
                .collect::<Vec<_>>();
            for id in &ended {
                sessions.remove(id);
            }
            ended
        };
        if ended.is_empty() {
            return;
        }
        for id in ended {
            let _ = self.manager.close_session(&id.into()).await;
        }
        crate::server::release_memory_when_idle(self.workspaces.shared());
    }

    fn binding(&self, session: &str) -> Option<Arc<Binding>> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .get(session)
            .filter(|binding| !binding.ended.is_cancelled())
            .cloned()
    }

    fn forget(&self, session: &str) -> Option<Arc<Binding>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.remove(session)
    }

    /// Reads a POST body and checks it as a stdio line is checked: `Ok(Some)` is the
    /// message for rmcp, `Ok(None)` a body with nothing to do.
    #[allow(clippy::result_large_err)]
    async fn check(&self, body: Incoming) -> Result<Option<Checked>, Response<Body>> {
        let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return Err(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!(
                        "Payload Too Large: a request body may be at most {MAX_BODY_BYTES} bytes"
                    ),
                ));
            }
            Err(e) => {
                return Err(plain(StatusCode::BAD_REQUEST, &format!("Bad Request: {e}")));
            }
        };
        let message = match check::check_line(&body, TOOL) {
            Ok(Accepted::Request { id, .. }) if id.written.is_some() => {
                return Err(refused(&Refusal::new(
                    Some(id),
                    rmcp::model::ErrorCode::INVALID_REQUEST,
                    "invalid request: over HTTP an integer id must fit in 64 bits",
                )));
            }
            Ok(Accepted::Request { request, .. }) => ClientJsonRpcMessage::Request(request),
            Ok(Accepted::Notification { notification, .. }) => {
                JsonRpcMessage::Notification(notification)
            }
            Ok(Accepted::Nothing) => return Ok(None),
            Err(refusal) => return Err(refused(&refusal)),
        };
        let initialize = matches!(&message, ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_)));
        match serde_json::to_vec(&message) {
            Ok(bytes) => Ok(Some(Checked {
                message: Bytes::from(bytes),
                initialize,
            })),
            Err(e) => Err(plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())),
        }
    }
}

/// A refused message: its JSON-RPC error, with 200 when it answers a request the
/// client can match by id, 400 otherwise.
fn refused(refusal: &Refusal) -> Response<Body> {
    let status = if refusal.id.is_some() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    let mut line = refusal.line();
    line.pop();
    let mut response = Response::new(Full::new(Bytes::from(line)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer to a new session whose user's workspace cannot be opened: 503 when the
/// uid range is full (the range named: the operator widens it, or frees a name with
/// `forge-bash users --remove`), 500 otherwise; the reason is logged either way.
fn unserved(user: &str, e: &crate::workspace::Error) -> Response<Body> {
    tracing::error!(user, error = %e, "a user's workspace cannot be opened");
    match e {
        crate::workspace::Error::Uid(crate::users::Error::Full { range, .. }) => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "Service Unavailable: every uid of --user-uids {range} is taken, so no new user can be served; the operator can widen the range or free a name (forge-bash users --remove NAME)"
            ),
        ),
        _ => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error: this user's workspace cannot be opened; the server's log says why",
        ),
    }
}

/// 401, with the scheme the token goes in.
fn unauthorized() -> Response<Body> {
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: a valid bearer token is required",
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

/// Serves `workspaces` over HTTP on `settings.addr` until `stop` says so, after a
/// drain ([`drain`]); then every running command is stopped and logged, and every
/// session ends.
pub async fn serve(workspaces: Arc<Workspaces>, settings: Settings, stop: Stop) -> io::Result<()> {
    let listener = TcpListener::bind(settings.addr).await?;
    let files = budget(&workspaces, settings.max_sessions)?;
    let metrics = match settings.metrics {
        Some(addr) => Some(TcpListener::bind(addr).await?),
        None => None,
    };
    tracing::info!(
        addr = %listener.local_addr()?,
        token = settings.token.is_some(),
        hosts = ?settings.allowed_hosts,
        "serving MCP over HTTP at {PATH}"
    );
    let shutdown = CancellationToken::new();
    let grace = settings.grace;
    let gate = Arc::new(Gate::new(&workspaces, settings, files, &shutdown));
    if let Some(listener) = metrics {
        probes::spawn_metrics(listener, gate.clone(), shutdown.child_token())?;
    }
    let retention = {
        let workspaces = workspaces.clone();
        AbortOnDropHandle::new(tokio::spawn(async move { workspaces.keep_bounded().await }))
    };
    let releases = AbortOnDropHandle::new(tokio::spawn(release_idle_users(
        gate.clone(),
        workspaces.clone(),
    )));
    let trusted = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let strangers = Arc::new(Strangers::new(max_strangers()));
    let stopped = drain::until_stopped(&stop, grace, workspaces.shared(), &gate.draining);
    tokio::pin!(stopped);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stopped => break,
            accepted = accept(&listener) => accepted,
        };
        if !files.admits_connection(std::os::fd::AsRawFd::as_raw_fd(&stream) as usize) {
            turn_away(stream, files.limit);
            continue;
        }
        let connection = Connection {
            stranger: strangers.admit(peer.ip()),
            strangers: strangers.clone(),
            trusted: trusted.clone(),
            permit: Mutex::new(None),
        };
        tokio::spawn(serve_connection(
            stream,
            gate.clone(),
            Arc::new(connection),
            shutdown.child_token(),
        ));
    }
    shut_down(&workspaces, &gate).await;
    shutdown.cancel();
    drop(retention);
    drop(releases);
    Ok(())
}

/// The next connection; an accept that fails (out of descriptors, most likely) is
/// tried again once some had time to close.
async fn accept(listener: &TcpListener) -> (tokio::net::TcpStream, std::net::SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) => {
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The descriptor budget of serving `workspaces`, with what it holds logged: refused
/// when the limit leaves no room for a single session.
fn budget(workspaces: &Workspaces, max_sessions: usize) -> io::Result<Budget> {
    let commands = workspaces.shared().max_concurrent();
    let files = Budget::new(
        descriptors::soft_limit(),
        descriptors::open_now().unwrap_or(0),
        commands,
        max_strangers(),
    );
    let limit = files.limit;
    let held = files.sessions();
    if held == 0 {
        return Err(io::Error::other(format!(
            "the open-file limit (RLIMIT_NOFILE {limit}) leaves no room for a session beside {} descriptors open and {} set aside for {commands} commands at once and new connections; raise the limit (ulimit -n)",
            files.held,
            files.reserved()
        )));
    }
    if held < max_sessions {
        tracing::warn!(
            "the open-file limit (RLIMIT_NOFILE {limit}) holds {held} sessions at once, fewer than --http-max-sessions {max_sessions}: past {held}, new sessions are refused (503); raise the limit (ulimit -n) to hold more"
        );
    } else {
        tracing::info!(
            limit,
            sessions = max_sessions,
            room = held,
            "the open-file limit holds every session"
        );
    }
    Ok(files)
}

/// Releases, every quarter of `--user-idle-secs` (100 ms to 60 s), the users whose
/// last session ended that long ago; sessions that expired are let go first.
async fn release_idle_users(gate: Arc<Gate>, workspaces: Arc<Workspaces>) {
    let idle = workspaces.user_idle();
    let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
    let mut sweeps = tokio::time::interval(every);
    sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        sweeps.tick().await;
        gate.close_ended().await;
        if workspaces.per_user() {
            workspaces.release_idle(idle, tokio::time::Instant::now());
        }
    }
}

/// Answers a connection the descriptor limit has no room for with a 503 that names
/// the limit, and closes it.
fn turn_away(stream: tokio::net::TcpStream, limit: usize) {
    let text = format!(
        "Service Unavailable: the open-file limit (RLIMIT_NOFILE {limit}) is reached; retry once sessions have ended"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.try_write(answer.as_bytes());
    tracing::debug!("a connection is turned away: the open-file limit is reached");
}

/// One connection's requests, each through the gate, until it closes or `ended`. A
/// stranger is ended when it is crowded out or has not sent an authenticated request
/// within [`HEADER_TIMEOUT`].
async fn serve_connection(
    stream: tokio::net::TcpStream,
    gate: Arc<Gate>,
    connection: Arc<Connection>,
    ended: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let crowded_out = connection.stranger.evicted.clone();
    let service = {
        let connection = connection.clone();
        hyper::service::service_fn(move |request| {
            let (gate, connection) = (gate.clone(), connection.clone());
            async move {
                if gate.authenticated(&request) && !connection.trust() {
                    return Ok(plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Service Unavailable: too many connections; retry",
                    ));
                }
                Ok::<_, Infallible>(gate.handle(request).await)
            }
        })
    };
    let serving = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    // Pending for good once the connection is trusted.
    let untrusted = async {
        tokio::select! {
            biased;
            () = connection.stranger.trusted.cancelled() => std::future::pending().await,
            () = crowded_out.cancelled() => {}
            () = tokio::time::sleep(HEADER_TIMEOUT) => {}
        }
    };
    tokio::select! {
        result = serving => if let Err(e) = result {
            tracing::debug!(error = %e, "connection ended");
        },
        () = ended.cancelled() => {}
        () = untrusted => tracing::debug!("a connection ended before an authenticated request"),
    }
    connection.strangers.forget(&connection.stranger);
}

/// A connection and what bounds it: its place among the strangers until it is
/// trusted, then a permit among the trusted connections.
struct Connection {
    stranger: Stranger,
    strangers: Arc<Strangers>,
    trusted: Arc<tokio::sync::Semaphore>,
    permit: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
}

impl Connection {
    /// The connection sent an authenticated request: it leaves the strangers for the
    /// trusted connections; false when those are full.
    fn trust(&self) -> bool {
        let mut permit = self.permit.lock().unwrap_or_else(|e| e.into_inner());
        if permit.is_some() {
            return true;
        }
        let Ok(taken) = self.trusted.clone().try_acquire_owned() else {
            return false;
        };
        *permit = Some(taken);
        self.stranger.trusted.cancel();
        self.strangers.forget(&self.stranger);
        true
    }
}

/// A connection's place among the strangers.
struct Stranger {
    id: u64,
    peer: std::net::IpAddr,
    /// Cancelled when newer strangers crowd it out.
    evicted: CancellationToken,
    /// Cancelled when it sent an authenticated request.
    trusted: CancellationToken,
}

/// The connections that have not sent an authenticated request yet, bounded in all
/// and per peer address, separately from the trusted ones: strangers cannot crowd out
/// users, only each other.
struct Strangers {
    max: usize,
    kept: Mutex<StrangersKept>,
}

#[derive(Default)]
struct StrangersKept {
    next: u64,
    /// Each stranger's peer and eviction, oldest first.
    by_age: std::collections::BTreeMap<u64, (std::net::IpAddr, CancellationToken)>,
    by_peer: HashMap<std::net::IpAddr, std::collections::VecDeque<u64>>,
}

impl Strangers {
    fn new(max: usize) -> Strangers {
        Strangers {
            max,
            kept: Mutex::new(StrangersKept::default()),
        }
    }

    /// A new stranger from `peer`: that peer's oldest is ended when it has
    /// [`MAX_STRANGERS_PER_PEER`], the oldest of all when there are `max`.
    fn admit(&self, peer: std::net::IpAddr) -> Stranger {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let mine = kept.by_peer.get(&peer).map_or(0, |ids| ids.len());
        if mine >= MAX_STRANGERS_PER_PEER
            && let Some(oldest) = kept.by_peer.get(&peer).and_then(|ids| ids.front().copied())
        {
            kept.evict(oldest);
        }
        if kept.by_age.len() >= self.max
            && let Some((&oldest, _)) = kept.by_age.first_key_value()
        {
            kept.evict(oldest);
        }
        let id = kept.next;
        kept.next += 1;
        let evicted = CancellationToken::new();
        kept.by_age.insert(id, (peer, evicted.clone()));
        kept.by_peer.entry(peer).or_default().push_back(id);
        Stranger {
            id,
            peer,
            evicted,
            trusted: CancellationToken::new(),
        }
    }

    /// `stranger` is one no longer (trusted, or closed).
    fn forget(&self, stranger: &Stranger) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.by_age.remove(&stranger.id).is_some() {
            kept.unlist(stranger.peer, stranger.id);
        }
    }
}

impl StrangersKept {
    fn evict(&mut self, id: u64) {
        if let Some((peer, evicted)) = self.by_age.remove(&id) {
            evicted.cancel();
            self.unlist(peer, id);
        }
    }

    fn unlist(&mut self, peer: std::net::IpAddr, id: u64) {
        if let Some(ids) = self.by_peer.get_mut(&peer) {
            ids.retain(|&other| other != id);
            if ids.is_empty() {
                self.by_peer.remove(&peer);
            }
        }
    }
}

/// [`MAX_STRANGERS`], or a quarter of the open-file limit when that is less: strangers
/// never take the descriptors that users and their commands need.
fn max_strangers() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit to write.
    let files = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX),
        _ => 1024,
    };
    (files / 4).clamp(16, MAX_STRANGERS)
}

/// Stops every running command, logs them, gives their answers a moment to go out,
/// and ends every session: with `--keep-background`, what answered calls left running
/// stays.
async fn shut_down(workspaces: &Workspaces, gate: &Gate) {
    workspaces.shared().stop_calls().await;
    tokio::time::sleep(FLUSH_GRACE).await;
    let keep = workspaces.shared().keeps_background();
    let sessions = std::mem::take(&mut *gate.sessions.lock().unwrap_or_else(|e| e.into_inner()));
    for binding in sessions.values() {
        binding.end_with_server(keep);
    }
}
