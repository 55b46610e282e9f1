//! The MCP face: one tool, `run`, and the path of a call through the layers.
//!
//! guard → exec → present, with an audit row for every call that names a command.
//! The server knows nothing of the transport that serves it. It keeps the lifecycle
//! handles a transport needs: a tracker of running calls (drained before exit) and a
//! shutdown token (SIGTERM stops every command). A transport that bounds what waits
//! for its client attaches its [`Backlog`] to each request, and a finished call waits
//! for room in it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

use crate::backlog::Backlog;
use crate::capture::{Captured, Spill, Spiller};
use crate::config::Config;
use crate::contain::{Containment, Jobs, Scope};
use crate::metrics::{self, Outcome};
use crate::present::Answer;
use crate::sandbox::Sandbox;
use crate::state::StateDir;
use crate::tail::Tail;
use crate::users::Identity;
use crate::{audit, background, exec, exit, guard, present, retention};

/// The one tool's name.
pub const TOOL: &str = "run";

/// On shutdown, how long running commands get to be killed and logged.
pub const STOP_GRACE: Duration = Duration::from_millis(700);

/// The description of the tool's one parameter.
pub const COMMAND_DESCRIPTION: &str = "Full command string, including pipes and chain operators.";

/// The forge-bash MCP server. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    shared: Arc<Shared>,
    state: Arc<StateDir>,
    spiller: Arc<Spiller>,
    sandbox: Option<Arc<Sandbox>>,
    /// What commands run as, when not the server's own uid.
    identity: Option<Identity>,
    /// Calls answered with a job still running, which a later call may stop.
    jobs: Jobs,
    /// Held while a retention pass runs.
    pruning: std::sync::Mutex<()>,
    tool: Tool,
    info: ServerConfig,
}

/// How long no command must run before freed memory goes back to the system.
const IDLE_RELEASE: Duration = Duration::from_millis(100);

/// Once no command has run for [`IDLE_RELEASE`], the memory calls freed goes back to
/// the system (`malloc_trim`): a burst of calls side by side leaves the allocator's
/// heap fragmented, and its free pages would otherwise stay resident while the server
/// idles. One release is planned at a time; off the answer's path.
pub fn release_memory_when_idle(shared: &Arc<Shared>) {
    if shared.releasing.swap(true, Ordering::Relaxed) {
        return;
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(IDLE_RELEASE).await;
        shared.releasing.store(false, Ordering::Relaxed);
        if shared.permits.available_permits() == shared.max_concurrent {
            #[cfg(target_env = "gnu")]
            // SAFETY: malloc_trim has no preconditions.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    });
}

/// What every server of one process shares: the shell, the containment, the turns to
/// run (`--max-concurrent` holds for all of them at once), the tracker of running
/// calls and the shutdown token. Over HTTP each user has a server of their own.
#[derive(Debug)]
pub struct Shared {
    shell: PathBuf,
    containment: Arc<Containment>,
    /// One permit per command that may run at once; tokio's semaphore is fair, so
    /// waiting calls start in arrival order.
    permits: Semaphore,
    max_concurrent: usize,
    /// A release of freed memory is planned ([`release_memory_when_idle`]).
    releasing: AtomicBool,
    calls: TaskTracker,
    shutdown: CancellationToken,
}

impl Shared {
    pub fn new(shell: PathBuf, containment: Arc<Containment>, max_concurrent: u32) -> Arc<Shared> {
        Arc::new(Shared {
            shell,
            containment,
            permits: Semaphore::new(max_concurrent as usize),
            max_concurrent: max_concurrent as usize,
            releasing: AtomicBool::new(false),
            calls: TaskTracker::new(),
            shutdown: CancellationToken::new(),
        })
    }

    /// Running calls; each holds a token of this tracker until its audit row is written.
    pub fn calls(&self) -> &TaskTracker {
        &self.calls
    }

    /// Commands that may run at once, all servers together.
    pub fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }

    /// Cancelling it stops every running command (and any that starts later).
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Whether what answered calls left running outlives the server
    /// (`--keep-background`).
    pub fn keeps_background(&self) -> bool {
        self.containment.keeps_background()
    }

    /// A user whose commands ran as `uid` was released: so are their cgroups.
    pub fn release_user(&self, uid: u32) {
        self.containment.release_user(uid);
    }

    /// The server stops: every running command is killed and logged, within
    /// [`STOP_GRACE`]; no command starts after.
    pub async fn stop_calls(&self) {
        tracing::info!("shutdown signal: stopping running commands");
        self.containment.end_background_output();
        self.shutdown.cancel();
        self.calls.close();
        if tokio::time::timeout(STOP_GRACE, self.calls.wait())
            .await
            .is_err()
        {
            tracing::warn!("running commands did not stop in time");
        }
    }
}

/// The server's own resource limits at its first call, given back before each call
/// when a command lowered them (`prlimit --pid $PPID --fsize=0:0`, where nothing
/// stops a command of the server's uid, or of root): its writes, files and processes
/// keep working. A hard limit lowered is given back only by a root server; a warning
/// says when it cannot be.
fn keep_limits() {
    // Their type is glibc's enum or musl's int: never named.
    let kept = [
        libc::RLIMIT_FSIZE,
        libc::RLIMIT_NOFILE,
        libc::RLIMIT_NPROC,
        libc::RLIMIT_CPU,
        libc::RLIMIT_AS,
        libc::RLIMIT_DATA,
    ];
    static FIRST: std::sync::OnceLock<Vec<Option<libc::rlimit>>> = std::sync::OnceLock::new();
    let read = |resource| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes a valid rlimit.
        (unsafe { libc::getrlimit(resource, &mut limit) } == 0).then_some(limit)
    };
    let first = FIRST.get_or_init(|| kept.iter().map(|&resource| read(resource)).collect());
    for (&resource, kept) in kept.iter().zip(first) {
        let (Some(kept), Some(now)) = (kept, read(resource)) else {
            continue;
        };
        if now.rlim_cur >= kept.rlim_cur && now.rlim_max >= kept.rlim_max {
            continue;
        }
        // SAFETY: setrlimit reads a valid rlimit.
        let restored = unsafe { libc::setrlimit(resource, kept) } == 0;
        tracing::warn!(
            resource = resource as i64,
            soft = now.rlim_cur,
            hard = now.rlim_max,
            restored,
            "the server's own limit was lowered (by a command?)"
        );
    }
}

impl Server {
    pub fn new(config: Config, shell: PathBuf, containment: Arc<Containment>) -> Server {
        let state = Arc::new(StateDir::open(&config.state_dir));
        Server::with_sandbox(config, shell, containment, None, state)
    }

    /// A server whose commands run under `sandbox`.
    pub fn with_sandbox(
        config: Config,
        shell: PathBuf,
        containment: Arc<Containment>,
        sandbox: Option<Sandbox>,
        state: Arc<StateDir>,
    ) -> Server {
        let shared = Shared::new(shell, containment, config.max_concurrent);
        Server::sharing(shared, config, sandbox, state)
    }

    /// A server of its own workdir and state dir that shares `shared` with others.
    pub fn sharing(
        shared: Arc<Shared>,
        config: Config,
        sandbox: Option<Sandbox>,
        state: Arc<StateDir>,
    ) -> Server {
        Server::sharing_as(shared, config, sandbox, state, None)
    }

    /// A server as [`Server::sharing`] makes it, whose commands run as `identity`
    /// when it is given (a uid of their own, with their own HOME and TMPDIR).
    pub fn sharing_as(
        shared: Arc<Shared>,
        config: Config,
        sandbox: Option<Sandbox>,
        state: Arc<StateDir>,
        identity: Option<Identity>,
    ) -> Server {
        let workdir = config.workdir.display().to_string();
        let description = tool_description(&workdir, config.timeout_secs);
        let tool = Tool::new(TOOL, description, shared_input_schema())
            .with_title("Forge Bash")
            .with_annotations(
                ToolAnnotations::with_title("Forge Bash")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            );
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("forge-bash", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions(&workdir));
        let spiller = Spiller::new(state.clone());
        Server {
            inner: Arc::new(Inner {
                config,
                shared,
                state,
                spiller,
                sandbox: sandbox.map(Arc::new),
                identity,
                jobs: Jobs::default(),
                pruning: std::sync::Mutex::new(()),
                tool,
                info,
            }),
        }
    }

    /// Whether anything but the one holding it (a workspace list) uses this server.
    pub fn in_use(&self) -> bool {
        Arc::strong_count(&self.inner) > 1
    }

    /// How many hold this server (a test waits for a retention pass to let go).
    #[cfg(test)]
    pub(crate) fn holders(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// What this server shares with the others of the process.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// Running calls; each holds a token of this tracker until its audit row is written.
    pub fn calls(&self) -> &TaskTracker {
        &self.inner.shared.calls
    }

    /// Requests the transport lets in flight at once: twice the commands that may run,
    /// so that a waiting call is always queued, and never fewer than 16.
    pub fn max_in_flight(&self) -> usize {
        (2 * self.inner.config.max_concurrent as usize).max(16)
    }

    /// Cancelling it stops every running command (and any that starts later).
    pub fn shutdown(&self) -> &CancellationToken {
        &self.inner.shared.shutdown
    }

    /// The uid its commands run under, when not the server's.
    pub fn uid(&self) -> Option<u32> {
        self.inner
            .identity
            .as_ref()
            .map(|identity| identity.ids.uid)
    }

    /// The workdir every command of this server runs in.
    pub fn workdir(&self) -> &std::path::Path {
        &self.inner.config.workdir
    }

    /// Runs one command through guard, Layer 1, Layer 2 and the audit log. The answer
    /// waits for room in `backlog`, when the transport gave one; what the command
    /// leaves running ends with `scope`, when the transport has sessions.
    pub async fn run(
        &self,
        command: &str,
        cancel: CancellationToken,
        backlog: Option<&Backlog>,
        scope: Option<&Scope>,
        tail: Option<&Arc<Tail>>,
    ) -> Answer {
        let shared = &self.inner.shared;
        let _running = shared.calls.token();
        let config = &self.inner.config;
        if let Some(refused) = self.refused(command) {
            return refused;
        }
        if let Some(killed) = self.kill_jobs(command) {
            return killed;
        }
        crate::users::keep_workdir(&config.workdir, self.inner.identity.as_ref());
        keep_limits();
        let shutdown = shared.shutdown.clone();
        let stop = async move {
            tokio::select! {
                () = cancel.cancelled() => exec::Stop::Cancelled,
                () = shutdown.cancelled() => exec::Stop::ShutDown,
            }
        };
        tokio::pin!(stop);
        // A call cancelled already never starts, even when a turn is free.
        let _permit = tokio::select! {
            biased;
            stop = &mut stop => return self.never_started(command, stop),
            permit = shared.permits.acquire() => permit,
        };
        let started = Instant::now();
        let running = metrics::Running::start();
        let result = exec::run(self.job(command, scope, tail), stop).await;
        drop(running);
        let ms = started.elapsed().as_millis();
        let answer = match result {
            Ok(out) => self.finished(command, out, started),
            Err(e) => self.failed(command, &e.to_string(), ms),
        };
        release_memory_when_idle(shared);
        // A client that does not read: hold the answer (and the permit) until its
        // transport has room, so that finished answers do not pile up without bound.
        if let Some(backlog) = backlog {
            backlog.room().await;
        }
        answer
    }

    /// What Layer 1 needs to run `command` on this server.
    fn job<'a>(
        &'a self,
        command: &'a str,
        scope: Option<&'a Scope>,
        tail: Option<&'a Arc<Tail>>,
    ) -> exec::Job<'a> {
        let (shared, config) = (&self.inner.shared, &self.inner.config);
        exec::Job {
            shell: &shared.shell,
            command,
            workdir: &config.workdir,
            timeout: config.timeout(),
            cap: config.max_output_bytes,
            spiller: &self.inner.spiller,
            containment: &shared.containment,
            sandbox: self.inner.sandbox.as_ref(),
            identity: self.inner.identity.as_ref(),
            scope,
            jobs: Some(&self.inner.jobs),
            tail,
            yielding: config.yield_after().map(|after| exec::Yielding {
                after,
                shutdown: shared.shutdown.clone(),
            }),
        }
    }

    /// The answer to a command that must not run, audited: the guard blocks it, or
    /// the audit log cannot record it (every call is audited or refused: none runs
    /// unrecorded).
    fn refused(&self, command: &str) -> Option<Answer> {
        if guard::check(command).is_blocked() {
            let mut answer = present::blocked();
            self.audit(&mut answer, command, exit::BLOCKED, None, Outcome::Blocked);
            return Some(answer);
        }
        let Err(e) = audit::ready(&self.inner.state) else {
            return None;
        };
        // The answer says already that the log cannot be written.
        let _ = self.audit_row(command, exit::FAILURE, None, false, Outcome::Failed);
        let message = format!("the audit log cannot be written ({e}), so the command was not run");
        Some(present::failure(&message, 0))
    }

    /// Under the sandbox, a command that is only `kill` of process groups that are all
    /// this server's jobs ([`background::Kill`]) is carried out by the server, and
    /// answered and audited as the shell's `kill` would be: each call's commands are in
    /// a Landlock domain of their own, so the way the answer names to stop a job would
    /// otherwise be refused. Anything else runs as it is.
    fn kill_jobs(&self, command: &str) -> Option<Answer> {
        self.inner.sandbox.as_ref()?;
        let kill = background::Kill::parse(command)?;
        let jobs = &self.inner.jobs;
        if !kill.groups.iter().all(|&pgid| jobs.holds(pgid)) {
            return None;
        }
        let started = Instant::now();
        for &pgid in &kill.groups {
            if let Err(e) = jobs.signal(pgid, kill.signal) {
                let message = format!("cannot signal process group {pgid}: {e}");
                return Some(self.failed(command, &message, started.elapsed().as_millis()));
            }
            tracing::info!(
                pgid,
                signal = kill.signal,
                "a job signalled at a call's request"
            );
        }
        let out = exec::Output {
            stdout: Captured::default(),
            stderr: Captured::default(),
            code: 0,
            ending: exec::Ending::Exited,
            background: None,
            rest: None,
            out_of_memory: None,
        };
        Some(self.finished(command, out, started))
    }

    /// The answer to a command that ran: shown, audited, and the overflow files it
    /// names spared by the retention pass that follows.
    fn finished(&self, command: &str, mut out: exec::Output, started: Instant) -> Answer {
        let ms = started.elapsed().as_millis();
        let config = &self.inner.config;
        if !present::shows_stderr(&out, config.stderr) {
            out.stderr.discard_spill();
        }
        let mut answer = present::show(
            &out,
            ms,
            config.timeout_secs,
            config.max_output_bytes,
            config.stderr,
        );
        match out.rest.take() {
            Some(rest) => self.audit_at_the_end(command, rest, started),
            None => {
                let outcome = match out.out_of_memory {
                    Some(_) => Outcome::OutOfMemory,
                    None => outcome(out.ending, out.code),
                };
                let background = out.background.is_some();
                if let Err(e) = self.audit_row(command, out.code, Some(ms), background, outcome) {
                    present::unaudited(&mut answer, &e);
                }
            }
        }
        let named = [&out.stdout.spill, &out.stderr.spill];
        let named: Vec<String> = named
            .into_iter()
            .filter_map(|spill| match spill {
                Some(Spill::Written(path)) => path.file_name(),
                _ => None,
            })
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
        if !named.is_empty() {
            self.prune_state(named);
        }
        answer
    }

    /// Removes what the retention limits say is too old or too much, on a blocking
    /// thread: the answer does not wait. `named` are the files an answer just named to
    /// a model: spared, with those of the newest answers. A pass asked for while one
    /// runs waits for it, so that none is skipped in a burst.
    pub fn prune_state(&self, named: Vec<String>) {
        if !named.is_empty() {
            self.inner.spiller.named(&named);
        }
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let _one = inner.pruning.lock().unwrap_or_else(|e| e.into_inner());
            let retention = inner.config.retention();
            let before = inner.spiller.made();
            let mut seen = std::collections::HashSet::new();
            let mut spared = |name: &str, age: Duration| {
                seen.insert(name.to_owned());
                inner.spiller.spares(name, age)
            };
            retention::prune(&inner.state, &retention, &mut spared, SystemTime::now());
            inner.spiller.forget_gone(&before, &seen);
        });
    }

    /// The row of a call answered early, written when its command ends, with its exit
    /// code; the server's shutdown waits for it as for a running call. Its answer is
    /// gone by then: a row that cannot be written is only in the server's log.
    fn audit_at_the_end(&self, command: &str, rest: exec::Rest, started: Instant) {
        let running = self.inner.shared.calls.token();
        let (server, command) = (self.clone(), command.to_owned());
        tokio::spawn(async move {
            let finished = rest.finished().await;
            let ms = started.elapsed().as_millis();
            let outcome = outcome(finished.ending, finished.code);
            let _ = server.audit_row(&command, finished.code, Some(ms), true, outcome);
            drop(running);
        });
    }

    /// A call cancelled (or shut down) while it waited for its turn: audited, not run.
    fn never_started(&self, command: &str, stop: exec::Stop) -> Answer {
        let ending = exec::Ending::from(stop);
        let out = exec::Output {
            stdout: Captured::default(),
            stderr: Captured::default(),
            code: match ending {
                exec::Ending::Cancelled => exit::CANCELLED,
                _ => exit::SHUTDOWN,
            },
            ending,
            background: None,
            rest: None,
            out_of_memory: None,
        };
        let config = &self.inner.config;
        let mut answer = present::show(
            &out,
            0,
            config.timeout_secs,
            config.max_output_bytes,
            config.stderr,
        );
        let outcome = outcome(ending, out.code);
        self.audit(&mut answer, command, out.code, None, outcome);
        answer
    }

    /// The answer to a call that failed after `ms` with `message`, audited.
    fn failed(&self, command: &str, message: &str, ms: u128) -> Answer {
        let mut answer = present::failure(message, ms);
        self.audit(
            &mut answer,
            command,
            exit::FAILURE,
            Some(ms),
            Outcome::Failed,
        );
        answer
    }

    /// The row of a call that left nothing running, and its count by `outcome`;
    /// `answer` says so when the row could not be written.
    fn audit(
        &self,
        answer: &mut Answer,
        command: &str,
        code: i32,
        ran: Option<u128>,
        outcome: Outcome,
    ) {
        if let Err(e) = self.audit_row(command, code, ran, false, outcome) {
            present::unaudited(answer, &e);
        }
    }

    /// The call's row, and its count by `outcome`; `ran`: the milliseconds its command
    /// ran (`None`: it never ran, 0 in the row, and not timed); `background`: it left a
    /// job running. Not written: the server has warned with the row.
    fn audit_row(
        &self,
        command: &str,
        code: i32,
        ran: Option<u128>,
        background: bool,
        outcome: Outcome,
    ) -> std::io::Result<()> {
        let ms = ran.unwrap_or(0);
        let ran = ran.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX)));
        metrics::call_ended(outcome, ran);
        let row = audit::Row {
            at: chrono::Utc::now(),
            command,
            code,
            ms,
            background,
        };
        audit::record(&self.inner.state, &row)
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        self.inner.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            self.inner.tool.clone(),
        ]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL).then(|| self.inner.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL {
            return Err(McpError::invalid_params(
                format!(
                    "tool not found: {} (the only tool is `{TOOL}`)",
                    request.name
                ),
                None,
            ));
        }
        let args = match RunArgs::read(request.arguments) {
            Ok(args) => args,
            Err(BadArgs::Unknown(key)) => {
                let message = format!("unknown argument \"{key}\"; {TOOL} takes only \"command\"");
                return Err(McpError::invalid_params(message, None));
            }
            Err(BadArgs::Command(message)) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
        };
        // The ticker never delays or outlives the result: it is aborted on drop.
        let token = ctx.meta.get_progress_token();
        let tail = token.is_some().then(|| Arc::new(Tail::default()));
        let _progress = token.zip(tail.clone()).map(|(token, tail)| {
            let every = self.inner.config.progress_interval();
            let ticker = progress(ctx.peer.clone(), token, every, tail);
            AbortOnDropHandle::new(tokio::spawn(ticker))
        });
        let backlog = ctx.extensions.get::<Arc<Backlog>>();
        let scope = ctx.extensions.get::<Arc<Scope>>();
        let answer = self
            .run(
                &args.command,
                ctx.ct.clone(),
                backlog.map(Arc::as_ref),
                scope.map(Arc::as_ref),
                tail.as_ref(),
            )
            .await;
        let content = vec![ContentBlock::text(answer.text)];
        let result = if answer.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        Ok(result.into())
    }
}

/// The outcome of a call that came to `ending` with `code`.
fn outcome(ending: exec::Ending, code: i32) -> Outcome {
    match ending {
        exec::Ending::Exited | exec::Ending::Yielded => Outcome::of_code(code),
        exec::Ending::TimedOut => Outcome::Timeout,
        exec::Ending::Cancelled => Outcome::Cancelled,
        exec::Ending::ShutDown => Outcome::Stopped,
    }
}

/// Sends `notifications/progress` every `every` with the elapsed seconds, and as its
/// message the last line the command wrote (`running for N s` before it wrote one).
/// The values strictly increase even when the server was stalled (stopped, or a busy
/// runtime): missed ticks are not sent in a burst, and no value repeats.
async fn progress(peer: Peer<RoleServer>, token: ProgressToken, every: Duration, tail: Arc<Tail>) {
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + every, every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut last = 0.0_f64;
    loop {
        ticks.tick().await;
        let elapsed = started.elapsed();
        // Seconds to the millisecond, and always at least a millisecond more.
        let value = (elapsed.as_millis() as f64 / 1000.0).max(last + 0.001);
        last = value;
        let message = tail
            .last()
            .and_then(|bytes| present::last_line(&bytes))
            .unwrap_or_else(|| format!("running for {} s", elapsed.as_secs()));
        let param = ProgressNotificationParam::new(token.clone(), value).with_message(message);
        if peer.notify_progress(param).await.is_err() {
            return;
        }
    }
}

/// Why the arguments of a call are not [`RunArgs`].
#[derive(Debug, PartialEq, Eq)]
enum BadArgs {
    /// A key the tool does not take: the call is refused (invalid params).
    Unknown(String),
    /// `command` is missing or not a string: the message an agent needs to fix its
    /// call, as a tool error.
    Command(String),
}

impl RunArgs {
    /// The arguments of a call, as the input schema says: `command`, a string, and
    /// nothing else. The message of an error names what is wrong.
    fn read(arguments: Option<JsonObject>) -> Result<RunArgs, BadArgs> {
        let arguments = Value::Object(arguments.unwrap_or_default());
        let e = match RunArgs::deserialize(&arguments) {
            Ok(args) => return Ok(args),
            Err(e) => e,
        };
        let unknown = arguments
            .as_object()
            .and_then(|a| a.keys().find(|key| *key != "command"));
        if let Some(key) = unknown {
            return Err(BadArgs::Unknown(key.clone()));
        }
        Err(BadArgs::Command(match arguments.get("command") {
            Some(other) if !other.is_string() => format!(
                "ERROR: Invalid arguments: `command` must be a string, got {}",
                json_kind(other)
            ),
            None => "ERROR: Invalid arguments: missing required string `command`".to_owned(),
            Some(_) => format!("ERROR: Invalid arguments: {e}"),
        }))
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The tool description the model reads; `timeout_secs` is the configured timeout.
pub fn tool_description(workdir: &str, timeout_secs: u64) -> String {
    format!(
        "Execute a shell command or pipeline in {workdir}, supporting operators |, &&, ||, ;. \
         rm is blocked — use uvilo-trash instead. All commands are audit-logged. \
         For a server, or anything that runs longer than the {timeout_secs} s timeout, \
         end the command with & (`npm run dev &`): the answer names a file that keeps \
         receiving its output, to read with cat or tail in later calls."
    )
}

/// The server instructions.
pub fn instructions(workdir: &str) -> String {
    format!(
        "Bash execution in {workdir}. Supports chains (| && || ;).\n\
         rm is blocked — use uvilo-trash instead. All commands are audit-logged."
    )
}

/// The arguments of `run`, as the model sees them in the tool's input schema.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Full command string, including pipes and chain operators.
    pub command: String,
}

/// The input schema, derived from [`RunArgs`]: its properties, without the
/// `$schema`, `title` and struct-level `description` keys, which are for Rust readers.
/// The input schema, made once and shared by every server of the process (over HTTP,
/// one per user).
fn shared_input_schema() -> Arc<JsonObject> {
    static SCHEMA: std::sync::OnceLock<Arc<JsonObject>> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| Arc::new(input_schema())).clone()
}

fn input_schema() -> JsonObject {
    let schema = schemars::schema_for!(RunArgs);
    let mut object = schema.as_object().cloned().unwrap_or_default();
    for key in ["$schema", "title", "description"] {
        object.remove(key);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_of_endings() {
        use exec::Ending;
        let check = |ending, code, expected| assert_eq!(outcome(ending, code), expected);
        check(Ending::Exited, 0, Outcome::Ok);
        check(Ending::Exited, 2, Outcome::Failed);
        check(Ending::Yielded, 0, Outcome::Ok);
        // A command's own 124 or 143 is its exit code, not a timeout or a stop.
        check(Ending::Exited, exit::TIMEOUT, Outcome::Failed);
        check(Ending::Exited, exit::SHUTDOWN, Outcome::Failed);
        check(Ending::TimedOut, exit::TIMEOUT, Outcome::Timeout);
        check(Ending::Cancelled, exit::CANCELLED, Outcome::Cancelled);
        check(Ending::ShutDown, exit::SHUTDOWN, Outcome::Stopped);
    }

    #[test]
    fn the_input_schema_comes_from_run_args() {
        let schema = Value::Object(input_schema());
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "description": COMMAND_DESCRIPTION }
                },
                "required": ["command"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn arguments_are_read_as_the_schema_says() {
        let read = |arguments: Value| {
            let arguments = match arguments {
                Value::Null => None,
                Value::Object(arguments) => Some(arguments),
                other => panic!("{other}"),
            };
            RunArgs::read(arguments).map(|args| args.command)
        };
        assert_eq!(read(serde_json::json!({"command": "ls"})), Ok("ls".into()));
        let missing = "ERROR: Invalid arguments: missing required string `command`";
        assert_eq!(read(Value::Null), Err(BadArgs::Command(missing.into())));
        assert_eq!(
            read(serde_json::json!({})),
            Err(BadArgs::Command(missing.into()))
        );
        assert_eq!(
            read(serde_json::json!({"command": ["ls"]})),
            Err(BadArgs::Command(
                "ERROR: Invalid arguments: `command` must be a string, got an array".into()
            ))
        );
        // A key the schema does not allow is refused, whatever else is wrong.
        for arguments in [
            serde_json::json!({"command": "ls", "cwd": "/"}),
            serde_json::json!({"cwd": "/"}),
            serde_json::json!({"cwd": "/", "command": 5}),
        ] {
            assert_eq!(read(arguments), Err(BadArgs::Unknown("cwd".into())));
        }
    }
}
