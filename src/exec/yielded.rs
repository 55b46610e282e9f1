//! A call answered early (`--yield-after SECS`): clients give up on long calls (60 s in
//! LibreChat without a `timeout`), and the agent would lose what the command printed.
//!
//! A command still running SECS after it started is answered with what it wrote so
//! far and the line of a background job, which names the file the rest goes to and a
//! wait for it that fits in a client's timeout. The command goes on under its call's
//! timeout; its pipe readers write the rest to the file, as for a background job. When
//! the shell ends, or its timeout or the server's shutdown stops it, the file ends
//! with the footer an answer would have had (after the timeout's line, if it timed
//! out), and [`Rest::finished`] tells the caller its exit code, for the audit row.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{
    After, Child, Ending, Job, KillOnDrop, Output, PIPE_GRACE, Readers, exit_code, keep_output,
};
use crate::background::{End, Log};
use crate::contain::Call;
use crate::exit;

/// When and how a call may be answered early.
#[derive(Debug, Clone)]
pub struct Yielding {
    /// How long after its start a call still running is answered.
    pub after: Duration,
    /// Stops a call that was answered early (the server's shutdown): its request can no
    /// longer be cancelled.
    pub shutdown: CancellationToken,
}

/// How a call answered early ends, once it does.
#[derive(Debug, Clone)]
pub struct Rest(watch::Receiver<Option<Finished>>);

/// The end of a call answered early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// As [`Output::code`] would have been.
    pub code: i32,
    pub ending: Ending,
}

impl Rest {
    /// Waits for the command's end. A runtime that goes away first (its task dropped,
    /// and with it the command killed) counts as a shutdown.
    pub async fn finished(mut self) -> Finished {
        let shut_down = Finished {
            code: exit::SHUTDOWN,
            ending: Ending::ShutDown,
        };
        match self.0.wait_for(Option::is_some).await {
            Ok(finished) => finished.unwrap_or(shut_down),
            Err(_) => shut_down,
        }
    }
}

/// Resolves at the job's yield time, when it has one before its timeout; never
/// otherwise.
pub(super) fn time(job: &Job<'_>) -> impl Future<Output = ()> + use<> {
    let after = job
        .yielding
        .as_ref()
        .map(|yielding| yielding.after)
        .filter(|after| *after < job.timeout);
    async move {
        match after {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    }
}

/// What a running call hands over at its yield time.
pub(super) struct Taken {
    pub call: Arc<Call>,
    pub child: Child,
    pub guard: KillOnDrop,
    pub readers: Readers,
    pub after: After,
    /// When the shell started.
    pub started: Instant,
}

/// The answer of a call still running at its yield time; the rest goes on in a task of
/// its own.
pub(super) async fn answer(job: &Job<'_>, taken: Taken) -> Output {
    let Taken {
        call,
        child,
        guard,
        readers,
        after,
        started,
    } = taken;
    let Readers {
        stdout,
        stderr,
        cut,
        tasks,
        ..
    } = readers;
    cut.cancel();
    let (stdout, stderr) = (
        stdout.await.unwrap_or_default(),
        stderr.await.unwrap_or_default(),
    );
    let (log, mut background) = keep_output(job, &call);
    let yielding = job
        .yielding
        .clone()
        .expect("only a job with a yield time yields");
    background.wait_secs = Some(wait_secs(yielding.after));
    after.send_replace(log.clone());
    let (tx, rx) = watch::channel(None);
    let rest = Going {
        call,
        child,
        guard,
        log,
        timeout: job.timeout,
        started,
        shutdown: yielding.shutdown,
    };
    tasks.close();
    tokio::spawn(async move {
        let finished = rest.run(tasks).await;
        tx.send_replace(Some(finished));
    });
    Output {
        stdout: stdout.captured,
        stderr: stderr.captured,
        code: 0,
        ending: Ending::Yielded,
        background: Some(background),
        rest: Some(Rest(rx)),
        out_of_memory: None,
    }
}

/// The seconds of the wait the answer names: a tenth under the yield time, so that
/// the wait, itself a call, ends before it would yield.
fn wait_secs(after: Duration) -> u64 {
    let secs = after.as_secs();
    secs.saturating_sub((secs / 10).max(1)).max(1)
}

/// A call answered early, until it ends.
struct Going {
    call: Arc<Call>,
    child: Child,
    guard: KillOnDrop,
    log: Option<Arc<Log>>,
    timeout: Duration,
    started: Instant,
    shutdown: CancellationToken,
}

impl Going {
    /// Waits for the shell to exit, or kills the call at its timeout or the server's
    /// shutdown; then ends the file with the footer. `readers`: the pipe readers'
    /// tasks, whose last bytes go to the file before the footer.
    async fn run(mut self, readers: tokio_util::task::TaskTracker) -> Finished {
        let left = self.timeout.saturating_sub(self.started.elapsed());
        // The shell is reaped only once the file has its last line: the wait the answer
        // named (`tail --pid`) ends when the pid is gone, and must find the line then.
        let ending = tokio::select! {
            status = self.child.exited() => Ok(status),
            () = tokio::time::sleep(left) => Err(Ending::TimedOut),
            () = self.shutdown.cancelled() => Err(Ending::ShutDown),
        };
        let (code, ending) = match ending {
            Ok(Ok(status)) => (exit_code(status), Ending::Exited),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot wait for the shell");
                (exit::FAILURE, Ending::Exited)
            }
            Err(ending) => {
                if let Err(e) = self.call.kill() {
                    tracing::warn!(error = %e, "cannot kill the command's processes");
                }
                let _ = self.child.exited().await;
                let code = match ending {
                    Ending::TimedOut => exit::TIMEOUT,
                    _ => exit::SHUTDOWN,
                };
                (code, ending)
            }
        };
        // What is still in the pipes goes to the file before its last line; processes
        // that still hold them (`server &`) write on after it.
        let _ = tokio::time::timeout(PIPE_GRACE, readers.wait()).await;
        if let Some(log) = &self.log {
            let timed_out = (ending == Ending::TimedOut).then_some(self.timeout.as_secs());
            log.note(End::Ended {
                code,
                ms: self.started.elapsed().as_millis(),
                timed_out,
            });
        }
        let status = self.child.wait().await;
        let of_itself = ending == Ending::Exited && status.is_ok_and(|s| s.code().is_some());
        self.call.reaped(of_itself);
        self.guard.disarm();
        self.call.release();
        Finished { code, ending }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_ends_before_the_yield_time() {
        for (after, wait) in [(1, 1), (2, 1), (10, 9), (50, 45), (55, 50)] {
            assert_eq!(wait_secs(Duration::from_secs(after)), wait, "{after}");
        }
    }
}
