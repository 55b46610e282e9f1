use std::collections::HashSet;
use std::time::Duration;

use crate::support::{Options, Server, eventually, is_error};

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
