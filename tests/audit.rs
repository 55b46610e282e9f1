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
fn unwritable_state_dir_still_answers_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let state = file.join("state");
    let mut server = Options::default().state(&state).start();
    let response = server.call("echo fine");
    assert!(!is_error(&response));
    assert!(crate::support::text(&response).starts_with("fine\n"));
    assert!(eventually(Duration::from_secs(5), || server
        .stderr()
        .contains("audit row not written")));
    // Overflow cannot be written either: the answer says so and still shows the head.
    let answer = server.run("seq 1 500");
    assert!(
        answer.contains("\n500\nOutput truncated. The full output could not be saved:"),
        "{answer}"
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
