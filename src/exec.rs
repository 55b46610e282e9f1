//! Layer 1: run one command and capture what it writes.
//!
//! A call is spawn, wait, collect. `bash -c <command>` runs in the workdir with stdin
//! at `/dev/null`, as the leader of a process group of its own, taken into the call's
//! [`contain::Call`](crate::contain::Call). Whatever stops it early (timeout, output
//! cap, cancellation, shutdown) kills every process of the call, those that left the
//! group included; tokio's `kill_on_drop` alone would kill only the shell. Both pipes
//! are streamed through [`capture::Sink`]s, so memory stays bounded whatever the
//! command writes. Processes that still hold them when the call is answered (`server
//! &`) keep their output: from then on it goes to a [`background::Log`], a file the
//! answer names, still against the cap. With `--yield-after`, a call still running at
//! its yield time is answered early and goes on the same way (see [`Yielding`]).

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::background::{Background, Log};
use crate::capture::{self, Captured, Sink, Spiller};
use crate::contain::spawn::{Child, Command};
use crate::contain::{Call, Containment, Jobs, Scope};
use crate::sandbox::Sandbox;
use crate::tail::Tail;
use crate::users::Identity;

mod yielded;

use crate::{exit, unattended};
pub use yielded::{Finished, Rest, Yielding};

/// How long to keep reading after the shell exits while its background children still
/// hold the pipes. Long enough for output already in the pipe, short enough that a
/// `server &` does not hold the call.
pub const PIPE_GRACE: Duration = Duration::from_millis(250);

/// How long a killed shell is waited for before the call is answered without its exit.
const REAP_GRACE: Duration = Duration::from_millis(250);

/// How long the pipes of a stopped call (timed out, cancelled) are read for once its
/// shell is gone: its processes were killed, and what they wrote is in the pipes.
const STOPPED_GRACE: Duration = Duration::from_millis(50);

/// How long a reader may work on one chunk of output before it lets the runtime's other
/// tasks (other calls, other sessions) run: past it, it yields once before it reads on.
const SHARE: Duration = Duration::from_millis(2);

/// How long, past the grace, a call's pipes may stay open because of another call's
/// clone (see [`crate::contain::clones`]) before they are taken as held by a process
/// of its own: a clone executes its program within microseconds, unless the machine
/// leaves it waiting for a processor, or its start is stuck (then it is killed at
/// [`crate::contain::START_BOUND`]).
const OTHERS_BOUND: Duration = Duration::from_secs(2);

/// Bytes read from a pipe at a time: the size of a Linux pipe buffer × 4.
const CHUNK: usize = 64 * 1024;

/// A read buffer of [`CHUNK`] bytes, given back for the next call's readers when
/// dropped: no call allocates, zeroes or returns to the system its buffers.
struct Buffer(Box<[u8]>);

/// Buffers of readers that ended, kept for the next ones.
static BUFFERS: std::sync::Mutex<Vec<Box<[u8]>>> = std::sync::Mutex::new(Vec::new());

/// Buffers kept, at most: one call's two readers (each kept buffer stays resident).
const KEPT_BUFFERS: usize = 2;

impl Buffer {
    fn take() -> Buffer {
        let kept = BUFFERS.lock().unwrap_or_else(|e| e.into_inner()).pop();
        Buffer(kept.unwrap_or_else(|| vec![0; CHUNK].into_boxed_slice()))
    }
}

impl std::ops::Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let mut kept = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT_BUFFERS {
            kept.push(std::mem::take(&mut self.0));
        }
    }
}

/// The kernel's limit on one argument (`MAX_ARG_STRLEN`): a longer `-c` string
/// cannot be passed to the shell.
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// One command to run, with the limits it runs under.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    pub shell: &'a Path,
    pub command: &'a str,
    pub workdir: &'a Path,
    pub timeout: Duration,
    /// Bytes kept of each stream; reaching it stops the command.
    pub cap: u64,
    pub spiller: &'a Arc<Spiller>,
    pub containment: &'a Arc<Containment>,
    /// The Landlock ruleset every command runs under, when the sandbox is on.
    pub sandbox: Option<&'a Arc<Sandbox>>,
    /// The uid, gid and variables commands run with, when not the server's.
    pub identity: Option<&'a Identity>,
    /// The client session the call belongs to, when its transport has sessions: what
    /// the call leaves in the background ends with the session.
    pub scope: Option<&'a Scope>,
    /// The server's jobs: a call answered with a job still running is kept there, so
    /// that the server can stop it when a later call asks ([`crate::background::Kill`]).
    pub jobs: Option<&'a Jobs>,
    /// Where the last bytes of each stream go while the call runs, when its progress
    /// notifications show the last line.
    pub tail: Option<&'a Arc<Tail>>,
    /// Answer early when the command still runs after a while (`--yield-after`).
    pub yielding: Option<Yielding>,
}

/// Why the server stops a command early, other than its own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Cancelled,
    ShutDown,
}

/// How a command came to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The shell exited (by itself, by a signal, or killed at the output cap).
    Exited,
    TimedOut,
    Cancelled,
    ShutDown,
    /// Still running at its yield time: answered with what it wrote so far, it goes on,
    /// writing the rest to a file.
    Yielded,
}

/// What Layer 1 hands to Layer 2.
#[derive(Debug, Clone)]
pub struct Output {
    pub stdout: Captured,
    pub stderr: Captured,
    /// The shell's exit code, `128 + N` when a signal killed it, or the code of the
    /// [`Ending`] (124, 130, 143).
    pub code: i32,
    pub ending: Ending,
    /// Processes of the call still held its pipes when it was answered: they run on,
    /// and what they write goes to a file.
    pub background: Option<Background>,
    /// A call answered early: how it ends, once it does.
    pub rest: Option<Rest>,
    /// The memory limit (`--max-memory`, in bytes) that killed the command: the
    /// kernel's OOM killer took a process of the call, and the shell died of it.
    pub out_of_memory: Option<u64>,
}

/// Why a command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("working directory {0} does not exist")]
    NoWorkdir(PathBuf),
    #[error("command contains a NUL byte, which a shell argument cannot hold")]
    Nul,
    #[error(
        "command is {0} bytes; a command may be at most {max} bytes (the kernel's limit on one argument, {MAX_ARG_BYTES} bytes, includes its terminating NUL)",
        max = MAX_ARG_BYTES - 1
    )]
    TooLong(usize),
    #[error("cannot start {shell}: {source}")]
    Spawn { shell: String, source: io::Error },
    #[error("cannot wait for the shell: {0}")]
    Wait(io::Error),
}

/// Runs `job` to its end, or until `stop` resolves.
pub async fn run(job: Job<'_>, stop: impl Future<Output = Stop>) -> Result<Output, Error> {
    let (call, mut child) = start(&job).await?;
    let started = Instant::now();
    // Until the call is answered, dropping it (the runtime going away) kills it.
    let guard = KillOnDrop(Some(call.clone()));
    let (readers, after) = Readers::start(&mut child, &job, &call);
    let others_let_go = child.others_let_go();
    tokio::pin!(stop);
    let Some((status, mut ending)) = wait(&mut child, &job, &readers, &call, stop.as_mut()).await
    else {
        let taken = yielded::Taken {
            call,
            child,
            guard,
            readers,
            after,
            started,
        };
        return Ok(yielded::answer(&job, taken).await);
    };
    let status = status.map_err(Error::Wait)?;
    // A call stopped already (timeout, cancel, shutdown) keeps its ending.
    let listen = ending == Ending::Exited;
    let Collected {
        stdout,
        stderr,
        stopped,
        held,
    } = collect(readers, &call, stop.as_mut(), listen, others_let_go).await;
    let capped = kill_if_capped(&call, &stdout, &stderr);
    if let (Ending::Exited, Some(stop)) = (ending, stopped) {
        ending = stop.into();
    }
    // Still held, and nothing stops the call: its processes run on after the answer.
    let background = (held && ending == Ending::Exited && !capped).then(|| {
        let (log, background) = keep_output(&job, &call);
        after.send_replace(log);
        background
    });
    guard.disarm();
    call.release();
    let code = code(ending, status);
    let out_of_memory = out_of_memory(&call, ending, code);
    if let Some(scope) = job.scope {
        // A call with nothing left running gives its cgroup (two descriptors) back
        // for the next calls now, not at its session's next call or end.
        scope.forget_over();
    }
    Ok(Output {
        stdout,
        stderr,
        code,
        ending,
        background,
        rest: None,
        out_of_memory,
    })
}

/// The call of `job`, with its shell started: in the call's cgroups, and kept by its
/// session when it has one.
async fn start(job: &Job<'_>) -> Result<(Arc<Call>, Child), Error> {
    validate(job)?;
    let call = job
        .containment
        .new_call(job.identity.map(|identity| identity.ids.uid))
        .await;
    if let Some(scope) = job.scope {
        scope.keep(&call);
    }
    let child = spawn(job, &call).await?;
    Ok((call, child))
}

/// The call's memory limit, when its shell was killed (128 + SIGKILL) and the cgroup
/// counted an out-of-memory kill meanwhile.
fn out_of_memory(call: &Call, ending: Ending, code: i32) -> Option<u64> {
    (ending == Ending::Exited && code == exit::KILLED)
        .then(|| call.out_of_memory())
        .flatten()
}

/// The answer's exit code: the shell's, or the code of how the call was stopped.
fn code(ending: Ending, status: ExitStatus) -> i32 {
    match ending {
        Ending::Exited => exit_code(status),
        Ending::TimedOut => exit::TIMEOUT,
        Ending::Cancelled => exit::CANCELLED,
        Ending::ShutDown => exit::SHUTDOWN,
        Ending::Yielded => unreachable!("a yielded call was answered above"),
    }
}

/// Opens the file that what the call's processes write from now on goes to; the
/// answer's line says where it is, or why there is none.
fn keep_output(job: &Job<'_>, call: &Arc<Call>) -> (Option<Arc<Log>>, Background) {
    let (log, file) = match Log::create(job.spiller, call, job.cap) {
        Ok(log) => {
            let path = log.path().to_owned();
            (Some(log), Ok(path))
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot create a background job's output file");
            (None, Err(format!("{}: {e}", job.spiller.dir().display())))
        }
    };
    if let Some(jobs) = job.jobs {
        jobs.keep(call);
    }
    let pgid = call.pgid();
    let background = Background {
        pgid,
        file,
        wait_secs: None,
    };
    (log, background)
}

fn validate(job: &Job<'_>) -> Result<(), Error> {
    if job.command.contains('\0') {
        return Err(Error::Nul);
    }
    if job.command.len() >= MAX_ARG_BYTES {
        return Err(Error::TooLong(job.command.len()));
    }
    if !job.workdir.is_dir() {
        return Err(Error::NoWorkdir(job.workdir.to_owned()));
    }
    Ok(())
}

/// Starts `bash -c` as the leader of a new process group, marked as the call's, and
/// hands it to the call's containment.
async fn spawn(job: &Job<'_>, call: &Arc<Call>) -> Result<Child, Error> {
    let (marker, id) = call.marker();
    // Stdin at /dev/null, both streams piped, a process group of its own.
    let mut command = Command::new(job.shell);
    command
        .arg("-c")
        .arg(job.command)
        .current_dir(job.workdir)
        .envs(unattended::env().iter().copied())
        .env(marker, id);
    if let Some(identity) = job.identity {
        run_as(&mut command, identity);
    }
    if let Some(bytes) = call.data_limit() {
        command.data_limit(bytes);
    }
    if let Some(sandbox) = job.sandbox {
        command
            .envs(sandbox.env.iter().map(|(name, value)| (name, value)))
            .drop_capabilities();
    }
    let sandbox = job.sandbox.cloned();
    let confined = sandbox.is_some();
    let child = call
        .spawn(&command, confined, move |start| match sandbox {
            None => start.run(),
            Some(sandbox) => sandbox
                .spawn_confined(move |ruleset, network| start.entering(ruleset, network).run()),
        })
        .await
        .map_err(|source| {
            // Whatever a shell that failed to start may have left is the call's.
            let _ = call.kill();
            Error::Spawn {
                shell: job.shell.display().to_string(),
                source,
            }
        })?;
    if let Some(pid) = child.id() {
        call.adopt(pid);
    }
    Ok(child)
}

/// Makes `command` run as `identity`: its uid and gid, no supplementary group (as std
/// does when root changes the uid), `no_new_privs` (no set-uid program gives any
/// rights back), and its own HOME and TMPDIR.
fn run_as(command: &mut Command, identity: &Identity) {
    command
        .envs(identity.env.iter().map(|(name, value)| (name, value)))
        .uid(identity.ids.uid)
        .gid(identity.ids.gid)
        .no_new_privs();
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        command.groups(&[]);
    }
}

/// Waits for the shell to exit, or kills the call at its timeout, at the output cap,
/// or when `stop` fires; `None` at its yield time (nothing is killed).
async fn wait(
    child: &mut Child,
    job: &Job<'_>,
    readers: &Readers,
    call: &Arc<Call>,
    stop: Pin<&mut impl Future<Output = Stop>>,
) -> Option<(io::Result<ExitStatus>, Ending)> {
    let ending = tokio::select! {
        status = child.wait() => {
            call.reaped(status.as_ref().is_ok_and(|s| s.code().is_some()));
            return Some((status, Ending::Exited));
        }
        () = tokio::time::sleep(job.timeout) => Ending::TimedOut,
        () = readers.capped.cancelled() => Ending::Exited,
        stop = stop => stop.into(),
        () = yielded::time(job) => return None,
    };
    if let Err(e) = call.kill() {
        tracing::warn!(error = %e, "cannot kill the command's processes");
    }
    // A killed shell is not waited for past a grace: on a machine its command
    // saturates, its exit waits its turn for the processor behind every process of
    // the storm, and the call's answer does not need its status. An unreaped shell is
    // reaped once it exits, off the runtime ([`Child`]'s drop).
    let status = match tokio::time::timeout(REAP_GRACE, child.wait()).await {
        Ok(status) => {
            call.reaped(false);
            status
        }
        Err(_) => Ok(ExitStatus::from_raw(libc::SIGKILL)),
    };
    Some((status, ending))
}

/// Both captures, once the shell is gone.
struct Collected {
    stdout: Captured,
    stderr: Captured,
    /// A stop that came in the grace.
    stopped: Option<Stop>,
    /// A pipe was still held by a process of the call when the grace ended.
    held: bool,
}

/// Collects both captures once the shell is gone. Background children may still hold
/// the pipes: what they already wrote is read for a short grace, then the call is
/// answered and the readers go on reading. A stop during the grace still kills the
/// call; it is returned. Pipes still open after the grace are taken for background
/// children only once `others_let_go`: no other call's child, cloned while this
/// call's pipes were open in the server, still holds a copy.
async fn collect(
    readers: Readers,
    call: &Arc<Call>,
    stop: Pin<&mut impl Future<Output = Stop>>,
    listen: bool,
    others_let_go: impl Future<Output = ()>,
) -> Collected {
    let Readers {
        stdout,
        stderr,
        cut,
        ..
    } = readers;
    let both = async {
        (
            stdout.await.unwrap_or_default(),
            stderr.await.unwrap_or_default(),
        )
    };
    tokio::pin!(both);
    // A stopped call's processes are killed already: what they wrote is in the pipes,
    // and the grace only waits for them to close the pipes as they die.
    let grace = if listen { PIPE_GRACE } else { STOPPED_GRACE };
    let settled = async {
        tokio::time::sleep(grace).await;
        if listen {
            let _ = tokio::time::timeout(OTHERS_BOUND, others_let_go).await;
        }
    };
    let stopped = tokio::select! {
        (stdout, stderr) = &mut both => return Collected::from((stdout, stderr, None)),
        () = settled => None,
        stop = stop, if listen => Some(stop),
    };
    if stopped.is_some()
        && let Err(e) = call.kill()
    {
        tracing::warn!(error = %e, "cannot kill the command's processes");
    }
    cut.cancel();
    let (stdout, stderr) = both.await;
    Collected::from((stdout, stderr, stopped))
}

impl From<(Piped, Piped, Option<Stop>)> for Collected {
    fn from((stdout, stderr, stopped): (Piped, Piped, Option<Stop>)) -> Collected {
        Collected {
            held: stdout.held || stderr.held,
            stdout: stdout.captured,
            stderr: stderr.captured,
            stopped,
        }
    }
}

/// Kills the call when a stream passed the cap after the shell had exited (in the
/// grace); before that, [`wait`] did. True when one did.
fn kill_if_capped(call: &Arc<Call>, stdout: &Captured, stderr: &Captured) -> bool {
    let capped = stdout.capped || stderr.capped;
    if capped && let Err(e) = call.kill() {
        tracing::warn!(error = %e, "cannot kill the command's processes");
    }
    capped
}

impl From<Stop> for Ending {
    fn from(stop: Stop) -> Ending {
        match stop {
            Stop::Cancelled => Ending::Cancelled,
            Stop::ShutDown => Ending::ShutDown,
        }
    }
}

/// The shell's exit code, or `128 + N` when signal N killed it (as bash reports it).
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The two pipe readers of a call.
struct Readers {
    stdout: oneshot::Receiver<Piped>,
    stderr: oneshot::Receiver<Piped>,
    /// Fires when a stream reaches the output cap before the shell exits.
    capped: CancellationToken,
    /// Tells the readers to hand over what they have (the grace is over).
    cut: CancellationToken,
    /// The readers' tasks: they end when every writer of their pipe is gone.
    tasks: TaskTracker,
}

/// What a reader hands over at the answer.
#[derive(Debug, Default)]
struct Piped {
    captured: Captured,
    /// The grace ended while a process of the call still held the pipe.
    held: bool,
}

/// Where a pipe still held at the answer goes from then on: a file, or `None` (the
/// call is being stopped, or the file could not be made) to be read and dropped.
type After = watch::Sender<Option<Arc<Log>>>;

impl Readers {
    fn start(child: &mut Child, job: &Job<'_>, call: &Arc<Call>) -> (Readers, After) {
        let capped = CancellationToken::new();
        let cut = CancellationToken::new();
        let tasks = TaskTracker::new();
        let (after, then) = watch::channel(None);
        let reader = |pipe, stream| {
            let sink = Sink::new(stream, job.cap, job.spiller.clone());
            let reader = Reader {
                stream,
                tail: job.tail.cloned(),
                cap: job.cap,
                call: call.clone(),
                capped: capped.clone(),
                cut: cut.clone(),
                then: then.clone(),
            };
            reader.start(pipe, sink, &tasks)
        };
        let stdout = reader(child.stdout.take().map(Pipe::Out), capture::Stream::Stdout);
        let stderr = reader(child.stderr.take().map(Pipe::Err), capture::Stream::Stderr);
        let readers = Readers {
            stdout,
            stderr,
            capped,
            cut,
            tasks,
        };
        (readers, after)
    }
}

/// Either of the child's pipes.
enum Pipe {
    Out(pipe::Receiver),
    Err(pipe::Receiver),
}

impl Pipe {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Pipe::Out(pipe) => pipe.read(buf).await,
            Pipe::Err(pipe) => pipe.read(buf).await,
        }
    }

    /// What the pipe holds now; `WouldBlock` when it holds nothing yet. Asked of the
    /// kernel: tokio's `try_read` answers from the readiness its reactor last saw,
    /// which on a busy runtime may not know yet that the last writer is gone.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = match self {
            Pipe::Out(pipe) => pipe.as_raw_fd(),
            Pipe::Err(pipe) => pipe.as_raw_fd(),
        };
        loop {
            // SAFETY: a read into `buf` from a non-blocking descriptor the pipe owns.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

/// What one pipe's reader needs besides the pipe.
struct Reader {
    stream: capture::Stream,
    /// Given each chunk too, until the answer.
    tail: Option<Arc<Tail>>,
    cap: u64,
    call: Arc<Call>,
    /// Fired by the reader when its stream reaches the cap.
    capped: CancellationToken,
    /// Fires when the grace is over.
    cut: CancellationToken,
    /// Where what comes after the answer goes, once the call was answered.
    then: watch::Receiver<Option<Arc<Log>>>,
}

impl Reader {
    /// Streams one pipe into `sink` on a task of its own; the receiver gets the
    /// capture at end of stream, at the cap, or when `cut` fires. A pipe still held
    /// then is read on until every writer is gone: into the call's background file,
    /// or, when it has none, read and dropped, still counting against the cap.
    fn start(
        self,
        pipe: Option<Pipe>,
        mut sink: Sink,
        tasks: &TaskTracker,
    ) -> oneshot::Receiver<Piped> {
        let (tx, rx) = oneshot::channel();
        tasks.spawn(async move {
            let mut reader = self;
            let Some(mut pipe) = pipe else {
                let _ = tx.send(Piped {
                    captured: sink.finish(),
                    held: false,
                });
                return;
            };
            let mut buf = Buffer::take();
            let mut held = false;
            loop {
                let n = tokio::select! {
                    biased;
                    () = reader.cut.cancelled() => {
                        // What is in the pipe already belongs to the answer.
                        held = !drain_ready(&mut pipe, &mut buf, &mut sink);
                        break;
                    }
                    n = pipe.read(&mut buf) => n,
                };
                match n {
                    Ok(0) | Err(_) => break,
                    Ok(n) => reader.take(&mut sink, &buf[..n]).await,
                }
                if sink.capped() {
                    reader.capped.cancel();
                    break;
                }
            }
            let captured = sink.finish();
            let total = captured.total_bytes;
            // Past the cap the call is being killed already; the pipe is drained, not
            // closed, so its writers die of that kill and not of SIGPIPE.
            let over = captured.capped;
            let _ = tx.send(Piped { captured, held });
            let log = if held {
                reader.after_the_answer().await
            } else {
                None
            };
            match log {
                Some(log) => keep(&mut pipe, &mut buf, &log).await,
                None => reader.drop_all(&mut pipe, &mut buf, total, over).await,
            }
        });
        rx
    }

    /// One chunk read from the pipe, into `sink` and the tail. A chunk that took long
    /// to read (a flood of lines that each look like an error) lets the other calls
    /// run before the next: the pipe stays ready all along.
    async fn take(&self, sink: &mut Sink, chunk: &[u8]) {
        let read = Instant::now();
        sink.push(chunk);
        if let Some(tail) = &self.tail {
            tail.push(self.stream, chunk);
        }
        if read.elapsed() >= SHARE {
            tokio::task::yield_now().await;
        }
    }

    /// Where the rest goes, once the call was answered (`None` if it never is).
    async fn after_the_answer(&mut self) -> Option<Arc<Log>> {
        self.then.changed().await.ok()?;
        self.then.borrow().clone()
    }

    /// Reads the pipe and drops what it gives until every writer is gone; past the cap
    /// (counting the `total` bytes captured), the call is killed, unless it was `over`
    /// it already.
    async fn drop_all(&self, pipe: &mut Pipe, buf: &mut [u8], mut total: u64, mut over: bool) {
        while let Ok(n) = pipe.read(buf).await
            && n > 0
        {
            total += n as u64;
            if !over && total > self.cap {
                over = true;
                tracing::info!(
                    cap = self.cap,
                    "output cap passed after the answer; stopping the call's processes"
                );
                if let Err(e) = self.call.kill() {
                    tracing::warn!(error = %e, "cannot kill the command's processes");
                }
            }
        }
    }
}

/// Reads what `pipe` holds now into `sink`, without waiting, up to the cap; true when
/// the pipe ended (every writer gone).
fn drain_ready(pipe: &mut Pipe, buf: &mut [u8], sink: &mut Sink) -> bool {
    while !sink.capped() {
        match pipe.try_read(buf) {
            Ok(0) => return true,
            Ok(n) => sink.push(&buf[..n]),
            Err(_) => return false,
        }
    }
    false
}

/// Reads `pipe` into `log` until every writer is gone.
async fn keep(pipe: &mut Pipe, buf: &mut [u8], log: &Log) {
    while let Ok(n) = pipe.read(buf).await
        && n > 0
    {
        log.write(&buf[..n]);
    }
}

/// Kills the call if it is dropped before it was answered (the runtime shutting down).
struct KillOnDrop(Option<Arc<Call>>);

impl KillOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(call) = self.0.take() {
            let _ = call.kill();
        }
    }
}
