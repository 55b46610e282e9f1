//! Layer 1: run one command and capture what it writes.
//!
//! `bash -c <command>` runs in the workdir with stdin at `/dev/null`, in a process
//! group of its own. Whatever stops it early (timeout, output cap, cancellation,
//! shutdown) kills the whole group with `killpg`, so grandchildren go too; tokio's
//! `kill_on_drop` alone would kill only the shell. Both pipes are streamed through
//! [`capture::Sink`]s, so memory stays bounded whatever the command writes.

use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::capture::{self, Captured, Sink, Spiller};

/// Exit code of a command stopped by its timeout, as `timeout(1)` reports it.
pub const TIMEOUT_CODE: i32 = 124;

/// Exit code of a command cancelled by the client (128 + SIGINT, as for Ctrl-C).
pub const CANCELLED_CODE: i32 = 130;

/// Exit code of a command stopped because the server shuts down (128 + SIGTERM).
pub const SHUTDOWN_CODE: i32 = 143;

/// How long to keep reading after the shell exits while its background children still
/// hold the pipes. Long enough for output already in the pipe, short enough that a
/// `server &` does not hold the call.
pub const PIPE_GRACE: Duration = Duration::from_millis(250);

/// Bytes read from a pipe at a time: the size of a Linux pipe buffer × 4.
const CHUNK: usize = 64 * 1024;

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
}

/// Why a command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("working directory {0} does not exist")]
    NoWorkdir(PathBuf),
    #[error("command contains a NUL byte, which a shell argument cannot hold")]
    Nul,
    #[error(
        "command is {0} bytes; the kernel passes at most {MAX_ARG_BYTES} bytes in one argument"
    )]
    TooLong(usize),
    #[error("cannot start {shell}: {source}")]
    Spawn { shell: String, source: io::Error },
    #[error("cannot wait for the shell: {0}")]
    Wait(io::Error),
}

/// Runs `job` to its end, or until `stop` resolves.
pub async fn run(job: Job<'_>, stop: impl Future<Output = Stop>) -> Result<Output, Error> {
    if job.command.contains('\0') {
        return Err(Error::Nul);
    }
    if job.command.len() >= MAX_ARG_BYTES {
        return Err(Error::TooLong(job.command.len()));
    }
    if !job.workdir.is_dir() {
        return Err(Error::NoWorkdir(job.workdir.to_owned()));
    }
    let mut child = Command::new(job.shell)
        .arg("-c")
        .arg(job.command)
        .current_dir(job.workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| Error::Spawn {
            shell: job.shell.display().to_string(),
            source,
        })?;
    let group = Group::new(child.id());

    let capped = CancellationToken::new();
    let cut = CancellationToken::new();
    let stdout = read(
        child.stdout.take(),
        capture::Stream::Stdout,
        &job,
        &capped,
        &cut,
    );
    let stderr = read(
        child.stderr.take(),
        capture::Stream::Stderr,
        &job,
        &capped,
        &cut,
    );

    tokio::pin!(stop);
    let killed = tokio::select! {
        status = child.wait() => Err(status),
        () = tokio::time::sleep(job.timeout) => Ok(Ending::TimedOut),
        () = capped.cancelled() => Ok(Ending::Exited),
        stop = &mut stop => Ok(match stop {
            Stop::Cancelled => Ending::Cancelled,
            Stop::ShutDown => Ending::ShutDown,
        }),
    };
    let (status, ending) = match killed {
        Err(status) => (status, Ending::Exited),
        Ok(ending) => {
            group.kill();
            (child.wait().await, ending)
        }
    };
    group.disarm();
    let status = status.map_err(Error::Wait)?;

    // The pipes close as soon as the group is gone. Background children may hold them
    // open: read what they already wrote for a short grace, then answer and leave the
    // readers draining so those children do not die of SIGPIPE.
    let both = async {
        (
            stdout.await.unwrap_or_default(),
            stderr.await.unwrap_or_default(),
        )
    };
    tokio::pin!(both);
    let (stdout, stderr) = match tokio::time::timeout(PIPE_GRACE, &mut both).await {
        Ok(both) => both,
        Err(_) => {
            cut.cancel();
            both.await
        }
    };

    let code = match ending {
        Ending::Exited => exit_code(status),
        Ending::TimedOut => TIMEOUT_CODE,
        Ending::Cancelled => CANCELLED_CODE,
        Ending::ShutDown => SHUTDOWN_CODE,
    };
    Ok(Output {
        stdout,
        stderr,
        code,
        ending,
    })
}

/// The shell's exit code, or `128 + N` when signal N killed it (as bash reports it).
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Streams one pipe into a sink on a task of its own; the receiver gets the capture
/// at end of stream, at the cap, or when `cut` fires.
fn read(
    pipe: Option<impl AsyncRead + Unpin + Send + 'static>,
    stream: capture::Stream,
    job: &Job<'_>,
    capped: &CancellationToken,
    cut: &CancellationToken,
) -> oneshot::Receiver<Captured> {
    let (tx, rx) = oneshot::channel();
    let mut sink = Sink::new(stream, job.cap, job.spiller.clone());
    let (capped, cut) = (capped.clone(), cut.clone());
    tokio::spawn(async move {
        let Some(mut pipe) = pipe else {
            let _ = tx.send(sink.finish());
            return;
        };
        let mut buf = vec![0; CHUNK];
        loop {
            let n = tokio::select! {
                biased;
                () = cut.cancelled() => break,
                n = pipe.read(&mut buf) => n,
            };
            match n {
                Ok(0) | Err(_) => break,
                Ok(n) => sink.push(&buf[..n]),
            }
            if sink.capped() {
                capped.cancel();
                break;
            }
        }
        let _ = tx.send(sink.finish());
        // Drain and discard whatever is still written, until every writer is gone.
        while matches!(pipe.read(&mut buf).await, Ok(n) if n > 0) {}
    });
    rx
}

/// The command's process group. Until the shell is reaped its pid cannot be reused,
/// so killing the group by that id is safe; should the call be dropped midway (the
/// runtime shutting down), the group is killed rather than left behind.
struct Group {
    pgid: Option<libc::pid_t>,
}

impl Group {
    fn new(pid: Option<u32>) -> Group {
        Group {
            pgid: pid.and_then(|pid| libc::pid_t::try_from(pid).ok()),
        }
    }

    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; `pgid` is the group
            // of our own unreaped child.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }

    fn disarm(mut self) {
        self.pgid = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}
