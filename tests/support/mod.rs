//! A forge-bash child process and the JSON-RPC plumbing to talk to it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[cfg(feature = "http")]
pub mod http;
pub mod in_process;

pub const BIN: &str = env!("CARGO_BIN_EXE_forge-bash");

/// How long any single answer may take before a test fails (generous on purpose).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Options for starting a server.
#[derive(Default)]
pub struct Options {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Use this workdir instead of a fresh one.
    pub workdir: Option<PathBuf>,
    /// Use this state dir instead of a fresh one.
    pub state: Option<PathBuf>,
    /// Run the server as this user (uid = gid) through `setpriv`, with the fresh
    /// directories given to it: how LibreChat's container runs it.
    pub user: Option<u32>,
    /// Start the server through this command (its words, then the binary and its
    /// arguments): `unshare -m …` to give it a mount namespace, say.
    pub through: Vec<String>,
    /// Refuse `clone3` to the server ([`refuse_clone3`]); also with
    /// `FORGE_BASH_TEST_REFUSE_CLONE3` set in the tests' environment.
    pub refuse_clone3: bool,
}

impl Options {
    pub fn arg(mut self, arg: impl Into<String>) -> Options {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<String>) -> Options {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    pub fn timeout(self, secs: u64) -> Options {
        self.arg("--timeout-secs").arg(secs.to_string())
    }

    pub fn state(mut self, dir: &Path) -> Options {
        self.state = Some(dir.to_owned());
        self
    }

    pub fn workdir(mut self, dir: &Path) -> Options {
        self.workdir = Some(dir.to_owned());
        self
    }

    pub fn through(mut self, words: &[&str]) -> Options {
        self.through = words.iter().map(|w| (*w).to_owned()).collect();
        self
    }

    pub fn user(mut self, uid: u32) -> Options {
        self.user = Some(uid);
        self
    }

    pub fn start(self) -> Server {
        Server::start(self)
    }
}

/// A command that runs the binary: every test that runs it other than as a server
/// (`--help`, `check`, `audit`) starts here.
pub fn binary() -> Command {
    let mut command = Command::new(BIN);
    command.stdin(Stdio::null());
    command
}

/// A server (with `--keep-background` when `keep`) whose first call left a job running
/// in the background: the server, the call's group for cleanup, and the job's pid.
pub fn server_with_background_job(keep: bool) -> (Server, Groups, i32) {
    let mut options = Options::default();
    if keep {
        options = options.arg("--keep-background");
    }
    let mut server = options.start();
    let mut groups = Groups::default();
    let answer = server.run("echo $$ > group; sleep 600 > /dev/null 2>&1 & echo $! > bg");
    assert!(answer.contains("[exit:0"), "{answer}");
    groups.push(read_pid(&server.workdir.join("group")));
    let job = read_pid(&server.workdir.join("bg"));
    (server, groups, job)
}

/// Whether this kernel has Landlock with at least ABI `min`; says why not when it
/// does not, for the test to skip.
pub fn landlock_here(min: i32) -> bool {
    match forge_bash::sandbox::kernel_abi() {
        Ok(abi) if abi as i32 >= min => true,
        Ok(abi) => {
            eprintln!(
                "skipped: Landlock ABI {} here; this needs {min}",
                abi as i32
            );
            false
        }
        Err(why) => {
            eprintln!("skipped: this kernel has no Landlock ({why})");
            false
        }
    }
}

/// The unprivileged user that tests run a server as, when `setpriv` is here to switch
/// to it (it is when the tests run as root, as CI does).
pub fn unprivileged() -> Option<u32> {
    const NOBODY: u32 = 65534;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: switching to another user needs root");
        return None;
    }
    let here = Command::new("setpriv").arg("--version").output().is_ok();
    if !here {
        eprintln!("skipped: setpriv is not installed");
        return None;
    }
    Some(NOBODY)
}

/// A uid range of `--user-uids` for one test server, and none other: tests run in
/// parallel, and each server's users must not meet another's (nor the host's, whose
/// default range this is not).
pub fn uid_range() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 500;
    let first = 300_000 + (std::process::id() % 1000) * 10_000 + n * 20;
    format!("{first}-{}", first + 19)
}

/// Sets the uid mapping of a root server's users to a file in `dir` and a range of
/// its own, and lets every uid pass through `dir` (mode 0711). Run by a user other
/// than root (a developer's), per-user paths share that uid knowingly, as the tests
/// of the transport expect (CI, as root, gives each user a uid).
pub fn own_uids(command: &mut Command, dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    command
        .env("FORGE_BASH_USER_UIDS_FILE", dir.join("uids"))
        .env("FORGE_BASH_USER_UIDS", uid_range());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        command.env("FORGE_BASH_ALLOW_SHARED_UID", "1");
    }
}

/// Whether every server the tests start is refused `clone3` ([`refuse_clone3`]).
pub fn refusing_clone3() -> bool {
    std::env::var_os("FORGE_BASH_TEST_REFUSE_CLONE3").is_some()
}

/// Starts `command` under a seccomp filter that refuses `clone3` with ENOSYS, as the
/// default profiles of older container runtimes do: the server spawns through its fork
/// fallback. With `FORGE_BASH_TEST_REFUSE_CLONE3` set, every server the tests start is.
pub fn refuse_clone3(command: &mut Command) {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    use std::os::unix::process::CommandExt;
    let filter = SeccompFilter::new(
        [(libc::SYS_clone3, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        std::env::consts::ARCH.try_into().unwrap(),
    )
    .unwrap();
    let program = BpfProgram::try_from(filter).unwrap();
    // SAFETY: between fork and exec the hook only makes the prctl and seccomp system
    // calls, on a program made before the fork.
    unsafe {
        command
            .pre_exec(move || seccompiler::apply_filter(&program).map_err(std::io::Error::other));
    }
}

/// A running forge-bash with its own directories.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    buffered: VecDeque<Value>,
    /// Every line the server wrote to stdout, raw.
    pub raw_lines: Arc<Mutex<Vec<String>>>,
    pub stderr: Arc<Mutex<String>>,
    pub workdir: PathBuf,
    pub state: PathBuf,
    _dir: tempfile::TempDir,
    next_id: u64,
}

impl Server {
    pub fn start(options: Options) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let workdir = options.workdir.unwrap_or_else(|| {
            let w = dir.path().join("work");
            std::fs::create_dir(&w).unwrap();
            w
        });
        let state = options.state.unwrap_or_else(|| dir.path().join("state"));
        let mut command = match options.user {
            None if !options.through.is_empty() => {
                let mut command = Command::new(&options.through[0]);
                command.args(&options.through[1..]).arg(BIN);
                command
            }
            None => Command::new(BIN),
            Some(uid) => {
                let id = uid.to_string();
                for path in [dir.path(), &workdir].into_iter().filter(|p| p.exists()) {
                    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
                }
                let mut setpriv = Command::new("setpriv");
                setpriv.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--", BIN]);
                setpriv
            }
        };
        own_uids(&mut command, dir.path());
        if options.refuse_clone3 || refusing_clone3() {
            refuse_clone3(&mut command);
        }
        command
            .arg("--workdir")
            .arg(&workdir)
            .arg("--state-dir")
            .arg(&state)
            .args(&options.args)
            .env("RUST_LOG", "forge_bash=debug,warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &options.env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn forge-bash");
        let stdin = child.stdin.take();
        let (messages, raw_lines) = read_stdout(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        Server {
            child,
            stdin,
            messages,
            buffered: VecDeque::new(),
            raw_lines,
            stderr,
            workdir,
            state,
            _dir: dir,
            next_id: 1000,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes raw bytes to the server's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.send_raw(&line);
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a request and returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.fresh_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn initialize(&mut self) -> Value {
        let id = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "forge-bash-tests", "version": "0"}
            }),
        );
        let response = self.response(id);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response
    }

    /// Starts a `run` call and returns its id.
    pub fn start_call(&mut self, command: &str) -> u64 {
        self.request(
            "tools/call",
            json!({"name": "run", "arguments": {"command": command}}),
        )
    }

    /// Runs a command and returns the whole response.
    pub fn call(&mut self, command: &str) -> Value {
        let id = self.start_call(command);
        self.response(id)
    }

    /// Runs a command and returns the answer text.
    pub fn run(&mut self, command: &str) -> String {
        text(&self.call(command))
    }

    /// The next message matching `pred`, keeping the others for later.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.try_wait_for(PATIENCE, &pred)
            .unwrap_or_else(|| panic!("no {what} within {PATIENCE:?}; stderr:\n{}", self.stderr()))
    }

    pub fn try_wait_for(
        &mut self,
        patience: Duration,
        pred: &dyn Fn(&Value) -> bool,
    ) -> Option<Value> {
        if let Some(at) = self.buffered.iter().position(pred) {
            return self.buffered.remove(at);
        }
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(message) if pred(&message) => return Some(message),
                Ok(message) => self.buffered.push_back(message),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    pub fn response(&mut self, id: u64) -> Value {
        self.wait_for(&format!("response {id}"), |m| {
            m["id"] == json!(id) && m.get("method").is_none()
        })
    }

    /// Messages received and not yet taken.
    pub fn drain_buffered(&mut self) -> Vec<Value> {
        while let Ok(message) = self.messages.try_recv() {
            self.buffered.push_back(message);
        }
        self.buffered.drain(..).collect()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether the server's log holds `needle`, within [`PATIENCE`]: a line written
    /// before an answer may reach the thread that collects the log after it.
    pub fn logged(&self, needle: &str) -> bool {
        eventually(PATIENCE, || self.stderr().contains(needle))
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, patience: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Asserts that every line written to stdout is a JSON-RPC 2.0 message.
    pub fn assert_stdout_is_protocol(&self) {
        for line in self.raw_lines.lock().unwrap().iter() {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC: {line}");
        }
    }

    /// The audit rows written so far, split into their fields.
    pub fn audit_rows(&self) -> Vec<Vec<String>> {
        audit_rows(&self.state)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a `run` result.
pub fn text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
        .to_owned()
}

pub fn is_error(response: &Value) -> bool {
    response["result"]["isError"] == json!(true)
}

/// Replaces the milliseconds of every `[exit:N | Xms]` footer with `X`.
pub fn mask_ms(text: &str) -> String {
    let Some(at) = text.rfind(" | ") else {
        return text.to_owned();
    };
    let tail = &text[at + 3..];
    match tail.strip_suffix("ms]") {
        Some(ms) if ms.chars().all(|c| c.is_ascii_digit()) => format!("{} | Xms]", &text[..at]),
        _ => text.to_owned(),
    }
}

pub fn audit_rows(state: &Path) -> Vec<Vec<String>> {
    let Ok(entries) = std::fs::read_dir(state) else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("audit-")
        })
        .collect();
    files.sort();
    for file in files {
        let content = std::fs::read_to_string(file).unwrap();
        assert!(
            content.is_empty() || content.ends_with('\n'),
            "rows end with a newline"
        );
        for line in content.lines() {
            rows.push(line.split('\t').map(str::to_owned).collect());
        }
    }
    rows
}

/// Waits until `cond` holds, up to `patience`.
pub fn eventually(patience: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The processes of group `pgid` that are alive (not zombies).
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state, ppid, pgrp, …
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) && alive(pid) {
            members.push(pid);
        }
    }
    members
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Live processes whose environment carries a call marker (`FORGE_BASH_CALL`) that
/// `wanted` takes.
pub fn carrying(wanted: impl Fn(&str) -> bool) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .filter_map(|v| v.strip_prefix(b"FORGE_BASH_CALL="))
                    .any(|m| std::str::from_utf8(m).is_ok_and(&wanted))
            })
        })
        .collect()
}

/// Reads a pid a command wrote into the workdir, waiting for it to appear.
pub fn read_pid(path: &Path) -> i32 {
    assert!(
        eventually(PATIENCE, || std::fs::read_to_string(path)
            .is_ok_and(|s| s.ends_with('\n'))),
        "no pid file {}",
        path.display()
    );
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Kills, on drop, the process groups a test started through the server, so that a
/// failing test leaves nothing behind. Only groups recorded by the test itself, and
/// only while their id is still theirs: once a group is gone, its id may be given to
/// another test's process within seconds (pids wrap at 32768 with fork bombs beside).
#[derive(Default)]
pub struct Groups(Vec<(i32, Option<u64>)>);

impl Groups {
    /// Records the group `pgid`, which a process of the test's call leads or led.
    pub fn push(&mut self, pgid: i32) {
        self.0.push((pgid, start_time(pgid)));
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        for &(pgid, started) in &self.0 {
            // A process with the group's id that is not its leader got the id again:
            // while the group had members, no new process could have it.
            let now = start_time(pgid);
            if pgid > 1 && (now.is_none() || now == started) {
                // SAFETY: plain syscall on a group id this test recorded, still its own.
                unsafe { libc::killpg(pgid, libc::SIGKILL) };
            }
        }
    }
}

/// When process `pid` started (field 22 of its stat), or `None` when there is none.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = &stat[stat.rfind(')')? + 2..];
    fields.split(' ').nth(19)?.parse().ok()
}

fn read_stdout(stdout: impl Read + Send + 'static) -> (Receiver<Value>, Arc<Mutex<Vec<String>>>) {
    let (tx, rx) = channel();
    let raw = Arc::new(Mutex::new(Vec::new()));
    let raw_lines = raw.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            raw.lock().unwrap().push(line.clone());
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && tx.send(value).is_err()
            {
                return;
            }
        }
    });
    (rx, raw_lines)
}

pub fn read_all(stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            sink.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    out
}

/// Runs the binary to completion with `input` piped in, like the README's smoke test.
pub fn pipe_through(
    args: &[&str],
    env: &[(&str, &Path)],
    input: &[u8],
) -> (String, String, ExitStatus) {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status,
    )
}
