//! The stdio transport between the client and rmcp.
//!
//! rmcp reads and writes an in-memory duplex instead of the real stdin/stdout, and
//! this module pumps lines between them. That buys what rmcp alone does not do
//! (see RMCP-NOTES.md):
//!
//! - At end of input, every request already read is answered before exit, however
//!   long its command runs; rmcp alone gives up after 5 s.
//! - A last line without a trailing newline is still a request.
//! - A line that is not JSON, or too long, gets a JSON-RPC error instead of silence.
//! - On the shutdown signal, every running command is killed and logged, and the
//!   server returns within about a second.

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc};

use crate::server::Server;

/// Longest request line accepted: rmcp's own line limit.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Buffer of the in-memory pipe to rmcp, each way.
const DUPLEX_BYTES: usize = 256 * 1024;

/// At end of input, how long to wait for answers to requests that no running call
/// accounts for (rmcp answers those at once, or never).
const ORPHAN_GRACE: Duration = Duration::from_secs(1);

/// On shutdown, how long running commands get to be killed and logged.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(700);

/// On shutdown, how long their answers get to reach stdout.
const FLUSH_GRACE: Duration = Duration::from_millis(150);

/// How the server stopped serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// End of input, and every request answered.
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
) -> io::Result<Ending>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(DUPLEX_BYTES);
    let running = rmcp::service::serve_directly(server.clone(), theirs, None);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);

    let pending = Arc::new(Pending::default());
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let relay = tokio::spawn(relay_responses(from_rmcp, out_tx.clone(), pending.clone()));

    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    tokio::pin!(signal);
    let ending = loop {
        let read = tokio::select! {
            biased;
            () = &mut signal => break Ending::Signal,
            read = read_line(&mut input, &mut line, MAX_LINE_BYTES) => read,
        };
        match read {
            Ok(Line::Eof) => break Ending::Eof,
            Ok(Line::TooLong) => {
                let message = format!("request line longer than {MAX_LINE_BYTES} bytes");
                send_error(&out_tx, -32600, &message).await;
            }
            Ok(Line::Complete) => {
                if let Some(forward) = inspect(&line, &pending, &out_tx).await {
                    to_rmcp.write_all(forward).await?;
                    to_rmcp.write_all(b"\n").await?;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed; treating it as end of input");
                break Ending::Eof;
            }
        }
    };

    let ending = if ending == Ending::Eof {
        tokio::select! {
            biased;
            () = &mut signal => Ending::Signal,
            () = drain(&server, &pending) => Ending::Eof,
        }
    } else {
        ending
    };
    if ending == Ending::Signal {
        tracing::info!("shutdown signal: stopping running commands");
        server.shutdown().cancel();
        server.calls().close();
        if tokio::time::timeout(SHUTDOWN_GRACE, server.calls().wait())
            .await
            .is_err()
        {
            tracing::warn!("running commands did not stop in time");
        }
        let _ = tokio::time::timeout(FLUSH_GRACE, pending.wait_empty()).await;
        return Ok(Ending::Signal);
    }

    // Everything is answered: let rmcp see end of input and finish.
    to_rmcp.shutdown().await?;
    if let Err(e) = running.waiting().await {
        tracing::warn!(error = %e, "rmcp service ended with an error");
    }
    let _ = relay.await;
    drop(out_tx);
    let _ = writer.await;
    Ok(Ending::Eof)
}

/// Request ids read from the client and not yet answered.
#[derive(Debug, Default)]
struct Pending {
    ids: Mutex<HashSet<String>>,
    changed: Notify,
}

impl Pending {
    fn insert(&self, id: &Value) {
        self.lock().insert(id.to_string());
    }

    fn remove(&self, id: &Value) {
        if self.lock().remove(&id.to_string()) {
            self.changed.notify_waiters();
        }
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn wait_empty(&self) {
        loop {
            let changed = self.changed.notified();
            if self.is_empty() {
                return;
            }
            changed.await;
        }
    }
}

/// Waits until every request read is answered and every call has written its audit
/// row. Requests that rmcp will never answer (it drops cancelled ones) are given up
/// on once no call is running for [`ORPHAN_GRACE`].
async fn drain(server: &Server, pending: &Pending) {
    let mut idle_since: Option<Instant> = None;
    loop {
        let changed = pending.changed.notified();
        let idle = server.calls().is_empty();
        if idle && pending.is_empty() {
            return;
        }
        if idle {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= ORPHAN_GRACE {
                tracing::debug!("giving up on requests that got no answer");
                return;
            }
        } else {
            idle_since = None;
        }
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// The parts of a JSON-RPC message this module looks at.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
}

/// Checks one input line. Returns the bytes to forward to rmcp, or `None` when this
/// module answered it (or it is blank).
async fn inspect<'a>(
    line: &'a [u8],
    pending: &Pending,
    out: &mpsc::Sender<Vec<u8>>,
) -> Option<&'a [u8]> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            send_error(out, -32700, &format!("parse error: {e}")).await;
            return None;
        }
    };
    if !value.is_object() {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "a request must be a JSON object"
        };
        send_error(out, -32600, &format!("invalid request: {what}")).await;
        return None;
    }
    if let Ok(envelope) = Envelope::deserialize(&value) {
        match (&envelope.method, &envelope.id) {
            (Some(_), Some(id)) if !id.is_null() => pending.insert(id),
            (Some(method), None) if method == "notifications/cancelled" => {
                if let Some(id) = envelope.params.as_ref().and_then(|p| p.get("requestId")) {
                    pending.remove(id);
                }
            }
            _ => {}
        }
    }
    Some(line)
}

/// Copies rmcp's output lines to the writer, noting which requests they answer.
async fn relay_responses(
    from_rmcp: impl AsyncRead + Unpin,
    out: mpsc::Sender<Vec<u8>>,
    pending: Arc<Pending>,
) {
    let mut reader = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        let answered = serde_json::from_slice::<Envelope>(&line)
            .ok()
            .filter(|e| e.method.is_none())
            .and_then(|e| e.id);
        if out.send(line).await.is_err() {
            return;
        }
        if let Some(id) = answered {
            pending.remove(&id);
        }
    }
}

/// Writes whole lines to stdout, flushing each: the only writer of stdout.
async fn write_lines(mut output: impl AsyncWrite + Unpin, mut lines: mpsc::Receiver<Vec<u8>>) {
    let mut broken = false;
    while let Some(line) = lines.recv().await {
        if broken {
            continue;
        }
        let written = async {
            output.write_all(&line).await?;
            output.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "writing stdout failed; answers are dropped from now on");
            broken = true;
        }
    }
}

async fn send_error(out: &mpsc::Sender<Vec<u8>>, code: i64, message: &str) {
    tracing::warn!(code, message, "bad input line");
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let mut line = error.to_string().into_bytes();
    line.push(b'\n');
    let _ = out.send(line).await;
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (its newline removed), also a last one that had none.
    Complete,
    /// A line over the limit; it was read to its end and discarded.
    TooLong,
    Eof,
}

/// Reads one line into `buf`, keeping memory bounded by `max`.
async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (read_any, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => Line::Complete,
            });
        }
        read_any = true;
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        if !too_long && buf.len() + chunk.len() <= max {
            buf.extend_from_slice(chunk);
        } else {
            too_long = true;
            buf.clear();
        }
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, max).await.unwrap();
            if line == Line::Eof {
                return out;
            }
            out.push((line, buf.clone()));
        }
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_a_last_line_without_newline() {
        let got = lines(b"one\ntwo\n\nthree", 100).await;
        assert_eq!(
            got,
            vec![
                (Line::Complete, b"one".to_vec()),
                (Line::Complete, b"two".to_vec()),
                (Line::Complete, b"".to_vec()),
                (Line::Complete, b"three".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn too_long_lines_are_skipped_whole() {
        let got = lines(b"0123456789abc\nok\n0123456789", 8).await;
        assert_eq!(
            got,
            vec![
                (Line::TooLong, b"".to_vec()),
                (Line::Complete, b"ok".to_vec()),
                (Line::TooLong, b"".to_vec()),
            ]
        );
    }
}
