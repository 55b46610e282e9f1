//! The Streamable HTTP transport through the real binary on 127.0.0.1: the token, the
//! Host, Origin and body checks, the stdio checks, one workspace per user, and sessions
//! whose end (DELETE, idle expiry, SIGTERM) ends their commands.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{Client, HttpServer, TOKEN, mode, request};
use crate::support::{
    PATIENCE, alive, audit_rows, binary, eventually, is_error, landlock_here, mask_ms, read_pid,
    text,
};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

const PER_USER: [&str; 4] = [
    "--workdir",
    "{root}/ws/{user}",
    "--state-dir",
    "{root}/state/{user}",
];

#[test]
fn a_request_without_the_right_token_gets_401_and_runs_nothing() {
    let server = HttpServer::start(&PER_USER);
    let accept = ("Accept", "application/json, text/event-stream");
    let json = ("Content-Type", "application/json");
    let user = ("X-User-ID", "alice");
    let bearer = |token: &str| format!("Bearer {token}");
    for authorization in [
        None,
        Some(bearer("wrong")),
        Some(bearer(&TOKEN[1..])),
        Some(bearer(&format!("{TOKEN}x"))),
        Some(TOKEN.to_owned()),
        Some(format!("Basic {TOKEN}")),
    ] {
        let mut headers = vec![accept, json, user];
        if let Some(authorization) = &authorization {
            headers.push(("Authorization", authorization));
        }
        let reply = request(server.addr, "POST", &headers, INITIALIZE.as_bytes());
        assert_eq!(reply.status, 401, "{authorization:?}: {reply:?}");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        let reply = request(server.addr, "DELETE", &headers, b"");
        assert_eq!(reply.status, 401);
    }
    // Nothing was made for alice, nothing audited (a root server made the fixed
    // parents at start-up, so that no user could make them first).
    assert!(!server.path("ws/alice").exists());
    assert!(!server.path("state/alice").exists());
    // The scheme is case-insensitive, as HTTP says.
    let lower = format!("bearer {TOKEN}");
    let reply = request(
        server.addr,
        "POST",
        &[accept, json, user, ("Authorization", &lower)],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(server.path("ws/alice").is_dir());
}

#[test]
fn start_up_needs_a_token_and_never_takes_it_as_a_flag() {
    let refused = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = binary();
        command.args(args).env_remove("FORGE_BASH_HTTP_TOKEN");
        for (key, value) in env {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        assert!(!out.status.success(), "{args:?} started");
        assert!(out.stdout.is_empty());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let base = ["--workdir", w, "--state-dir", w];
    let stderr = refused(&[&base[..], &["--http", "127.0.0.1:0"]].concat(), &[]);
    assert!(
        stderr.contains("FORGE_BASH_HTTP_TOKEN or --http-token-file"),
        "{stderr}"
    );
    let stderr = refused(
        &[
            &base[..],
            &["--http", "0.0.0.0:0", "--http-insecure-no-token"],
        ]
        .concat(),
        &[],
    );
    assert!(
        stderr.contains("0.0.0.0:0 is not a loopback address"),
        "{stderr}"
    );
    let stderr = refused(
        &[&base[..], &["--http", "127.0.0.1:0", "--http-token"]].concat(),
        &[],
    );
    assert!(stderr.contains("--http-token"), "{stderr}");
    let stderr = refused(
        &[&base[..], &["--http", "127.0.0.1:0"]].concat(),
        &[("FORGE_BASH_HTTP_TOKEN", "  ")],
    );
    assert!(
        stderr.contains("FORGE_BASH_HTTP_TOKEN is empty"),
        "{stderr}"
    );
    // {user} is for HTTP only.
    let stderr = refused(&["--workdir", "/w/{user}", "--state-dir", w], &[]);
    assert!(
        stderr.contains("--workdir /w/{user}: {user} is for --http"),
        "{stderr}"
    );

    // Loopback without a token, when asked for: requests need no Authorization.
    let server = HttpServer::start_with(&["--http-insecure-no-token"], &[]);
    let mut client = server.client(None);
    client.token = None;
    assert_eq!(client.initialize().status, 200);
    assert_eq!(mask_ms(&client.run("echo open")), "open\n\n[exit:0 | Xms]");
}

#[test]
fn the_token_is_the_servers_alone() {
    // From the environment: taken out before any command runs.
    let server = HttpServer::start(&[]);
    let mut client = server.client(None);
    assert_eq!(client.initialize().status, 200);
    let answer = client
        .run("env | grep -c FORGE_BASH_HTTP_TOKEN; grep -c FORGE_BASH_HTTP_TOKEN /proc/$$/environ");
    assert_eq!(mask_ms(&answer), "0\n0\n\n[exit:1 | Xms]");

    // From a file: its first line.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "from-a-file-0123456789\nignored\n").unwrap();
    let server = HttpServer::start_with(&["--http-token-file", file.to_str().unwrap()], &[]);
    let mut client = server.client(None);
    assert_eq!(client.initialize().status, 401);
    client.token = Some("from-a-file-0123456789".into());
    assert_eq!(client.initialize().status, 200);
    assert_eq!(mask_ms(&client.run("echo ok")), "ok\n\n[exit:0 | Xms]");
}

#[test]
fn host_origin_path_and_body_size_are_checked() {
    let server = HttpServer::start(&["--http-allowed-host", "forge-bash,localhost"]);
    let token = format!("Bearer {TOKEN}");
    let base = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("Authorization", token.as_str()),
    ];
    fn with<'a>(
        base: &[(&'a str, &'a str)],
        extra: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        [base, extra].concat()
    }
    // `Host` is the address by default in `request`: 127.0.0.1 is not listed here.
    let reply = request(server.addr, "POST", &base, INITIALIZE.as_bytes());
    assert_eq!(reply.status, 403, "{reply:?}");
    let reply = request(
        server.addr,
        "POST",
        &with(&base, &[("Host", "evil.example")]),
        INITIALIZE.as_bytes(),
    );
    assert_eq!(reply.status, 403, "{reply:?}");
    for host in ["forge-bash:8080", "localhost"] {
        let reply = request(
            server.addr,
            "POST",
            &with(&base, &[("Host", host)]),
            INITIALIZE.as_bytes(),
        );
        assert_eq!(reply.status, 200, "{host}: {reply:?}");
    }
    // A browser's request (it sends Origin) is refused.
    let reply = request(
        server.addr,
        "POST",
        &with(
            &base,
            &[("Host", "localhost"), ("Origin", "http://localhost")],
        ),
        INITIALIZE.as_bytes(),
    );
    assert_eq!(reply.status, 403, "{reply:?}");
    // Bodies are bounded: 16 MiB.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"x":"{}"}}}}}}"#,
        "a".repeat(16 * 1024 * 1024)
    );
    let reply = request(
        server.addr,
        "POST",
        &with(&base, &[("Host", "localhost")]),
        big.as_bytes(),
    );
    assert_eq!(reply.status, 413, "{}", reply.body);
    // Only /mcp.
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    // The server serves on.
    let mut client = server.client(None);
    client.addr = server.addr;
    let reply = request(
        server.addr,
        "POST",
        &with(&base, &[("Host", "localhost")]),
        INITIALIZE.as_bytes(),
    );
    assert_eq!(reply.status, 200);
    assert!(
        server.stdout.lock().unwrap().is_empty(),
        "stdout is not used"
    );
}

#[test]
fn bodies_pass_the_same_checks_as_stdio_lines() {
    let server = HttpServer::start(&[]);
    let mut client = server.client(None);
    assert_eq!(client.initialize().status, 200);
    let error = |body: &str| {
        let reply = client.post(body);
        let message = reply.messages().pop().unwrap_or(Value::Null);
        (
            reply.status,
            message["id"].clone(),
            message["error"].clone(),
        )
    };
    let (status, id, e) = error(r#"{"jsonrpc":"2.0","id":5,"id":5,"method":"tools/list"}"#);
    assert_eq!((status, id), (200, json!(5)));
    assert_eq!(e["code"], -32600);
    assert_eq!(e["message"], "invalid request: duplicate key \"id\"");
    let (status, id, e) = error("not json");
    assert_eq!(
        (status, id, e["code"].clone()),
        (400, Value::Null, json!(-32700))
    );
    let (status, _, e) = error(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!(status, 400);
    assert_eq!(
        e["message"],
        "invalid request: batch requests are not supported"
    );
    let (status, id, e) = error(r#"{"jsonrpc":"2.0","id":"x","method":"resources/list"}"#);
    assert_eq!(
        (status, id, e["code"].clone()),
        (200, json!("x"), json!(-32601))
    );
    let (status, id, e) = error(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run","arguments":{"command":"true","cwd":"/"}}}"#,
    );
    assert_eq!((status, id), (200, json!(7)));
    assert_eq!(
        e["message"],
        "unknown argument \"cwd\"; run takes only \"command\""
    );
    let reply =
        client.post(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#);
    assert_eq!(reply.status, 200);
    assert!(
        reply
            .body
            .starts_with(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"error":"#),
        "{reply:?}"
    );
    assert!(
        reply
            .body
            .contains("over HTTP an integer id must fit in 64 bits")
    );
    // A blocked rm runs nothing and is audited, as over stdio.
    std::fs::write(server.path("work/keep"), "").unwrap();
    let answer = client.call("rm -rf keep");
    assert!(is_error(&answer));
    assert_eq!(
        text(&answer),
        "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]"
    );
    assert!(server.path("work/keep").exists());
    let rows = audit_rows(&server.path("state"));
    assert_eq!(rows.last().unwrap()[1..3], ["rm -rf keep", "-1"]);
}

#[test]
fn each_user_works_in_a_workspace_of_their_own() {
    let server = HttpServer::start(&PER_USER);
    let mut alice = server.client(Some("alice"));
    let mut bob = server.client(Some("bob"));
    assert_eq!(alice.initialize().status, 200);
    assert_eq!(bob.initialize().status, 200);
    let (ws_alice, ws_bob) = (server.path("ws/alice"), server.path("ws/bob"));
    for dir in [&ws_alice, &ws_bob] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    // A root server's state dirs are readable by their user's group, not writable.
    // SAFETY: geteuid has no preconditions.
    let state_mode = if unsafe { libc::geteuid() } == 0 {
        0o2750
    } else {
        0o700
    };
    for dir in [&server.path("state/alice"), &server.path("state/bob")] {
        assert_eq!(mode(dir), state_mode, "{}", dir.display());
    }
    assert_eq!(
        mask_ms(&alice.run("pwd; echo mine > note")),
        format!("{}\n\n[exit:0 | Xms]", ws_alice.display())
    );
    assert_eq!(
        mask_ms(&bob.run("pwd; ls")),
        format!("{}\n\n[exit:0 | Xms]", ws_bob.display())
    );
    assert!(ws_alice.join("note").exists());
    // Each user's overflow file and audit rows are in their own state dir.
    let long = bob.run("seq 1 5000");
    assert!(
        long.contains(&server.path("state/bob").display().to_string()),
        "{long}"
    );
    let commands = |user: &str| -> Vec<String> {
        audit_rows(&server.path(&format!("state/{user}")))
            .into_iter()
            .map(|row| row[1].clone())
            .collect()
    };
    assert_eq!(commands("alice"), ["pwd; echo mine > note"]);
    assert_eq!(commands("bob"), ["pwd; ls", "seq 1 5000"]);
    // The tool description names the user's own workdir.
    let id = alice.fresh_id();
    let tools =
        alice.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string());
    let description = tools.answer(id)["result"]["tools"][0]["description"].clone();
    assert!(
        description
            .as_str()
            .unwrap()
            .contains(&ws_alice.display().to_string())
    );

    // A session cannot change its user, and a user must be named, and named well.
    let mut thief = alice.clone();
    thief.user = Some("bob".into());
    let reply = thief.post(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(reply.body.contains("a session cannot change its user"));
    thief.user = None;
    let reply = thief.post(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert_eq!(reply.status, 403, "{reply:?}");
    let token = format!("Bearer {TOKEN}");
    let session = alice.session.clone().unwrap();
    for users in [["alice", "bob"], ["alice", "alice"]] {
        let headers = [
            ("Authorization", token.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", session.as_str()),
            ("X-User-ID", users[0]),
            ("X-User-ID", users[1]),
        ];
        let reply = request(
            server.addr,
            "POST",
            &headers,
            br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        );
        assert_eq!(reply.status, 400, "{users:?}: {reply:?}");
    }
    for user in [
        None,
        Some(".."),
        Some("."),
        Some("a/b"),
        Some(""),
        Some(&*"x".repeat(65)),
    ] {
        let mut client = server.client(user);
        let reply = client.initialize();
        assert_eq!(reply.status, 400, "{user:?}: {reply:?}");
        assert!(reply.body.contains("X-User-ID"), "{reply:?}");
    }
    assert!(server.client(Some(&"x".repeat(64))).initialize().status == 200);
    let mut entries: Vec<String> = std::fs::read_dir(server.path("ws"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, ["alice", "bob", "x".repeat(64).as_str()]);
}

#[test]
fn without_user_in_the_paths_every_session_shares_the_workdir() {
    let server = HttpServer::start(&[]);
    let mut one = server.client(Some("alice"));
    let mut two = server.client(Some("bob"));
    one.initialize();
    two.initialize();
    one.run("echo shared > f");
    assert_eq!(mask_ms(&two.run("cat f")), "shared\n\n[exit:0 | Xms]");
    assert_eq!(audit_rows(&server.path("state")).len(), 2);
}

#[test]
fn sandboxed_users_cannot_read_each_other() {
    if !landlock_here(3) {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let args = [&PER_USER[..], &["--sandbox"]].concat();
    let server = HttpServer::start(&args);
    let mut alice = server.client(Some("alice"));
    let mut bob = server.client(Some("bob"));
    alice.initialize();
    bob.initialize();
    alice.run("echo secret > note");
    let note = server.path("ws/alice/note");
    let answer = bob.run(&format!(
        "cat {}; ls {}",
        note.display(),
        server.path("state/alice").display()
    ));
    assert_eq!(answer.matches("Permission denied").count(), 2, "{answer}");
    assert!(!answer.contains("secret"));
    assert_eq!(mask_ms(&alice.run("cat note")), "secret\n\n[exit:0 | Xms]");
}

/// A session with a background job and a running command; the job's pid and a thread
/// waiting for the command's answer.
fn busy_session(server: &HttpServer, user: &str) -> (Client, i32, std::thread::JoinHandle<Value>) {
    let mut client = server.client(Some(user));
    assert_eq!(client.initialize().status, 200);
    let pidfile = format!("bg-{user}");
    client.run(&format!("sleep 600 > /dev/null 2>&1 & echo $! > {pidfile}"));
    let job = read_pid(&server.path(&format!("ws/{user}/{pidfile}")));
    let mut caller = client.clone();
    let running = std::thread::spawn(move || {
        let id = caller.fresh_id();
        let reply = caller.post(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "run", "arguments": {"command": "echo $$ > fg; sleep 600"}}})
            .to_string(),
        );
        reply
            .messages()
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or(Value::Null)
    });
    let shell = read_pid(&server.path(&format!("ws/{user}/fg")));
    assert!(alive(job) && alive(shell));
    (client, job, running)
}

fn last_code(server: &HttpServer, user: &str) -> Option<String> {
    audit_rows(&server.path(&format!("state/{user}")))
        .into_iter()
        .rev()
        .find(|row| row[1] == "echo $$ > fg; sleep 600")
        .map(|row| row[2].clone())
}

#[test]
fn ending_a_session_ends_its_commands_and_no_other() {
    let server = HttpServer::start(&PER_USER);
    let (alice, alice_job, alice_call) = busy_session(&server, "alice");
    let (mut bob, bob_job, bob_call) = busy_session(&server, "bob");
    let shell = read_pid(&server.path("ws/alice/fg"));
    let started = Instant::now();
    assert_eq!(alice.delete().status, 204);
    assert!(eventually(PATIENCE, || !alive(alice_job) && !alive(shell)));
    assert!(eventually(PATIENCE, || last_code(&server, "alice")
        .as_deref()
        == Some("130")));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let _ = alice_call.join();
    assert!(
        server.logged("session ended user=\"alice\""),
        "{}",
        server.stderr()
    );
    // The session is gone; bob's work goes on.
    assert_eq!(
        alice
            .post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .status,
        404
    );
    assert!(alive(bob_job) && alive(read_pid(&server.path("ws/bob/fg"))));
    assert_eq!(mask_ms(&bob.run("echo still")), "still\n\n[exit:0 | Xms]");
    assert_eq!(bob.delete().status, 204);
    assert!(eventually(PATIENCE, || !alive(bob_job)));
    let _ = bob_call.join();
}

#[test]
fn an_idle_session_ends_with_its_background_jobs() {
    // The idle limit is never under the timeout plus 5 s: 1 + 5 here.
    let args = [
        &PER_USER[..],
        &["--timeout-secs", "1", "--http-session-idle-secs", "1"],
    ]
    .concat();
    let server = HttpServer::start(&args);
    let mut client = server.client(Some("alice"));
    client.initialize();
    client.run("sleep 600 > /dev/null 2>&1 & echo $! > bg");
    let job = read_pid(&server.path("ws/alice/bg"));
    let idle = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    assert!(alive(job), "the session is not idle for long enough yet");
    assert!(eventually(PATIENCE, || !alive(job)));
    let ended = idle.elapsed();
    assert!(ended >= Duration::from_secs(5), "{ended:?}");
    assert_eq!(
        client
            .post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .status,
        404
    );
}

#[test]
fn sigterm_stops_every_sessions_commands_and_the_server() {
    let mut server = HttpServer::start(&PER_USER);
    let (_alice, alice_job, alice_call) = busy_session(&server, "alice");
    let (_bob, bob_job, bob_call) = busy_session(&server, "bob");
    // SAFETY: a signal to the server this test started.
    unsafe { libc::kill(server.pid(), libc::SIGTERM) };
    for call in [alice_call, bob_call] {
        let answer = call.join().unwrap();
        assert!(
            text(&answer)
                .starts_with("ERROR: Server shutting down; command stopped.\n[exit:143 | "),
            "{answer}"
        );
    }
    assert_eq!(last_code(&server, "alice").as_deref(), Some("143"));
    assert_eq!(last_code(&server, "bob").as_deref(), Some("143"));
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!alive(alice_job) && !alive(bob_job));
    assert!(
        server.stdout.lock().unwrap().is_empty(),
        "stdout is not used"
    );
}

#[test]
fn with_keep_background_sigterm_leaves_what_answered_calls_left_running() {
    for keep in [true, false] {
        let args = if keep {
            [&PER_USER[..], &["--keep-background"]].concat()
        } else {
            PER_USER.to_vec()
        };
        let mut server = HttpServer::start(&args);
        let mut client = server.client(Some("alice"));
        client.initialize();
        client.run("sleep 600 > /dev/null 2>&1 & echo $! > bg");
        let job = read_pid(&server.path("ws/alice/bg"));
        // SAFETY: getpgid only reads; the job is this test's.
        let group = unsafe { libc::getpgid(job) };
        assert!(group > 0, "the job's group");
        // SAFETY: a signal to the server this test started.
        unsafe { libc::kill(server.pid(), libc::SIGTERM) };
        let status = server.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        // The watchdog acts once the server is gone: give it the time to.
        std::thread::sleep(Duration::from_millis(500));
        let kept = alive(job);
        if kept {
            // SAFETY: the group this test's call started.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
        assert_eq!(
            kept, keep,
            "--keep-background {keep}: the answered call's job"
        );
    }
}

#[test]
fn sessions_share_max_concurrent() {
    let args = [&PER_USER[..], &["--max-concurrent", "1"]].concat();
    let server = HttpServer::start(&args);
    let mut alice = server.client(Some("alice"));
    let mut bob = server.client(Some("bob"));
    alice.initialize();
    bob.initialize();
    let first = std::thread::spawn(move || alice.run("sleep 1; date +%s%N"));
    std::thread::sleep(Duration::from_millis(300));
    let second = bob.run("date +%s%N");
    let first = first.join().unwrap();
    let stamp = |text: &str| text.lines().next().unwrap().parse::<u128>().unwrap();
    assert!(
        stamp(&second) >= stamp(&first),
        "bob ran before alice's turn ended: {first} {second}"
    );
}

#[test]
fn each_users_state_dir_stays_bounded() {
    let server = HttpServer::start(&PER_USER);
    let state = server.path("state/alice");
    std::fs::create_dir_all(&state).unwrap();
    for n in 1..=25 {
        let file = state.join(format!("cmd-{n}.txt"));
        std::fs::write(&file, "old\n").unwrap();
        let touched = std::process::Command::new("touch")
            .args(["-d", "10 days ago"])
            .arg(&file)
            .status()
            .unwrap();
        assert!(touched.success());
    }
    let overflow = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("cmd-")
            })
            .count()
    };
    assert_eq!(overflow(&state), 25);
    // The user's first session opens the workspace, and its retention pass runs.
    server.client(Some("alice")).initialize();
    assert!(
        eventually(PATIENCE, || overflow(&state) == 20),
        "{} overflow files",
        overflow(&state)
    );
}

#[test]
fn no_request_reaches_a_session_the_gate_did_not_start() {
    let server = HttpServer::start(&PER_USER);
    let (alice, job, _call) = busy_session(&server, "alice");
    let mut bob = server.client(Some("bob"));
    bob.initialize();
    // Served without a session (the 2026-07-28 way), with a made-up id, or with
    // alice's id and bob's name: none runs, none ends alice's work.
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": "pwd > pwned"},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    .to_string();
    let mut stateless = bob.clone();
    stateless.session = None;
    let reply = stateless.post(&call);
    assert_eq!(reply.status, 400, "{reply:?}");
    let mut made_up = bob.clone();
    made_up.session = Some("not-a-session".into());
    assert_eq!(made_up.post(&call).status, 404);
    let mut thief = alice.clone();
    thief.user = Some("bob".into());
    assert_eq!(thief.post(&call).status, 403);
    // A DELETE that rmcp refuses (a browser's Origin) ends nothing.
    let token = format!("Bearer {TOKEN}");
    let session = alice.session.clone().unwrap();
    let headers = [
        ("Authorization", token.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("X-User-ID", "alice"),
        ("Origin", "http://evil.example"),
    ];
    assert_eq!(request(server.addr, "DELETE", &headers, b"").status, 403);
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(job));
    assert!(!server.path("ws/alice/pwned").exists() && !server.path("ws/bob/pwned").exists());
    let mut alice = alice;
    assert_eq!(mask_ms(&alice.run("echo on")), "on\n\n[exit:0 | Xms]");
    assert_eq!(alice.delete().status, 204);
    assert!(eventually(PATIENCE, || !alive(job)));
}

#[test]
fn sessions_are_bounded_per_user_and_in_all() {
    let args = [&PER_USER[..], &["--http-max-sessions", "20"]].concat();
    let server = HttpServer::start(&args);
    let mut first = server.client(Some("alice"));
    assert_eq!(first.initialize().status, 200);
    first.run("sleep 600 > /dev/null 2>&1 & echo $! > bg");
    let job = read_pid(&server.path("ws/alice/bg"));
    let mut others = Vec::new();
    for _ in 0..15 {
        let mut client = server.client(Some("alice"));
        assert_eq!(client.initialize().status, 200);
        others.push(client);
    }
    // Her 17th session ends her oldest, and what it left running.
    assert!(alive(job));
    let mut seventeenth = server.client(Some("alice"));
    assert_eq!(seventeenth.initialize().status, 200);
    assert!(eventually(PATIENCE, || !alive(job)));
    assert_eq!(
        first
            .post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .status,
        404
    );
    assert_eq!(
        mask_ms(&others[0].run("echo kept")),
        "kept\n\n[exit:0 | Xms]"
    );
    // 16 of alice's and 4 of bob's: the 21st in all is refused.
    for _ in 0..4 {
        assert_eq!(server.client(Some("bob")).initialize().status, 200);
    }
    let reply = server.client(Some("carol")).initialize();
    assert_eq!(reply.status, 503, "{reply:?}");
    assert!(!server.path("ws/carol").exists());
    // Ending one makes room.
    assert_eq!(seventeenth.delete().status, 204);
    assert_eq!(server.client(Some("carol")).initialize().status, 200);
}

/// The service as root with per-user paths: each user's commands run under a uid of
/// their own, so that without the sandbox the kernel keeps them apart.
#[test]
fn as_root_each_user_has_a_uid_of_their_own() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid per user needs a root server");
        return;
    }
    let server = HttpServer::start(&PER_USER);
    let mut alice = server.client(Some("alice"));
    let mut bob = server.client(Some("bob"));
    assert_eq!(alice.initialize().status, 200);
    assert_eq!(bob.initialize().status, 200);
    let uid = |client: &mut Client| -> u32 {
        let answer = client.run("id -u");
        answer.lines().next().unwrap().parse().expect(&answer)
    };
    let (a, b) = (uid(&mut alice), uid(&mut bob));
    assert!(a != 0 && b != 0 && a != b, "{a} {b}");
    let answer =
        bob.run("echo secret > notes; TOKEN=bob-token sleep 300 > /dev/null 2>&1 & echo $!");
    let job: i32 = answer.lines().next().unwrap().parse().expect(&answer);
    let (bob_work, bob_state) = (server.path("ws/bob"), server.path("state/bob"));
    for attack in [
        format!("chmod 000 {} {}", bob_work.display(), bob_state.display()),
        format!("cat {}/notes", bob_work.display()),
        format!("kill -STOP {job}"),
        format!("cat /proc/{job}/environ"),
        "cat /proc/1/environ".to_owned(),
        format!("prlimit --pid {job} --cpu=1:2"),
        "prlimit --pid $PPID --fsize=0:0".to_owned(),
        format!("renice -n 10 -p {job}"),
        format!("ionice -c3 -p {job}"),
        format!("taskset -p 1 {job}"),
    ] {
        let answer = alice.run(&attack);
        assert!(
            !answer.contains("[exit:0 ")
                && (answer.contains("Permission denied")
                    || answer.contains("Operation not permitted")),
            "alice: {attack}: {answer}"
        );
    }
    assert!(alive(job));
    assert_eq!(mask_ms(&bob.run("cat notes")), "secret\n\n[exit:0 | Xms]");
    let rows = audit_rows(&bob_state);
    assert_eq!(rows.last().unwrap()[1], "cat notes");
    // SAFETY: a signal to the job this test's session started.
    unsafe { libc::kill(job, libc::SIGKILL) };
}

/// As root with per-user paths and no sandbox, a token file the users' uids could read
/// (mode 0644, as Docker and Compose secrets often are) refuses start-up, naming the
/// file and `chmod 600`: else alice's command `cat`s it and opens a session as bob.
/// Once 0600, the server starts and her `cat` is refused. `--run-as` is held to the
/// same.
#[test]
fn as_root_a_token_file_commands_could_read_refuses_start_up() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid per user needs a root server");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let chmod = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let file = dir.path().join("token");
    let secret = "the-service-token-0123456789";
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    chmod(&file, 0o644);
    let shown = file.display().to_string();
    let args = [&PER_USER[..], &["--http-token-file", &shown]].concat();
    match HttpServer::try_start_with(&args, &[]) {
        Ok(server) => {
            let mut alice = server.client(Some("alice"));
            alice.token = Some(secret.to_owned());
            alice.initialize();
            let answer = alice.run(&format!("cat {shown}"));
            panic!("the server started; alice's `cat {shown}`: {answer}");
        }
        Err(stderr) => assert!(
            stderr.contains(&format!("--http-token-file {shown}: commands run as"))
                && stderr.contains(&format!("chmod 600 {shown}")),
            "{stderr}"
        ),
    }
    let run_as = || {
        let mut command = binary();
        command
            .args(["--http", "127.0.0.1:0", "--run-as", "65534", "--workdir"])
            .arg(dir.path())
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .arg("--http-token-file")
            .arg(&file);
        HttpServer::try_spawn(command, tempfile::tempdir().unwrap())
    };
    let stderr = run_as()
        .err()
        .expect("--run-as served with a token file 0644");
    assert!(
        stderr.contains("uid 65534:65534 (--run-as) could read it"),
        "{stderr}"
    );

    chmod(&file, 0o600);
    assert!(run_as().is_ok());
    let server = HttpServer::try_start_with(&args, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut alice = server.client(Some("alice"));
    alice.token = Some(secret.to_owned());
    assert_eq!(alice.initialize().status, 200);
    let answer = alice.run(&format!("cat {shown}"));
    assert!(answer.contains("Permission denied"), "{answer}");
}

/// As root with per-user paths, a workdir that exists and belongs to another user's
/// uid (alice made `ws/bob` and planted a Makefile, while its parent was open) is not
/// handed to bob: his session is refused, naming the path, and her files stay out
/// of his commands.
#[test]
fn as_root_another_users_directory_is_never_handed_over() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid per user needs a root server");
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let server = HttpServer::start(&PER_USER);
    let mut alice = server.client(Some("alice"));
    assert_eq!(alice.initialize().status, 200);
    let uid = std::fs::metadata(server.path("ws/alice")).unwrap().uid();
    let planted = server.path("ws/bob");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(planted.join("Makefile"), "all:\n\tcat ~/.ssh/id_rsa\n").unwrap();
    for path in [&planted, &planted.join("Makefile")] {
        std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    }
    let mut bob = server.client(Some("bob"));
    let reply = bob.initialize();
    if reply.status == 200 {
        let answer = bob.run("ls; id -u");
        panic!("bob was handed alice's directory: {answer}");
    }
    let named = format!("{}: it belongs to uid {uid}", planted.display());
    assert!(server.logged(&named), "{}", server.stderr());
    assert_eq!(std::fs::metadata(&planted).unwrap().uid(), uid);
}

/// As root with a uid range of one: a second user's session is refused with 503
/// naming the range, not rmcp's 500. `forge-bash users` lists the mapping;
/// `--remove` refuses while the user has a process or files, then frees the uid, and
/// the second user is served.
#[test]
fn as_root_a_full_uid_range_answers_503_and_a_name_can_be_freed() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid per user needs a root server");
        return;
    }
    let first: u32 = crate::support::uid_range()
        .split('-')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let one = format!("{first}-{first}");
    let token = ("FORGE_BASH_HTTP_TOKEN", TOKEN);
    let server = HttpServer::start_with(&PER_USER, &[token, ("FORGE_BASH_USER_UIDS", &one)]);
    let mut alice = server.client(Some("alice"));
    assert_eq!(alice.initialize().status, 200);
    let job = alice.run("sleep 300 > /dev/null 2>&1 & echo $!");
    let job: i32 = job.lines().next().unwrap().parse().expect(&job);
    let mut bob = server.client(Some("bob"));
    let reply = bob.initialize();
    assert_eq!(reply.status, 503, "{reply:?}");
    assert!(
        reply.body.contains(&format!("--user-uids {one}")),
        "{reply:?}"
    );

    let users = |extra: &[&str]| {
        let out = binary()
            .arg("users")
            .args(extra)
            .arg("--user-uids-file")
            .arg(server.path("uids"))
            .arg("--workdir")
            .arg(server.path("ws/{user}"))
            .arg("--state-dir")
            .arg(server.path("state/{user}"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(if out.status.success() {
            &out.stdout
        } else {
            &out.stderr
        });
        (out.status.success(), text.into_owned())
    };
    let (ok, list) = users(&[]);
    assert!(ok, "{list}");
    let row = list.lines().nth(1).unwrap_or_default();
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[..2], ["alice", &*first.to_string()], "{list}");
    assert!(
        row.contains(&chrono::Utc::now().format("%Y-%m-%d").to_string()),
        "{list}"
    );
    let (ok, refusal) = users(&["--remove", "alice"]);
    assert!(
        !ok && refusal.contains(&format!("process {job} runs as their uid {first}")),
        "{refusal}"
    );
    // SAFETY: a signal to the job this test's session started.
    unsafe { libc::kill(job, libc::SIGKILL) };
    assert!(eventually(PATIENCE, || !alive(job)));
    assert!((200..300).contains(&alice.delete().status));
    let mut refusal = String::new();
    let gone = eventually(PATIENCE, || {
        refusal = users(&["--remove", "alice"]).1;
        !refusal.contains("runs as their uid")
    });
    assert!(gone, "{refusal}");
    assert!(
        !ok && refusal.contains("remove or archive it first"),
        "{refusal}"
    );
    std::fs::remove_dir_all(server.path("ws/alice")).unwrap();
    std::fs::remove_dir_all(server.path("state/alice")).unwrap();
    let (ok, said) = users(&["--remove", "alice"]);
    assert!(
        ok && said.starts_with(&format!("removed alice (uid {first})")),
        "{said}"
    );
    assert_eq!(users(&[]).1.lines().count(), 1);
    let mut bob = server.client(Some("bob"));
    assert_eq!(bob.initialize().status, 200);
    assert_eq!(bob.run("id -u").lines().next(), Some(&*first.to_string()));
}

/// As root with per-user paths, a fixed parent no user's uid could enter refuses
/// start-up, naming it.
#[test]
fn as_root_a_parent_no_user_can_enter_refuses_start_up() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid per user needs a root server");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let closed = dir.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let out = binary()
        .args(["--http", "127.0.0.1:0", "--workdir"])
        .arg(closed.join("ws/{user}"))
        .arg("--state-dir")
        .arg(dir.path().join("state/{user}"))
        .env("FORGE_BASH_HTTP_TOKEN", TOKEN)
        .env("FORGE_BASH_USER_UIDS_FILE", dir.path().join("uids"))
        .env("FORGE_BASH_USER_UIDS", crate::support::uid_range())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named = format!("{}: uid", closed.display());
    assert!(
        stderr.contains(&named) && stderr.contains("cannot enter it"),
        "{stderr}"
    );
}

/// Connections need no token to open: 4,200 idle ones, from 70 loopback addresses,
/// must not delay a user. Strangers are bounded apart from the trusted connections,
/// per peer and in all, and the server holds few of them.
#[test]
fn idle_strangers_cannot_starve_an_authenticated_client() {
    const IDLE: usize = 4200;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit for getrlimit and setrlimit, of this test process.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    if limit.rlim_cur < (IDLE as u64) + 1000 {
        eprintln!(
            "skipped: {IDLE} connections need more open files than {}",
            limit.rlim_cur
        );
        return;
    }
    let server = HttpServer::start(&[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let idle: Vec<tokio::net::TcpStream> = runtime.block_on(async {
        let mut idle = Vec::with_capacity(IDLE);
        for n in 0..IDLE {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            let source = std::net::Ipv4Addr::new(127, 0, 1, (n / 60 + 1) as u8);
            socket.bind((source, 0).into()).unwrap();
            idle.push(socket.connect(server.addr).await.unwrap());
        }
        idle
    });
    let mut client = server.client(None);
    let started = Instant::now();
    let reply = client.initialize();
    let took = started.elapsed();
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(took < Duration::from_secs(1), "initialize took {took:?}");
    assert!(client.run("echo served").starts_with("served\n"));
    eprintln!("initialize with {IDLE} idle connections: {took:?}");
    // The server holds a bounded number of them, not 4,200 (where its descriptors can
    // be counted: a server that is not root is not dumpable, so only root can).
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", server.pid())) {
        let open = fds.count();
        assert!(open < 1024 + 200, "the server holds {open} descriptors");
        eprintln!("the server holds {open} descriptors");
    }
    drop(idle);
}
