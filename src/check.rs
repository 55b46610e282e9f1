//! The checks every client message passes before the server sees it: one pure
//! function, [`check_line`], from a line of bytes to a verdict. It knows nothing of
//! where the line came from (stdio today; an HTTP body could be checked the same way)
//! and nothing of the server beyond the methods it answers.
//!
//! A line is parsed once, into a JSON value, and checked as a value. Malformed JSON,
//! batches, ids that are neither a string nor an integer, unknown methods, repeated
//! keys, `result` or `error` beside `method`, and params that rmcp cannot read are
//! refused with a JSON-RPC error that says what is wrong, with the id echoed as sent
//! whenever it can be read (`null` only when it cannot). A message that passes is
//! converted from that value into rmcp's own message type.
//!
//! - Integer ids beyond 64 bits, which rmcp cannot hold, reach rmcp as a string
//!   stand-in ([`Id`]); the id as written is kept to be echoed.
//! - A lone surrogate escape (`\ud800`, as JavaScript writes one) is read as U+FFFD
//!   instead of failing the line.
//!
//! What needs state stays with the transport: an id already in flight
//! ([`Refusal::in_flight`]), the ids a cancellation frees, and flow control.

mod parse;
#[cfg(test)]
mod tests;

use rmcp::model::{
    CallToolRequest, ClientNotification, ClientRequest, ErrorCode, InitializeRequest,
    JsonRpcNotification, JsonRpcRequest, ListToolsRequest, PingRequest, RequestId,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use self::parse::Seen;

/// Requests the server answers, each with its conversion into rmcp's message type;
/// any other method gets "Method not found".
const METHODS: &[(&str, Convert)] = &[
    ("initialize", request::<InitializeRequest>),
    ("ping", request::<PingRequest>),
    ("tools/list", request::<ListToolsRequest>),
    ("tools/call", request::<CallToolRequest>),
];

type Convert = fn(Value) -> Result<JsonRpcRequest<ClientRequest>, serde_json::Error>;

/// What rmcp sees instead of an integer id beyond 64 bits: a string.
const STAND_IN_PREFIX: &str = "forge-bash:integer-id:";

/// A message that passed the checks.
#[derive(Debug)]
// Each is moved a few times on its way to rmcp; boxing would allocate for each.
#[allow(clippy::large_enum_variant)]
pub enum Accepted {
    /// A request for the server, in rmcp's type, with `id` as its id.
    Request {
        id: Id,
        request: JsonRpcRequest<ClientRequest>,
    },
    /// A notification for the server. A cancellation names the request it ends.
    Notification {
        cancels: Option<Id>,
        notification: JsonRpcNotification<ClientNotification>,
    },
    /// Nothing to do: a blank line, or a response the server did not ask for.
    Nothing,
}

/// A request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id {
    /// The id rmcp sees: the client's own, or a stand-in for an integer beyond 64 bits.
    pub rmcp: RequestId,
    /// The client's id as written, when rmcp sees a stand-in.
    pub written: Option<String>,
}

impl Id {
    /// The id as JSON text, as the client wrote it.
    pub fn echo(&self) -> String {
        match &self.written {
            Some(written) => written.clone(),
            None => serde_json::to_string(&self.rmcp).unwrap_or_else(|_| "null".to_owned()),
        }
    }

    /// The id `value`, which was written as `written`: `None` unless it is a string or
    /// an integer.
    fn read(value: &Value, written: Option<&str>) -> Option<Id> {
        let rmcp = match value {
            Value::String(id) => RequestId::String(id.as_str().into()),
            Value::Number(n) => match n.as_i64() {
                Some(n) => RequestId::Number(n),
                // Beyond 64 bits serde_json keeps only an approximation: take the digits.
                None => {
                    let written = written.filter(|w| is_integer(w))?;
                    return Some(Id {
                        rmcp: RequestId::String(format!("{STAND_IN_PREFIX}{written}").into()),
                        written: Some(written.to_owned()),
                    });
                }
            },
            _ => return None,
        };
        Some(Id {
            rmcp,
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

/// Why a message is answered with an error instead of reaching the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The id, or `None` when it cannot be read.
    pub id: Option<Id>,
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(id: Option<Id>, code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            id,
            code,
            message: message.into(),
        }
    }

    /// A request whose id is that of a request still in flight.
    pub fn in_flight(id: Id) -> Refusal {
        let message = format!(
            "invalid request: request id {} is already in flight",
            id.echo()
        );
        Refusal::new(Some(id), ErrorCode::INVALID_REQUEST, message)
    }

    /// The JSON-RPC error response, as one line with its newline.
    pub fn line(&self) -> Vec<u8> {
        let id = self.id.as_ref().map_or_else(|| "null".to_owned(), Id::echo);
        let error = json!({ "code": self.code.0, "message": self.message });
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes()
    }
}

fn refuse<T>(id: Option<&Id>, code: ErrorCode, message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::new(id.cloned(), code, message))
}

/// Checks one line (without its newline). `tool` is the server's tool, named in the
/// refusal of a `tools/call` without params.
pub fn check_line(line: &[u8], tool: &str) -> Result<Accepted, Refusal> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return Ok(Accepted::Nothing);
    }
    let line = parse::replace_lone_surrogates(line);
    match parse::parse(&line) {
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
        Ok((Value::Object(message), seen)) => check_message(message, &seen, tool),
        Ok(_) => refuse(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: a request must be a JSON object",
        ),
    }
}

/// The id of a line that [`parse::parse`] refuses although it is well-formed JSON
/// (nested too deep, or a number out of range), when its id can be read.
fn readable_id(line: &[u8]) -> Option<Id> {
    let id = *parse::members(line)?.get("id")?;
    let value = serde_json::from_str::<Value>(id.get()).ok()?;
    Id::read(&value, Some(id.get()))
}

/// Checks a JSON-RPC message: its id, version and method, then what its kind needs.
/// Once its id can be read, every refusal echoes it.
fn check_message(
    message: Map<String, Value>,
    seen: &Seen,
    tool: &str,
) -> Result<Accepted, Refusal> {
    if seen.conflicting_ids {
        return refuse(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: the message has two different ids",
        );
    }
    let id = match message.get("id") {
        None => None,
        Some(id) => match Id::read(id, seen.id.as_deref()) {
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
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(
            id.as_ref(),
            ErrorCode::INVALID_REQUEST,
            "invalid request: jsonrpc must be \"2.0\"",
        );
    }
    let Some(method) = method(&message, id.as_ref())? else {
        // A response the server did not ask for: nothing to answer.
        return Ok(Accepted::Nothing);
    };
    repeated(seen, id.as_ref())?;
    if message.contains_key("result") || message.contains_key("error") {
        return refuse(
            id.as_ref(),
            ErrorCode::INVALID_REQUEST,
            "invalid request: a message with a method has no result or error",
        );
    }
    match id {
        None => notification(message, &method, seen),
        Some(id) => request_checked(message, &method, id, tool),
    }
}

/// The method, or `None` for a response (no method, and a result or an error).
fn method(message: &Map<String, Value>, id: Option<&Id>) -> Result<Option<String>, Refusal> {
    match message.get("method") {
        Some(Value::String(method)) => Ok(Some(method.clone())),
        Some(_) => refuse(
            id,
            ErrorCode::INVALID_REQUEST,
            "invalid request: method must be a string",
        ),
        None if message.contains_key("result") || message.contains_key("error") => Ok(None),
        None => refuse(id, ErrorCode::INVALID_REQUEST, "invalid request: no method"),
    }
}

/// Refuses a message with a key given twice in one object.
fn repeated(seen: &Seen, id: Option<&Id>) -> Result<(), Refusal> {
    let Some(first) = &seen.first_repeated else {
        return Ok(());
    };
    let key = &first.key;
    match first.member.as_deref() {
        None => refuse(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("invalid request: duplicate key \"{key}\""),
        ),
        Some("params") => refuse(
            id,
            ErrorCode::INVALID_PARAMS,
            format!("invalid params: duplicate key \"{key}\" in params"),
        ),
        Some(member) => refuse(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("invalid request: duplicate key \"{key}\" in {member}"),
        ),
    }
}

/// A notification: nothing can be answered, and any method is passed on. A
/// cancellation names the request it ends, which rmcp sees by its stand-in id.
fn notification(
    mut message: Map<String, Value>,
    method: &str,
    seen: &Seen,
) -> Result<Accepted, Refusal> {
    let cancels = match method {
        "notifications/cancelled" => cancelled_id(&mut message, seen),
        _ => None,
    };
    match serde_json::from_value::<JsonRpcNotification<ClientNotification>>(Value::Object(message))
    {
        Ok(notification) => Ok(Accepted::Notification {
            cancels,
            notification,
        }),
        Err(e) => refuse(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("invalid request: {method}: {e}"),
        ),
    }
}

/// The id that a `notifications/cancelled` names, put as rmcp sees it.
fn cancelled_id(message: &mut Map<String, Value>, seen: &Seen) -> Option<Id> {
    let params = message.get_mut("params")?.as_object_mut()?;
    let id = Id::read(params.get("requestId")?, seen.request_id.as_deref())?;
    if id.written.is_some() {
        params.insert("requestId".to_owned(), id.rmcp.clone().into_json_value());
    }
    Some(id)
}

/// A request: a method the server answers, with params it can read.
fn request_checked(
    mut message: Map<String, Value>,
    method: &str,
    id: Id,
    tool: &str,
) -> Result<Accepted, Refusal> {
    let Some((_, convert)) = METHODS.iter().find(|(name, _)| *name == method) else {
        return refuse(
            Some(&id),
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        );
    };
    let params = message.get("params");
    if params.is_some_and(|p| !p.is_object()) {
        return refuse(
            Some(&id),
            ErrorCode::INVALID_PARAMS,
            "invalid params: params must be an object",
        );
    }
    let problem = meta_problem(params).or_else(|| match method {
        "tools/call" => tool_call_problem(params, tool),
        _ => None,
    });
    if let Some(problem) = problem {
        return refuse(Some(&id), ErrorCode::INVALID_PARAMS, problem);
    }
    if id.written.is_some() {
        message.insert("id".to_owned(), id.rmcp.clone().into_json_value());
    }
    // rmcp would answer a request it cannot read with `"id": null`: refused here.
    match convert(Value::Object(message)) {
        Ok(request) => Ok(Accepted::Request { id, request }),
        Err(e) => refuse(
            Some(&id),
            ErrorCode::INVALID_PARAMS,
            format!("invalid params: {method}: {e}"),
        ),
    }
}

/// A request read as its method's own rmcp type.
fn request<R>(message: Value) -> Result<JsonRpcRequest<ClientRequest>, serde_json::Error>
where
    R: DeserializeOwned + Into<ClientRequest>,
{
    let JsonRpcRequest {
        jsonrpc,
        id,
        request,
    } = serde_json::from_value::<JsonRpcRequest<R>>(message)?;
    Ok(JsonRpcRequest {
        jsonrpc,
        id,
        request: request.into(),
    })
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

/// What is wrong with the shape of a `tools/call`, if anything. Which tool it names,
/// and its arguments, are the server's to judge.
fn tool_call_problem(params: Option<&Value>, tool: &str) -> Option<String> {
    let Some(params) = params else {
        return Some(format!(
            "invalid params: tools/call needs params {{\"name\": \"{tool}\", \"arguments\": {{\"command\": \"…\"}}}}"
        ));
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
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
