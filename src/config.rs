//! Start-up configuration: command-line flags, each with an environment variable.
//!
//! Built once in `main` and shared read-only by every call. A flag wins over its
//! environment variable, which wins over the default. The command line as a whole
//! (subcommands included) is the binary's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser};

/// Settings of one forge-bash server.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Working directory of every command.
    #[arg(long, env = "FORGE_BASH_WORKDIR", default_value = "/workspace")]
    pub workdir: PathBuf,

    /// Seconds a command may run before its process group is killed.
    #[arg(long, env = "FORGE_BASH_TIMEOUT_SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,

    /// Bytes kept of each of stdout and stderr; reaching it stops the command.
    #[arg(long, env = "FORGE_BASH_MAX_OUTPUT_BYTES", default_value_t = 52_428_800,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_bytes: u64,

    /// Directory of overflow files (cmd-N.txt, cmd-N.bin) and audit logs (audit-YYYY-MM-DD.tsv).
    #[arg(long, env = "FORGE_BASH_STATE_DIR", default_value = "/tmp/forge-bash")]
    pub state_dir: PathBuf,

    /// When the answer shows stderr: `always` (after stdout, whatever the exit code) or
    /// `on-failure` (only after a non-zero exit).
    #[arg(
        long,
        env = "FORGE_BASH_STDERR",
        value_name = "WHEN",
        default_value = "always"
    )]
    pub stderr: crate::present::Stderr,

    /// Bytes of overflow files (cmd-N.txt, cmd-N.bin, stderr-N.txt) kept in the state dir: past it
    /// the oldest are removed at once (the files of the 20 newest answers, those still
    /// being written and those another server made in the last 5 s always stay).
    #[arg(long, env = "FORGE_BASH_OVERFLOW_RETENTION_BYTES", default_value_t = 1 << 30)]
    pub overflow_retention_bytes: u64,

    /// Days an overflow file is kept.
    #[arg(long, env = "FORGE_BASH_OVERFLOW_RETENTION_DAYS", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub overflow_retention_days: u64,

    /// Days of audit logs kept; without it every audit log is kept (they are the record).
    #[arg(long, env = "FORGE_BASH_AUDIT_RETENTION_DAYS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub audit_retention_days: Option<u64>,

    /// Commands run at once; further calls wait in arrival order (their timeout starts
    /// when they start).
    #[arg(long, env = "FORGE_BASH_MAX_CONCURRENT", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent: u32,

    /// Processes one call may have at once, where a `pids` cgroup controller is at hand:
    /// a fork bomb stops there, and later calls still run.
    #[arg(long, env = "FORGE_BASH_MAX_PROCESSES", default_value_t = crate::contain::DEFAULT_MAX_PROCESSES,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_processes: u32,

    /// Memory all of one user's commands may hold at once (every call and background
    /// job of the user): bytes, or with a K, M or G suffix; `0` for no bound. By
    /// default half of what the server may use (its cgroup's limit, else the machine's
    /// memory). A command that reaches it is killed and its call says so.
    #[arg(long, env = "FORGE_BASH_MAX_MEMORY", value_name = "SIZE")]
    pub max_memory: Option<crate::contain::limits::Size>,

    /// Cores all of one user's commands may use at once (cgroup `cpu.max`), e.g. `1.5`;
    /// by default, no bound beyond an equal share with the other users.
    #[arg(long, env = "FORGE_BASH_MAX_CPU", value_name = "CORES", value_parser = parse_cores)]
    pub max_cpu: Option<f64>,

    /// Let background jobs of answered calls outlive the server. By default, when the
    /// server stops (end of input, SIGTERM, SIGINT, SIGHUP, SIGQUIT, or its death),
    /// every process any call started is ended.
    #[arg(long, env = "FORGE_BASH_KEEP_BACKGROUND", value_parser = clap::builder::BoolishValueParser::new(),
          action = clap::ArgAction::SetTrue)]
    pub keep_background: bool,

    /// Variables of /proc/1/environ not to inject: comma-separated names with `*` and
    /// `?` globs (the flag may be repeated). Wins over --env-include.
    #[arg(
        long,
        env = "FORGE_BASH_ENV_EXCLUDE",
        value_name = "GLOBS",
        value_delimiter = ','
    )]
    pub env_exclude: Vec<String>,

    /// When set, only the variables of /proc/1/environ whose names match are injected:
    /// comma-separated names with `*` and `?` globs (the flag may be repeated).
    #[arg(
        long,
        env = "FORGE_BASH_ENV_INCLUDE",
        value_name = "GLOBS",
        value_delimiter = ','
    )]
    pub env_include: Vec<String>,

    /// Run every command under a Landlock sandbox: reads confined to the system's
    /// directories, the workdir, the state dir and the --readable paths; writes to the
    /// workdir, a private temp dir (STATE_DIR/tmp, the commands' TMPDIR) and the
    /// --writable paths; the state dir is read-only to commands. `--sandbox` refuses to start where the
    /// kernel cannot enforce it; `--sandbox=best-effort` warns and applies what it can.
    #[arg(long, env = "FORGE_BASH_SANDBOX", value_name = "MODE", num_args = 0..=1,
          require_equals = true, default_missing_value = "on", default_value = "off")]
    pub sandbox: crate::sandbox::Mode,

    /// With the sandbox: TCP for commands. `allow`; `deny` refuses connect and bind;
    /// ports (`443,80`) allow connect to those ports only, and bind to none.
    #[arg(
        long,
        env = "FORGE_BASH_NETWORK",
        value_name = "allow|deny|PORTS",
        default_value = "allow"
    )]
    pub network: crate::sandbox::Network,

    /// With the sandbox: unix sockets for commands. `deny` refuses making any (a pair
    /// from socketpair() still works), so no daemon's socket whose path is known (another
    /// user's tmux, a credential cache, a database) can be reached; `allow` lets commands
    /// connect to any socket the server's user can.
    #[arg(
        long,
        env = "FORGE_BASH_UNIX_SOCKETS",
        value_name = "deny|allow",
        default_value = "deny"
    )]
    pub unix_sockets: crate::sandbox::UnixSockets,

    /// With the sandbox: more paths commands may write under (comma-separated; the
    /// flag may be repeated).
    #[arg(
        long,
        env = "FORGE_BASH_WRITABLE",
        value_name = "PATH",
        value_delimiter = ','
    )]
    pub writable: Vec<PathBuf>,

    /// With the sandbox: more paths commands may read (comma-separated; the flag may be
    /// repeated). Reads are otherwise confined to the system's directories, the
    /// workdir, the state dir and the temp dir.
    #[arg(
        long,
        env = "FORGE_BASH_READABLE",
        value_name = "PATH",
        value_delimiter = ','
    )]
    pub readable: Vec<PathBuf>,

    /// Make the workdir (and its parents) at start-up when it is missing, mode 0700:
    /// for a per-user workdir such as /workspace/{{LIBRECHAT_USER_ID}}.
    #[arg(long, env = "FORGE_BASH_CREATE_WORKDIR",
          value_parser = clap::builder::BoolishValueParser::new(),
          action = clap::ArgAction::SetTrue)]
    pub create_workdir: bool,

    /// Serve MCP over Streamable HTTP at `http://ADDR:PORT/mcp` instead of stdio. A
    /// bearer token is required: FORGE_BASH_HTTP_TOKEN or --http-token-file. With
    /// `{user}` in --workdir and --state-dir, each session works in the directories of
    /// the user its `X-User-ID` header names.
    #[arg(long, env = "FORGE_BASH_HTTP", value_name = "ADDR:PORT")]
    pub http: Option<std::net::SocketAddr>,

    /// A file holding the HTTP bearer token (its first line). The token is never a flag
    /// value, which `ps` would show.
    #[arg(long, env = "FORGE_BASH_HTTP_TOKEN_FILE", value_name = "PATH")]
    pub http_token_file: Option<PathBuf>,

    /// Serve HTTP without a token: refused unless --http is a loopback address.
    #[arg(long, env = "FORGE_BASH_HTTP_INSECURE_NO_TOKEN",
          value_parser = clap::builder::BoolishValueParser::new(),
          action = clap::ArgAction::SetTrue)]
    pub http_insecure_no_token: bool,

    /// Host names (or host:port) HTTP requests may name in their `Host` header, against
    /// DNS rebinding (comma-separated; the flag may be repeated). By default, loopback
    /// names only: `localhost`, `127.0.0.1`, `::1`.
    #[arg(
        long,
        env = "FORGE_BASH_HTTP_ALLOWED_HOST",
        value_name = "HOST",
        value_delimiter = ','
    )]
    pub http_allowed_host: Vec<String>,

    /// Seconds an HTTP session may stay idle before it ends (its background jobs with
    /// it). Never less than the command timeout plus 5 s, so a running command
    /// does not make its session idle.
    #[arg(long, env = "FORGE_BASH_HTTP_SESSION_IDLE_SECS", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_session_idle_secs: u64,

    /// HTTP sessions open at once, all users together; past it a new session is refused
    /// (503). One user has at most 16: their 17th ends their oldest.
    #[arg(long, env = "FORGE_BASH_HTTP_MAX_SESSIONS", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub http_max_sessions: u32,

    /// Seconds after a user's last HTTP session ended (closed or expired) before what
    /// the server holds for them is released: their audit log and state dir handles,
    /// their server, its sandbox. Their uid stays theirs; their next session sets them
    /// up again.
    #[arg(long, env = "FORGE_BASH_USER_IDLE_SECS", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub user_idle_secs: u64,

    /// Seconds an HTTP server drains on SIGTERM: no new sessions (503, `/readyz` 503),
    /// running calls go on to their end for up to this long, then what is left is
    /// stopped. A second stop signal stops at once. 0 stops at once; stdio always does.
    /// The default stays under Kubernetes' 30 s termination grace.
    #[arg(long, env = "FORGE_BASH_SHUTDOWN_GRACE_SECS", default_value_t = 25)]
    pub shutdown_grace_secs: u64,

    /// Serve `/metrics` (Prometheus text format) without a token on this address, for
    /// a scraper inside the cluster; on the --http address it needs the token.
    #[arg(long, env = "FORGE_BASH_METRICS", value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,

    /// The user this stdio server serves (1 to 64 of `A-Z a-z 0-9 . _ -`): LibreChat's
    /// per-user registration gives `{{LIBRECHAT_USER_ID}}`. `{user}` in --workdir and
    /// --state-dir becomes the name; a root server runs the user's commands under a
    /// uid of their own (--user-uids). Over --http, `X-User-ID` names each session's.
    #[arg(long, env = "FORGE_BASH_USER", value_name = "NAME")]
    pub user: Option<String>,

    /// The uids (and gids, the same numbers) a root server gives its users, one each,
    /// as `FIRST-LAST`. The default is above the 16-bit ids of system accounts, human
    /// users and `nobody` (LibreChat's `node` is 1000), and below 100000, where
    /// useradd's subordinate ranges (/etc/subuid) start.
    #[arg(
        long,
        env = "FORGE_BASH_USER_UIDS",
        value_name = "FIRST-LAST",
        default_value = "70000-99999"
    )]
    pub user_uids: crate::users::Range,

    /// The file that maps users to their uids: shared by every server on the host,
    /// root's, locked while a uid is given out, so that a user keeps theirs across
    /// restarts and no two users ever share one.
    #[arg(
        long,
        env = "FORGE_BASH_USER_UIDS_FILE",
        value_name = "PATH",
        default_value = "/etc/forge-bash/uids"
    )]
    pub user_uids_file: PathBuf,

    /// Without users: a root server runs every command as this uid (and gid, by
    /// default the uid), without supplementary groups.
    #[arg(long, env = "FORGE_BASH_RUN_AS", value_name = "UID[:GID]")]
    pub run_as: Option<crate::users::Ids>,

    /// Serve `{user}` paths on a server that is not root without --sandbox: every
    /// user's commands then run as the server's uid and can reach each other's files.
    /// Refused without this flag; with it, a warning is logged.
    #[arg(long, env = "FORGE_BASH_ALLOW_SHARED_UID",
          value_parser = clap::builder::BoolishValueParser::new(),
          action = clap::ArgAction::SetTrue)]
    pub allow_shared_uid: bool,

    /// Seconds after which a call still running is answered with what it wrote so far
    /// and the file the rest goes to, for clients that give up on long calls; the
    /// command goes on under its timeout. Off by default.
    #[arg(long, env = "FORGE_BASH_YIELD_AFTER", value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub yield_after: Option<u64>,

    /// Milliseconds between progress notifications for calls that ask for them.
    #[arg(long, env = "FORGE_BASH_PROGRESS_INTERVAL_MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..), hide = true)]
    pub progress_interval_ms: u64,
}

impl Config {
    /// The settings in command-line words (the first is the program's name), with the
    /// environment variables, as the server reads them.
    pub fn try_parse_from<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        #[derive(Parser)]
        struct Settings {
            #[command(flatten)]
            config: Config,
        }
        Settings::try_parse_from(args).map(|settings| settings.config)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    pub fn retention(&self) -> crate::retention::Retention {
        crate::retention::Retention {
            overflow_bytes: self.overflow_retention_bytes,
            overflow_age: Duration::from_secs(self.overflow_retention_days.saturating_mul(86_400)),
            audit_days: self.audit_retention_days,
        }
    }

    pub fn yield_after(&self) -> Option<Duration> {
        self.yield_after.map(Duration::from_secs)
    }

    pub fn progress_interval(&self) -> Duration {
        Duration::from_millis(self.progress_interval_ms)
    }

    /// What one user's commands may consume (`--max-memory`, `--max-cpu`).
    pub fn limits(&self) -> crate::contain::Limits {
        crate::contain::Limits::new(self.max_memory, self.max_cpu)
    }
}

/// `--max-cpu`: a positive number of cores, at most 4096.
fn parse_cores(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(cores) if cores > 0.0 && cores <= 4096.0 => Ok(cores),
        _ => Err(format!("{s:?}: cores are a number above 0 (e.g. 1 or 1.5)")),
    }
}

pub use crate::users::USER;

/// The uid and gid of `nobody`: what a root server's sandboxed commands run as when
/// nothing names a uid and the workdir is root's ([`Config::with_sandbox_uid`]).
pub const SANDBOX_IDS: crate::users::Ids = crate::users::Ids {
    uid: 65534,
    gid: 65534,
};

pub use crate::users::valid_user;

/// Why the configuration cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{flag} {path}: it still holds a placeholder ({{{{…}}}}) that the client did not substitute"
    )]
    Placeholder { flag: &'static str, path: String },
    #[error("{flag} {path}: the path must be absolute")]
    Relative { flag: &'static str, path: String },
    #[error(
        "{flag} {path}: {{user}} is for --http, where each session names its user, or for --user over stdio; otherwise give each user's path"
    )]
    UserWithoutHttp { flag: &'static str, path: String },
    #[error("--user {0:?}: a user name is 1 to 64 of A-Z a-z 0-9 . _ - (and not . or ..)")]
    BadUser(String),
    #[error("--user is for stdio; over --http, each session's X-User-ID names its user")]
    UserOverHttp,
    #[error(
        "--workdir {workdir} and --state-dir {state_dir}: {{user}} is in only one of them, so users would share the other (HOME, TMPDIR, overflow files and the audit log are in the state dir); put {{user}} in both"
    )]
    UserInOnePath { workdir: String, state_dir: String },
    #[error(
        "--http-insecure-no-token with {{user}} paths: any user's command could connect to the server on loopback and name another user in X-User-ID; give a token (FORGE_BASH_HTTP_TOKEN or --http-token-file)"
    )]
    InsecureWithUsers,
    #[error(
        "--http-insecure-no-token with --sandbox: a sandboxed command could connect to the server on loopback and run commands through it; give a token (FORGE_BASH_HTTP_TOKEN or --http-token-file)"
    )]
    InsecureWithSandbox,
    #[error(
        "{{user}} paths on a server that is not root (uid {uid}) without --sandbox: every user's commands would run as uid {uid} and reach each other's files, processes and HOME; add --sandbox, run the server as root (each user then gets a uid of their own, --user-uids), or accept it with --allow-shared-uid"
    )]
    SharedUid { uid: u32 },
    #[error(
        "--run-as is for a server without users; with users, each gets a uid of their own (--user-uids)"
    )]
    RunAsWithUsers,
    #[error("--run-as needs a server running as root (this one is uid {uid})")]
    RunAsNotRoot { uid: u32 },
    #[error(
        "--workdir {workdir} and --state-dir {state_dir}: one user's workdir could be another's (or their own) state dir, hold it or lie inside it (a user may be named `bob.st` or `st-bob`), and take over that user's HOME, overflow files and audit log; give each its own fixed parent, such as /workspace/{{user}} and /var/lib/forge-bash/{{user}}"
    )]
    Overlap { workdir: String, state_dir: String },
    #[error(
        "{flag} {path}: {others} could write {dir} (owner {owner}, mode {mode:o}), so one user could make another's directory there before them; choose a parent only the server may write (chmod go-w,o-t {dir}, or another path)"
    )]
    ParentWritable {
        flag: &'static str,
        path: String,
        others: crate::users::Others,
        dir: String,
        owner: u32,
        mode: u32,
    },
    #[error(
        "{flag} {path}: {dir} is under --writable {writable}, where sandboxed commands may write, so one user could make another's directory there before them; choose a parent outside the --writable paths"
    )]
    ParentSandboxWritable {
        flag: &'static str,
        path: String,
        dir: String,
        writable: String,
    },
    #[error("{flag} {path}: cannot make its parent {dir}: {source}")]
    Parent {
        flag: &'static str,
        path: String,
        dir: String,
        source: std::io::Error,
    },
    #[error("--create-workdir {path}: {source}")]
    CreateWorkdir {
        path: String,
        source: std::io::Error,
    },
}

impl Config {
    /// Refuses paths a misconfigured client would hand over: relative ones, and ones
    /// that still hold a `{{…}}` placeholder (LibreChat substitutes `{{LIBRECHAT_USER_ID}}`
    /// in `args` and `env` only when it knows the user).
    pub fn check_paths(&self) -> Result<(), Error> {
        let single = [
            ("--workdir", &self.workdir),
            ("--state-dir", &self.state_dir),
        ];
        let many = (self.writable.iter().map(|p| ("--writable", p)))
            .chain(self.readable.iter().map(|p| ("--readable", p)));
        for (flag, path) in single.into_iter().chain(many) {
            let shown = path.display().to_string();
            if shown.contains("{{") && shown.contains("}}") {
                return Err(Error::Placeholder { flag, path: shown });
            }
            if !path.is_absolute() {
                return Err(Error::Relative { flag, path: shown });
            }
            let named = self.http.is_some() || self.user.is_some();
            if shown.contains(USER) && (!named || !matches!(flag, "--workdir" | "--state-dir")) {
                return Err(Error::UserWithoutHttp { flag, path: shown });
            }
        }
        Ok(())
    }

    /// Refuses the configurations that would let users reach each other without a word
    /// (the server's effective uid is `euid`); `Ok(true)` when `--allow-shared-uid`
    /// accepted users sharing the server's uid, which deserves a warning.
    pub fn check_safety(&self, euid: u32) -> Result<bool, Error> {
        if let Some(user) = &self.user {
            if self.http.is_some() {
                return Err(Error::UserOverHttp);
            }
            if user.contains("{{") && user.contains("}}") {
                let (flag, path) = ("--user", user.clone());
                return Err(Error::Placeholder { flag, path });
            }
            if !valid_user(user) {
                return Err(Error::BadUser(user.clone()));
            }
        }
        let holds = |path: &Path| path.to_string_lossy().contains(USER);
        if holds(&self.workdir) != holds(&self.state_dir) {
            return Err(Error::UserInOnePath {
                workdir: self.workdir.display().to_string(),
                state_dir: self.state_dir.display().to_string(),
            });
        }
        if self.http.is_some() && self.http_insecure_no_token {
            if self.per_user() {
                return Err(Error::InsecureWithUsers);
            }
            if self.sandbox != crate::sandbox::Mode::Off {
                return Err(Error::InsecureWithSandbox);
            }
        }
        if self.run_as.is_some() {
            if self.per_user() || self.user.is_some() {
                return Err(Error::RunAsWithUsers);
            }
            if euid != 0 {
                return Err(Error::RunAsNotRoot { uid: euid });
            }
        }
        let shared = self.per_user() && euid != 0 && self.sandbox == crate::sandbox::Mode::Off;
        if shared && !self.allow_shared_uid {
            return Err(Error::SharedUid { uid: euid });
        }
        Ok(shared)
    }

    /// Refuses per-user paths that let one user reach another's directories: templates
    /// under which a workdir can be a state dir, hold one or lie in one (any two
    /// names, the same one included), and a fixed parent of a `{user}` path that
    /// commands could write. A missing fixed parent is made first (mode 0711, as the
    /// workspace would), so that none is left for a user to make.
    pub fn check_user_paths(&self, euid: u32) -> Result<(), Error> {
        let holds = |path: &Path| path.to_string_lossy().contains(USER);
        if !holds(&self.workdir) || !holds(&self.state_dir) {
            return Ok(());
        }
        if templates_meet(&self.workdir, &self.state_dir) {
            return Err(Error::Overlap {
                workdir: self.workdir.display().to_string(),
                state_dir: self.state_dir.display().to_string(),
            });
        }
        let sandboxed = self.sandbox != crate::sandbox::Mode::Off;
        let others = self.others(euid);
        for (flag, path) in [
            ("--workdir", &self.workdir),
            ("--state-dir", &self.state_dir),
        ] {
            let shown = path.display().to_string();
            let parent = fixed_parent(path);
            if sandboxed {
                let real = parent.canonicalize().unwrap_or_else(|_| parent.clone());
                if let Some(writable) = self.writable.iter().find(|w| {
                    real.starts_with(w.canonicalize().unwrap_or_else(|_| w.to_path_buf()))
                }) {
                    return Err(Error::ParentSandboxWritable {
                        flag,
                        path: shown,
                        dir: parent.display().to_string(),
                        writable: writable.display().to_string(),
                    });
                }
            }
            let Some(others) = others else {
                continue;
            };
            crate::users::make_parents(&parent.join(USER)).map_err(|source| Error::Parent {
                flag,
                path: shown.clone(),
                dir: parent.display().to_string(),
                source,
            })?;
            if let Some((dir, meta)) = others.could_replace(&parent.join(USER)) {
                use std::os::unix::fs::MetadataExt;
                return Err(Error::ParentWritable {
                    flag,
                    path: shown,
                    others,
                    dir: dir.display().to_string(),
                    owner: meta.uid(),
                    mode: meta.mode() & 0o7777,
                });
            }
        }
        Ok(())
    }

    /// True when the workdir or the state dir is per user (`{user}`).
    pub fn per_user(&self) -> bool {
        [&self.workdir, &self.state_dir]
            .iter()
            .any(|path| path.to_string_lossy().contains(USER))
    }

    /// Whether each user's commands run under a uid of their own: a root server that
    /// knows its users (`{user}` paths, or `--user`).
    pub fn uid_per_user(&self, euid: u32) -> bool {
        euid == 0 && (self.per_user() || self.user.is_some())
    }

    /// The uids commands run under when they are not the server's (`euid`): the
    /// users' own on a root server that knows them, or `--run-as`.
    pub fn others(&self, euid: u32) -> Option<crate::users::Others> {
        if self.uid_per_user(euid) {
            Some(crate::users::Others::Users(self.user_uids))
        } else {
            self.run_as.map(crate::users::Others::RunAs)
        }
    }

    /// These settings with the uid a root server's sandboxed commands run as when
    /// nothing names one: with `--sandbox`, no users and no `--run-as`, commands would
    /// be uid 0 without capabilities, which still owns every root-owned file (reads
    /// `/etc/shadow`, changes the mode of `/etc/passwd`). They run as the workdir's
    /// owner when that is not root, else as [`SANDBOX_IDS`] (`nobody`).
    pub fn with_sandbox_uid(mut self, euid: u32) -> Config {
        let unnamed = euid == 0
            && self.sandbox != crate::sandbox::Mode::Off
            && self.run_as.is_none()
            && !self.uid_per_user(euid);
        if unnamed {
            use std::os::unix::fs::MetadataExt;
            let ids = match std::fs::metadata(&self.workdir) {
                Ok(meta) if meta.uid() != 0 => crate::users::Ids {
                    uid: meta.uid(),
                    gid: meta.gid(),
                },
                _ => SANDBOX_IDS,
            };
            tracing::info!(
                uid = ids.uid,
                gid = ids.gid,
                "a root server with --sandbox and no users: commands run as {} (--run-as UID[:GID] names another)",
                if ids == SANDBOX_IDS {
                    "nobody"
                } else {
                    "the workdir's owner"
                }
            );
            self.run_as = Some(ids);
        }
        self
    }

    /// These settings for `user`: `{user}` in the workdir and state dir replaced by
    /// the name (which [`valid_user`] accepted), and the user named.
    pub fn for_user(&self, user: &str) -> Config {
        let replace = |path: &Path| PathBuf::from(path.to_string_lossy().replace(USER, user));
        Config {
            workdir: replace(&self.workdir),
            state_dir: replace(&self.state_dir),
            user: Some(user.to_owned()),
            ..self.clone()
        }
    }

    /// With `--create-workdir`, makes a missing workdir, mode 0700 (its missing
    /// parents 0711, so that a user's uid may pass through them).
    pub fn create_workdir(&self) -> Result<(), Error> {
        use std::os::unix::fs::DirBuilderExt;
        if !self.create_workdir || self.workdir.is_dir() {
            return Ok(());
        }
        crate::users::make_parents(&self.workdir)
            .and_then(|()| std::fs::DirBuilder::new().mode(0o700).create(&self.workdir))
            .map_err(|source| Error::CreateWorkdir {
                path: self.workdir.display().to_string(),
                source,
            })
    }
}

/// The directory a per-user path's users' entries are made in: its components before
/// the first that holds `{user}`.
fn fixed_parent(path: &Path) -> PathBuf {
    path.components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains(USER))
        .collect()
}

/// Whether some user's path of template `a` can be some user's (the same or another)
/// path of template `b`, or one hold the other: component by component, as far as the
/// shorter goes, each pair can name the same directory.
fn templates_meet(a: &Path, b: &Path) -> bool {
    let words = |path: &Path| -> Vec<String> {
        path.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let (a, b) = (words(a), words(b));
    a.iter().zip(&b).all(|(a, b)| names_meet(a, b))
}

/// One element of a path component's pattern: a character, or where `{user}` stood,
/// one name character (`One`) then any number more (`More`).
#[derive(Clone, Copy, PartialEq)]
enum Piece {
    Char(char),
    One,
    More,
}

/// Whether one directory name matches both `a` and `b`, each `{user}` in them standing
/// for any user name (1 or more of `A-Z a-z 0-9 . _ -`): the two patterns' automata
/// run side by side until both can end together.
fn names_meet(a: &str, b: &str) -> bool {
    fn pieces(text: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        for (n, part) in text.split(USER).enumerate() {
            if n > 0 {
                out.extend([Piece::One, Piece::More]);
            }
            out.extend(part.chars().map(Piece::Char));
        }
        out
    }
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let fits = |x: Piece, y: Piece| match (x, y) {
        (Piece::Char(c), Piece::Char(d)) => c == d,
        (Piece::Char(c), _) | (_, Piece::Char(c)) => name_char(c),
        _ => true,
    };
    let (a, b) = (pieces(a), pieces(b));
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![(0, 0)];
    while let Some((i, j)) = todo.pop() {
        if !seen.insert((i, j)) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        // `More` may match nothing, or one more name character and stay.
        if a.get(i) == Some(&Piece::More) {
            todo.push((i + 1, j));
        }
        if b.get(j) == Some(&Piece::More) {
            todo.push((i, j + 1));
        }
        if let (Some(&x), Some(&y)) = (a.get(i), b.get(j))
            && fits(x, y)
        {
            let next = |k: usize, p: Piece| if p == Piece::More { k } else { k + 1 };
            todo.push((next(i, x), next(j, y)));
        }
    }
    false
}

/// The shell every command runs in: `bash` found on `PATH`, else `/bin/sh`.
pub fn find_shell() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bash"))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        Config::try_parse_from(args)
    }

    #[test]
    fn defaults_are_the_seeds() {
        let config = parse(&["forge-bash"]).unwrap();
        // The environment of the test run may set these; only check when it does not.
        if std::env::var_os("FORGE_BASH_WORKDIR").is_none() {
            assert_eq!(config.workdir, PathBuf::from("/workspace"));
        }
        if std::env::var_os("FORGE_BASH_TIMEOUT_SECS").is_none() {
            assert_eq!(config.timeout_secs, 300);
        }
        if std::env::var_os("FORGE_BASH_MAX_OUTPUT_BYTES").is_none() {
            assert_eq!(config.max_output_bytes, 50 * 1024 * 1024);
        }
        if std::env::var_os("FORGE_BASH_STATE_DIR").is_none() {
            assert_eq!(config.state_dir, PathBuf::from("/tmp/forge-bash"));
        }
    }

    #[test]
    fn flags_parse() {
        let config = parse(&[
            "forge-bash",
            "--workdir",
            "/w",
            "--timeout-secs",
            "7",
            "--max-output-bytes",
            "1024",
            "--state-dir",
            "/s",
        ])
        .unwrap();
        assert_eq!(config.workdir, PathBuf::from("/w"));
        assert_eq!(config.timeout_secs, 7);
        assert_eq!(config.max_output_bytes, 1024);
        assert_eq!(config.state_dir, PathBuf::from("/s"));
    }

    #[test]
    fn sandbox_flags() {
        use crate::sandbox::{Mode, Network};
        let plain = parse(&["forge-bash"]).unwrap();
        if std::env::var_os("FORGE_BASH_SANDBOX").is_none() {
            assert_eq!(plain.sandbox, Mode::Off);
        }
        assert_eq!(
            parse(&["forge-bash", "--sandbox"]).unwrap().sandbox,
            Mode::Strict
        );
        assert_eq!(
            parse(&["forge-bash", "--sandbox=best-effort"])
                .unwrap()
                .sandbox,
            Mode::BestEffort
        );
        assert!(parse(&["forge-bash", "--sandbox=maybe"]).is_err());
        let config = parse(&[
            "forge-bash",
            "--sandbox",
            "--network",
            "deny",
            "--writable",
            "/a,/b",
            "--writable=/c",
        ])
        .unwrap();
        assert_eq!(config.network, Network::Deny);
        assert_eq!(
            config.writable,
            [PathBuf::from("/a"), "/b".into(), "/c".into()]
        );
    }

    #[test]
    fn env_globs_are_comma_separated_and_repeatable() {
        let config = parse(&[
            "forge-bash",
            "--env-exclude",
            "JWT_*,*_API_KEY",
            "--env-exclude=MONGO_URI",
            "--env-include",
            "A?",
        ])
        .unwrap();
        assert_eq!(config.env_exclude, ["JWT_*", "*_API_KEY", "MONGO_URI"]);
        assert_eq!(config.env_include, ["A?"]);
    }

    #[test]
    fn zero_timeout_is_refused() {
        assert!(parse(&["forge-bash", "--timeout-secs", "0"]).is_err());
    }

    #[test]
    fn templates_that_let_one_users_path_be_anothers_meet() {
        let meet = |a: &str, b: &str| templates_meet(Path::new(a), Path::new(b));
        for (a, b) in [
            ("/d/{user}", "/d/{user}.st"),
            ("/d/{user}", "/d/st-{user}"),
            ("/d/{user}", "/d/{user}/state"),
            ("/d/{user}/work", "/d/{user}"),
            ("/d/{user}", "/d/{user}"),
            ("/d/x{user}", "/d/{user}y"),
            ("/d/{user}-{user}", "/d/a-{user}"),
        ] {
            assert!(meet(a, b), "{a} {b}");
            assert!(meet(b, a), "{b} {a}");
        }
        for (a, b) in [
            ("/workspace/{user}", "/var/lib/forge-bash/{user}"),
            ("/d/ws/{user}", "/d/st/{user}"),
            ("/d/ws-{user}", "/d/st-{user}"),
            ("/d/{user}/work", "/d/{user}/state"),
            ("/d/{user}.w", "/d/{user}.s"),
            ("/d/{user}", "/d/a@{user}"),
        ] {
            assert!(!meet(a, b), "{a} {b}");
            assert!(!meet(b, a), "{b} {a}");
        }
        assert_eq!(
            fixed_parent(Path::new("/d/e/st-{user}/x")),
            Path::new("/d/e")
        );
    }

    #[test]
    fn shell_is_found() {
        let shell = find_shell();
        assert!(shell.ends_with("bash") || shell == Path::new("/bin/sh"));
    }
}
