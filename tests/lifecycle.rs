use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{
    Groups, Options, PATIENCE, Server, alive, eventually, mask_ms, read_pid,
    server_with_background_job, text,
};

#[test]
fn cancellation_kills_the_group_logs_and_serves_on() {
    let mut server = Server::start(Options::default());
    server.initialize();
    let mut groups = Groups::default();
    let id = server.start_call("echo $$ > pgid; bash -c 'echo $$ > inner; sleep 600' & wait");
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.push(pgid);
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
    let next = server.run("echo next");
    assert!(next.starts_with("next\n"), "{next}");
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
    for pgid in pgids {
        groups.push(pgid);
    }
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
fn progress_messages_carry_the_last_line_as_the_answer_shows_it() {
    let mut server = Options::default()
        .env("FORGE_BASH_PROGRESS_INTERVAL_MS", "150")
        .start();
    server.initialize();
    let command = "sleep 0.6; echo first; sleep 0.8; \
        printf 'step two\\r\\033[32mstep 2 of 3\\033[0m\\n\\n' >&2; sleep 0.8; echo done";
    let id = progress_call(&mut server, command, "tok-line");
    let answer = text(&server.response(id));
    assert!(answer.starts_with("first\ndone\n"), "{answer}");
    let mut messages: Vec<String> = server
        .drain_buffered()
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["message"].as_str().unwrap().to_owned())
        .collect();
    messages.dedup();
    // Before any output, the elapsed time; then each last line, rendered (a tick may
    // come between the last echo and the answer).
    if messages.last().is_some_and(|m| m == "done") {
        messages.pop();
    }
    assert_eq!(
        messages,
        ["running for 0 s", "first", "step 2 of 3"],
        "{messages:?}"
    );
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
    if std::fs::read_dir(format!("/proc/{}/fd", server.pid())).is_err() {
        // A non-root server makes itself non-dumpable: its descriptors are root's to list.
        eprintln!("skipped: the server's descriptors cannot be listed by this user");
        return;
    }
    // Warm up: the runtime's threads exist once a few calls have run, and the few
    // call cgroups kept for later calls once a burst of calls ran side by side.
    for _ in 0..20 {
        server.run("echo warm");
    }
    let ids: Vec<u64> = (0..8).map(|_| server.start_call("sleep 0.5")).collect();
    for id in ids {
        server.response(id);
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
    // What the server keeps for later calls may differ between two quiet moments by
    // what it keeps at most: 4 call cgroups (2 descriptors each) and a spare spawn
    // slot or two (a thread and a descriptor each). A leak grows with the 1,200 calls.
    let pid = server.pid();
    assert!(
        eventually(Duration::from_secs(15), || fd_count(pid) <= fds + 10),
        "open fds grew from {fds} to {}",
        fd_count(pid)
    );
    assert!(
        eventually(Duration::from_secs(15), || thread_count(pid) <= threads + 2),
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
    groups.push(pgid);
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

/// The line before the footer of an answer that left a job running: the process group
/// it names and the file its output goes to.
fn left_running(answer: &str) -> (i32, std::path::PathBuf) {
    let line = answer.lines().rev().nth(1).unwrap_or_default();
    let parsed = line
        .strip_prefix("[still running in the background (process group ")
        .and_then(|rest| rest.split_once("); its output goes to "))
        .and_then(|(pgid, rest)| {
            let (path, stop) = rest.split_once(" — stop it with: kill -- -")?;
            (stop == format!("{pgid}]")).then(|| (pgid.parse().ok(), path.into()))
        });
    match parsed {
        Some((Some(pgid), path)) => (pgid, path),
        _ => panic!("no background line before the footer:\n{answer}"),
    }
}

/// Waits until `file` holds `needle`; its bytes.
fn file_holding(file: &std::path::Path, needle: &str) -> Vec<u8> {
    let holds = || {
        std::fs::read(file)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(
        eventually(Duration::from_secs(10), holds),
        "{} never held {needle:?}: {:?}",
        file.display(),
        std::fs::read_to_string(file)
    );
    std::fs::read(file).unwrap()
}

#[test]
fn a_background_job_keeps_its_output_in_the_file_the_answer_names() {
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    let answer = server.run(
        r"echo $$ > pgid; (sleep 1; echo late; printf '\033[31mred\033[0m\n' >&2) & echo started",
    );
    // Answered without waiting for the job.
    assert!(!answer.contains("late"), "{answer}");
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.push(pgid);
    assert!(answer.starts_with("started\n\n[still running"), "{answer}");
    let (group, file) = left_running(&answer);
    assert_eq!(group, pgid);
    assert_eq!(file, server.state.join("cmd-1.bg.txt"));
    assert!(file.is_absolute() && file.exists());
    // What the job wrote after the answer, raw, stdout and stderr in arrival order.
    file_holding(&file, "red");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"late\n\x1b[31mred\x1b[0m\n",
        "{:?}",
        std::fs::read_to_string(&file)
    );
    // Read in a later call, it is rendered like any output.
    let shown = server.run(&format!("cat {}", file.display()));
    assert_eq!(mask_ms(&shown), "late\nred\n\n[exit:0 | Xms]");

    // The call's row says it left a job running; the next one's does not.
    let rows = server.audit_rows();
    assert_eq!(rows[0][4..], ["background"], "{rows:?}");
    assert_eq!(rows[1].len(), 4, "{rows:?}");
    let audit = |args: &[&str]| {
        let out = crate::support::binary()
            .arg("audit")
            .arg("--state-dir")
            .arg(&server.state)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Vec<serde_json::Value> = audit(&["--json"])
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(json.len(), 2);
    assert_eq!(json[0]["background"], true);
    assert!(json[1].get("background").is_none(), "{}", json[1]);
    let only = audit(&["--background"]);
    assert_eq!(only.lines().count(), 2, "{only}");
    assert!(only.contains("echo late"), "{only}");
}

#[test]
fn a_job_that_redirected_its_output_gets_no_line() {
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    let answer = server.run("echo $$ > pgid; sleep 600 > log 2>&1 & echo $! > job; echo started");
    groups.push(read_pid(&server.workdir.join("pgid")));
    let job = read_pid(&server.workdir.join("job"));
    assert!(alive(job));
    assert_eq!(mask_ms(&answer), "started\n\n[exit:0 | Xms]");
    let files: Vec<_> = std::fs::read_dir(&server.state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".bg.txt"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
    assert_eq!(server.audit_rows()[0].len(), 4);
}

#[test]
fn a_server_in_the_background_logs_the_requests_of_later_calls() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    let answer = server.run(&format!(
        "echo $$ > pgid; python3 -m http.server {port} --bind 127.0.0.1 &"
    ));
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.push(pgid);
    let (group, file) = left_running(&answer);
    assert_eq!(group, pgid);
    // The server takes a moment to listen: wait for it, then fetch.
    let fetched = server.run(&format!(
        "url=http://127.0.0.1:{port}/; \
         for i in $(seq 100); do curl -s -o /dev/null $url && break; sleep 0.1; done; \
         curl -s -o /dev/null -w '%{{http_code}}\\n' $url"
    ));
    assert!(fetched.starts_with("200\n"), "{fetched}");
    let log = file_holding(&file, "\"GET / HTTP/1.1\" 200");
    assert!(String::from_utf8_lossy(&log).contains("127.0.0.1"));
    // A later call stops it with what the line said.
    let stopped = server.run(&format!("kill -- -{pgid}"));
    assert!(stopped.contains("[exit:0 |"), "{stopped}");
    assert!(eventually(Duration::from_secs(5), || {
        crate::support::group_members(pgid).is_empty()
    }));
}

#[test]
fn a_job_past_the_cap_is_stopped_and_its_file_stays_within_it() {
    const CAP: u64 = 1024 * 1024;
    let mut server = Options::default()
        .arg("--max-output-bytes")
        .arg(CAP.to_string())
        .start();
    let mut groups = Groups::default();
    let answer =
        server.run("echo $$ > pgid; (sleep 0.5; echo $BASHPID > yes; exec yes) & echo started");
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.push(pgid);
    let (_, file) = left_running(&answer);
    let yes = read_pid(&server.workdir.join("yes"));
    assert!(
        eventually(Duration::from_secs(10), || !alive(yes)),
        "yes still writing past the cap"
    );
    let end = "\n[forge-bash: output limit of 1048576 bytes reached; every process of the call was stopped]\n";
    let bytes = file_holding(&file, end);
    assert_eq!(bytes.len() as u64, CAP + end.len() as u64 - 1);
    assert!(bytes.starts_with(b"y\ny\n") && bytes.ends_with(end.as_bytes()));
    assert!(crate::support::group_members(pgid).is_empty());
}

#[test]
fn the_server_stopping_ends_the_job_and_its_file_says_so() {
    for (keep, signal) in [
        (false, Some(libc::SIGTERM)),
        (false, None),
        (true, Some(libc::SIGTERM)),
    ] {
        let mut options = Options::default();
        if keep {
            options = options.arg("--keep-background");
        }
        let mut server = options.start();
        let mut groups = Groups::default();
        let answer = server.run(
            "echo $$ > pgid; (echo $BASHPID > job; sleep 0.5; echo first; exec sleep 600) & echo started",
        );
        groups.push(read_pid(&server.workdir.join("pgid")));
        let job = read_pid(&server.workdir.join("job"));
        let (_, file) = left_running(&answer);
        file_holding(&file, "first\n");
        match signal {
            // SAFETY: a plain syscall to the server process this test spawned.
            Some(signal) => unsafe {
                libc::kill(server.pid() as libc::pid_t, signal);
            },
            None => server.close_stdin(),
        }
        let status = server.wait_exit(Duration::from_secs(10)).expect("exit");
        assert!(status.success(), "{status:?}");
        let why = if keep {
            "what the job writes from here on is not kept"
        } else {
            "every process of the call was stopped"
        };
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("first\n[forge-bash: the server stopped; {why}]\n"),
            "{signal:?} keep {keep}"
        );
        let gone = eventually(Duration::from_secs(2), || !alive(job));
        assert_eq!(gone, !keep, "{signal:?} keep {keep}");
    }
}

#[cfg(feature = "http")]
#[test]
fn over_http_a_sessions_jobs_and_files_are_its_users_and_end_with_it() {
    use crate::support::http::HttpServer;
    let per_user = [
        "--workdir",
        "{root}/ws/{user}",
        "--state-dir",
        "{root}/state/{user}",
    ];
    let mut server = HttpServer::start(&per_user);
    let mut groups = Groups::default();
    let mut jobs = Vec::new();
    let mut files = Vec::new();
    let mut clients = Vec::new();
    for user in ["alice", "bob"] {
        let mut client = server.client(Some(user));
        assert_eq!(client.initialize().status, 200);
        let answer = client.run(&format!(
            "echo $$ > pgid; (echo $BASHPID > job; sleep 0.3; echo from {user}; exec sleep 600) & echo started"
        ));
        let workdir = server.path(&format!("ws/{user}"));
        let pgid = read_pid(&workdir.join("pgid"));
        groups.push(pgid);
        jobs.push(read_pid(&workdir.join("job")));
        let (group, file) = left_running(&answer);
        assert_eq!(group, pgid);
        // In the user's own state dir.
        assert_eq!(file, server.path(&format!("state/{user}/cmd-1.bg.txt")));
        file_holding(&file, &format!("from {user}\n"));
        files.push(file);
        clients.push(client);
    }
    // Alice's session ends: her job and its file end with it; bob's go on.
    assert_eq!(clients[0].delete().status, 204);
    assert!(eventually(PATIENCE, || !alive(jobs[0])));
    assert_eq!(
        std::fs::read_to_string(&files[0]).unwrap(),
        "from alice\n[forge-bash: the session ended; every process of the call was stopped]\n"
    );
    assert!(alive(jobs[1]));
    assert_eq!(std::fs::read_to_string(&files[1]).unwrap(), "from bob\n");
    // The server stops: bob's job ends with it.
    // SAFETY: a signal to the server this test started.
    unsafe { libc::kill(server.pid(), libc::SIGTERM) };
    assert!(server.child.wait().unwrap().success());
    assert!(eventually(Duration::from_secs(5), || !alive(jobs[1])));
    assert_eq!(
        std::fs::read_to_string(&files[1]).unwrap(),
        "from bob\n[forge-bash: the server stopped; every process of the call was stopped]\n"
    );
}
