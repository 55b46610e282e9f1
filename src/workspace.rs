//! Workspaces: a [`Server`] for each workdir and state dir, with its state dir opened
//! and its sandbox prepared. Stdio serves one workspace; HTTP serves one per user when
//! `--workdir` and `--state-dir` hold `{user}`, all of them sharing one [`Shared`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::{self, Config};
use crate::sandbox::{self, Sandbox};
use crate::server::{Server, Shared};
use crate::state::StateDir;

/// Users' workspaces kept open with no session: each holds its state dir open.
pub const MAX_OPEN_USERS: usize = 1024;

/// Why a workspace cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sandbox(#[from] sandbox::Error),
    #[error("cannot make the workdir {path}: {source}")]
    Workdir {
        path: String,
        source: std::io::Error,
    },
}

/// The server of `config`'s workdir and state dir, sharing `shared`; its state dir
/// gets a retention pass (on the runtime's blocking threads).
pub fn open(shared: Arc<Shared>, config: Config) -> Result<Server, Error> {
    let state = Arc::new(StateDir::open(&config.state_dir));
    let sandbox = prepare_sandbox(&config, &state)?;
    let server = Server::sharing(shared, config, sandbox, state);
    server.prune_state(Vec::new());
    Ok(server)
}

/// Keeps the state dirs of `servers` within their limits, a pass every hour (each had
/// one when it opened).
pub async fn keep_bounded(servers: impl Fn() -> Vec<Server>) {
    let mut hourly = tokio::time::interval(Duration::from_secs(3600));
    hourly.tick().await;
    loop {
        hourly.tick().await;
        for server in servers() {
            server.prune_state(Vec::new());
        }
    }
}

/// The Landlock ruleset, prepared once per workspace; warnings of best-effort mode
/// logged once.
fn prepare_sandbox(config: &Config, state: &StateDir) -> Result<Option<Sandbox>, sandbox::Error> {
    let private = |name: &str| match config.sandbox {
        sandbox::Mode::Off => Ok(state.path().join(name)),
        _ => state
            .subdir(name)
            .map_err(|e| sandbox::Error::Temp(state.path().join(name), e)),
    };
    let (temp, home) = (private(sandbox::TEMP_DIR)?, private(sandbox::HOME_DIR)?);
    let request = sandbox::Request {
        mode: config.sandbox,
        network: &config.network,
        unix_sockets: config.unix_sockets,
        workdir: &config.workdir,
        state_dir: &config.state_dir,
        temp: &temp,
        home: &home,
        writable: &config.writable,
        readable: &config.readable,
    };
    let (sandbox, warnings) = Sandbox::prepare(&request)?;
    for warning in warnings {
        tracing::warn!("sandbox (best effort): {warning}");
    }
    if let Some(sandbox) = &sandbox {
        tracing::info!(workdir = %config.workdir.display(), "sandbox: {sandbox}");
    }
    Ok(sandbox)
}

/// The workspaces of an HTTP server: one for every session, or one per user.
#[derive(Debug)]
pub struct Workspaces {
    template: Config,
    shared: Arc<Shared>,
    /// The one workspace, when the paths hold no `{user}`.
    single: Option<Server>,
    users: Mutex<HashMap<String, Server>>,
}

impl Workspaces {
    /// The workspaces of `template`: its own, or none yet when its paths are per user
    /// (each is made on first use).
    pub fn new(shared: Arc<Shared>, template: Config) -> Result<Workspaces, Error> {
        let single = if template.per_user() {
            None
        } else {
            Some(open(shared.clone(), template.clone())?)
        };
        Ok(Workspaces {
            template,
            shared,
            single,
            users: Mutex::new(HashMap::new()),
        })
    }

    /// True when each user has a workspace of their own.
    pub fn per_user(&self) -> bool {
        self.single.is_none()
    }

    /// What every workspace shares.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The workspace of `user` (a name [`config::valid_user`] accepted), made on
    /// first use: its workdir and state dir (mode 0700), its sandbox. Without per-user
    /// paths, the one workspace, whoever asks.
    pub fn server(&self, user: &str) -> Result<Server, Error> {
        if let Some(single) = &self.single {
            return Ok(single.clone());
        }
        debug_assert!(config::valid_user(user));
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = users.get(user) {
            return Ok(server.clone());
        }
        if users.len() >= MAX_OPEN_USERS {
            // Each holds its state dir open: let go of those no session uses.
            users.retain(|_, server| server.in_use());
        }
        let config = self.template.for_user(user);
        make_dir(&config.workdir)?;
        let server = open(self.shared.clone(), config)?;
        tracing::info!(user, workdir = %server.workdir().display(), "a user's workspace");
        users.insert(user.to_owned(), server.clone());
        Ok(server)
    }

    /// Every workspace open.
    pub fn all(&self) -> Vec<Server> {
        let users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        self.single.iter().chain(users.values()).cloned().collect()
    }

    /// Keeps every open workspace's state dir within its limits ([`keep_bounded`]).
    pub async fn keep_bounded(&self) {
        keep_bounded(|| self.all()).await;
    }
}

fn make_dir(path: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| Error::Workdir {
            path: path.display().to_string(),
            source,
        })
}
