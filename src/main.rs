//! The `forge-bash` binary: configuration, logging to stderr, and the stdio server.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use std::sync::Arc;

use forge_bash::config::{self, Config};
use forge_bash::contain::{self, Containment};
use forge_bash::server::Shared;
use forge_bash::{environ, guard, stdio, workspace};

/// The command line: the server's settings, or a subcommand.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "forge-bash",
    version,
    about = "A stdio MCP server with one tool, run(command): bash for LLM agents.",
    long_about = "A stdio MCP server with one tool, run(command): bash for LLM agents.\n\n\
        Without a subcommand it serves: it speaks newline-delimited JSON-RPC on \
        stdin/stdout. Each call runs `bash -c` in the working directory, refuses rm, \
        bounds what the model sees and writes one audit row. Logs go to stderr (filter \
        them with RUST_LOG)."
)]
struct Cli {
    #[command(flatten)]
    config: Config,

    #[command(subcommand)]
    command: Option<Command>,
}

/// What the binary does instead of serving.
#[derive(Debug, Clone, Subcommand)]
enum Command {
    /// Check a command with the rm guard without running it. Prints `allowed`, or
    /// `blocked: <the simple command that runs rm>`; exits 0 when allowed, 1 when
    /// blocked, 2 on a usage error.
    Check {
        /// The command; several words are joined with spaces. Put `--` before a
        /// command that starts with `-`.
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Show what agents ran: the audit log's rows, filtered, as a table, JSON Lines or
    /// a summary. Exits 1 when the state dir does not exist, 2 on a usage error.
    Audit(forge_bash::audit::view::Query),
    /// The users a root server gave uids to: `NAME UID LAST-SEEN`, from
    /// --user-uids-file; `--remove NAME` frees one's uid (refused while a process runs
    /// under it or their workdir or state dir exists). Exits 1 on refusal.
    Users(forge_bash::users::Admin),
}

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == contain::watchdog::ARG)
    {
        contain::watchdog::run();
        return ExitCode::SUCCESS;
    }
    // Commands run as this user: non-dumpable, the server's /proc entries (its pipes,
    // memory and environment) belong to root, out of their reach. Children are dumpable
    // again after their exec.
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        eprintln!("forge-bash: cannot make the server non-dumpable");
    }
    survive_file_size_limit();
    let Cli { config, command } = Cli::parse();
    match command {
        Some(Command::Check { command }) => check_command(&command.join(" ")),
        Some(Command::Audit(query)) => show_audit(&query),
        Some(Command::Users(admin)) => match admin.run(&mut std::io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("forge-bash users: {e}");
                ExitCode::FAILURE
            }
        },
        None => match start_up(config) {
            Ok((config, token)) => serve(config, token),
            Err(e) => {
                tracing::error!("{e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Injects PID 1's environment, then starts logging; returns the settings as they are
/// with the injected variables, once their paths are checked (and the workdir made,
/// when asked), and the HTTP token taken out of the environment.
fn start_up(config: Config) -> Result<(Config, Option<String>), config::Error> {
    let filter = environ::Filter {
        include: config.env_include,
        exclude: config.env_exclude,
    };
    // SAFETY: nothing has started a thread yet; the runtime is built later.
    let injected = unsafe { environ::inject(&filter) };
    // Parsed again: injected variables may configure the server, as they always could.
    let config = Cli::parse().config;
    // The token is the server's alone: commands inherit the environment, and
    // /proc/<pid>/environ shows the environment the server was started with.
    // SAFETY: still no other thread.
    let token = unsafe { take_token() };
    start_logging();
    tracing::info!(
        injected = injected.injected,
        excluded = injected.excluded,
        source = environ::SOURCE,
        "environment injected"
    );
    config.check_paths()?;
    let euid = forge_bash::users::euid();
    if config.check_safety(euid)? {
        tracing::warn!(
            uid = euid,
            "--allow-shared-uid: every user's commands run as this server's uid, and can reach each other's files, processes and HOME"
        );
    }
    config.check_user_paths(euid)?;
    let config = config.with_sandbox_uid(euid);
    // Over stdio the one user is known now: `{user}` is theirs.
    let config = match (&config.user, config.http) {
        (Some(user), None) => config.for_user(user),
        _ => config,
    };
    // A user's own uid gets a workdir of its own when the workspace opens.
    if !config.per_user() && !config.uid_per_user(euid) && config.run_as.is_none() {
        config.create_workdir()?;
        if !config.workdir.is_dir() {
            tracing::warn!(
                workdir = %config.workdir.display(),
                "working directory does not exist; every call will fail until it does"
            );
        }
    }
    Ok((config, token))
}

/// The environment variable of the HTTP bearer token.
const HTTP_TOKEN: &str = "FORGE_BASH_HTTP_TOKEN";

/// Takes the HTTP token out of the environment, its value overwritten where it was.
///
/// # Safety
/// No other thread may run: the environment is written.
unsafe fn take_token() -> Option<String> {
    let token = std::env::var(HTTP_TOKEN).ok();
    if token.is_some() {
        // SAFETY: the caller's promise. getenv points at the value in the
        // environment's own memory (the block the kernel shows as environ, or a copy
        // an injection made); it is overwritten in place, then the variable removed,
        // and nothing reads that memory again.
        unsafe {
            let value = libc::getenv(c"FORGE_BASH_HTTP_TOKEN".as_ptr());
            if !value.is_null() {
                std::ptr::write_bytes(value, b'*', libc::strlen(value));
            }
            std::env::remove_var(HTTP_TOKEN);
        }
    }
    token
}

/// Stderr for the log, whose writes never fail: a line that cannot be written (stderr
/// a file past the size limit, say) is lost, where tracing's fallback, `eprintln!`,
/// would panic and end the server.
struct Unfailing(std::io::Stderr);

impl std::io::Write for Unfailing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// Logs to stderr (stdout is the protocol), at `RUST_LOG`'s levels or
/// `warn,forge_bash=info`.
fn start_logging() {
    tracing_subscriber::fmt()
        .with_writer(|| Unfailing(std::io::stderr()))
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("warn,forge_bash=info")),
        )
        .init();
}

/// The server: containment, workspace (state dir, sandbox), then stdio or HTTP until
/// the end.
fn serve(config: Config, token: Option<String>) -> ExitCode {
    #[cfg(feature = "http")]
    let Ok(http) = http_settings(&config, token) else {
        return ExitCode::FAILURE;
    };
    #[cfg(not(feature = "http"))]
    if config.http.is_some() || config.metrics.is_some() || token.is_some() {
        tracing::error!("--http: this binary was built without the `http` feature");
        return ExitCode::FAILURE;
    }
    let shell = config::find_shell();
    raise_fd_limit();
    let containment = Arc::new(
        Containment::new(
            config.max_processes,
            config.keep_background,
            config.limits(),
        )
        .with_many_users(config.http.is_some() && config.per_user()),
    );
    let commands = commands_within_limit(config.max_concurrent);
    let shared = Shared::new(shell, containment.clone(), commands);
    // One thread: the work is waiting on pipes and children, and a single thread wakes
    // straight from epoll without cross-thread hand-offs (≈0.4 ms less per call).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(feature = "http")]
    let result = match http {
        Some(settings) => runtime.block_on(serve_http(shared, config, settings, &containment)),
        None => runtime.block_on(serve_stdio(shared, config, &containment)),
    };
    #[cfg(not(feature = "http"))]
    let result = runtime.block_on(serve_stdio(shared, config, &containment));
    // Background jobs' output files say the server stopped, while their readers (tasks
    // of the runtime) still hold them.
    containment.end_background_output();
    // Do not wait for a thread blocked reading a non-pipe stdin.
    runtime.shutdown_background();
    containment.stop();
    match result {
        Ok(()) => {
            tracing::debug!("forge-bash stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!("forge-bash failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The HTTP service's settings, when `--http` is given; `Err` (logged) when they, or
/// `--metrics` without `--http`, cannot serve.
#[cfg(feature = "http")]
fn http_settings(
    config: &Config,
    token: Option<String>,
) -> Result<Option<forge_bash::http::Settings>, ()> {
    if config.metrics.is_some() && config.http.is_none() {
        tracing::error!("--metrics is for --http: over stdio nothing is served to scrape");
        return Err(());
    }
    let Some(addr) = config.http else {
        return Ok(None);
    };
    forge_bash::http::Settings::new(config, addr, token)
        .map(Some)
        .map_err(|e| tracing::error!("{e}"))
}

/// A stop signal, or the watchdog lost for good.
async fn stopped(containment: &Containment) {
    let mut signals = Signals::listen();
    tokio::select! {
        () = signals.next() => {}
        () = containment.keep_watchdog() => {}
    }
}

/// Serves stdio until the input ends, a stop signal comes, or the watchdog is lost
/// for good.
async fn serve_stdio(
    shared: Arc<Shared>,
    config: Config,
    containment: &Containment,
) -> Result<(), Box<dyn std::error::Error>> {
    let server = workspace::open(shared, config)?;
    let retention = {
        let server = server.clone();
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            workspace::keep_bounded(|| vec![server.clone()]).await
        }))
    };
    // Non-blocking pipes when the client gave us pipes (as MCP clients do); the
    // blocking handles otherwise (a terminal, a file).
    let (input, output) = rmcp::transport::stdio_pipes();
    let exit = stdio::serve(server, input, output, stopped(containment)).await?;
    tracing::debug!(?exit, "stdio ended");
    drop(retention);
    Ok(())
}

/// Serves HTTP until a stop signal comes and the drain ends, a second signal comes,
/// or the watchdog is lost for good.
#[cfg(feature = "http")]
async fn serve_http(
    shared: Arc<Shared>,
    config: Config,
    settings: forge_bash::http::Settings,
    containment: &Containment,
) -> Result<(), Box<dyn std::error::Error>> {
    let workspaces = Arc::new(workspace::Workspaces::new(shared, config)?);
    let stop = forge_bash::http::Stop::default();
    let serving = forge_bash::http::serve(workspaces, settings, stop.clone());
    let told = async {
        let mut signals = Signals::listen();
        tokio::select! {
            () = async {
                signals.next().await;
                stop.drain.cancel();
                signals.next().await;
            } => {}
            () = containment.keep_watchdog() => {}
        }
        stop.now.cancel();
    };
    tokio::pin!(serving, told);
    tokio::select! {
        result = &mut serving => result?,
        () = &mut told => serving.await?,
    }
    Ok(())
}

/// Raises the soft limit on open files to the hard limit: each call holds a few pipes,
/// and a low soft limit (1024 is common) would fail calls with EMFILE under load.
/// Commands get the limit the server started with.
fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit/setrlimit to read and write.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            forge_bash::contain::spawn::keep_commands_nofile(limit);
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                tracing::warn!("cannot raise the open-file limit");
            }
        }
    }
}

/// `wanted` commands at once (`--max-concurrent`), or fewer when the open-file limit
/// cannot hold their descriptors beside what the server needs: a call that could not
/// open its pipes would fail, where one that waits for its turn does not.
fn commands_within_limit(wanted: u32) -> u32 {
    use forge_bash::descriptors;
    let limit = descriptors::soft_limit();
    let held = descriptors::open_now().unwrap_or(0);
    let commands = descriptors::commands_at_once(wanted, limit, held);
    if commands < wanted {
        tracing::warn!(
            "the open-file limit (RLIMIT_NOFILE {limit}) holds the descriptors of {commands} commands at once: --max-concurrent {wanted} is lowered to {commands}; raise the limit (ulimit -n) to run more"
        );
    }
    commands
}

/// A handler that does nothing for SIGXFSZ: a write past the file size limit (which
/// a command of the same uid could set on the server, where nothing stops it) then
/// fails with EFBIG, reported as any failed write (an audit row goes to stderr), where
/// the signal's default would kill the server. A handler, not SIG_IGN: commands start
/// with the default again, as an ignored signal would be inherited.
fn survive_file_size_limit() {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: the handler touches nothing; sigaction on a zeroed struct with it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut()) != 0 {
            eprintln!("forge-bash: cannot handle SIGXFSZ");
        }
    }
}

/// `forge-bash check`: the guard's verdict on stdout, which no protocol uses here.
fn check_command(command: &str) -> ExitCode {
    use std::io::Write;
    let (line, code) = match guard::find_rm(command) {
        None => ("allowed".to_owned(), 0),
        Some(simple) => (format!("blocked: {simple}"), 1),
    };
    match writeln!(std::io::stdout(), "{line}") {
        Ok(()) => ExitCode::from(code),
        Err(_) => ExitCode::from(2),
    }
}

/// `forge-bash audit`: the view goes to stdout, malformed rows to stderr.
fn show_audit(query: &forge_bash::audit::view::Query) -> ExitCode {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match forge_bash::audit::view::run(query, &mut out, &mut std::io::stderr()) {
        Ok(()) => ExitCode::SUCCESS,
        // `forge-bash audit | head` closes the pipe early: not an error.
        Err(forge_bash::audit::view::Error::Write(e))
            if e.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("forge-bash audit: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The stop signals: SIGTERM (how LibreChat stops its MCP servers, and Kubernetes a
/// pod), SIGINT, SIGHUP (the terminal or session went away) or SIGQUIT. Listened for
/// from the moment they are made, so that a second one is never missed.
struct Signals([Option<tokio::signal::unix::Signal>; 4]);

impl Signals {
    fn listen() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind: SignalKind| {
            signal(kind)
                .inspect_err(
                    |e| tracing::warn!(error = %e, ?kind, "cannot listen for a stop signal"),
                )
                .ok()
        };
        Signals([
            listen(SignalKind::terminate()),
            listen(SignalKind::interrupt()),
            listen(SignalKind::hangup()),
            listen(SignalKind::quit()),
        ])
    }

    /// The next stop signal.
    async fn next(&mut self) {
        async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let [term, int, hup, quit] = &mut self.0;
        tokio::select! {
            () = recv(term) => {}
            () = recv(int) => {}
            () = recv(hup) => {}
            () = recv(quit) => {}
        }
    }
}
