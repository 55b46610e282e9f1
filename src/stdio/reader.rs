//! The client's lines: read one at a time while there is room, checked, and passed to
//! rmcp; refusals are answered here. At end of input the reader waits until every
//! request read is answered, and only then closes rmcp's input.

use std::io;
use std::time::{Duration, Instant};

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    ErrorCode, GetExtensions, JsonRpcMessage,
};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::MAX_LINE_BYTES;
use super::output::Outbox;
use super::transport::Pending;
use crate::check::{self, Accepted, Refusal};
use crate::server::TOOL;

/// A UTF-8 byte order mark, which some clients write before their first line.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// At end of input, how long to wait for answers to requests that no running call
/// accounts for (rmcp answers those at once, or never).
const ORPHAN_GRACE: Duration = Duration::from_secs(1);

/// Reads the client's lines and passes the good ones to rmcp.
pub(super) struct Reader {
    /// rmcp's input; dropped once input has ended and everything read is answered.
    pub to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
    pub pending: std::sync::Arc<Pending>,
    pub out: Outbox,
    /// Requests read and not yet answered past which input waits: rmcp holds the
    /// finished answers of these, so they are bounded too.
    pub max_in_flight: usize,
    /// The server's running calls: end of input also waits for their audit rows.
    pub calls: TaskTracker,
    /// Cancelled once the client can no longer read answers.
    pub gone: CancellationToken,
    /// Every request in flight was cancelled because the client had gone; input is
    /// read to its end and ignored.
    pub abandoned: bool,
}

impl Reader {
    /// Until end of input and every request read answered; then rmcp sees the end.
    pub async fn run(mut self, input: impl AsyncRead + Unpin) {
        if !self.read_all(input).await {
            return;
        }
        let gone = self.gone.clone();
        loop {
            tokio::select! {
                biased;
                () = gone.cancelled(), if !self.abandoned => self.abandon().await,
                () = drain(&self.calls, &self.pending) => return,
            }
        }
    }

    /// Until end of input; false when rmcp stopped taking messages. Input waits while
    /// the backlog is full or too many requests are in flight.
    async fn read_all(&mut self, input: impl AsyncRead + Unpin) -> bool {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        let mut first = true;
        let gone = self.gone.clone();
        loop {
            tokio::select! {
                biased;
                () = gone.cancelled(), if !self.abandoned => {
                    self.abandon().await;
                    continue;
                }
                () = async {
                    self.out.backlog().room().await;
                    self.pending.below(self.max_in_flight).await;
                } => {}
            }
            let read = tokio::select! {
                biased;
                // A line cut short here is ignored like every line after it.
                () = gone.cancelled(), if !self.abandoned => {
                    self.abandon().await;
                    continue;
                }
                read = read_line(&mut input, &mut line, MAX_LINE_BYTES) => read,
            };
            let first = std::mem::replace(&mut first, false);
            match read {
                Ok(Line::Eof) => return true,
                // Nobody would read the answers.
                Ok(_) if self.abandoned => {}
                Ok(Line::TooLong) => {
                    let message = format!("request line longer than {MAX_LINE_BYTES} bytes");
                    self.out
                        .refuse(&Refusal::new(None, ErrorCode::INVALID_REQUEST, message));
                }
                Ok(Line::Complete) => {
                    // A byte order mark before the first line is not part of the request.
                    let line = match line.strip_prefix(UTF8_BOM) {
                        Some(rest) if first => rest,
                        _ => &line[..],
                    };
                    if !self.take(line).await {
                        return false;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading stdin failed; treating it as end of input");
                    return true;
                }
            }
        }
    }

    /// Checks one line and passes it on, or answers it; false once rmcp has stopped
    /// taking messages.
    async fn take(&mut self, line: &[u8]) -> bool {
        let message = match check::check_line(line, TOOL) {
            Err(refusal) => {
                self.out.refuse(&refusal);
                return true;
            }
            Ok(Accepted::Nothing) => return true,
            Ok(Accepted::Request { id, mut request }) => {
                if !self.pending.insert(&id) {
                    self.out.refuse(&Refusal::in_flight(id));
                    return true;
                }
                // The call waits for room in this client's backlog before it answers.
                let backlog = self.out.backlog().clone();
                request.request.extensions_mut().insert(backlog);
                JsonRpcMessage::Request(request)
            }
            Ok(Accepted::Notification {
                cancels,
                notification,
            }) => {
                if let Some(id) = cancels {
                    self.pending.remove(&id.rmcp);
                }
                JsonRpcMessage::Notification(notification)
            }
        };
        self.to_rmcp.send(message).await.is_ok()
    }

    /// The client can no longer read answers: cancels every request in flight, as
    /// the client itself would with `notifications/cancelled`, so that running
    /// commands are killed and logged (exit 130) instead of running to their timeout.
    async fn abandon(&mut self) {
        self.abandoned = true;
        let ids = self.pending.take_all();
        tracing::warn!(
            cancelled = ids.len(),
            "the client stopped reading answers (stdout closed): cancelling every request \
             in flight; further input is read to its end and ignored"
        );
        for id in ids {
            let reason = Some("the client closed stdout".to_owned());
            let cancel =
                CancelledNotification::new(CancelledNotificationParam::new(Some(id), reason));
            let message =
                JsonRpcMessage::notification(ClientNotification::CancelledNotification(cancel));
            if self.to_rmcp.send(message).await.is_err() {
                return;
            }
        }
    }
}

/// Waits until every request read is answered and every call has written its audit
/// row. Requests that rmcp will never answer are given up on once no call is running
/// for [`ORPHAN_GRACE`].
async fn drain(calls: &TaskTracker, pending: &Pending) {
    let mut idle_since: Option<Instant> = None;
    loop {
        let changed = pending.changed();
        let idle = calls.is_empty();
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
