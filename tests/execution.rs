use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::support::{
    Groups, Options, Server, alive, eventually, is_error, mask_ms, read_pid, text,
};

#[test]
fn runs_in_the_workdir_with_stdin_at_dev_null() {
    let mut server = Server::start(Options::default());
    let pwd = server.run("pwd");
    assert_eq!(
        mask_ms(&pwd),
        format!("{}\n\n[exit:0 | Xms]", server.workdir.display())
    );
    let started = Instant::now();
    assert_eq!(mask_ms(&server.run("cat")), "\n[exit:0 | Xms]");
    assert_eq!(
        mask_ms(&server.run("read x; echo \"got:$x:$?\"")),
        "got::1\n\n[exit:0 | Xms]"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The server still reads the protocol afterwards: stdin was not consumed.
    assert!(server.run("echo after").starts_with("after\n"));
}

#[test]
fn bash_is_the_shell() {
    let mut server = Server::start(Options::default());
    assert!(
        server
            .run("echo $BASH_VERSION")
            .chars()
            .next()
            .unwrap()
            .is_ascii_digit()
    );
    assert!(
        server
            .run("ls /nonexistent | cat; echo ${PIPESTATUS[0]}")
            .starts_with("2\n")
    );
}

#[test]
fn timeout_kills_the_whole_group() {
    let mut server = Options::default().timeout(1).start();
    let mut groups = Groups::default();
    let started = Instant::now();
    let id = server.start_call("echo $$ > pgid; bash -c 'echo $$ > inner; sleep 600' & echo $! > child; echo partial; wait");
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.push(pgid);
    let inner = read_pid(&server.workdir.join("inner"));
    let response = server.response(id);
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(5),
        "timeout answered after {elapsed:?}"
    );
    assert!(is_error(&response));
    assert_eq!(
        mask_ms(&text(&response)),
        "ERROR: Command timed out after 1 s.\npartial\n\n[exit:124 | Xms]"
    );
    // The grandchild `bash -c 'sleep 600'` and its sleep are gone, not only the shell.
    assert!(eventually(Duration::from_secs(2), || !alive(inner) && !alive(pgid)));
    let sleeps = descendants_running("sleep 600", pgid);
    assert!(sleeps.is_empty(), "still alive: {sleeps:?}");
    assert_eq!(server.audit_rows().last().unwrap()[2], "124");
}

/// Processes of group `pgid` whose command line contains `needle`.
fn descendants_running(needle: &str, pgid: i32) -> Vec<i32> {
    crate::support::group_members(pgid)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(needle)
        })
        .collect()
}

#[test]
fn background_children_do_not_hold_the_call_and_survive_it() {
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    let started = Instant::now();
    let answer = server.run(
        "echo $$ > pgid; sleep 30 & echo $! > bg; (sleep 1; echo late; touch survived) & echo started",
    );
    let elapsed = started.elapsed();
    groups.push(read_pid(&server.workdir.join("pgid")));
    assert!(answer.starts_with("started\n"), "{answer}");
    assert!(
        elapsed < Duration::from_secs(2),
        "answered after {elapsed:?}"
    );
    let bg = read_pid(&server.workdir.join("bg"));
    assert!(alive(bg), "the background sleep was killed");
    // The subshell writes to the pipe after the answer; it must not die of SIGPIPE.
    let survived = server.workdir.join("survived");
    assert!(
        eventually(Duration::from_secs(5), || survived.exists()),
        "killed by SIGPIPE"
    );
    assert!(alive(bg));
}

#[test]
fn exit_codes() {
    let mut server = Server::start(Options::default());
    assert_eq!(mask_ms(&server.run("exit 3")), "\n[exit:3 | Xms]");
    let killed = server.call("kill -9 $$");
    assert_eq!(mask_ms(&text(&killed)), "\n[exit:137 | Xms]");
    assert!(
        !is_error(&killed),
        "a command that ran to its end is not a tool error"
    );
    assert_eq!(mask_ms(&server.run("false")), "\n[exit:1 | Xms]");
}

#[test]
fn unspawnable_shell_gives_the_execution_failure_text() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bash");
    std::fs::write(&fake, b"\x7fELF garbage that cannot be executed").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut server = Options::default()
        .env("PATH", dir.path().display().to_string())
        .start();
    let response = server.call("echo hi");
    assert!(is_error(&response));
    assert_eq!(
        mask_ms(&text(&response)),
        format!(
            "ERROR: Execution failed: cannot start {}: Exec format error (os error 8)\n[exit:1 | Xms]",
            fake.display()
        )
    );
    assert_eq!(server.audit_rows()[0][2], "1");
}

#[test]
fn output_cap_stops_the_command_and_keeps_the_head() {
    let mut server = Options::default()
        .arg("--max-output-bytes")
        .arg("1048576")
        .start();
    let mut groups = Groups::default();
    let started = Instant::now();
    let response = server.call("echo $$ > pgid; yes");
    groups.push(read_pid(&server.workdir.join("pgid")));
    assert!(started.elapsed() < Duration::from_secs(10));
    let answer = text(&response);
    assert!(
        answer.starts_with("y\n[previous line repeated "),
        "{}",
        &answer[..40]
    );
    let overflow = server.state.join("cmd-1.txt");
    assert_eq!(
        mask_ms(&answer[answer.find("\nOutput truncated").unwrap()..]),
        format!(
            "\nOutput truncated. Full output written to {}\n\
             Output limit of 1 MB reached; the command was stopped.\n[exit:137 | Xms]",
            overflow.display()
        )
    );
    assert!(is_error(&response));
    // The overflow file holds exactly the captured head: the cap.
    assert_eq!(std::fs::metadata(&overflow).unwrap().len(), 1_048_576);
    let pgid = read_pid(&server.workdir.join("pgid"));
    assert!(eventually(Duration::from_secs(2), || !alive(pgid)));
}

#[test]
fn memory_stays_bounded_at_the_default_cap() {
    let mut server = Server::start(Options::default());
    let answer = server.run("yes 'forty bytes of text, again and again...'");
    assert!(answer.contains("Output limit of 50 MB reached; the command was stopped."));
    let overflow = server.state.join("cmd-1.txt");
    assert_eq!(std::fs::metadata(overflow).unwrap().len(), 50 * 1024 * 1024);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(
        peak_kb < 24 * 1024,
        "server peak RSS {peak_kb} kB after 50 MB of output"
    );
}

/// A command sees only stdin, stdout and stderr of the descriptors the server has, also
/// those the server inherited without close-on-exec, and the open-files limit the
/// server started with, not the one it raised its own to.
#[test]
fn a_command_gets_three_descriptors_and_the_servers_first_open_files_limit() {
    let mut server = Options::default()
        .through(&[
            "prlimit",
            "--nofile=1024:4096",
            "--",
            "bash",
            "-c",
            "exec 10</dev/null 251</dev/null; exec \"$0\" \"$@\"",
        ])
        .start();
    server.initialize();
    let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid()));
    if let Ok(fds) = fds {
        let names: Vec<String> = fds
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n == "10") && names.iter().any(|n| n == "251"),
            "the server did not inherit fds 10 and 251: {names:?}"
        );
    }
    // ls lists the shell's descriptors, not its own.
    // What a process of the command inherited: bash's own pipeline pipes are not.
    let answer = server.run(
        "sleep 9 & sleep 0.2; ls /proc/$!/fd | tr '\\n' ' '; kill $!; echo; ulimit -Sn; ulimit -Hn",
    );
    assert_eq!(
        crate::support::mask_ms(&answer),
        "0 1 2 \n1024\n4096\n\n[exit:0 | Xms]"
    );
}

/// Each line that looks like an error costs the server CPU to read; a flood of them
/// shares the server with other calls: a call made while one is read is answered
/// before it.
#[test]
fn another_call_is_answered_while_a_flood_of_error_lines_is_read() {
    let mut server = Server::start(Options::default());
    let flood = server.start_call(
        "touch started; yes 'src/m.c:12:5: error: unknown type name foo' | head -c 1500000",
    );
    let started = server.workdir.join("started");
    assert!(eventually(crate::support::PATIENCE, || started.exists()));
    let quick = server.start_call("true");
    let first = server.wait_for("an answer", |m| m.get("result").is_some());
    assert_eq!(first["id"], quick, "the flood was answered first: {first}");
    assert!(text(&first).contains("[exit:0 |"), "{first}");
    let flood = server.response(flood);
    assert!(text(&flood).contains("[exit:0 |"), "{flood}");
}
