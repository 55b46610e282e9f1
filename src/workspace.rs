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
use crate::users;

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
    #[error(transparent)]
    Uid(#[from] users::Error),
    #[error(transparent)]
    Untraversable(#[from] users::Untraversable),
    #[error(
        "{path}: it belongs to uid {owner}, another user's of --user-uids {range}, so it is not handed to uid {uid}; move it away (its files are not this user's) and the next session makes a fresh one"
    )]
    Taken {
        path: String,
        owner: u32,
        uid: u32,
        range: users::Range,
    },
    #[error("cannot give {path} to uid {uid}: {source}")]
    Own {
        path: String,
        uid: u32,
        source: std::io::Error,
    },
}

/// The server of `config`'s workdir and state dir, sharing `shared`; its state dir
/// gets a retention pass (on the runtime's blocking threads). When its commands run
/// under a uid of their own, the workdir and a private HOME and TMPDIR in the
/// state dir are that uid's, mode 0700; the state dir and its files stay the server's,
/// readable by the uid's group.
pub fn open(shared: Arc<Shared>, config: Config) -> Result<Server, Error> {
    let ids = ids(&config)?;
    if let Some(ids) = ids {
        not_taken(&config, ids)?;
    }
    let state = Arc::new(StateDir::open_for(&config.state_dir, ids.map(|i| i.gid)));
    let identity = match ids {
        Some(ids) => Some(give(&config, &state, ids)?),
        None => None,
    };
    let sandbox = prepare_sandbox(&config, &state, identity.is_some())?;
    let server = Server::sharing_as(shared, config, sandbox, state, identity);
    server.prune_state(Vec::new());
    Ok(server)
}

/// The uid and gid `config`'s commands run as, when not the server's: the user's own
/// (a root server that knows its user), or `--run-as`.
fn ids(config: &Config) -> Result<Option<users::Ids>, Error> {
    if let Some(ids) = config.run_as {
        return Ok(Some(ids));
    }
    match &config.user {
        Some(user) if config.uid_per_user(users::euid()) => {
            let uid = users::uid_of(&config.user_uids_file, config.user_uids, user)?;
            Ok(Some(users::Ids { uid, gid: uid }))
        }
        _ => Ok(None),
    }
}

/// Refuses a workdir or state dir that exists and belongs to another uid of the
/// users' range: one user made it for another (in a parent they could write once), and
/// what it holds is theirs.
fn not_taken(config: &Config, ids: users::Ids) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let Some(users::Others::Users(range)) = config.others(users::euid()) else {
        return Ok(());
    };
    for path in [&config.workdir, &config.state_dir] {
        if let Ok(meta) = std::fs::symlink_metadata(path)
            && meta.uid() != ids.uid
            && users::Others::Users(range).has_uid(meta.uid())
        {
            return Err(Error::Taken {
                path: path.display().to_string(),
                owner: meta.uid(),
                uid: ids.uid,
                range,
            });
        }
    }
    Ok(())
}

/// Gives `ids` their workdir, HOME and TMPDIR, once `ids` can reach them.
fn give(config: &Config, state: &StateDir, ids: users::Ids) -> Result<users::Identity, Error> {
    for path in [&config.workdir, &config.state_dir] {
        users::make_parents(path).map_err(|source| Error::Workdir {
            path: path.display().to_string(),
            source,
        })?;
        users::check_traversable(path, ids)?;
    }
    let owned = |path: &std::path::Path, source| Error::Own {
        path: path.display().to_string(),
        uid: ids.uid,
        source,
    };
    users::own_dir(&config.workdir, ids).map_err(|e| owned(&config.workdir, e))?;
    let private = |name: &str| {
        state
            .subdir_of(name, ids.uid, ids.gid)
            .map_err(|e| owned(&state.path().join(name), e))
    };
    let (temp, home) = (private(sandbox::TEMP_DIR)?, private(sandbox::HOME_DIR)?);
    let mut env = vec![
        ("HOME", home.display().to_string()),
        ("TMPDIR", temp.display().to_string()),
    ];
    if let Some(user) = &config.user {
        env.extend([("USER", user.clone()), ("LOGNAME", user.clone())]);
    }
    tracing::info!(
        user = config.user.as_deref().unwrap_or("-"),
        uid = ids.uid,
        gid = ids.gid,
        "commands run as a uid of their own"
    );
    Ok(users::Identity { ids, env })
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
fn prepare_sandbox(
    config: &Config,
    state: &StateDir,
    made: bool,
) -> Result<Option<Sandbox>, sandbox::Error> {
    let private = |name: &str| match config.sandbox {
        _ if made => Ok(state.path().join(name)),
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
            if template.uid_per_user(users::euid()) {
                check_user_parents(&template)?;
            }
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
            // The user's uid may have been freed (`forge-bash users --remove`) and
            // given to another since: never serve them under the old one.
            let current = match server.uid() {
                Some(_) => ids(&self.template.for_user(user))?.map(|ids| ids.uid),
                None => None,
            };
            if current == server.uid() {
                return Ok(server.clone());
            }
            users.remove(user);
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

    /// Users whose workspace is open (0 without per-user paths).
    pub fn users_open(&self) -> usize {
        self.users.lock().unwrap_or_else(|e| e.into_inner()).len()
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

/// Refuses per-user paths whose fixed part (before `{user}`) a user's uid could not
/// enter: every user would be refused, so the server does not start.
fn check_user_parents(template: &Config) -> Result<(), Error> {
    let first = template.user_uids.first;
    let ids = users::Ids {
        uid: first,
        gid: first,
    };
    for path in [&template.workdir, &template.state_dir] {
        let fixed: std::path::PathBuf = path
            .components()
            .take_while(|part| !part.as_os_str().to_string_lossy().contains(config::USER))
            .collect();
        users::check_traversable(&fixed.join(config::USER), ids)?;
    }
    Ok(())
}

/// Makes a user's workdir, mode 0700, its missing parents mode 0711.
fn make_dir(path: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    let made = users::make_parents(path).and_then(|()| {
        match std::fs::DirBuilder::new().mode(0o700).create(path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        }
    });
    made.map_err(|source| Error::Workdir {
        path: path.display().to_string(),
        source,
    })
}
