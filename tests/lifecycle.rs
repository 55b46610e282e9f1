use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{
    Groups, Options, Server, alive, eventually, read_pid, server_with_background_job, text,
};

#[test]
fn cancellation_kills_the_group_logs_and_serves_on() {
    let mut server = Server::start(Options::default());
    server.initialize();
    let mut groups = Groups::default();
    let id = server.start_call("echo $$ > pgid; bash -c 'echo $$ > inner; sleep 600' & wait");
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.0.push(pgid);
    let inner = read_pid(&server.workdir.join("inner"));
    assert!(alive(inner));
    let cancelled_at = Instant::now();
    server.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "user stopped the response"}
    }));
    assert!(eventually(Duration::from_secs(5), || !alive(inner) && !alive(pgid)));
    let gone_after = cancelled_at.elapsed();
    assert!(
        gone_after < Duration::from_secs(1),
        "group gone only after {gone_after:?}"
    );
    assert!(eventually(Duration::from_secs(5), || server
        .audit_rows()
        .len()
        == 1));
    assert_eq!(server.audit_rows()[0][2], "130");
    assert!(server.run("echo next").starts_with("next\n"));
    // No response is sent for the cancelled request.
    assert!(server.drain_buffered().iter().all(|m| m["id"] != json!(id)));
}

fn shutdown_by(signal: libc::c_int) {
    // An answered call's background job: it ends with the server too.
    let (mut server, mut groups, background) = server_with_background_job(false);
    server.initialize();
    let mut ids = Vec::new();
    for name in ["a", "b"] {
        ids.push(server.start_call(&format!(
            "echo $$ > {name}; bash -c 'echo $$ > {name}-inner; sleep 600' & wait"
        )));
    }
    let pgids = [
        read_pid(&server.workdir.join("a")),
        read_pid(&server.workdir.join("b")),
    ];
    groups.0.extend(pgids);
    let inners = [
        read_pid(&server.workdir.join("a-inner")),
        read_pid(&server.workdir.join("b-inner")),
    ];
    let started = Instant::now();
    // SAFETY: a plain syscall to the server process this test spawned.
    unsafe { libc::kill(server.pid() as libc::pid_t, signal) };
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("server exited");
    let took = started.elapsed();
    assert!(status.success(), "{status:?}; stderr:\n{}", server.stderr());
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    for pid in pgids.into_iter().chain(inners).chain([background]) {
        assert!(
            eventually(Duration::from_secs(1), || !alive(pid)),
            "{pid} survived"
        );
    }
    for id in ids {
        let answer = text(&server.response(id));
        assert!(
            answer.ends_with("ms]") && answer.contains("[exit:143 |"),
            "{answer}"
        );
    }
    let rows = server.audit_rows();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows[1..].iter().all(|r| r[2] == "143"), "{rows:?}");
}

#[test]
fn sigterm_stops_everything_and_exits_zero() {
    shutdown_by(libc::SIGTERM);
}

#[test]
fn sigint_stops_everything_and_exits_zero() {
    shutdown_by(libc::SIGINT);
}

#[test]
fn sighup_stops_everything_and_exits_zero() {
    shutdown_by(libc::SIGHUP);
}

#[test]
fn sigquit_stops_everything_and_exits_zero() {
    shutdown_by(libc::SIGQUIT);
}

#[test]
fn end_of_input_ends_background_jobs_unless_they_are_kept() {
    for keep in [false, true] {
        let (mut server, _groups, background) = server_with_background_job(keep);
        server.close_stdin();
        assert!(server.wait_exit(Duration::from_secs(10)).is_some());
        let gone = eventually(Duration::from_secs(2), || !alive(background));
        assert_eq!(gone, !keep, "keep-background {keep}");
    }
}

#[test]
fn eof_drains_instead_of_killing() {
    let mut server = Server::start(Options::default());
    let id = server.start_call("sleep 2; echo drained");
    server.close_stdin();
    assert!(text(&server.response(id)).starts_with("drained\n"));
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("exit after drain");
    assert!(status.success());
}

fn progress_call(server: &mut Server, command: &str, token: &str) -> u64 {
    server.request(
        "tools/call",
        json!({"name": "run", "arguments": {"command": command}, "_meta": {"progressToken": token}}),
    )
}

#[test]
fn progress_notifications_while_running() {
    let mut server = Options::default()
        .env("FORGE_BASH_PROGRESS_INTERVAL_MS", "200")
        .start();
    server.initialize();
    let id = progress_call(&mut server, "sleep 1.5; echo finished", "tok-1");
    let first = server.wait_for("progress", |m| m["method"] == "notifications/progress");
    let second = server.wait_for("progress", |m| m["method"] == "notifications/progress");
    assert_eq!(first["params"]["progressToken"], "tok-1");
    let p1 = first["params"]["progress"].as_f64().unwrap();
    let p2 = second["params"]["progress"].as_f64().unwrap();
    assert!(p1 >= 0.15 && p2 > p1, "progress {p1} then {p2}");
    assert!(
        first["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("running for ")
    );
    let started = Instant::now();
    assert!(text(&server.response(id)).starts_with("finished\n"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The ticker stops with the call: nothing arrives after the result.
    server.drain_buffered();
    std::thread::sleep(Duration::from_millis(600));
    let late: Vec<_> = server
        .drain_buffered()
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(late.is_empty(), "{late:?}");
}

#[test]
fn progress_strictly_increases_even_after_the_server_was_stopped() {
    let mut server = Options::default()
        .env("FORGE_BASH_PROGRESS_INTERVAL_MS", "200")
        .start();
    server.initialize();
    let id = progress_call(&mut server, "sleep 3; echo finished", "tok-stop");
    let first = server.wait_for("progress", |m| m["method"] == "notifications/progress");
    let pid = server.pid() as libc::pid_t;
    // SAFETY: plain syscalls to the server process this test spawned.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(text(&server.response(id)).starts_with("finished\n"));
    let values: Vec<f64> = std::iter::once(first)
        .chain(server.drain_buffered())
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(values.len() >= 3, "{values:?}");
    assert!(
        values.windows(2).all(|w| w[1] > w[0]),
        "progress must strictly increase: {values:?}"
    );
}

#[test]
fn progress_never_delays_the_result_when_stdin_closes() {
    let mut server = Options::default()
        .env("FORGE_BASH_PROGRESS_INTERVAL_MS", "100")
        .start();
    server.initialize();
    let id = progress_call(&mut server, "sleep 1; echo through", "tok-2");
    server.wait_for("progress", |m| m["method"] == "notifications/progress");
    server.close_stdin();
    let started = Instant::now();
    assert!(text(&server.response(id)).starts_with("through\n"));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        server
            .wait_exit(Duration::from_secs(5))
            .expect("exit")
            .success()
    );
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

fn thread_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

#[test]
fn no_fd_or_thread_leaks() {
    let mut server = Server::start(Options::default());
    server.initialize();
    // Warm up: the runtime's threads exist once a few calls have run.
    for _ in 0..20 {
        server.run("echo warm");
    }
    let (fds, threads) = (fd_count(server.pid()), thread_count(server.pid()));
    for i in 0..1000 {
        let answer = server.run(&format!("echo {i}"));
        assert!(answer.starts_with(&format!("{i}\n")));
    }
    for _ in 0..10 {
        let ids: Vec<u64> = (0..20)
            .map(|i| server.start_call(&format!("echo burst {i} >&2; exit 1")))
            .collect();
        for id in ids {
            server.response(id);
        }
    }
    let pid = server.pid();
    assert!(
        eventually(Duration::from_secs(15), || fd_count(pid) <= fds),
        "open fds grew from {fds} to {}",
        fd_count(pid)
    );
    assert!(
        eventually(Duration::from_secs(15), || thread_count(pid) <= threads),
        "threads grew from {threads} to {}",
        thread_count(pid)
    );
}

/// The client closes its end of the server's stdout while `sleep 100` runs (under a
/// 200 s timeout): the call is cancelled within seconds, and the server exits once
/// stdin ends. With `stdin_first`, stdin ends before stdout closes.
fn client_vanishes(stdin_first: bool) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    /// Kills the server this test started if the test fails before it exits.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let state = dir.path().join("state");
    let mut server = Reaped(
        Command::new(crate::support::BIN)
            .arg("--workdir")
            .arg(&work)
            .arg("--state-dir")
            .arg(&state)
            .args(["--timeout-secs", "200"])
            .env("RUST_LOG", "forge_bash=debug,warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
            .spawn()
            .unwrap(),
    );
    let child = &mut server.0;
    let stderr = || std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    let mut groups = Groups::default();
    let mut stdin = Some(child.stdin.take().unwrap());
    let command = "echo $$ > pgid; sleep 100 & echo $! > sleep; wait";
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": command}}});
    writeln!(stdin.as_mut().unwrap(), "{call}").unwrap();
    let pgid = read_pid(&work.join("pgid"));
    groups.0.push(pgid);
    let sleep = read_pid(&work.join("sleep"));
    assert!(alive(sleep));
    if stdin_first {
        stdin = None;
        // The server waits for the call to answer it.
        std::thread::sleep(Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_none(), "{}", stderr());
    }
    // The client stops reading; nothing is written to stdout until the call ends.
    drop(child.stdout.take());
    assert!(
        eventually(Duration::from_secs(10), || crate::support::group_members(
            pgid
        )
        .is_empty()),
        "still running: {:?}; stderr:\n{}",
        crate::support::group_members(pgid),
        stderr()
    );
    assert!(!alive(sleep));
    let cancelled = || {
        crate::support::audit_rows(&state)
            .iter()
            .any(|row| row[1] == command && row[2] == "130")
    };
    assert!(
        eventually(Duration::from_secs(10), cancelled),
        "{:?}",
        crate::support::audit_rows(&state)
    );
    if stdin.is_some() {
        // Still reading input (and not killed by SIGPIPE) until stdin ends.
        assert!(child.try_wait().unwrap().is_none(), "{}", stderr());
        drop(stdin);
    }
    let ended = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            ended.elapsed() < Duration::from_secs(10),
            "no exit; stderr:\n{}",
            stderr()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}; stderr:\n{}", stderr());
    assert_eq!(crate::support::audit_rows(&state).len(), 1);
}

#[test]
fn a_client_that_closes_stdout_gets_its_calls_cancelled_and_the_server_exits_at_eof() {
    client_vanishes(false);
}

#[test]
fn a_client_that_closes_stdout_after_stdin_gets_its_calls_cancelled() {
    client_vanishes(true);
}
