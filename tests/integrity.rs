//! Nothing a command does reaches past its call: the server's own files (with and
//! without the sandbox) and device nodes.

use std::os::unix::fs::symlink;
use std::path::Path;

use std::time::Duration;

use crate::support::{Options, Server, eventually, mask_ms};

fn today_log(state: &Path) -> std::path::PathBuf {
    forge_bash::audit::path(state, chrono::Utc::now())
}

#[test]
fn a_planted_symlink_never_redirects_the_audit_log_or_an_overflow_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let victim = dir.path().join("bashrc");
    std::fs::write(&victim, "# start-up file\n").unwrap();
    let mut server = Options::default().state(&state).start();
    // What a command could do to a state dir it may write: plant links to a victim.
    symlink(&victim, today_log(&state)).unwrap();
    symlink(&victim, state.join("cmd-1.txt")).unwrap();
    // No row can be written: the call is refused, not run unrecorded.
    let answer = server.run(": ; echo PWNED #");
    assert!(
        answer.starts_with("ERROR: Execution failed: the audit log cannot be written (")
            && answer.contains("symlink")
            && answer.contains("the command was not run"),
        "{answer}"
    );
    std::fs::remove_file(today_log(&state)).unwrap();
    let answer = server.run("seq 1 1000");
    let cmd2 = state.join("cmd-2.txt").display().to_string();
    assert!(answer.contains(&cmd2), "{answer}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# start-up file\n"
    );
    assert_eq!(std::fs::read(state.join("cmd-2.txt")).unwrap().len(), 3_893);
    // The refused call is reported with its row, so nothing is lost; the server
    // serves on.
    assert!(crate::support::eventually(crate::support::PATIENCE, || {
        server.stderr().matches("audit row not written").count() >= 1
    }));
    let stderr = server.stderr();
    assert!(stderr.contains("PWNED"), "{stderr}");
    // A hard link is refused too (it would let appends reach the other name).
    std::fs::remove_file(today_log(&state)).unwrap();
    std::fs::hard_link(&victim, today_log(&state)).unwrap();
    let answer = server.run("echo again");
    assert!(answer.contains("more than one link"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# start-up file\n"
    );
}

#[test]
fn swapping_the_state_dir_for_a_symlink_after_start_up_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut server = Options::default().state(&state).start();
    assert!(server.run("echo first").starts_with("first\n"));
    let moved = dir.path().join("moved");
    std::fs::rename(&state, &moved).unwrap();
    symlink(&elsewhere, &state).unwrap();
    let answer = server.run("seq 1 1000");
    assert!(answer.contains("Output truncated"), "{answer}");
    assert!(server.run("echo last").starts_with("last\n"));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(moved.join("cmd-1.txt").is_file());
    let rows = crate::support::audit_rows(&moved);
    let commands: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(commands, ["echo first", "seq 1 1000", "echo last"]);
}

#[test]
fn a_symlinked_state_dir_is_refused_at_start_up_and_calls_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let link = dir.path().join("state");
    symlink(&target, &link).unwrap();
    let mut server = Options::default().state(&link).start();
    // Nothing runs unaudited: the call is refused, and says why.
    let answer = server.run("echo hi > ran");
    assert!(
        answer.contains("the audit log cannot be written (it is a symlink"),
        "{answer}"
    );
    assert!(!server.workdir.join("ran").exists());
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    // The log is read on a thread of the test's own: it may lag the answer.
    assert!(
        eventually(Duration::from_secs(5), || server
            .stderr()
            .contains("cannot open the state dir")),
        "{}",
        server.stderr()
    );
}

#[test]
fn sandboxed_commands_read_the_state_dir_but_cannot_change_it() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let mut server = Options::default().arg("--sandbox").start();
    let answer = server.run("seq 1 1000");
    let cmd1 = server.state.join("cmd-1.txt");
    assert!(answer.contains(&cmd1.display().to_string()), "{answer}");
    let log = today_log(&server.state);
    let before = std::fs::read_to_string(&log).unwrap();
    let answer = server.run(&format!(
        "head -2 {} && grep -c . {}",
        cmd1.display(),
        log.display()
    ));
    assert!(answer.starts_with("1\n2\n1\n"), "{answer}");

    let s = server.state.display().to_string();
    let l = log.display().to_string();
    let c = cmd1.display().to_string();
    for attack in [
        format!("echo forged >> {l}"),
        format!(": > {c}"),
        format!("mv {l} {s}/old.tsv"),
        format!("unlink {c}"),
        format!("ln -sf /etc/passwd {s}/audit-2099-01-01.tsv"),
        format!("ln {c} {s}/tmp/hard"),
        format!("touch {s}/cmd-99.txt"),
        format!("mv {s}/tmp {s}/gone"),
        format!("mkdir {s}/new"),
    ] {
        let answer = server.run(&attack);
        assert!(!answer.contains("[exit:0 "), "{attack}: {answer}");
        assert!(
            answer.contains("Permission denied")
                || answer.contains("Operation not permitted")
                || answer.contains("Invalid cross-device link"),
            "{attack}: {answer}"
        );
    }
    let after = std::fs::read_to_string(&log).unwrap();
    assert!(after.starts_with(&before), "the log was rewritten");
    assert_eq!(std::fs::read(&cmd1).unwrap().len(), 3_893);
    let names: Vec<String> = std::fs::read_dir(&server.state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n == "cmd-99.txt" || n == "new" || n == "gone")
    );
}

#[test]
fn sandboxed_commands_cannot_make_device_nodes() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let extra = tempfile::tempdir().unwrap();
    let extra = extra.path().display().to_string();
    let mut server = Options::default()
        .arg("--sandbox")
        .arg("--writable")
        .arg(&extra)
        .start();
    for place in [
        "n",
        "\"$TMPDIR/n\"",
        &format!("{extra}/n"),
        "/dev/shm/forge-bash-n",
    ] {
        for kind in ["c 1 11", "b 7 0"] {
            let command = format!("mknod {place} {kind}");
            let answer = server.run(&command);
            assert!(!answer.contains("[exit:0 "), "{command}: {answer}");
            assert!(
                answer.contains("Permission denied") || answer.contains("Operation not permitted"),
                "{command}: {answer}"
            );
        }
    }
    // FIFOs are ordinary work and stay allowed.
    assert!(server.run("mkfifo f && echo made").starts_with("made\n"));
}

#[test]
fn the_sandbox_refuses_a_state_dir_that_commands_could_write() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let state = work.join(".forge-bash");
    std::fs::create_dir_all(&state).unwrap();
    let inside_workdir = Options::default().workdir(&work).state(&state);
    let tmp = dir.path().canonicalize().unwrap();
    let root = tmp.ancestors().nth(1).unwrap().display().to_string();
    let under_writable = Options::default()
        .state(&tmp.join("state"))
        .arg("--writable")
        .arg(root);
    for options in [inside_workdir, under_writable] {
        let mut server: Server = options.arg("--sandbox").start();
        let status = server.wait_exit(crate::support::PATIENCE);
        assert_eq!(status.and_then(|s| s.code()), Some(1));
        let refused = || server.stderr().contains("where commands may write");
        assert!(
            crate::support::eventually(crate::support::PATIENCE, refused),
            "{}",
            server.stderr()
        );
    }
}

/// What a command of `server` can do to the server through /proc: one line each.
fn reach_into_server(server: &mut Server) -> String {
    let answer = server.run(
        "for what in environ maps; do cat /proc/$PPID/$what > /dev/null 2>&1 \
           && echo \"$what: read\" || echo \"$what: denied\"; done; \
         (exec 3< /proc/$PPID/mem) 2>/dev/null && echo 'mem: opened' || echo 'mem: denied'; \
         (echo '{\"jsonrpc\":\"2.0\",\"id\":666,\"result\":{}}' > /proc/$PPID/fd/1) 2>/dev/null \
           && echo 'stdout: written' || echo 'stdout: denied'; \
         (exec 3< /proc/$PPID/fd/0) 2>/dev/null && echo 'stdin: opened' || echo 'stdin: denied'",
    );
    server.assert_stdout_is_protocol();
    // Nothing the command wrote reached the client as a message.
    let lines = server.raw_lines.lock().unwrap();
    assert!(lines.iter().all(|l| !l.contains("666")), "{lines:?}");
    drop(lines);
    answer
}

#[test]
fn a_non_root_server_keeps_its_pipes_environment_and_memory_from_its_commands() {
    let Some(uid) = crate::support::unprivileged() else {
        return;
    };
    let all_denied = "environ: denied\nmaps: denied\nmem: denied\nstdout: denied\nstdin: denied\n";
    let mut server = Options::default().user(uid).start();
    assert!(server.run("id -u").starts_with(&format!("{uid}\n")));
    assert_eq!(
        mask_ms(&reach_into_server(&mut server)),
        format!("{all_denied}\n[exit:0 | Xms]")
    );
    if crate::support::landlock_here(1) {
        let mut sandboxed = Options::default().user(uid).arg("--sandbox").start();
        let answer = reach_into_server(&mut sandboxed);
        assert_eq!(mask_ms(&answer), format!("{all_denied}\n[exit:0 | Xms]"));
    }
}

#[test]
fn a_root_server_keeps_its_pipes_and_memory_from_sandboxed_commands() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: this is the root server's case");
        return;
    }
    if !crate::support::landlock_here(1) {
        return;
    }
    let mut server = Options::default().arg("--sandbox").start();
    let answer = reach_into_server(&mut server);
    // Root's capabilities pass the ownership checks; Landlock refuses opening another
    // domain's memory and descriptors. It lets `environ` and `maps` be read (kernel
    // 6.18): the environment is what every command inherits from the server anyway.
    for line in ["mem: denied", "stdout: denied", "stdin: denied"] {
        assert!(answer.contains(line), "{line}: {answer}");
    }
}

/// The line of an answer whose row a file size limit kept from the log.
const UNAUDITED: &str = "WARNING: this call's audit row could not be written (File too large \
                         (os error 27)); the server's log holds it.";

/// What a command of the server's own uid (or root), unsandboxed, may still do to the
/// server's limits does not end it: after `prlimit --pid $PPID --fsize=0:0` the next
/// calls are answered and their rows and overflow files written (a root server gives
/// itself its limits back; one that cannot still answers, the rows on stderr). As
/// root and as an unprivileged user.
#[test]
fn the_server_outlives_a_file_size_limit_set_on_it() {
    let mut users = vec![None];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        users.extend(crate::support::unprivileged().map(Some));
    }
    for user in users {
        let mut options = Options::default();
        if let Some(uid) = user {
            options = options.user(uid);
        }
        let mut server = options.start();
        let answer = server.run("prlimit --pid $PPID --fsize=0:0 && echo set");
        assert!(answer.starts_with("set\n"), "{user:?}: {answer}");
        let after: Vec<String> = (0..2)
            .map(|n| mask_ms(&server.run(&format!("echo after-{n}"))))
            .collect();
        let answer = server.run("seq 1 3000");
        assert!(answer.contains("3000"), "{user:?}: {answer}");
        let commands: Vec<String> = server
            .audit_rows()
            .into_iter()
            .map(|r| r[1].clone())
            .collect();
        let stderr = server.stderr();
        let said = eventually(Duration::from_secs(5), || {
            server
                .stderr()
                .contains("the server's own limit was lowered")
        });
        assert!(said, "{}", server.stderr());
        let restored = stderr.contains("restored=true");
        for (n, answer) in after.iter().enumerate() {
            // Where the limit stays, each answer says its row is not in the log.
            let warning = match restored {
                true => String::new(),
                false => format!("\n{UNAUDITED}"),
            };
            let expected = format!("after-{n}\n{warning}\n[exit:0 | Xms]");
            assert_eq!(answer, &expected, "{user:?}");
        }
        if restored {
            // Given back before the next call (root with CAP_SYS_RESOURCE): only the
            // first call's row missed the log, and went to stderr.
            assert_eq!(commands.len(), 3, "{commands:?} {stderr}");
            assert!(answer.contains("written to "), "{answer}");
        } else {
            let on_stderr = eventually(Duration::from_secs(5), || {
                server.stderr().contains("audit row not written")
                    && server.stderr().contains("echo after-1")
            });
            assert!(on_stderr, "{user:?}: {stderr}");
        }
    }
}
