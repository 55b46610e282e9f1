use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Options, Server, audit_rows, eventually, is_error};

#[test]
fn rows_for_every_kind_of_call() {
    let mut server = Options::default().timeout(1).start();
    server.run("echo hello");
    server.run("rm x");
    server.run("sleep 5");
    server.run("exit 7");
    server.run("echo a\u{0}b");
    let file = forge_bash::audit::path(&server.state, chrono::Utc::now());
    assert!(file.exists(), "daily file named by the UTC date");
    let rows = server.audit_rows();
    let summary: Vec<(String, &str)> = rows
        .iter()
        .map(|r| (forge_bash::audit::unescape(&r[1]).unwrap(), r[2].as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("echo hello".to_owned(), "0"),
            ("rm x".to_owned(), "-1"),
            ("sleep 5".to_owned(), "124"),
            ("exit 7".to_owned(), "7"),
            ("echo a\u{0}b".to_owned(), "1")
        ]
    );
    // The NUL byte is escaped in the row itself.
    assert_eq!(rows[4][1], "echo a\\x00b");
    for row in &rows {
        assert_eq!(row.len(), 4, "{row:?}");
        let at = chrono::DateTime::parse_from_rfc3339(&row[0]).expect("ISO-8601");
        assert_eq!(row[0].len(), "2026-04-26T14:32:01.234Z".len(), "{}", row[0]);
        assert!(row[0].ends_with('Z'));
        assert!(at.timestamp() > 0);
        row[3].parse::<u64>().expect("duration in ms");
    }
    assert_eq!(rows[1][3], "0");
    assert!(rows[2][3].parse::<u64>().unwrap() >= 1000);
}

#[test]
fn commands_are_escaped_into_one_line() {
    let mut server = Server::start(Options::default());
    let command = "printf 'a\\tb\\n'\techo \"tab\"\r\necho back\\\\slash";
    server.run(command);
    let rows = server.audit_rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0][1],
        "printf 'a\\\\tb\\\\n'\\techo \"tab\"\\r\\necho back\\\\\\\\slash"
    );
    assert_eq!(forge_bash::audit::unescape(&rows[0][1]).unwrap(), command);
}

#[test]
fn concurrent_calls_give_whole_rows() {
    let mut server = Server::start(Options::default());
    let ids: Vec<u64> = (0..50)
        .map(|i| server.start_call(&format!("echo call-{i} {}", "x".repeat(2000))))
        .collect();
    for id in ids {
        server.response(id);
    }
    let rows = server.audit_rows();
    assert_eq!(rows.len(), 50);
    let commands: HashSet<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(commands.len(), 50);
    for row in &rows {
        assert_eq!(row.len(), 4);
        assert!(row[1].starts_with("echo call-") && row[1].ends_with(&"x".repeat(2000)));
        assert_eq!(row[2], "0");
    }
}

#[test]
fn a_state_dir_that_cannot_hold_the_log_refuses_calls_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let state = file.join("state");
    let mut server = Options::default().state(&state).start();
    let response = server.call("echo fine > ran");
    assert!(is_error(&response));
    let answer = crate::support::text(&response);
    assert!(
        answer.starts_with("ERROR: Execution failed: the audit log cannot be written (")
            && answer.contains("the command was not run"),
        "{answer}"
    );
    assert!(!server.workdir.join("ran").exists());
    // The row is on stderr, so nothing is lost.
    assert!(eventually(Duration::from_secs(5), || server
        .stderr()
        .contains("audit row not written")
        && server.stderr().contains("echo fine > ran")));
}

/// A server that is not root owns its state dir and log, and so do its commands: one
/// that takes every right away from both does not stop the next call's row. Run as an
/// unprivileged user (CI is root) without the sandbox, where nothing else stops it.
#[test]
fn a_command_cannot_switch_the_audit_off_by_changing_modes() {
    // SAFETY: geteuid has no preconditions.
    let uid = match unsafe { libc::geteuid() } {
        0 => match crate::support::unprivileged() {
            Some(uid) => Some(uid),
            None => return,
        },
        _ => None,
    };
    let mut options = Options::default();
    if let Some(uid) = uid {
        options = options.user(uid);
    }
    let mut server = options.start();
    let state = server.state.clone();
    let log = forge_bash::audit::path(&state, chrono::Utc::now());
    assert!(server.run("echo first").starts_with("first\n"));
    let attack = format!("chmod 000 {} {}; echo done", log.display(), state.display());
    assert!(server.run(&attack).starts_with("done\n"));
    for n in 0..2 {
        let answer = server.run(&format!("echo after-{n}"));
        assert!(answer.starts_with(&format!("after-{n}\n")), "{answer}");
    }
    // Overflow files are saved again too.
    let answer = server.run("seq 1 3000");
    let at = answer.find("written to ").expect(&answer) + "written to ".len();
    let overflow = answer[at..].lines().next().unwrap().trim().to_owned();
    let saved = std::fs::read_to_string(&overflow).unwrap();
    assert!(saved.ends_with("\n3000\n"), "{overflow}");
    let commands: Vec<String> = server
        .audit_rows()
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(commands[..2], ["echo first".to_owned(), attack]);
    assert_eq!(commands.len(), 5, "{commands:?}");
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o7777
    };
    assert_eq!((mode(&state), mode(&log)), (0o700, 0o600));
    // Said once, for each.
    let stderr = server.stderr();
    assert_eq!(
        stderr
            .matches("the mode of the server's own file was changed")
            .count(),
        2,
        "{stderr}"
    );
}

#[test]
fn every_line_splitter_sees_one_row_per_call() {
    let mut server = Server::start(Options::default());
    let commands = [
        "echo 'vt\u{b} ff\u{c} fs\u{1c} gs\u{1d} rs\u{1e}'",
        "echo 'nel\u{85} ls\u{2028} ps\u{2029} del\u{7f} bell\u{7}'",
        "echo 'tab\t cr\r lf\n back\\slash'",
    ];
    for command in commands {
        server.run(command);
    }
    let file = forge_bash::audit::path(&server.state, chrono::Utc::now());
    let text = std::fs::read_to_string(&file).unwrap();
    let recovered: Vec<String> = text
        .lines()
        .map(|row| forge_bash::audit::unescape(row.split('\t').nth(1).unwrap()).unwrap())
        .collect();
    assert_eq!(recovered, commands);
    let counters = [
        (
            "python3",
            vec![
                "-c",
                "import sys; print(len(open(sys.argv[1], encoding='utf-8').read().splitlines()))",
            ],
        ),
        (
            "node",
            vec![
                "-e",
                "console.log(require('fs').readFileSync(process.argv[1], 'utf8').split(/\\r\\n|[\\n\\r\\u2028\\u2029]/).length - 1)",
            ],
        ),
        ("awk", vec!["END { print NR }"]),
    ];
    for (program, args) in counters {
        let Ok(out) = std::process::Command::new(program)
            .args(&args)
            .arg(&file)
            .output()
        else {
            eprintln!("{program} is not installed; skipped");
            continue;
        };
        let rows = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert_eq!(rows, "3", "{program} counted {rows} rows");
    }
}

/// A server whose workdir and state dir are on a filesystem of their own (`fstype`
/// mounted with `options`) in a mount namespace of the server's, and the path the test
/// reads its state dir through; with `uid`, the server runs as that user (uid = gid)
/// and the filesystem is its own. `None` where this machine refuses it (said why).
fn on_a_filesystem_of_its_own(
    fstype: &str,
    options: &str,
    uid: Option<u32>,
) -> Option<(Server, PathBuf, tempfile::TempDir)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: mounting a filesystem needs root");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("fs");
    std::fs::create_dir(&mount).unwrap();
    let mount_arg = mount.display().to_string();
    let mut script = r#"mount -t "$1" -o "$2" none "$0" && mkdir "$0/work" && shift 2"#.to_owned();
    match uid {
        Some(uid) => {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(uid)).unwrap();
            script += &format!(
                r#" && chown {uid}:{uid} "$0" "$0/work" && exec setpriv --reuid {uid} --regid {uid} --clear-groups -- "$@""#
            );
        }
        None => script += r#" && exec "$@""#,
    }
    let through = [
        "unshare", "-m", "sh", "-c", &script, &mount_arg, fstype, options,
    ];
    let probe = std::process::Command::new(through[0])
        .args(&through[1..])
        .arg("true")
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            let why = String::from_utf8_lossy(&out.stderr);
            eprintln!("skipped: a {fstype} in a mount namespace is refused here: {why}");
            return None;
        }
        Err(e) => {
            eprintln!("skipped: cannot run unshare: {e}");
            return None;
        }
    }
    let server = Options::default()
        .state(&mount.join("state"))
        .workdir(&mount.join("work"))
        .through(&through)
        .start();
    // The filesystem is in the server's namespace alone: the test looks through its root.
    let seen = PathBuf::from(format!("/proc/{}/root{mount_arg}/state", server.pid()));
    Some((server, seen, dir))
}

/// The audit logs in `state`: (name, size, bytes allocated).
fn logs(state: &Path) -> Vec<(String, u64, u64)> {
    let mut logs: Vec<(String, u64, u64)> = std::fs::read_dir(state)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("audit-"))
        .map(|e| {
            let meta = e.metadata().unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, meta.len(), meta.blocks() * 512)
        })
        .collect();
    logs.sort();
    logs
}

const UNAUDITED: &str = "WARNING: this call's audit row could not be written (No space left on device (os error 28)); the server's log holds it.";

/// The state dir and workdir on an 8 MiB tmpfs: a command fills it, the calls after it
/// still have their rows, in room reserved ahead. A command too long for what is left
/// of that room says so in its answer and in the server's log; the rows after it that
/// fit still land, and `forge-bash audit` reads only rows, never the room. As root and
/// as an unprivileged user (LibreChat's container).
#[test]
fn a_full_disk_keeps_the_rows() {
    full_disk_as(None);
    if let Some(uid) = crate::support::unprivileged() {
        full_disk_as(Some(uid));
    }
}

fn full_disk_as(uid: Option<u32>) {
    let Some((mut server, state, _dir)) = on_a_filesystem_of_its_own("tmpfs", "size=8m", uid)
    else {
        return;
    };
    let fill = "dd if=/dev/zero of=big bs=64k; df -k . | tail -1";
    let answer = server.run(fill);
    assert!(answer.contains("No space left on device"), "{answer}");
    assert!(answer.contains(" 100% "), "the disk is full: {answer}");
    let owner = std::fs::metadata(&state).unwrap().uid();
    assert_eq!(
        owner,
        uid.unwrap_or(0),
        "the server's user made the state dir"
    );
    let after = [
        "echo after",
        "rm big",
        "exit 3",
        "echo more > more.txt",
        "seq 1 5000",
    ];
    for command in after {
        let answer = server.run(command);
        assert!(!answer.contains("WARNING"), "{command}: {answer}");
    }
    let commands = |state: &Path| -> Vec<String> {
        audit_rows(state)
            .into_iter()
            .map(|r| r[1].clone())
            .collect()
    };
    let mut expected: Vec<String> = [fill].into_iter().chain(after).map(str::to_owned).collect();
    assert_eq!(commands(&state), expected);
    // Hostile: long commands use up the room, until one does not fit; its row is on
    // the server's stderr and its answer says so.
    let long = |n: usize| format!(": {n} {}", "x".repeat(100 * 1024));
    let mut unaudited = None;
    for n in 0..30 {
        let answer = server.run(&long(n));
        if answer.contains("WARNING") {
            let before_footer = format!("\n{UNAUDITED}\n[exit:0 | ");
            assert!(answer.contains(&before_footer), "{answer}");
            unaudited = Some(n);
            break;
        }
        expected.push(long(n));
    }
    let unaudited = unaudited.expect("30 rows of 100 KiB fit in the room kept");
    assert!(unaudited >= 5, "only {unaudited} long rows fitted");
    assert!(eventually(Duration::from_secs(5), || {
        let stderr = server.stderr();
        stderr.contains("audit row not written") && stderr.contains(&long(unaudited)[..20])
    }));
    // Nothing of it was written: the next short row lands whole.
    let answer = server.run("echo still");
    assert!(
        answer.starts_with("still\n") && !answer.contains("WARNING"),
        "{answer}"
    );
    expected.push("echo still".to_owned());
    assert_eq!(commands(&state), expected);
    // The size is the rows'; tomorrow's log waits with room of its own.
    let logs = logs(&state);
    let rows: u64 = std::fs::read(state.join(&logs[0].0)).unwrap().len() as u64;
    assert_eq!(logs[0].1, rows, "{logs:?}");
    assert!(
        logs.iter()
            .skip(1)
            .any(|(_, size, room)| *size == 0 && *room >= 1 << 20),
        "{logs:?}"
    );
    let out = crate::support::binary()
        .args(["audit", "--all", "--json", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        expected.len()
    );
}

/// A filesystem that cannot reserve room (ramfs): the server says so once, and writes
/// the rows as they come.
#[test]
fn a_filesystem_without_reserved_room_is_said_and_logged_to() {
    let Some((mut server, state, _dir)) = on_a_filesystem_of_its_own("ramfs", "mode=755", None)
    else {
        return;
    };
    for n in 0..2 {
        assert!(
            server
                .run(&format!("echo {n}"))
                .starts_with(&format!("{n}\n"))
        );
    }
    let rows: Vec<String> = audit_rows(&state)
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(rows, ["echo 0", "echo 1"]);
    let stderr = server.stderr();
    assert_eq!(
        stderr
            .matches("cannot reserve room for the audit log")
            .count(),
        1,
        "{stderr}"
    );
}
