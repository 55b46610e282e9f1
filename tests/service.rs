//! The HTTP service as an orchestrator sees it, through the real binary: the probes
//! (`/healthz`, `/readyz`) without a token, `/metrics` with it (or on `--metrics`
//! without), counters that move with calls of each outcome, and the drain on SIGTERM.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{Client, HttpServer, Reply, TOKEN, get, request_at};
use crate::support::{PATIENCE, alive, eventually, read_pid, text};

const PER_USER: [&str; 4] = [
    "--workdir",
    "{root}/ws/{user}",
    "--state-dir",
    "{root}/state/{user}",
];

fn with_token() -> String {
    format!("Bearer {TOKEN}")
}

/// `/metrics` of `server`, with the token.
fn scrape(server: &HttpServer) -> String {
    let bearer = with_token();
    let reply = get(server.addr, "/metrics", &[("Authorization", &bearer)]);
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.body
}

/// The value of the sample `name` (with its labels, as written) in `text`.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

fn calls(text: &str, outcome: &str) -> f64 {
    sample(
        text,
        &format!("forge_bash_calls_total{{outcome=\"{outcome}\"}}"),
    )
}

/// Starts `command` in `client`'s session on a thread of its own: its answer.
fn call_in_thread(client: &Client, id: u64, command: &str) -> std::thread::JoinHandle<Value> {
    let caller = client.clone();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "run", "arguments": {"command": command}}})
    .to_string();
    std::thread::spawn(move || {
        let reply = caller.post(&body);
        reply
            .messages()
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or(Value::Null)
    })
}

#[test]
fn probes_need_no_token_and_metrics_need_it() {
    let server = HttpServer::start(&[&PER_USER[..], &["--http-max-sessions", "1"]].concat());
    let health = get(server.addr, "/healthz", &[]);
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    assert_eq!(get(server.addr, "/readyz", &[]).status, 200);
    // A probe is read, never written.
    let posted = request_at(server.addr, "POST", "/healthz", &[], b"");
    assert_eq!(posted.status, 405, "{posted:?}");
    // Metrics tell what users do: the token, as for MCP.
    for authorization in [None, Some("Bearer wrong".to_owned())] {
        let headers: Vec<(&str, &str)> = authorization
            .iter()
            .map(|a| ("Authorization", a.as_str()))
            .collect();
        let reply = get(server.addr, "/metrics", &headers);
        assert_eq!(reply.status, 401, "{reply:?}");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        assert!(!reply.body.contains("forge_bash"), "{reply:?}");
    }
    let bearer = with_token();
    let reply = get(server.addr, "/metrics", &[("Authorization", &bearer)]);
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    // Other paths are still MCP's 404.
    assert_eq!(get(server.addr, "/metricsx", &[]).status, 404);
    // At --http-max-sessions, not ready; ready again once a session ends.
    let mut alice = server.client(Some("alice"));
    assert_eq!(alice.initialize().status, 200);
    let full = get(server.addr, "/readyz", &[]);
    assert_eq!(full.status, 503, "{full:?}");
    assert!(full.body.contains("--http-max-sessions"), "{full:?}");
    assert_eq!(get(server.addr, "/healthz", &[]).status, 200);
    assert_eq!(alice.delete().status, 204);
    assert_eq!(get(server.addr, "/readyz", &[]).status, 200);
}

#[test]
fn counters_move_with_calls_of_each_outcome() {
    let args = [
        &PER_USER[..],
        &["--timeout-secs", "3", "--max-memory", "64M"],
    ]
    .concat();
    let server = HttpServer::start(&args);
    let before = scrape(&server);
    let mut alice = server.client(Some("alice"));
    assert_eq!(alice.initialize().status, 200);
    alice.run("true");
    alice.run("echo secret-words; exit 3");
    alice.run("rm -f nothing");
    alice.run("sleep 10");
    // Out of memory where a memory cgroup bounds the user; else RLIMIT_DATA fails it.
    // Four times the limit: reached within the timeout even on a busy machine.
    let oom = alice.run("python3 -c 'a = bytearray(1 << 28)'");
    let oom = if oom.starts_with("ERROR: Out of memory") {
        1.0
    } else {
        assert!(oom.contains("MemoryError"), "{oom}");
        eprintln!("no memory cgroup here: the allocation failed instead: {oom}");
        0.0
    };
    // Cancelled: a call the client gives up on.
    let running = call_in_thread(&alice, 900, "touch started; sleep 30");
    assert!(eventually(PATIENCE, || server
        .path("ws/alice/started")
        .exists()));
    let during = scrape(&server);
    assert_eq!(sample(&during, "forge_bash_commands_running"), 1.0);
    assert_eq!(sample(&during, "forge_bash_sessions"), 1.0);
    assert_eq!(sample(&during, "forge_bash_users_known"), 1.0);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 900}});
    assert_eq!(alice.post(&cancel.to_string()).status, 202);
    let _ = running.join();
    // A background job whose output is kept.
    let answer = alice.run("(sleep 30; echo late) &");
    assert!(answer.contains(".bg.txt"), "{answer}");
    let after = scrape(&server);
    for (outcome, more) in [
        ("ok", 2.0),
        ("failed", 2.0 - oom),
        ("blocked", 1.0),
        ("timeout", 1.0),
        ("cancelled", 1.0),
        ("stopped", 0.0),
        ("out_of_memory", oom),
    ] {
        assert_eq!(
            calls(&after, outcome),
            calls(&before, outcome) + more,
            "{outcome}:\n{after}"
        );
    }
    // Blocked calls ran nothing and are not timed: 6 calls that ran.
    let timed = "forge_bash_call_duration_seconds_count";
    assert_eq!(sample(&after, timed), sample(&before, timed) + 6.0);
    let sum = "forge_bash_call_duration_seconds_sum";
    assert!(
        sample(&after, sum) >= sample(&before, sum) + 3.0,
        "the call stopped by its 3 s timeout:\n{after}"
    );
    assert_eq!(sample(&after, "forge_bash_commands_running"), 0.0);
    assert_eq!(sample(&after, "forge_bash_background_jobs"), 1.0);
    assert!(sample(&after, "process_resident_memory_bytes") > 1e6);
    assert!(sample(&after, "process_open_fds") > 3.0);
    // No user's name, no command, as a label or anywhere.
    for private in ["alice", "secret-words", "sleep"] {
        assert!(!after.contains(private), "{private} in\n{after}");
    }
}

#[test]
fn a_metrics_address_serves_metrics_alone_without_a_token() {
    let server = HttpServer::start(&[&PER_USER[..], &["--metrics", "127.0.0.1:0"]].concat());
    let addr: std::net::SocketAddr = server
        .stderr()
        .split("metrics=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no metrics address: {}", server.stderr()));
    let reply = get(addr, "/metrics", &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("forge_bash_calls_total"), "{reply:?}");
    for path in ["/mcp", "/healthz", "/"] {
        assert_eq!(get(addr, path, &[]).status, 404, "{path}");
    }
    // The service's own address still wants the token.
    assert_eq!(get(server.addr, "/metrics", &[]).status, 401);
    // Over stdio there is nothing to scrape.
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let out = crate::support::binary()
        .args(["--workdir", w, "--state-dir", w, "--metrics", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--metrics is for --http"), "{stderr}");
}

/// A server with `grace` seconds of drain, alice's session, and a call of hers that
/// runs `command` on a thread, started once `started` exists in her workdir.
fn draining_server(grace: &str, command: &str) -> (HttpServer, std::thread::JoinHandle<Value>) {
    let args = [&PER_USER[..], &["--shutdown-grace-secs", grace]].concat();
    let server = HttpServer::start(&args);
    let mut alice = server.client(Some("alice"));
    assert_eq!(alice.initialize().status, 200);
    let call = call_in_thread(&alice, 500, &format!("touch started; {command}"));
    assert!(eventually(PATIENCE, || server
        .path("ws/alice/started")
        .exists()));
    (server, call)
}

fn stop(server: &HttpServer, signal: libc::c_int) {
    // SAFETY: a signal to the server this test started.
    assert_eq!(unsafe { libc::kill(server.pid(), signal) }, 0);
}

fn not_ready(server: &HttpServer) -> Reply {
    let mut reply = None;
    assert!(eventually(PATIENCE, || {
        let got = get(server.addr, "/readyz", &[]);
        let draining = got.status == 503;
        reply = Some(got);
        draining
    }));
    reply.unwrap()
}

#[test]
fn sigterm_drains_running_calls_finish_and_new_sessions_get_503() {
    let (mut server, call) = draining_server("60", "sleep 3; echo finished");
    let mut alice = server.client(Some("alice"));
    assert_eq!(alice.initialize().status, 200);
    // What an answered call left running: stopped with the server, as before.
    alice.run("sleep 600 > /dev/null 2>&1 & echo $! > bg");
    let job = read_pid(&server.path("ws/alice/bg"));
    let signalled = Instant::now();
    stop(&server, libc::SIGTERM);
    let readiness = not_ready(&server);
    assert!(readiness.body.contains("draining"), "{readiness:?}");
    assert_eq!(get(server.addr, "/healthz", &[]).status, 200);
    let mut bob = server.client(Some("bob"));
    let refused = bob.initialize();
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.body.contains("takes no new session"), "{refused:?}");
    assert!(!server.path("ws/bob").exists());
    // The sessions there are still work meanwhile.
    assert!(alice.run("echo still").starts_with("still\n"));
    let answer = call.join().unwrap();
    let answer = text(&answer);
    assert!(
        answer.starts_with("finished\n") && answer.contains("[exit:0 | "),
        "{answer}"
    );
    // Drained: the server stops once no call runs, long before the grace.
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert!(eventually(Duration::from_secs(5), || !alive(job)));
}

#[test]
fn a_call_past_the_grace_is_stopped_as_without_one() {
    let (server, call) = draining_server("1", "sleep 600");
    let signalled = Instant::now();
    stop(&server, libc::SIGTERM);
    let answer = call.join().unwrap();
    let took = signalled.elapsed();
    assert!(
        text(&answer).starts_with("ERROR: Server shutting down; command stopped.\n[exit:143 | "),
        "{answer}"
    );
    assert!(took >= Duration::from_millis(900), "the grace: {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_second_signal_stops_at_once() {
    for second in [libc::SIGTERM, libc::SIGINT] {
        let (server, call) = draining_server("120", "sleep 600");
        stop(&server, libc::SIGTERM);
        not_ready(&server);
        let signalled = Instant::now();
        stop(&server, second);
        let answer = call.join().unwrap();
        assert!(
            text(&answer).starts_with("ERROR: Server shutting down; command stopped.\n"),
            "{answer}"
        );
        let took = signalled.elapsed();
        assert!(took < Duration::from_secs(5), "signal {second}: {took:?}");
    }
}
