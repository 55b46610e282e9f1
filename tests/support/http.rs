//! A forge-bash HTTP server process (`--http 127.0.0.1:0`) and a plain HTTP/1.1 client
//! for it: one connection per request, answers read whole (JSON or SSE).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::{BIN, PATIENCE, eventually, read_all};

pub const TOKEN: &str = "test-token-0123456789abcdef";

/// A server started with `--http 127.0.0.1:0`, its own directories under `root`.
pub struct HttpServer {
    pub child: Child,
    pub addr: SocketAddr,
    pub root: tempfile::TempDir,
    stderr: Arc<Mutex<String>>,
    pub stdout: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts a server with `args` and `FORGE_BASH_HTTP_TOKEN` set to [`TOKEN`]; the
    /// workdir and state dir are `--workdir`/`--state-dir` in `args` (with `{root}`
    /// replaced by the server's own temporary directory), or `root/work` and
    /// `root/state`. It stops at its first SIGTERM (no drain), unless `args` give
    /// `--shutdown-grace-secs`.
    pub fn start(args: &[&str]) -> HttpServer {
        HttpServer::start_with(args, &[("FORGE_BASH_HTTP_TOKEN", TOKEN)])
    }

    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        HttpServer::try_start_with(args, env).unwrap_or_else(|stderr| panic!("{stderr}"))
    }

    /// As [`HttpServer::start_with`], or the server's stderr when it exits instead of
    /// serving.
    pub fn try_start_with(args: &[&str], env: &[(&str, &str)]) -> Result<HttpServer, String> {
        let root = tempfile::tempdir().unwrap();
        let at = root.path().display().to_string();
        let args: Vec<String> = args.iter().map(|a| a.replace("{root}", &at)).collect();
        let mut command = Command::new(BIN);
        command.args(["--http", "127.0.0.1:0"]);
        if !args.iter().any(|a| a == "--workdir") {
            std::fs::create_dir(root.path().join("work")).unwrap();
            command.arg("--workdir").arg(root.path().join("work"));
        }
        if !args.iter().any(|a| a == "--state-dir") {
            command.arg("--state-dir").arg(root.path().join("state"));
        }
        super::own_uids(&mut command, root.path());
        command
            .args(&args)
            .env("RUST_LOG", "forge_bash=debug,warn")
            .env("FORGE_BASH_SHUTDOWN_GRACE_SECS", "0");
        for (key, value) in env {
            command.env(key, value.replace("{root}", &at));
        }
        HttpServer::try_spawn(command, root)
    }

    /// Spawns `command` (a forge-bash serving HTTP on some address, logging at info)
    /// and waits for the address it listens on.
    pub fn spawn(command: Command, root: tempfile::TempDir) -> HttpServer {
        HttpServer::try_spawn(command, root).unwrap_or_else(|stderr| panic!("{stderr}"))
    }

    /// As [`HttpServer::spawn`], or the server's stderr when it exits instead of
    /// serving.
    pub fn try_spawn(mut command: Command, root: tempfile::TempDir) -> Result<HttpServer, String> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn forge-bash --http");
        let stderr = read_all(child.stderr.take().unwrap());
        let stdout = read_all(child.stdout.take().unwrap());
        let mut addr = None;
        let found = eventually(PATIENCE, || {
            let log = stderr.lock().unwrap();
            addr = log
                .split("addr=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|a| a.parse().ok());
            addr.is_some() || log.contains("ERROR")
        });
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            let log = stderr.lock().unwrap().clone();
            return Err(format!("no address (found: {found}); stderr: {log}"));
        };
        Ok(HttpServer {
            child,
            addr,
            root,
            stderr,
            stdout,
        })
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// A client with the right token, for `user` (`None`: no `X-User-ID`).
    pub fn client(&self, user: Option<&str>) -> Client {
        Client {
            addr: self.addr,
            token: Some(TOKEN.to_owned()),
            user: user.map(str::to_owned),
            session: None,
            host: None,
            next: 1,
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether the server's log holds `needle`, within [`super::PATIENCE`]: a line
    /// written before an answer may reach the thread that collects the log after it.
    pub fn logged(&self, needle: &str) -> bool {
        super::eventually(super::PATIENCE, || self.stderr().contains(needle))
    }
}

impl Drop for HttpServer {
    /// SIGTERM first: a server started through tini (the image's entrypoint) is
    /// stopped by tini passing it on, where a SIGKILL to tini would orphan it.
    fn drop(&mut self) {
        // SAFETY: a signal to the process this test started.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let exited = eventually(Duration::from_secs(5), || {
            self.child.try_wait().is_ok_and(|status| status.is_some())
        });
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body: one JSON object, or the `data:` lines of an
    /// event stream.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }

    /// The message that answers `id`.
    pub fn answer(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer to {id} in {self:?}"))
    }
}

/// One request on a connection of its own: `method` `/mcp` with `headers` and `body`.
pub fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    request_at(addr, method, "/mcp", headers, body)
}

/// A GET of `path` with `headers`, on a connection of its own.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    request_at(addr, "GET", path, headers, b"")
}

/// One request on a connection of its own: `method` `path` with `headers` and `body`.
pub fn request_at(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (413, 401) before it has read all of a large body.
    let _ = stream.write_all(body);
    read_reply(stream)
}

fn read_reply(stream: TcpStream) -> Reply {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            if reader.read_exact(&mut chunk).is_err() {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        let _ = reader.read_to_end(&mut body);
    }
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// An MCP client over plain HTTP requests.
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub token: Option<String>,
    pub user: Option<String>,
    pub session: Option<String>,
    /// The `Host` header, when not the address.
    pub host: Option<String>,
    next: u64,
}

impl Client {
    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        if let Some(token) = &self.token {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        if let Some(user) = &self.user {
            headers.push(("X-User-ID".to_owned(), user.clone()));
        }
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
        }
        if let Some(host) = &self.host {
            headers.push(("Host".to_owned(), host.clone()));
        }
        headers
    }

    /// POSTs `body` with this client's headers.
    pub fn post(&self, body: &str) -> Reply {
        let headers = self.headers();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        request(self.addr, "POST", &headers, body.as_bytes())
    }

    /// `initialize` and `notifications/initialized`; the session id is kept.
    pub fn initialize(&mut self) -> Reply {
        let reply = self.post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "forge-bash-tests", "version": "1"}}})
            .to_string(),
        );
        if reply.status == 200 {
            self.session = reply.header("mcp-session-id").map(str::to_owned);
            let done = self.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            assert_eq!(done.status, 202, "{done:?}");
        }
        reply
    }

    pub fn fresh_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Calls `run` and returns its answer.
    pub fn call(&mut self, command: &str) -> Value {
        let id = self.fresh_id();
        let reply = self.post(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "run", "arguments": {"command": command}}})
            .to_string(),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        reply.answer(id)
    }

    /// The text of `run`'s answer.
    pub fn run(&mut self, command: &str) -> String {
        super::text(&self.call(command))
    }

    /// Ends the session with a DELETE.
    pub fn delete(&self) -> Reply {
        let headers = self.headers();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        request(self.addr, "DELETE", &headers, b"")
    }
}

/// The mode bits of a path.
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}
