//! Lines to stdout: the queue every answer and refusal goes through, the one task
//! that writes them, and the watch for a client whose end of stdout has closed.

use std::any::TypeId;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::backlog::Backlog;
use crate::check::Refusal;

/// The queue of lines for stdout. Every line queued counts in the backlog until it is
/// written.
#[derive(Debug, Clone)]
pub(super) struct Outbox {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    backlog: Arc<Backlog>,
}

impl Outbox {
    /// Queues one line (with its newline); false once the writer has stopped.
    pub fn send(&self, line: Vec<u8>) -> bool {
        let len = line.len();
        self.backlog.add(len);
        if self.tx.send(line).is_err() {
            self.backlog.remove(len);
            return false;
        }
        true
    }

    /// Answers a line the transport refused.
    pub fn refuse(&self, refusal: &Refusal) {
        tracing::warn!(
            code = refusal.code.0,
            message = refusal.message,
            "bad input line"
        );
        self.send(refusal.line());
    }

    pub fn backlog(&self) -> &Arc<Backlog> {
        &self.backlog
    }
}

/// Starts the writer of `output`. It ends once every [`Outbox`] is dropped and every
/// line written. `gone` is cancelled when the client can no longer read: a write
/// failed, or (on the process's stdout) the pipe's reading end closed.
pub(super) fn start<W>(
    output: W,
    backlog: Arc<Backlog>,
    gone: CancellationToken,
) -> (Outbox, JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let out = Outbox {
        tx,
        backlog: backlog.clone(),
    };
    let watch = writes_to_process_stdout::<W>();
    let writer = tokio::spawn(async move {
        let watched = async {
            if watch {
                stdout_reader_gone().await;
                gone.cancel();
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            () = write_lines(output, rx, backlog, gone.clone()) => {}
            () = watched => {}
        }
    });
    (out, writer)
}

/// Writes whole lines to stdout, flushing each: the only writer of stdout.
/// Once a write fails, or `gone` is cancelled, lines are dropped; a failed write
/// cancels `gone`.
async fn write_lines(
    mut output: impl AsyncWrite + Unpin,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    backlog: Arc<Backlog>,
    gone: CancellationToken,
) {
    while let Some(line) = lines.recv().await {
        if !gone.is_cancelled() {
            let written = async {
                output.write_all(&line).await?;
                output.flush().await
            };
            if let Err(e) = written.await {
                tracing::warn!(error = %e, "writing stdout failed; answers are dropped from now on");
                gone.cancel();
            }
        }
        backlog.remove(line.len());
    }
}

/// Whether `W` is a writer of the process's own stdout: rmcp's or tokio's.
fn writes_to_process_stdout<W: 'static>() -> bool {
    let writer = TypeId::of::<W>();
    writer == TypeId::of::<rmcp::transport::StdioWriter>()
        || writer == TypeId::of::<tokio::io::Stdout>()
}

/// Resolves once the process's stdout is a pipe whose reading end has closed, which
/// poll reports as POLLERR without anything being written. Never when stdout is not a
/// pipe: then a failed write tells.
async fn stdout_reader_gone() {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    let Ok(stdout) = io::stdout().as_fd().try_clone_to_owned() else {
        return std::future::pending().await;
    };
    let is_pipe = stdout
        .try_clone()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|metadata| metadata.file_type().is_fifo());
    if !is_pipe {
        return std::future::pending().await;
    }
    // SAFETY: an `OwnedFd` is a valid open descriptor that only its drop closes, and
    // it always returns that same descriptor.
    let registered = unsafe { AsyncFd::register_with_interest(stdout, Interest::ERROR) };
    let Ok(stdout) = registered else {
        tracing::debug!("cannot watch stdout for a reader that has gone");
        return std::future::pending().await;
    };
    loop {
        match stdout.ready(Interest::ERROR).await {
            Ok(guard) if guard.ready().is_error() => return,
            Ok(mut guard) => guard.clear_ready(),
            Err(_) => return std::future::pending().await,
        }
    }
}
