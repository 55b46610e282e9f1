//! What rmcp reads from and writes to: checked messages in, typed messages out, each
//! serialized once. The requests in flight are noted here, so that end of input waits
//! for their answers and a client that has gone gets them cancelled.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::futures::Notified;
use tokio::sync::{Notify, mpsc};

use super::output::Outbox;
use crate::check::Id;

/// rmcp's side of the stdio transport.
pub(super) struct StdioTransport {
    /// Checked messages from the reader; it closes the channel once input has ended
    /// and every request read is answered.
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    out: Outbox,
    pending: Arc<Pending>,
}

impl StdioTransport {
    pub fn new(
        incoming: mpsc::Receiver<ClientJsonRpcMessage>,
        out: Outbox,
        pending: Arc<Pending>,
    ) -> StdioTransport {
        StdioTransport {
            incoming,
            out,
            pending,
        }
    }

    /// Queues one message for stdout. An answer gets the client's id back when rmcp
    /// saw a stand-in, and its request is no longer in flight once it is queued.
    fn write(&self, message: &ServerJsonRpcMessage) -> io::Result<()> {
        let answered = match message {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let written = answered.and_then(|id| self.pending.written(id));
        let line = encode(message, written).map_err(io::Error::other)?;
        if !self.out.send(line) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "stdout is no longer written",
            ));
        }
        if let Some(id) = answered {
            self.pending.remove(id);
        }
        Ok(())
    }
}

impl rmcp::transport::Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        std::future::ready(self.write(&item))
    }

    /// rmcp's loop drops this future whenever something else happens first; receiving
    /// from a channel loses nothing then.
    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        Ok(())
    }
}

/// An answer whose id is not one rmcp can write: the client's digits, or `null`.
#[derive(Serialize)]
struct Answer<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a rmcp::model::ServerResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorData>,
}

/// One message as one line. `written` is the client's id for an answer to a request
/// that rmcp saw with a stand-in id.
fn encode(
    message: &ServerJsonRpcMessage,
    written: Option<String>,
) -> Result<Vec<u8>, serde_json::Error> {
    let id = |written: Option<String>| RawValue::from_string(written.unwrap_or("null".into()));
    let mut line = match (message, written) {
        (JsonRpcMessage::Response(response), Some(written)) => serde_json::to_vec(&Answer {
            jsonrpc: "2.0",
            id: &id(Some(written))?,
            result: Some(&response.result),
            error: None,
        })?,
        // JSON-RPC: an error to a request whose id could not be read has `null`.
        (JsonRpcMessage::Error(error), written) if written.is_some() || error.id.is_none() => {
            serde_json::to_vec(&Answer {
                jsonrpc: "2.0",
                id: &id(written)?,
                result: None,
                error: Some(&error.error),
            })?
        }
        (message, _) => serde_json::to_vec(message)?,
    };
    line.push(b'\n');
    Ok(line)
}

/// Requests read from the client and not yet answered, by the id rmcp sees, each with
/// the client's own when rmcp sees a stand-in.
#[derive(Debug, Default)]
pub(super) struct Pending {
    ids: Mutex<HashMap<RequestId, Option<String>>>,
    changed: Notify,
}

impl Pending {
    /// Adds `id`; false when it is in flight already.
    pub fn insert(&self, id: &Id) -> bool {
        match self.lock().entry(id.rmcp.clone()) {
            Entry::Occupied(_) => false,
            Entry::Vacant(entry) => {
                entry.insert(id.written.clone());
                true
            }
        }
    }

    pub fn remove(&self, id: &RequestId) {
        if self.lock().remove(id).is_some() {
            self.changed.notify_waiters();
        }
    }

    /// The id as the client wrote it, for an id that rmcp sees as a stand-in.
    fn written(&self, id: &RequestId) -> Option<String> {
        self.lock().get(id).cloned().flatten()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Removes every id, and returns them.
    pub fn take_all(&self) -> Vec<RequestId> {
        let ids: Vec<RequestId> = self.lock().drain().map(|(id, _)| id).collect();
        self.changed.notify_waiters();
        ids
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<RequestId, Option<String>>> {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until fewer than `n` requests are pending.
    pub async fn below(&self, n: usize) {
        self.until(|ids| ids.len() < n).await;
    }

    pub async fn wait_empty(&self) {
        self.until(HashMap::is_empty).await;
    }

    /// Resolves the next time an id is removed after this call.
    pub fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }

    async fn until(&self, done: impl Fn(&HashMap<RequestId, Option<String>>) -> bool) {
        loop {
            let changed = self.changed.notified();
            if done(&self.lock()) {
                return;
            }
            changed.await;
        }
    }
}
