//! `forge-bash audit` against rows a real server wrote.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{Options, Server};

fn audit(state: &Path, args: &[&str]) -> Output {
    crate::support::binary()
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

/// Writes rows as a server does, each `(command, exit, ms)` at 2026-04-26T14:32:01.234Z.
fn write_rows(state: &Path, rows: &[(&str, i32, u128)]) {
    use chrono::TimeZone;
    let at = chrono::Utc
        .with_ymd_and_hms(2026, 4, 26, 14, 32, 1)
        .unwrap()
        + chrono::Duration::milliseconds(234);
    let state = forge_bash::state::StateDir::open(state);
    for &(command, code, ms) in rows {
        let row = forge_bash::audit::Row {
            at,
            command,
            code,
            ms,
        };
        forge_bash::audit::append(&state, &row).unwrap();
    }
}

/// Appends raw text to the 2026-04-26 log, as a hand-edited or forged log could hold.
fn append_raw(state: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(state.join("audit-2026-04-26.tsv"))
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// What a terminal or a line splitter could act on: C0 (but the newline ending each
/// line), DEL, C1, the line and paragraph separators and the bidirectional controls.
fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(
            c,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn assert_safe(text: &str) {
    let bad: Vec<char> = text.chars().filter(|&c| acts_on_terminal(c)).collect();
    assert!(bad.is_empty(), "raw {bad:?} in\n{}", text.escape_debug());
}

/// Right-to-left override, isolates, marks, C1 CSI, ESC and DEL, separators.
const HOSTILE: &str = "echo \u{202e}gnp.exe\u{202c} \u{2066}x\u{2069} \u{200e}\u{200f}\u{61c} \u{9b}2J\u{80}\u{9f} \u{1b}[2J\u{7f} \u{85}\u{2028}\u{2029}\\ end";

/// The same as the table shows it.
const HOSTILE_SHOWN: &str = "echo \\u202egnp.exe\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u061c \\u009b2J\\u0080\\u009f \\x1b[2J\\x7f \\u0085\\u2028\\u2029\\\\ end";

/// A forged row whose command field holds a raw OSC (ESC, BEL) and a raw U+202E.
const FORGED: &str = "\u{1b}]0;pwned\u{7}\u{202e}x";

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
        // Failed as --failed selects them: `exit 3` and the timed-out `sleep 5`.
        "failed               2",
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

#[test]
fn the_terminal_never_gets_a_control_or_bidi_character() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    write_rows(state, &[(HOSTILE, 0, 7)]);
    append_raw(
        state,
        &format!("2026-04-26T14:32:02.000Z\t{FORGED}\t0\t5\n\u{1b}[2J\u{202e}\tx\t0\t1\n"),
    );
    let out = audit(state, &["--date", "2026-04-26"]);
    let table = stdout(&out);
    assert_safe(&table);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let column = |line: &str| line[lines[0].find("command").unwrap()..].to_owned();
    assert_eq!(column(lines[1]), HOSTILE_SHOWN);
    assert_eq!(column(lines[2]), "\\x1b]0;pwned\\x07\\u202ex");
    // What the table shows unescapes to the command exactly.
    assert_eq!(
        forge_bash::audit::unescape(&column(lines[1])).unwrap(),
        HOSTILE
    );
    assert_eq!(
        forge_bash::audit::unescape(&column(lines[2])).unwrap(),
        FORGED
    );
    // The malformed row is named on stderr, its text escaped too.
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(":3: malformed row skipped: bad timestamp \"\\x1b[2J\\u202e\""),
        "{stderr}"
    );
    assert_safe(&stderr);
    // The summary's slowest commands too.
    let summary = stdout(&audit(state, &["--date", "2026-04-26", "--summary"]));
    assert_safe(&summary);
    assert!(
        summary.lines().any(|l| l.ends_with(HOSTILE_SHOWN)),
        "{summary}"
    );
}

#[test]
fn json_lines_split_once_per_row_for_any_splitter_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let sent = [
        HOSTILE,
        "a\u{2028}b",
        "c\u{85}d",
        "\u{2029}",
        "e\u{7f}\u{9b}f",
        "plain",
    ];
    write_rows(state, &sent.map(|c| (c, 0, 1)));
    append_raw(
        state,
        &format!("2026-04-26T14:32:02.000Z\t{FORGED}\t0\t5\n"),
    );
    let expected: Vec<&str> = sent.iter().copied().chain([FORGED]).collect();
    let json = stdout(&audit(state, &["--date", "2026-04-26", "--json"]));
    assert_safe(&json);
    assert!(
        json.contains("\\u202e") && json.contains("\\u2028"),
        "{json}"
    );
    // serde_json reads back each command exactly.
    let rows: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(commands(&rows), expected);
    // Python's str.splitlines() finds exactly one row per line.
    let mut python = Command::new("python3")
        .args([
            "-c",
            "import sys, json\n\
             lines = sys.stdin.buffer.read().decode('utf-8').splitlines()\n\
             print(json.dumps([json.loads(l)['command'] for l in lines]))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    python
        .stdin
        .take()
        .unwrap()
        .write_all(json.as_bytes())
        .unwrap();
    let answer = python.wait_with_output().unwrap();
    assert!(answer.status.success());
    let seen: Vec<String> = serde_json::from_slice(&answer.stdout).unwrap();
    assert_eq!(seen, expected);
}

#[test]
fn only_regular_files_named_like_a_real_day_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    write_rows(state, &[("real", 0, 1)]);
    let row = "2026-01-04T00:00:00.000Z\todd\t0\t1\n";
    let odd = [
        "audit-2026-1-3.tsv",
        "audit-+2026-01-04.tsv",
        "audit-2026-13-40.tsv",
        "audit-2026-02-30.tsv",
        "audit-2026-01-04.tsv.bak",
        "audit-2026-01-04.TSV",
        "audit- 2026-01-04.tsv",
        "audit-\u{1b}[2J\u{202e}.tsv",
    ];
    for name in odd {
        std::fs::write(state.join(name), row).unwrap();
    }
    // Directories: one named like a log, one not.
    std::fs::create_dir(state.join("audit-2026-01-05.tsv")).unwrap();
    std::fs::write(state.join("audit-2026-01-05.tsv/x"), row).unwrap();
    std::fs::create_dir(state.join("audit-2026-01-06")).unwrap();
    // Not named audit-…: ignored without a word (overflow files live here too).
    std::fs::write(state.join("overflow-1.txt"), row).unwrap();

    let out = audit(state, &["--all", "--json"]);
    let rows: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(commands(&rows), ["real"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_safe(&stderr);
    let s = state.display();
    for name in [
        "audit-2026-1-3.tsv",
        "audit-+2026-01-04.tsv",
        "audit-2026-13-40.tsv",
    ]
    .iter()
    .chain(&odd[3..7])
    .chain(&["audit-\\x1b[2J\\u202e.tsv", "audit-2026-01-06"])
    {
        let line = format!("{s}/{name}: skipped: not named audit-YYYY-MM-DD.tsv\n");
        assert!(stderr.contains(&line), "{line:?} in\n{stderr}");
    }
    let directory = format!("{s}/audit-2026-01-05.tsv: skipped: not a regular file\n");
    assert!(stderr.contains(&directory), "{stderr}");
    assert!(!stderr.contains("overflow"), "{stderr}");
    assert_eq!(stderr.lines().count(), 10, "{stderr}");

    // The same directory asked for by its day: a warning, exit 0, no rows.
    let out = audit(state, &["--date", "2026-01-05", "--json"]);
    assert_eq!(stdout(&out), "");
    assert_eq!(String::from_utf8(out.stderr).unwrap(), directory);
    // --since skips the directory when it is before the day asked for.
    let out = audit(state, &["--since", "2026-01-06", "--json"]);
    assert_eq!(stdout(&out).lines().count(), 1);
    assert!(
        !String::from_utf8(out.stderr)
            .unwrap()
            .contains("not a regular file")
    );
}

#[test]
fn a_fifo_named_like_a_log_is_skipped_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    write_rows(state, &[("real", 0, 1)]);
    let fifo = state.join("audit-2026-01-07.tsv");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = crate::support::binary()
        .args(["audit", "--all", "--json", "--state-dir"])
        .arg(state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("forge-bash audit is stuck opening the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout(&out).lines().count(), 1);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        format!("{}: skipped: not a regular file\n", fifo.display())
    );
}

#[test]
fn impossible_timestamps_and_non_canonical_numbers_are_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let t = "2026-04-26T14:32:01.234Z";
    // (row, why it is malformed, or None if it is a row the writer could write)
    let rows: Vec<(String, Option<&str>)> = [
        ("2024-02-29T23:59:59.999Z\tleap day\t0\t0", None),
        (
            &format!("{t}\tlimits\t-2147483648\t18446744073709551615"),
            None,
        ),
        (&format!("{t}\tblocked\t-1\t10"), None),
        ("2026-02-30T00:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2025-02-29T00:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-00-10T00:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01T25:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01T24:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01T00:60:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01T00:00:60.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01 00:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01T00:00:00.000+00\tx\t0\t1", Some("bad timestamp")),
        ("+026-01-01T00:00:00.000Z\tx\t0\t1", Some("bad timestamp")),
        ("2026-01-01T00:00:0.0000Z\tx\t0\t1", Some("bad timestamp")),
        (&format!("{t}\tx\t+7\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t 7\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t7 \t1"), Some("bad exit code")),
        (&format!("{t}\tx\t07\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t-07\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t-0\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t00\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t2147483648\t1"), Some("bad exit code")),
        (&format!("{t}\tx\t0\t+5"), Some("bad duration")),
        (&format!("{t}\tx\t0\t05"), Some("bad duration")),
        (&format!("{t}\tx\t0\t-5"), Some("bad duration")),
        (&format!("{t}\tx\t0\t-0"), Some("bad duration")),
        (&format!("{t}\tx\t0\t5.0"), Some("bad duration")),
        (&format!("{t}\tx\t0\t 5"), Some("bad duration")),
        (
            &format!("{t}\tx\t0\t18446744073709551616"),
            Some("bad duration"),
        ),
    ]
    .into_iter()
    .map(|(line, why)| (line.to_owned(), why))
    .collect();
    let text: String = rows.iter().map(|(line, _)| format!("{line}\n")).collect();
    append_raw(state, &text);
    let out = audit(state, &["--date", "2026-04-26", "--json"]);
    let kept: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(commands(&kept), ["leap day", "limits", "blocked"]);
    assert_eq!(kept[1]["exit"], -2147483648);
    assert_eq!(kept[1]["ms"], u64::MAX);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let log = state.join("audit-2026-04-26.tsv");
    for (number, (line, why)) in rows.iter().enumerate() {
        let Some(why) = why else { continue };
        let expected = format!(
            "{}:{}: malformed row skipped: {why}",
            log.display(),
            number + 1
        );
        assert!(
            stderr.contains(&expected),
            "{line:?}: {expected:?} in\n{stderr}"
        );
    }
    assert_eq!(stderr.lines().count(), rows.len() - 3, "{stderr}");
}

#[test]
fn failed_means_the_same_in_the_filter_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    write_rows(
        state,
        &[
            ("timed out", 124, 5),
            ("cancelled", 130, 5),
            ("shut down", 143, 5),
            ("rm -rf /", -1, 0),
            ("true", 0, 1),
            ("false", 1, 1),
            ("ls nope", 2, 1),
        ],
    );
    let day = ["--date", "2026-04-26"];
    let listed = json_rows(state, &[&day[..], &["--failed"]].concat());
    assert_eq!(
        commands(&listed),
        ["timed out", "cancelled", "shut down", "false", "ls nope"]
    );
    let summary = stdout(&audit(state, &[&day[..], &["--summary"]].concat()));
    let figure = |label: &str| -> usize {
        let line = summary
            .lines()
            .find(|l| l.starts_with(label) && l[label.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("{label:?} in\n{summary}"));
        line[label.len()..].trim().parse().unwrap()
    };
    assert_eq!(figure("failed"), listed.len(), "{summary}");
    assert_eq!(figure("calls"), 7);
    assert_eq!(
        figure("calls"),
        figure("ok") + figure("failed") + figure("blocked")
    );
    assert_eq!(
        (figure("ok"), figure("blocked"), figure("timed out")),
        (1, 1, 1)
    );
    assert_eq!((figure("cancelled"), figure("stopped at shutdown")), (1, 1));
    // --help says so.
    let help = crate::support::binary()
        .args(["audit", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("timeouts (124), cancellations (130)")
            && help.contains("`--summary` counts `failed` the same way"),
        "{help}"
    );
}
