//! `forge-bash audit` against rows a real server wrote.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{BIN, Options, Server};

fn audit(state: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("audit")
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json_rows(state: &Path, args: &[&str]) -> Vec<Value> {
    let mut args = args.to_vec();
    args.push("--json");
    stdout(&audit(state, &args))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn commands(rows: &[Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect()
}

/// The commands a server runs for these tests, one of each kind of ending.
const TRICKY: &str =
    "printf 'tab\\there' # \\ backslash\n echo 'new line'; : \u{1}\u{b}\u{1c}\u{7f}\u{85}\u{2028}";

fn server_with_rows() -> Server {
    let mut server = Options::default().timeout(1).start();
    server.run("echo ok");
    server.run("rm -rf x");
    server.run("exit 3");
    server.run("sleep 5");
    server.run("sleep 0.3");
    server.run(TRICKY);
    server
}

#[test]
fn every_filter_and_the_json_round_trip() {
    let server = server_with_rows();
    let state = &server.state;
    let all = json_rows(state, &[]);
    assert_eq!(
        commands(&all),
        [
            "echo ok",
            "rm -rf x",
            "exit 3",
            "sleep 5",
            "sleep 0.3",
            TRICKY
        ]
    );
    // Exactly these members, the command exactly as it was run.
    for row in &all {
        let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["at", "command", "exit", "ms"]);
        assert!(row["exit"].is_i64() && row["ms"].is_u64());
    }
    assert_eq!(commands(&json_rows(state, &["--blocked"])), ["rm -rf x"]);
    assert_eq!(
        commands(&json_rows(state, &["--failed"])),
        ["exit 3", "sleep 5"]
    );
    assert_eq!(commands(&json_rows(state, &["--timed-out"])), ["sleep 5"]);
    assert!(json_rows(state, &["--cancelled"]).is_empty());
    assert_eq!(
        commands(&json_rows(state, &["--slow", "250"])),
        ["sleep 5", "sleep 0.3"]
    );
    assert_eq!(
        commands(&json_rows(state, &["--grep", "^sleep 0"])),
        ["sleep 0.3"]
    );
    // The regular expression sees the unescaped command: a real tab and newline.
    assert_eq!(
        commands(&json_rows(state, &["--grep", "\\\\ backslash\\n echo"])),
        [TRICKY]
    );
    // Filters combine with AND.
    assert_eq!(
        commands(&json_rows(state, &["--failed", "--slow", "500"])),
        ["sleep 5"]
    );
    assert!(json_rows(state, &["--blocked", "--timed-out"]).is_empty());
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(json_rows(state, &["--date", &today]).len(), 6);
    assert!(json_rows(state, &["--date", "2001-01-01"]).is_empty());
}

#[test]
fn the_table_keeps_each_row_on_one_line() {
    let server = server_with_rows();
    let table = stdout(&audit(&server.state, &[]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7, "{table}");
    assert!(lines[0].starts_with("time") && lines[0].ends_with("command"));
    let exit_column = lines[0].find("exit").unwrap();
    for line in &lines[1..] {
        // Aligned: the command column starts at the same place on every row.
        assert_eq!(line.find("  ").unwrap(), 24, "{line}");
        assert!(line.len() > exit_column);
    }
    assert!(lines[2].contains("  -1  ") && lines[2].ends_with("rm -rf x"));
    assert!(
        lines[6].ends_with("\\x01\\x0b\\x1c\\x7f\\u0085\\u2028"),
        "{}",
        lines[6]
    );
}

#[test]
fn summary_totals_percentiles_and_the_slowest() {
    let server = server_with_rows();
    let summary = stdout(&audit(&server.state, &["--summary"]));
    for line in [
        "calls                6",
        "ok                   3",
        "failed               1",
        "blocked              1",
        "timed out            1",
        "cancelled            0",
        "stopped at shutdown  0",
    ] {
        assert!(summary.lines().any(|l| l == line), "{line:?} in\n{summary}");
    }
    let slowest: Vec<&str> = summary
        .lines()
        .skip_while(|l| *l != "slowest:")
        .skip(1)
        .collect();
    assert_eq!(slowest.len(), 6);
    assert!(slowest[0].ends_with("sleep 5") && slowest[1].ends_with("sleep 0.3"));
    assert!(summary.contains("duration ms          p50 "));
    // No rows at all: zero totals, exit 0.
    let empty = tempfile::tempdir().unwrap();
    let zero = stdout(&audit(empty.path(), &["--summary"]));
    assert!(zero.starts_with("calls                0\n"), "{zero}");
    assert_eq!(stdout(&audit(empty.path(), &[])), "");
}

#[test]
fn files_being_written_and_malformed_rows_are_read_safely() {
    let server = server_with_rows();
    let state = &server.state;
    let today = forge_bash::audit::path(state, chrono::Utc::now());
    let written = std::fs::read_to_string(&today).unwrap();
    // Another day: a malformed row in the middle and a partial last line.
    let old = state.join("audit-2020-01-02.tsv");
    std::fs::write(
        &old,
        format!("{written}not a row\n2020-01-02T00:00:00.000Z\tbad \\q escape\t0\t1\n2020-01-02T00:00:00.000Z\tpartial"),
    )
    .unwrap();
    std::fs::write(state.join("audit-2019-12-31.tsv"), "").unwrap();
    let out = audit(state, &["--all", "--json"]);
    let rows = stdout(&out).lines().count();
    assert_eq!(
        rows, 12,
        "both days, without the malformed and partial rows"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("{}:7: malformed row skipped", old.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}:8: malformed row skipped", old.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("partial"));
    assert_eq!(
        stdout(&audit(state, &["--since", "2020-01-03", "--json"]))
            .lines()
            .count(),
        6
    );
    assert_eq!(
        stdout(&audit(state, &["--since", "2020-01-01", "--json"]))
            .lines()
            .count(),
        12
    );
}

#[test]
fn bad_flags_and_a_missing_state_dir() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--bogus"][..],
        &["--date", "yesterday"],
        &["--slow", "fast"],
        &["--grep", "("],
        &["--json", "--summary"],
        &["--date", "2026-01-01", "--all"],
    ] {
        assert_eq!(audit(dir.path(), args).status.code(), Some(2), "{args:?}");
    }
    let missing = audit(&dir.path().join("nope"), &[]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));
}
