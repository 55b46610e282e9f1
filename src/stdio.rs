//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, handed to rmcp
//! through rmcp's own transport seam, [`rmcp::transport::Transport`].
//!
//! Each line is read once, checked by [`crate::check`], and passed to rmcp as its own
//! message type; each message from rmcp is serialized once. That buys what rmcp's own
//! stdio transport does not do:
//!
//! - At end of input, every request already read is answered before rmcp is told
//!   that input has ended, however long its command runs (rmcp gives up on answers
//!   5 s after it sees the end).
//! - A last line without a trailing newline is still a request.
//! - A line that fails the checks gets a JSON-RPC error that says what is wrong, and
//!   a request whose id is already in flight is refused.
//! - Integer ids beyond 64 bits, which rmcp sees as a string stand-in, are answered
//!   with the digits the client wrote.
//! - A byte order mark before the first line is ignored.
//! - Answers waiting for a client that does not read are bounded: past
//!   [`crate::backlog::BACKLOG_BYTES`], input is not read and finished calls hold
//!   their answers until stdout drains; at most [`Server::max_in_flight`] requests are
//!   read and not yet answered.
//! - On the shutdown signal, every running command is killed and logged, and the
//!   server returns within about a second.
//! - When the client can no longer read answers (its end of stdout closed: a pipe
//!   reports it at once, anything else when a write fails), every request in flight is
//!   cancelled as by `notifications/cancelled`: running commands are killed and logged
//!   with exit 130. Input is then read to its end and ignored, and the server returns.
//!
//! The parts: `reader` reads and checks lines and keeps the ids in flight,
//! `transport` is what rmcp reads from and writes to, and `output` writes lines
//! to stdout and notices a client that has gone.

mod output;
mod reader;
mod transport;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::backlog::Backlog;
use crate::server::Server;

use self::reader::Reader;
use self::transport::{Pending, StdioTransport};

/// Longest request line accepted: rmcp's own line limit.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Checked messages waiting for rmcp to take them.
const QUEUE: usize = 64;

/// On shutdown, how long their answers get to reach stdout.
const FLUSH_GRACE: Duration = Duration::from_millis(150);

/// How the server stopped serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// End of input, and every request answered (or cancelled, once the client could
    /// no longer read answers).
    Eof,
    /// The shutdown signal.
    Signal,
}

/// Serves `server` on `input`/`output` until end of input (after answering everything)
/// or until `signal` resolves.
pub async fn serve<R, W>(
    server: Server,
    input: R,
    output: W,
    signal: impl Future<Output = ()>,
) -> io::Result<Exit>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let backlog = Arc::new(Backlog::default());
    let pending = Arc::new(Pending::default());
    let gone = CancellationToken::new();
    let (out, writer) = output::start(output, backlog.clone(), gone.clone());
    let (to_rmcp, from_reader) = mpsc::channel(QUEUE);
    let reader = Reader {
        to_rmcp,
        pending: pending.clone(),
        out: out.clone(),
        max_in_flight: server.max_in_flight(),
        calls: server.calls().clone(),
        gone,
        abandoned: false,
    };
    let _reader = AbortOnDropHandle::new(tokio::spawn(reader.run(input)));
    let transport = StdioTransport::new(from_reader, out, pending.clone());
    let served = rmcp::service::serve_directly(server.clone(), transport, None).waiting();
    tokio::pin!(signal, served);
    tokio::select! {
        biased;
        () = &mut signal => {
            shut_down(&server, &pending, &backlog).await;
            return Ok(Exit::Signal);
        }
        quit = &mut served => {
            if let Err(e) = quit {
                tracing::warn!(error = %e, "rmcp service ended with an error");
            }
        }
    }
    // rmcp has stopped and dropped the transport: the writer ends once it has written
    // every line queued.
    let _ = writer.await;
    Ok(Exit::Eof)
}

/// Stops every running command, logs them, and gives their answers a moment to go out.
async fn shut_down(server: &Server, pending: &Pending, backlog: &Backlog) {
    server.shared().stop_calls().await;
    let flushed = async {
        pending.wait_empty().await;
        backlog.empty().await;
    };
    let _ = tokio::time::timeout(FLUSH_GRACE, flushed).await;
}
