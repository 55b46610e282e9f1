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
    users: Mutex<HashMap<String, Held>>,
}

/// A user's server, held while they have sessions and for `--user-idle-secs` after.
#[derive(Debug)]
struct Held {
    server: Server,
    /// Since when no session (nor anything else) uses the server, as seen by the last
    /// sweep ([`Workspaces::release_idle`]).
    unused_since: Option<tokio::time::Instant>,
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
        if let Some(held) = users.get_mut(user) {
            // The user's uid may have been freed (`forge-bash users --remove`) and
            // given to another since: never serve them under the old one.
            let current = match held.server.uid() {
                Some(_) => ids(&self.template.for_user(user))?.map(|ids| ids.uid),
                None => None,
            };
            if current == held.server.uid() {
                held.unused_since = None;
                return Ok(held.server.clone());
            }
            users.remove(user);
        }
        if users.len() >= MAX_OPEN_USERS {
            // Each holds its state dir open: let go of those no session uses.
            users.retain(|_, held| held.server.in_use());
        }
        let config = self.template.for_user(user);
        make_dir(&config.workdir)?;
        let server = open(self.shared.clone(), config)?;
        tracing::info!(user, workdir = %server.workdir().display(), "a user's workspace");
        let held = Held {
            server: server.clone(),
            unused_since: None,
        };
        users.insert(user.to_owned(), held);
        Ok(server)
    }

    /// Users whose workspace is open (0 without per-user paths).
    pub fn users_open(&self) -> usize {
        self.users.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Every workspace open.
    pub fn all(&self) -> Vec<Server> {
        let users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        let held = users.values().map(|held| &held.server);
        self.single.iter().chain(held).cloned().collect()
    }

    /// Users held now (their server open).
    pub fn held(&self) -> usize {
        self.users.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// How long a user no session uses is held (`--user-idle-secs`).
    pub fn user_idle(&self) -> Duration {
        Duration::from_secs(self.template.user_idle_secs)
    }

    /// Releases the users nothing has used for `idle` (as seen by this sweep and the
    /// ones before it, at `now`): their server, its state dir and audit log handles,
    /// its sandbox. Their uid stays in the mapping file; what they left running in the
    /// background is found by its marker, as any command's. The number released.
    pub fn release_idle(&self, idle: Duration, now: tokio::time::Instant) -> usize {
        let released: Vec<Held> = {
            let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
            let mut idle_users = Vec::new();
            for (user, held) in users.iter_mut() {
                if held.server.in_use() {
                    held.unused_since = None;
                } else if now.duration_since(*held.unused_since.get_or_insert(now)) >= idle {
                    idle_users.push(user.clone());
                }
            }
            idle_users
                .iter()
                .filter_map(|user| users.remove(user))
                .collect()
        };
        self.released(released)
    }

    /// Releases every user nothing uses now, however recently: the descriptor limit
    /// needs their room. The number released.
    pub fn release_unused(&self) -> usize {
        let released: Vec<Held> = {
            let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
            let unused: Vec<String> = users
                .iter()
                .filter(|(_, held)| !held.server.in_use())
                .map(|(user, _)| user.clone())
                .collect();
            unused
                .iter()
                .filter_map(|user| users.remove(user))
                .collect()
        };
        self.released(released)
    }

    /// Drops `released` (outside the lock: closing files may wait on the disk) and
    /// gives the memory they freed back to the system.
    fn released(&self, released: Vec<Held>) -> usize {
        let count = released.len();
        if count == 0 {
            return 0;
        }
        let uids: Vec<u32> = released
            .iter()
            .filter_map(|held| held.server.uid())
            .collect();
        drop(released);
        for uid in uids {
            self.shared.release_user(uid);
        }
        tracing::info!(
            released = count,
            held = self.held(),
            "users with no session released"
        );
        crate::server::release_memory_when_idle(&self.shared);
        count
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contain::Containment;

    /// Per-user workspaces under `dir`, their uids (as root) from a mapping file there.
    fn workspaces(dir: &std::path::Path) -> Workspaces {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
        let at = dir.display();
        let first = 30_000_000 + (std::process::id() % 1000) * 100;
        let config = Config::try_parse_from([
            "forge-bash".to_owned(),
            format!("--workdir={at}/ws/{{user}}"),
            format!("--state-dir={at}/state/{{user}}"),
            format!("--user-uids={first}-{}", first + 9),
            format!("--user-uids-file={at}/uids"),
            "--allow-shared-uid".to_owned(),
        ])
        .unwrap();
        let containment = Arc::new(Containment::without_watchdog());
        let shared = Shared::new(config::find_shell(), containment, 4);
        Workspaces::new(shared, config).unwrap()
    }

    /// Waits (up to 5 s) for the retention pass a new workspace starts on a blocking
    /// thread, which holds its server while it runs: then only the list and `server`
    /// (the test's) hold it.
    fn settle(server: &Server) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while server.holders() > 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "a retention pass runs on"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[tokio::test]
    async fn a_user_is_released_once_nothing_used_them_for_the_idle_time() {
        let dir = tempfile::tempdir().unwrap();
        let workspaces = workspaces(dir.path());
        let idle = Duration::from_secs(900);
        let start = tokio::time::Instant::now();
        let session = workspaces.server("alice").unwrap();
        settle(&session);
        let uid = session.uid();
        // In use (a session holds the server): never released, however long.
        assert_eq!(workspaces.release_idle(idle, start), 0);
        assert_eq!(workspaces.release_idle(idle, start + idle * 2), 0);
        drop(session);
        // Unused from the sweep that first sees it so.
        let unused = start + idle * 3;
        assert_eq!(workspaces.release_idle(idle, unused), 0);
        assert_eq!(workspaces.release_idle(idle, unused + idle / 2), 0);
        // A new session starts the wait again.
        drop(workspaces.server("alice").unwrap());
        assert_eq!(workspaces.release_idle(idle, unused + idle), 0);
        assert_eq!(workspaces.held(), 1);
        assert_eq!(workspaces.release_idle(idle, unused + idle * 2), 1);
        assert_eq!(workspaces.held(), 0);
        // Coming back sets the user up again: the same uid, their files there.
        std::fs::write(dir.path().join("ws/alice/kept"), "mine").unwrap();
        let back = workspaces.server("alice").unwrap();
        assert_eq!(back.uid(), uid);
        assert_eq!(workspaces.held(), 1);
        assert!(back.workdir().join("kept").exists());
    }

    #[tokio::test]
    async fn the_descriptor_limit_releases_unused_users_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let workspaces = workspaces(dir.path());
        let kept = workspaces.server("alice").unwrap();
        let bob = workspaces.server("bob").unwrap();
        settle(&kept);
        settle(&bob);
        drop(bob);
        assert_eq!(workspaces.held(), 2);
        assert_eq!(workspaces.release_unused(), 1);
        assert_eq!(workspaces.held(), 1);
        drop(kept);
        assert_eq!(workspaces.release_unused(), 1);
    }
}
