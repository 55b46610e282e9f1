//! The stdio transport between the client and rmcp.
//!
//! rmcp reads and writes an in-memory duplex instead of the real stdin/stdout, and
//! this module pumps lines between them. That buys what rmcp alone does not do:
//!
//! - At end of input, every request already read is answered before exit, however
//!   long its command runs; rmcp alone gives up after 5 s.
//! - A last line without a trailing newline is still a request.
//! - Every line is checked before rmcp sees it. Malformed JSON, batches, ids that are
//!   neither a string nor an integer, an id already in flight, unknown methods,
//!   repeated keys, `result` or `error` beside `method`, and params that rmcp cannot
//!   read get a JSON-RPC error that says what is wrong, with the id echoed as sent
//!   whenever it can be read (`null` only when it cannot).
//! - Integer ids beyond 64 bits, which rmcp cannot hold, reach rmcp as a string
//!   stand-in; answers carry the digits the client wrote.
//! - A byte order mark before the first line is ignored, and a lone surrogate escape
//!   (`\ud800`, as JavaScript writes one) is read as U+FFFD instead of failing the line.
//! - Answers waiting for a client that does not read are bounded: past
//!   [`BACKLOG_BYTES`], input is not read and finished calls hold their answers until
//!   stdout drains.
//! - On the shutdown signal, every running command is killed and logged, and the
//!   server returns within about a second.
//! - When the client can no longer read answers (its end of stdout closed: a pipe
//!   reports it at once, anything else when a write fails), every request in flight is
//!   cancelled as by `notifications/cancelled`: running commands are killed and logged
//!   with exit 130. Input is then read to its end and ignored, and the server returns.

use std::any::TypeId;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::ErrorCode;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, WriteHalf,
};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::server::{Server, TOOL};

/// Longest request line accepted: rmcp's own line limit.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Bytes of answers waiting to be written to stdout past which input is not read and
/// finished calls wait: a client that stops reading costs the server at most this
/// much, plus one answer per running call.
pub const BACKLOG_BYTES: usize = 16 * 1024 * 1024;

/// A UTF-8 byte order mark, which some clients write before their first line.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Buffer of the in-memory pipe to rmcp, each way.
const DUPLEX_BYTES: usize = 256 * 1024;

/// At end of input, how long to wait for answers to requests that no running call
/// accounts for (rmcp answers those at once, or never).
const ORPHAN_GRACE: Duration = Duration::from_secs(1);

/// On shutdown, how long running commands get to be killed and logged.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(700);

/// On shutdown, how long their answers get to reach stdout.
const FLUSH_GRACE: Duration = Duration::from_millis(150);

/// Requests the server answers; any other method gets "Method not found".
const METHODS: &[&str] = &["initialize", "ping", "tools/list", "tools/call"];

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
    let (ours, theirs) = tokio::io::duplex(DUPLEX_BYTES);
    let running = rmcp::service::serve_directly(server.clone(), theirs, None);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (tx, rx) = mpsc::unbounded_channel();
    let out = Outbox {
        tx,
        backlog: server.backlog().clone(),
    };
    let pending = Arc::new(Pending::default());
    let gone = CancellationToken::new();
    // A pipe to the client reports that its reader has gone before anything is written
    // to it; any other output tells when a write fails.
    let _watch = writes_to_process_stdout::<W>().then(|| {
        let gone = gone.clone();
        AbortOnDropHandle::new(tokio::spawn(async move {
            stdout_reader_gone().await;
            gone.cancel();
        }))
    });
    let writer = tokio::spawn(write_lines(
        output,
        rx,
        server.backlog().clone(),
        gone.clone(),
    ));
    let relay = tokio::spawn(relay_responses(from_rmcp, out.clone(), pending.clone()));

    tokio::pin!(signal);
    let mut pump = Pump {
        to_rmcp,
        pending: pending.clone(),
        out,
        max_in_flight: server.max_in_flight(),
        gone: gone.clone(),
        abandoned: false,
    };
    let mut exit = pump.run(input, signal.as_mut()).await?;
    while exit == Exit::Eof {
        tokio::select! {
            biased;
            () = &mut signal => exit = Exit::Signal,
            () = gone.cancelled(), if !pump.abandoned => pump.abandon().await?,
            () = drain(&server, &pending) => break,
        }
    }
    if exit == Exit::Signal {
        shut_down(&server, &pending).await;
        return Ok(Exit::Signal);
    }
    // Everything is answered: let rmcp see end of input and finish.
    pump.to_rmcp.shutdown().await?;
    if let Err(e) = running.waiting().await {
        tracing::warn!(error = %e, "rmcp service ended with an error");
    }
    let _ = relay.await;
    drop(pump);
    let _ = writer.await;
    Ok(Exit::Eof)
}

/// Reads the client's lines and forwards the good ones to rmcp.
struct Pump {
    to_rmcp: WriteHalf<tokio::io::DuplexStream>,
    pending: Arc<Pending>,
    out: Outbox,
    /// Requests forwarded and not yet answered past which input waits: rmcp holds
    /// the finished answers of these, so they are bounded too.
    max_in_flight: usize,
    /// Cancelled once the client can no longer read answers.
    gone: CancellationToken,
    /// Every request in flight was cancelled because the client had gone; input is
    /// read to its end and ignored.
    abandoned: bool,
}

impl Pump {
    /// Until end of input or the signal. Input waits while the backlog is full or too
    /// many requests are in flight.
    async fn run(
        &mut self,
        input: impl AsyncRead + Unpin,
        mut signal: std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> io::Result<Exit> {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        let mut at_start = true;
        let gone = self.gone.clone();
        loop {
            tokio::select! {
                biased;
                () = &mut signal => return Ok(Exit::Signal),
                () = gone.cancelled(), if !self.abandoned => {
                    self.abandon().await?;
                    continue;
                }
                () = async {
                    self.out.backlog.room().await;
                    self.pending.below(self.max_in_flight).await;
                } => {}
            }
            let read = tokio::select! {
                biased;
                () = &mut signal => return Ok(Exit::Signal),
                // A line cut short here is ignored like every line after it.
                () = gone.cancelled(), if !self.abandoned => {
                    self.abandon().await?;
                    continue;
                }
                read = read_line(&mut input, &mut line, MAX_LINE_BYTES) => read,
            };
            let first = std::mem::replace(&mut at_start, false);
            match read {
                Ok(Line::Eof) => return Ok(Exit::Eof),
                // Nobody would read the answers.
                Ok(_) if self.abandoned => {}
                Ok(Line::TooLong) => {
                    let message = format!("request line longer than {MAX_LINE_BYTES} bytes");
                    self.out.error("null", ErrorCode::INVALID_REQUEST, &message);
                }
                Ok(Line::Complete) => {
                    // A byte order mark before the first line is not part of the request.
                    let line = match line.strip_prefix(UTF8_BOM) {
                        Some(rest) if first => rest,
                        _ => &line[..],
                    };
                    if let Some(forward) = inspect(line, &self.pending, &self.out) {
                        self.to_rmcp.write_all(&forward).await?;
                        self.to_rmcp.write_all(b"\n").await?;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading stdin failed; treating it as end of input");
                    return Ok(Exit::Eof);
                }
            }
        }
    }

    /// The client can no longer read answers: cancels every request in flight, as
    /// the client itself would with `notifications/cancelled`, so that running
    /// commands are killed and logged (exit 130) instead of running to their timeout.
    async fn abandon(&mut self) -> io::Result<()> {
        self.abandoned = true;
        let ids = self.pending.take_all();
        tracing::warn!(
            cancelled = ids.len(),
            "the client stopped reading answers (stdout closed): cancelling every request \
             in flight; further input is read to its end and ignored"
        );
        for id in ids {
            let cancel = format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\
                 \"params\":{{\"requestId\":{id},\"reason\":\"the client closed stdout\"}}}}\n"
            );
            self.to_rmcp.write_all(cancel.as_bytes()).await?;
        }
        Ok(())
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

/// Stops every running command, logs them, and gives their answers a moment to go out.
async fn shut_down(server: &Server, pending: &Pending) {
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
}

/// Bytes of lines queued for stdout and not yet written, shared by everything that
/// queues lines and by the calls that wait for room.
#[derive(Debug, Default)]
pub struct Backlog {
    bytes: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    fn remove(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::Relaxed);
        self.drained.notify_waiters();
    }

    /// Bytes waiting to be written.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Waits until the backlog is below [`BACKLOG_BYTES`].
    pub async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.bytes() < BACKLOG_BYTES {
                return;
            }
            drained.await;
        }
    }
}

/// The queue of lines for stdout.
#[derive(Debug, Clone)]
struct Outbox {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    backlog: Arc<Backlog>,
}

impl Outbox {
    fn send(&self, line: Vec<u8>) -> bool {
        let len = line.len();
        self.backlog.add(len);
        if self.tx.send(line).is_err() {
            self.backlog.remove(len);
            return false;
        }
        true
    }

    /// A JSON-RPC error response to a line the server answers itself.
    fn error(&self, id: &str, code: ErrorCode, message: &str) {
        tracing::warn!(code = code.0, message, "bad input line");
        let error = json!({ "code": code.0, "message": message });
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n");
        self.send(line.into_bytes());
    }
}

/// Request ids read from the client and not yet answered, as rmcp sees them (JSON
/// text), each with the client's own when rmcp sees a stand-in.
#[derive(Debug, Default)]
struct Pending {
    ids: Mutex<HashMap<String, Option<String>>>,
    changed: Notify,
}

impl Pending {
    /// Adds `id`; false when it is in flight already.
    fn insert(&self, id: &Id) -> bool {
        match self.lock().entry(id.inner.to_string()) {
            Entry::Occupied(_) => false,
            Entry::Vacant(entry) => {
                entry.insert(id.written.clone());
                true
            }
        }
    }

    /// Removes the id that rmcp sees as `inner`.
    fn remove(&self, inner: &Value) {
        if self.lock().remove(&inner.to_string()).is_some() {
            self.changed.notify_waiters();
        }
    }

    /// The id as the client wrote it, for an id that rmcp sees as a stand-in.
    fn written(&self, inner: &Value) -> Option<String> {
        self.lock().get(&inner.to_string()).cloned().flatten()
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Removes every id, and returns them as rmcp sees them (JSON text).
    fn take_all(&self) -> Vec<String> {
        let ids: Vec<String> = self.lock().drain().map(|(id, _)| id).collect();
        self.changed.notify_waiters();
        ids
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<String>>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until fewer than `n` requests are pending.
    async fn below(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            if self.lock().len() < n {
                return;
            }
            changed.await;
        }
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

/// A request id.
#[derive(Debug, Clone)]
struct Id {
    /// The id rmcp sees: the client's own, or a stand-in for an integer beyond 64 bits,
    /// which rmcp cannot hold.
    inner: Value,
    /// The client's id as written, when rmcp sees a stand-in.
    written: Option<String>,
}

/// What rmcp sees instead of an integer id beyond 64 bits: a string.
const STAND_IN_PREFIX: &str = "forge-bash:integer-id:";

impl Id {
    /// The id as JSON text, as the client wrote it.
    fn echo(&self) -> String {
        self.written
            .clone()
            .unwrap_or_else(|| self.inner.to_string())
    }

    /// The id in `value`, which `json` (the object holding `key`) gives as written:
    /// `None` unless it is a string or an integer.
    fn read(value: &Value, json: &[u8], key: &str) -> Option<Id> {
        match value {
            Value::String(_) => {}
            Value::Number(n) if n.is_i64() => {}
            // Beyond 64 bits serde_json keeps only an approximation: take the digits.
            Value::Number(_) => {
                let written = written_member(json, key).filter(|w| is_integer(w))?;
                return Some(Id {
                    inner: Value::String(format!("{STAND_IN_PREFIX}{written}")),
                    written: Some(written),
                });
            }
            _ => return None,
        }
        Some(Id {
            inner: value.clone(),
            written: None,
        })
    }
}

/// Whether a JSON number, as written, is an integer.
fn is_integer(number: &str) -> bool {
    let digits = number.strip_prefix('-').unwrap_or(number);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

/// The members of a JSON object, each as written; `None` unless `json` is an object
/// with no key twice. serde_json reads raw values without a limit on nesting and
/// without converting numbers, so this reads objects that `parse` refuses.
fn members(json: &[u8]) -> Option<BTreeMap<String, &RawValue>> {
    struct Members;
    impl<'de> serde::de::Visitor<'de> for Members {
        type Value = Option<BTreeMap<String, &'de RawValue>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut members = BTreeMap::new();
            let mut repeated = false;
            while let Some((key, value)) = map.next_entry::<String, &RawValue>()? {
                repeated |= members.insert(key, value).is_some();
            }
            Ok((!repeated).then_some(members))
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let members = serde::Deserializer::deserialize_map(&mut deserializer, Members).ok()?;
    deserializer.end().ok()?;
    members
}

/// The id of a line that `parse` refuses although it is well-formed JSON (nested too
/// deep, or a number out of range), when its id can be read.
fn readable_id(line: &[u8]) -> Option<Id> {
    let id = *members(line)?.get("id")?;
    let value = serde_json::from_str::<Value>(id.get()).ok()?;
    Id::read(&value, line, "id")
}

/// The value of `key` in the JSON object `json`, as written.
fn written_member(json: &[u8], key: &str) -> Option<String> {
    members(json)?.get(key).map(|raw| raw.get().to_owned())
}

/// The JSON object `json` with the value of `key` replaced by `value` (JSON text);
/// every other member stays as written.
fn with_member(json: &[u8], key: &str, value: &str) -> Option<Vec<u8>> {
    let mut members = members(json)?;
    let value = RawValue::from_string(value.to_owned()).ok()?;
    members.insert(key.to_owned(), &value);
    serde_json::to_vec(&members).ok()
}

/// Why a line is answered with an error instead of reaching rmcp.
struct Refusal {
    /// The id as written, or `null` when it cannot be read.
    id: String,
    code: ErrorCode,
    message: String,
}

fn refuse<T>(id: Option<&Id>, code: ErrorCode, message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        id: id.map_or_else(|| "null".to_owned(), Id::echo),
        code,
        message: message.into(),
    })
}

/// Checks one input line. Returns the bytes to forward to rmcp (the line, or the line
/// with stand-in ids), or `None` when this module answered it (or it is blank, or a
/// response the server did not ask for).
fn inspect<'a>(line: &'a [u8], pending: &Pending, out: &Outbox) -> Option<Cow<'a, [u8]>> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    let line = replace_lone_surrogates(line);
    let checked = match parse(&line) {
        Err(e) => match readable_id(&line) {
            Some(id) => refuse(
                Some(&id),
                ErrorCode::INVALID_REQUEST,
                format!("invalid request: {e}"),
            ),
            None => refuse(None, ErrorCode::PARSE_ERROR, format!("parse error: {e}")),
        },
        Ok((Value::Array(_), _)) => refuse(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: batch requests are not supported",
        ),
        Ok((message @ Value::Object(_), repeated)) => {
            match check(&line, &message, &repeated, pending) {
                // A response the server did not ask for: nothing to forward or answer.
                Ok(_) if is_response(&message) => return None,
                checked => checked,
            }
        }
        Ok(_) => refuse(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: a request must be a JSON object",
        ),
    };
    match checked {
        Err(Refusal { id, code, message }) => {
            out.error(&id, code, &message);
            None
        }
        Ok(None) => Some(line),
        Ok(Some(rewritten)) => Some(Cow::Owned(rewritten)),
    }
}

/// Keys that a line repeats within one object. JSON leaves their meaning open, and
/// serde_json's `Value` keeps only the last, so such a line is refused.
#[derive(Debug, Default)]
struct Repeated {
    /// The first key found twice.
    first: Option<RepeatedKey>,
    /// The message has `id` twice, with different values: its id cannot be read.
    conflicting_ids: bool,
}

#[derive(Debug)]
struct RepeatedKey {
    /// The top-level member it is in, or `None` when the message repeats a member.
    member: Option<String>,
    key: String,
}

/// Parses one line into a `Value`, noting repeated keys on the way.
fn parse(line: &[u8]) -> Result<(Value, Repeated), serde_json::Error> {
    use serde::de::DeserializeSeed;
    let repeated = RefCell::new(Repeated::default());
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let value = Noting {
        repeated: &repeated,
        member: None,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, repeated.into_inner()))
}

/// Builds a `Value` as serde_json's own deserializer does, and notes repeated keys.
#[derive(Clone, Copy)]
struct Noting<'r, 'k> {
    repeated: &'r RefCell<Repeated>,
    /// The top-level member being read; `None` while reading the message itself.
    member: Option<&'k str>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Noting<'_, '_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Noting<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Noting {
                repeated: self.repeated,
                member: Some(self.member.unwrap_or(&key)),
            })?;
            if let Some(earlier) = object.get(&key) {
                let mut repeated = self.repeated.borrow_mut();
                if self.member.is_none() && key == "id" && *earlier != value {
                    repeated.conflicting_ids = true;
                }
                if repeated.first.is_none() {
                    repeated.first = Some(RepeatedKey {
                        member: self.member.map(str::to_owned),
                        key: key.clone(),
                    });
                }
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Replaces every `\u` escape of a lone UTF-16 surrogate (one that is not half of a
/// pair) with `\uFFFD`, the replacement character. JavaScript's `JSON.stringify`
/// writes lone surrogates this way, and serde_json refuses them; a pair stays the
/// character it encodes. The escapes have the same length, so positions in error
/// messages do not move.
fn replace_lone_surrogates(line: &[u8]) -> Cow<'_, [u8]> {
    const REPLACEMENT: &[u8; 6] = b"\\uFFFD";
    let unit_at = |at: usize| -> Option<u16> {
        let escape = line.get(at..at + 6)?;
        let hex = escape.strip_prefix(b"\\u")?;
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let mut patched: Option<Vec<u8>> = None;
    let mut from = 0;
    while let Some(found) = line
        .get(from..)
        .and_then(|rest| memchr::memchr(b'\\', rest))
    {
        let at = from + found;
        // In valid JSON every backslash starts an escape; the escaped byte is skipped.
        from = at + 2;
        let Some(unit) = unit_at(at) else { continue };
        from = at + 6;
        let lone = match unit {
            0xD800..=0xDBFF => match unit_at(at + 6) {
                Some(0xDC00..=0xDFFF) => {
                    from = at + 12;
                    false
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            patched.get_or_insert_with(|| line.to_vec())[at..at + 6].copy_from_slice(REPLACEMENT);
        }
    }
    patched.map_or(Cow::Borrowed(line), Cow::Owned)
}

/// A message with `result` or `error` and no `method`: a response from the client.
fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// Checks a JSON-RPC message (`line`, parsed): its id, version, method and params. A
/// request that passes is noted as pending. Once its id can be read, every refusal
/// echoes it. Returns the line to forward instead, when rmcp must see stand-in ids.
fn check(
    line: &[u8],
    message: &Value,
    repeated: &Repeated,
    pending: &Pending,
) -> Result<Option<Vec<u8>>, Refusal> {
    if repeated.conflicting_ids {
        return refuse(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: the message has two different ids",
        );
    }
    let id = match message.get("id") {
        None => None,
        Some(id) => match Id::read(id, line, "id") {
            Some(id) => Some(id),
            None => {
                return refuse(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    "invalid request: id must be a string or an integer",
                );
            }
        },
    };
    let echo = id.as_ref();
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(
            echo,
            ErrorCode::INVALID_REQUEST,
            "invalid request: jsonrpc must be \"2.0\"",
        );
    }
    let method = match message.get("method") {
        Some(Value::String(method)) => method.as_str(),
        Some(_) => {
            return refuse(
                echo,
                ErrorCode::INVALID_REQUEST,
                "invalid request: method must be a string",
            );
        }
        None if message.get("result").is_some() || message.get("error").is_some() => {
            return Ok(None);
        }
        None => {
            return refuse(
                echo,
                ErrorCode::INVALID_REQUEST,
                "invalid request: no method",
            );
        }
    };
    if let Some(first) = &repeated.first {
        let key = &first.key;
        return match first.member.as_deref() {
            None => refuse(
                echo,
                ErrorCode::INVALID_REQUEST,
                format!("invalid request: duplicate key \"{key}\""),
            ),
            Some("params") => refuse(
                echo,
                ErrorCode::INVALID_PARAMS,
                format!("invalid params: duplicate key \"{key}\" in params"),
            ),
            Some(member) => refuse(
                echo,
                ErrorCode::INVALID_REQUEST,
                format!("invalid request: duplicate key \"{key}\" in {member}"),
            ),
        };
    }
    if message.get("result").is_some() || message.get("error").is_some() {
        return refuse(
            echo,
            ErrorCode::INVALID_REQUEST,
            "invalid request: a message with a method has no result or error",
        );
    }
    let params = message.get("params");
    let Some(id) = id else {
        // A notification: nothing can be answered; a cancellation frees its id.
        return Ok(if method == "notifications/cancelled" {
            cancelled(line, params, pending)
        } else {
            None
        });
    };
    if !METHODS.contains(&method) {
        return refuse(
            Some(&id),
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        );
    }
    if params.is_some_and(|p| !p.is_object()) {
        return refuse(
            Some(&id),
            ErrorCode::INVALID_PARAMS,
            "invalid params: params must be an object",
        );
    }
    let problem = meta_problem(params)
        .or_else(|| match method {
            "tools/call" => tool_call_problem(params),
            "initialize" => initialize_problem(params),
            _ => None,
        })
        .or_else(|| match &id.written {
            None => rmcp_problem(message, method),
            Some(_) => {
                let mut seen = message.clone();
                seen["id"] = id.inner.clone();
                rmcp_problem(&seen, method)
            }
        });
    if let Some(message) = problem {
        return refuse(Some(&id), ErrorCode::INVALID_PARAMS, message);
    }
    if !pending.insert(&id) {
        let written = id.echo();
        return refuse(
            Some(&id),
            ErrorCode::INVALID_REQUEST,
            format!("invalid request: request id {written} is already in flight"),
        );
    }
    if id.written.is_none() {
        return Ok(None);
    }
    // rmcp sees the stand-in.
    let forward = with_member(line, "id", &id.inner.to_string());
    match forward {
        Some(forward) => Ok(Some(forward)),
        None => {
            pending.remove(&id.inner);
            refuse(
                Some(&id),
                ErrorCode::INTERNAL_ERROR,
                "cannot forward the request",
            )
        }
    }
}

/// A `notifications/cancelled` frees the id it names. Returns the line to forward
/// instead when that id is one rmcp sees as a stand-in.
fn cancelled(line: &[u8], params: Option<&Value>, pending: &Pending) -> Option<Vec<u8>> {
    let id = params?.get("requestId")?;
    let params_json = written_member(line, "params")?;
    let id = Id::read(id, params_json.as_bytes(), "requestId")?;
    pending.remove(&id.inner);
    id.written.as_ref()?;
    let params = with_member(params_json.as_bytes(), "requestId", &id.inner.to_string())?;
    with_member(line, "params", std::str::from_utf8(&params).ok()?)
}

/// What is wrong with `params._meta`, if anything: it is an object (or null), and a
/// progress token in it is a string or an integer (or null: none).
fn meta_problem(params: Option<&Value>) -> Option<String> {
    let problem = match params.and_then(|p| p.get("_meta")) {
        None | Some(Value::Null) => return None,
        Some(Value::Object(meta)) => match meta.get("progressToken") {
            None | Some(Value::Null | Value::String(_)) => return None,
            Some(Value::Number(n)) if n.is_i64() => return None,
            Some(_) => "params._meta.progressToken must be a string or an integer",
        },
        Some(_) => "params._meta must be an object",
    };
    Some(format!("invalid params: {problem}"))
}

/// What rmcp would refuse in a request that passed the checks above, if anything:
/// rmcp answers a request it cannot read with `"id": null` (or reads a known method
/// whose params it cannot read as an unknown method), so it is refused here, with its
/// id. The request is read as rmcp reads it, as the method's own request type.
fn rmcp_problem(message: &Value, method: &str) -> Option<String> {
    use rmcp::model::{
        CallToolRequest, InitializeRequest, JsonRpcRequest, ListToolsRequest, PingRequest,
    };
    fn problem<R: serde::de::DeserializeOwned>(message: &Value) -> Option<serde_json::Error> {
        <JsonRpcRequest<R> as serde::Deserialize>::deserialize(message).err()
    }
    let error = match method {
        "initialize" => problem::<InitializeRequest>(message),
        "ping" => problem::<PingRequest>(message),
        "tools/list" => problem::<ListToolsRequest>(message),
        "tools/call" => problem::<CallToolRequest>(message),
        _ => None,
    }?;
    Some(format!("invalid params: {method}: {error}"))
}

/// What is wrong with the params of an `initialize`, if anything.
fn initialize_problem(params: Option<&Value>) -> Option<String> {
    let params = params.cloned().unwrap_or(Value::Null);
    serde_json::from_value::<rmcp::model::InitializeRequestParams>(params)
        .err()
        .map(|e| format!("invalid params: initialize: {e}"))
}

/// What is wrong with the params of a `tools/call`, if anything.
fn tool_call_problem(params: Option<&Value>) -> Option<String> {
    let Some(params) = params else {
        return Some(format!(
            "invalid params: tools/call needs params {{\"name\": \"{TOOL}\", \"arguments\": {{\"command\": \"…\"}}}}"
        ));
    };
    match params.get("name") {
        Some(Value::String(name)) if name == TOOL => {}
        Some(Value::String(name)) => {
            return Some(format!(
                "tool not found: {name} (the only tool is `{TOOL}`)"
            ));
        }
        Some(_) => return Some("invalid params: params.name must be a string".to_owned()),
        None => return Some("invalid params: params.name is missing".to_owned()),
    }
    match params.get("arguments") {
        Some(arguments) if !arguments.is_object() => {
            Some("invalid params: params.arguments must be an object".to_owned())
        }
        _ => None,
    }
}

/// Copies rmcp's output lines to the outbox, noting which requests they answer.
async fn relay_responses(from_rmcp: impl AsyncRead + Unpin, out: Outbox, pending: Arc<Pending>) {
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
        let mut message = serde_json::from_slice::<Map<String, Value>>(&line).ok();
        if let Some(message) = message
            .as_mut()
            .filter(|m| !m.contains_key("id") && m.contains_key("error"))
        {
            // JSON-RPC: an error to a request whose id could not be read has `null`.
            message.insert("id".to_owned(), Value::Null);
            line = serde_json::to_vec(message).unwrap_or(line);
            line.push(b'\n');
        }
        let answered = message
            .filter(|m| !m.contains_key("method"))
            .and_then(|mut m| m.remove("id"));
        // An answer to an id that rmcp saw as a stand-in gets the client's id back.
        if let Some(written) = answered.as_ref().and_then(|id| pending.written(id))
            && let Some(mut restored) = with_member(&line, "id", &written)
        {
            restored.push(b'\n');
            line = restored;
        }
        if !out.send(line) {
            return;
        }
        if let Some(id) = answered {
            pending.remove(&id);
        }
    }
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

    #[test]
    fn parse_reads_what_serde_json_reads_and_notes_repeated_keys() {
        let lines = [
            r#"{"a":[1,-2,18446744073709551615,-9223372036854775808,1.5,1e300,-0.0,true,null],"b":{"c":"\u00e9\n","d":[]}}"#,
            r#"[{"x":{}},"s",3]"#,
            r#""just a string""#,
            "  42 ",
        ];
        for line in lines {
            let (value, repeated) = parse(line.as_bytes()).unwrap();
            assert_eq!(
                value,
                serde_json::from_str::<Value>(line).unwrap(),
                "{line}"
            );
            assert!(
                repeated.first.is_none() && !repeated.conflicting_ids,
                "{line}"
            );
        }
        let (_, repeated) = parse(br#"{"a":{"b":{"c":1,"c":1}},"d":1,"d":2}"#).unwrap();
        let first = repeated.first.unwrap();
        assert_eq!(
            (first.member.as_deref(), first.key.as_str()),
            (Some("a"), "c")
        );
        assert!(!repeated.conflicting_ids);
        let (_, repeated) = parse(br#"{"id":1,"id":1}"#).unwrap();
        assert!(repeated.first.unwrap().member.is_none() && !repeated.conflicting_ids);
        let (_, repeated) = parse(br#"{"id":1,"id":"1"}"#).unwrap();
        assert!(repeated.conflicting_ids);
        assert!(parse(b"{} x").is_err());
        assert!(parse(br#"{"a":1,}"#).is_err());
    }

    #[test]
    fn integer_ids_beyond_64_bits_are_read_as_written() {
        for written in ["0", "-0", "18446744073709551616", "-9223372036854775809"] {
            assert!(is_integer(written), "{written}");
        }
        for written in ["", "-", "01", "-01", "1.0", "1e3", "+1", "1 "] {
            assert!(!is_integer(written), "{written}");
        }
        let line = br#"{"id": 99999999999999999999 ,"method":"ping","x":[1.50]}"#;
        let message: Value = serde_json::from_slice(line).unwrap();
        let id = Id::read(&message["id"], line, "id").unwrap();
        assert_eq!(id.echo(), "99999999999999999999");
        assert_eq!(
            id.inner,
            json!("forge-bash:integer-id:99999999999999999999")
        );
        let forward = with_member(line, "id", &id.inner.to_string()).unwrap();
        assert_eq!(
            String::from_utf8(forward).unwrap(),
            r#"{"id":"forge-bash:integer-id:99999999999999999999","method":"ping","x":[1.50]}"#
        );
        assert!(members(br#"{"a":1,"b":2,"a":1}"#).is_none());
        assert!(members(br#"[1]"#).is_none());
        assert!(members(br#"{"a":1} x"#).is_none());
        let deep = format!(r#"{{"id":"d","x":{}{}}}"#, "[".repeat(500), "]".repeat(500));
        assert_eq!(readable_id(deep.as_bytes()).unwrap().echo(), r#""d""#);
        let float = br#"{"id":1e20}"#;
        let message: Value = serde_json::from_slice(float).unwrap();
        assert!(Id::read(&message["id"], float, "id").is_none());
        let small = Id::read(&json!(-7), b"{}", "id").unwrap();
        assert_eq!((small.echo(), small.written), ("-7".to_owned(), None));
    }

    #[test]
    fn what_rmcp_cannot_read_is_caught_with_the_reason() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "run", "arguments": {"command": "ls"}}});
        assert_eq!(rmcp_problem(&call, "tools/call"), None);
        for (method, params) in [
            ("ping", None),
            ("tools/list", Some(json!({"cursor": "c"}))),
            (
                "initialize",
                Some(json!({"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "c", "version": "0"}})),
            ),
        ] {
            let mut request = json!({"jsonrpc": "2.0", "id": "x", "method": method});
            if let Some(params) = params {
                request["params"] = params;
            }
            assert_eq!(rmcp_problem(&request, method), None, "{request}");
        }
        // rmcp cannot read these at all, and would answer with "id": null.
        let mut bad = call.clone();
        bad["params"]["_meta"] = json!(5);
        let problem = rmcp_problem(&bad, "tools/call").unwrap();
        assert_eq!(
            problem,
            "invalid params: tools/call: invalid type: integer `5`, expected a map"
        );
        let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": []}});
        assert!(
            rmcp_problem(&ping, "ping")
                .unwrap()
                .starts_with("invalid params: ping: ")
        );
    }

    fn replaced(line: &str) -> String {
        String::from_utf8(replace_lone_surrogates(line.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character_and_pairs_stay() {
        let cases = [
            (r#""a\ud800b""#, r#""a\uFFFDb""#),
            (r#""\uDC00""#, r#""\uFFFD""#),
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            (r#""\ud800\ud83d\ude00""#, r#""\uFFFD\ud83d\ude00""#),
            (r#""\ud800\ud800""#, r#""\uFFFD\uFFFD""#),
            (r#""\ude00\ud83d""#, r#""\uFFFD\uFFFD""#),
            (r#""\ud800\u0041""#, r#""\uFFFD\u0041""#),
            // An escaped backslash followed by text that looks like an escape.
            (r#""\\ud800""#, r#""\\ud800""#),
            (r#""\\\ud800""#, r#""\\\uFFFD""#),
            (r#""\u00e9 \n""#, r#""\u00e9 \n""#),
            ("no escapes", "no escapes"),
            ("ends with \\", "ends with \\"),
            ("\\ud8", "\\ud8"),
        ];
        for (line, want) in cases {
            assert_eq!(replaced(line), want, "{line}");
        }
        let decoded: String = serde_json::from_str(&replaced(r#""x\ud800y\ud83d\ude00""#)).unwrap();
        assert_eq!(decoded, "x\u{FFFD}y\u{1F600}");
    }

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
