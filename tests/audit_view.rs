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
            background: false,
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
            ("python3 -c 'bytearray(1 << 30)'", 137, 5),
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
        [
            "timed out",
            "cancelled",
            "shut down",
            "python3 -c 'bytearray(1 << 30)'",
            "false",
            "ls nope"
        ]
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
    assert_eq!(figure("calls"), 8);
    assert_eq!(
        figure("calls"),
        figure("ok") + figure("failed") + figure("blocked")
    );
    assert_eq!(
        (figure("ok"), figure("blocked"), figure("timed out")),
        (1, 1, 1)
    );
    assert_eq!((figure("cancelled"), figure("stopped at shutdown")), (1, 1));
    assert_eq!(figure("out of memory/killed"), 1, "{summary}");
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

// `--users`: a parent of per-user state dirs.

/// `(user, command)` of each JSON row.
fn users_and_commands(rows: &[Value]) -> Vec<(&str, &str)> {
    rows.iter()
        .map(|r| (r["user"].as_str().unwrap(), r["command"].as_str().unwrap()))
        .collect()
}

/// Writes one row as a server does, in `state`'s log of the row's day.
fn write_at(state: &Path, at: chrono::DateTime<chrono::Utc>, command: &str, code: i32, ms: u128) {
    std::fs::create_dir_all(state).unwrap();
    let row = forge_bash::audit::Row {
        at,
        command,
        code,
        ms,
        background: false,
    };
    forge_bash::audit::append(&forge_bash::state::StateDir::open(state), &row).unwrap();
}

/// Two real servers, alice's and bob's, with their state dirs side by side and their
/// calls taking turns; carol's state dir has no log.
fn two_users() -> (tempfile::TempDir, Server, Server) {
    let parent = tempfile::tempdir().unwrap();
    let mut alice = Options::default()
        .timeout(1)
        .state(&parent.path().join("alice"))
        .start();
    let mut bob = Options::default().state(&parent.path().join("bob")).start();
    std::fs::create_dir(parent.path().join("carol")).unwrap();
    for (turn, command) in [
        "echo a1",
        "rm -rf x",
        "exit 3",
        "sleep 0.3",
        "sleep 5",
        "echo b3",
    ]
    .into_iter()
    .enumerate()
    {
        let server = if turn % 2 == 0 { &mut alice } else { &mut bob };
        server.run(command);
        // The next row gets a later millisecond.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    (parent, alice, bob)
}

#[test]
fn users_rows_merge_in_time_order_and_every_filter_works_across_users() {
    let (parent, _alice, _bob) = two_users();
    let parent = parent.path();
    let users = |args: &[&str]| json_rows(parent, &[&["--users"], args].concat());
    let all = users(&[]);
    assert_eq!(
        users_and_commands(&all),
        [
            ("alice", "echo a1"),
            ("bob", "rm -rf x"),
            ("alice", "exit 3"),
            ("bob", "sleep 0.3"),
            ("alice", "sleep 5"),
            ("bob", "echo b3"),
        ]
    );
    for row in &all {
        let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["at", "command", "exit", "ms", "user"]);
    }
    let pick = |args: &[&str]| -> Vec<(String, String)> {
        let rows = users(args);
        let pairs = users_and_commands(&rows);
        pairs
            .iter()
            .map(|&(u, c)| (u.to_owned(), c.to_owned()))
            .collect()
    };
    let pairs = |expected: &[(&str, &str)]| -> Vec<(String, String)> {
        expected
            .iter()
            .map(|&(u, c)| (u.to_owned(), c.to_owned()))
            .collect()
    };
    assert_eq!(pick(&["--blocked"]), pairs(&[("bob", "rm -rf x")]));
    assert_eq!(
        pick(&["--failed"]),
        pairs(&[("alice", "exit 3"), ("alice", "sleep 5")])
    );
    assert_eq!(pick(&["--timed-out"]), pairs(&[("alice", "sleep 5")]));
    assert!(pick(&["--cancelled"]).is_empty());
    assert_eq!(
        pick(&["--slow", "250"]),
        pairs(&[("bob", "sleep 0.3"), ("alice", "sleep 5")])
    );
    assert_eq!(
        pick(&["--grep", "^echo"]),
        pairs(&[("alice", "echo a1"), ("bob", "echo b3")])
    );
    assert_eq!(pick(&["--slow", "250", "--grep", "^sleep 0"]).len(), 1);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    for when in [&["--date", &today][..], &["--since", &today], &["--all"]] {
        assert_eq!(users(when).len(), 6, "{when:?}");
    }
    assert!(users(&["--date", "2001-01-01"]).is_empty());
    // Without --users, the parent is a state dir without logs: as before, nothing.
    assert_eq!(stdout(&audit(parent, &[])), "");
    assert!(!stdout(&audit(parent, &["--summary"])).contains("users:"));
}

#[test]
fn users_table_has_an_aligned_user_column() {
    let (parent, _alice, _bob) = two_users();
    let out = audit(parent.path(), &["--users"]);
    let table = stdout(&out);
    // carol has no log: skipped without a word.
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7, "{table}");
    assert_eq!(
        lines[0],
        format!("{:<24}  user   exit        ms  command", "time")
    );
    let users: Vec<&str> = lines[1..].iter().map(|l| l[26..31].trim_end()).collect();
    assert_eq!(users, ["alice", "bob", "alice", "bob", "alice", "bob"]);
    assert!(
        lines[2].ends_with("  bob      -1         0  rm -rf x"),
        "{}",
        lines[2]
    );
    assert!(lines[5].contains("  alice   124  ") && lines[5].ends_with("  sleep 5"));
    let command = lines[0].find("command").unwrap();
    for line in &lines[1..] {
        assert_eq!(&line[command - 2..command], "  ", "{line}");
        assert_ne!(&line[command..command + 1], " ", "{line}");
    }
}

/// A label's figure in a summary.
fn figure(summary: &str, label: &str) -> u64 {
    let line = summary
        .lines()
        .find(|l| l.starts_with(label) && l[label.len()..].starts_with("  "))
        .unwrap_or_else(|| panic!("{label:?} in\n{summary}"));
    line[label.len()..].trim().parse().unwrap()
}

/// The lines of a summary's section, after its heading and up to the next one.
fn section<'a>(summary: &'a str, heading: &str) -> Vec<&'a str> {
    let lines = summary.lines().skip_while(|l| *l != heading).skip(1);
    lines.take_while(|l| l.starts_with("  ")).collect()
}

#[test]
fn users_summary_gives_the_overall_totals_then_each_user() {
    let (parent, _alice, _bob) = two_users();
    let parent = parent.path();
    // An overflow file in alice's state dir; one at the parent is not a state dir's.
    std::fs::write(parent.join("alice/cmd-1.txt"), "12345").unwrap();
    std::fs::write(parent.join("cmd-2.txt"), "1").unwrap();
    let summary = stdout(&audit(parent, &["--users", "--summary"]));
    assert_safe(&summary);
    let expected = [("calls", 6), ("ok", 3), ("failed", 2), ("blocked", 1)];
    for (label, value) in expected
        .into_iter()
        .chain([("timed out", 1), ("cancelled", 0)])
    {
        assert_eq!(figure(&summary, label), value, "{label} in\n{summary}");
    }
    assert_eq!(
        (
            figure(&summary, "overflow files"),
            figure(&summary, "overflow bytes")
        ),
        (1, 5)
    );
    // Everything under the parent: each user's state dir, as each alone says, and more.
    let alone = |user: &str| {
        figure(
            &stdout(&audit(&parent.join(user), &["--summary"])),
            "state dir bytes",
        )
    };
    assert_eq!(
        figure(&summary, "state dir bytes"),
        alone("alice") + alone("bob") + 1
    );
    let slowest = section(&summary, "slowest:");
    assert_eq!(slowest.len(), 6, "{summary}");
    assert!(slowest[0].ends_with("  alice  sleep 5"), "{}", slowest[0]);
    assert!(slowest[1].ends_with("  bob    sleep 0.3"), "{}", slowest[1]);
    // Then a line per user with calls: carol has none.
    let per_user = section(&summary, "users:");
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(per_user.len(), 3, "{summary}");
    assert_eq!(
        words(per_user[0]),
        [
            "user", "calls", "ok", "failed", "blocked", "p50", "p95", "max"
        ]
    );
    assert_eq!(words(per_user[1])[..5], ["alice", "3", "1", "2", "0"]);
    assert_eq!(words(per_user[2])[..5], ["bob", "3", "2", "0", "1"]);
    // Aligned: every column ends where its heading does.
    for line in &per_user[1..] {
        assert_eq!(line.len(), per_user[0].len(), "{summary}");
    }
    let max = |line: &str| words(line)[7].parse::<u64>().unwrap();
    assert!(max(per_user[1]) >= 1000 && (300..1000).contains(&max(per_user[2])));
}

#[test]
fn users_summary_counts_only_the_rows_that_pass() {
    let (parent, _alice, _bob) = two_users();
    let parent = parent.path();
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // Only the users with a row that passes, and the totals of those rows.
    let failed = stdout(&audit(parent, &["--users", "--summary", "--failed"]));
    assert_eq!(figure(&failed, "calls"), 2);
    let per_user = section(&failed, "users:");
    assert_eq!(per_user.len(), 2, "{failed}");
    assert_eq!(words(per_user[1])[..5], ["alice", "2", "0", "2", "0"]);
    // No rows: zero totals and no per-user lines.
    let none = stdout(&audit(
        parent,
        &["--users", "--summary", "--date", "2001-01-01"],
    ));
    assert!(none.starts_with("calls                0\n") && !none.contains("users:"));
}

/// Writes 150 rows for each of four users, one named `tmp`, in steps of 0 to 1.9 s from
/// 2026-04-25T23:59:00Z, so that rows cross midnight and some share a time; and in
/// each state dir's own `tmp` a stray log. Each row as `(at, user, command)`.
fn many_rows(parent: &Path) -> Vec<(chrono::DateTime<chrono::Utc>, &'static str, String)> {
    use chrono::TimeZone;
    let start = chrono::Utc
        .with_ymd_and_hms(2026, 4, 25, 23, 59, 0)
        .unwrap();
    let mut rows = Vec::new();
    let mut seed = 7u64;
    for (u, user) in ["dave", "ann", "tmp", "bo"].into_iter().enumerate() {
        let mut at = start;
        for n in 0..150 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            at += chrono::Duration::milliseconds(((seed >> 33) % 20 * 100) as i64);
            let command = format!("{user} {n}");
            write_at(&parent.join(user), at, &command, (n % 3) as i32, n);
            rows.push((at, user, command));
        }
        std::fs::create_dir_all(parent.join(user).join("tmp")).unwrap();
        let stray = format!(
            "{}\tstray {u}\t0\t1\n",
            start.format("%Y-%m-%dT%H:%M:%S%.3fZ")
        );
        std::fs::write(parent.join(user).join("tmp/audit-2026-04-25.tsv"), &stray).unwrap();
    }
    rows
}

#[test]
fn users_merge_across_days_ties_and_a_user_named_tmp() {
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path();
    // A user named `tmp` is a user like any other; each state dir's own `tmp` is not.
    let mut expected = many_rows(parent);
    // Same time: the user whose name sorts first first.
    expected.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    assert!(expected.windows(2).any(|w| w[0].0 == w[1].0), "some ties");
    let mut days: Vec<_> = expected.iter().map(|r| r.0.date_naive()).collect();
    days.dedup();
    assert_eq!(days.len(), 2);
    // The parent's own log is not a user's: named on stderr, not read.
    std::fs::copy(
        parent.join("ann/audit-2026-04-25.tsv"),
        parent.join("audit-2026-04-25.tsv"),
    )
    .unwrap();
    let out = audit(parent, &["--users", "--all", "--json"]);
    let rows: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(&str, &str)> = users_and_commands(&rows);
    let wanted: Vec<(&str, &str)> = expected.iter().map(|(_, u, c)| (*u, c.as_str())).collect();
    assert_eq!(seen, wanted);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "{}: its own audit-* files are not read: with --users, each subdirectory is one \
             user's state dir\n",
            parent.display()
        )
    );
    // The second day only, from every user.
    let second = days[1].format("%Y-%m-%d").to_string();
    for args in [["--since", &second], ["--date", &second]] {
        let rows = json_rows(parent, &[&["--users"], &args[..]].concat());
        let later = expected.iter().filter(|r| r.0.date_naive() > days[0]);
        assert_eq!(rows.len(), later.count(), "{args:?}");
    }
}

#[test]
fn users_beyond_the_open_files_limit_are_all_read() {
    use chrono::TimeZone;
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path();
    let start = chrono::Utc.with_ymd_and_hms(2026, 4, 26, 0, 0, 0).unwrap();
    // Each user's log stays open while the rows merge: 300 of them at once.
    for u in 0..300 {
        let user = parent.join(format!("u{u:03}"));
        write_at(
            &user,
            start + chrono::Duration::seconds(300 - u),
            "early",
            0,
            1,
        );
        write_at(
            &user,
            start + chrono::Duration::seconds(600 + u),
            "late",
            0,
            1,
        );
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -Sn 64 && exec \"$0\" audit --users --all --json --state-dir \"$1\"")
        .arg(crate::support::BIN)
        .arg(parent)
        .output()
        .unwrap();
    let rows: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen = users_and_commands(&rows);
    assert_eq!(seen.len(), 600);
    assert_eq!((seen[0], seen[299]), (("u299", "early"), ("u000", "early")));
    assert_eq!((seen[300], seen[599]), (("u000", "late"), ("u299", "late")));
    // Past the hard limit too: an error, not a view with users missing.
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" audit --users --all --json --state-dir \"$1\"")
        .arg(crate::support::BIN)
        .arg(parent)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("Too many open files"), "{stderr}");
}

/// A user name with ESC, a newline, right-to-left override and isolate, a backslash.
const EVE: &str = "eve\u{1b}[2J\n\u{202e}\u{2066}x\\";

/// The same as the table shows it.
const EVE_SHOWN: &str = "eve\\x1b[2J\\n\\u202e\\u2066x\\\\";

/// In `dir`, `users` with [`EVE`], ann and bob, and `elsewhere`, a state dir that is no
/// user's. Planted: `users/mallory`, a link to `elsewhere`; in ann's state dir, a link
/// to a log of `elsewhere`; as bob's log, a hard link to another of its logs.
fn planted(dir: &Path) -> std::path::PathBuf {
    use chrono::TimeZone;
    let parent = dir.join("users");
    let at = chrono::Utc.with_ymd_and_hms(2026, 4, 26, 12, 0, 0).unwrap();
    write_at(&parent.join(EVE), at, "id", 0, 3);
    write_at(
        &parent.join("ann"),
        at + chrono::Duration::seconds(1),
        "ls",
        0,
        2,
    );
    let elsewhere = dir.join("elsewhere");
    write_at(&elsewhere, at, "not a user's", 0, 1);
    write_at(
        &elsewhere,
        at - chrono::Duration::days(1),
        "not ann's",
        0,
        1,
    );
    std::os::unix::fs::symlink(&elsewhere, parent.join("mallory")).unwrap();
    let day = "audit-2026-04-25.tsv";
    std::os::unix::fs::symlink(elsewhere.join(day), parent.join("ann").join(day)).unwrap();
    std::fs::create_dir(parent.join("bob")).unwrap();
    std::fs::hard_link(
        elsewhere.join("audit-2026-04-26.tsv"),
        parent.join("bob/audit-2026-04-26.tsv"),
    )
    .unwrap();
    parent
}

#[test]
fn users_names_are_escaped_and_links_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let parent = planted(dir.path());
    let out = audit(&parent, &["--users", "--all"]);
    let table = stdout(&out);
    assert_safe(&table);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let user = |line: &str| line[26..26 + EVE_SHOWN.len()].trim_end().to_owned();
    assert_eq!(user(lines[2]), EVE_SHOWN);
    assert_eq!(forge_bash::audit::unescape(&user(lines[2])).unwrap(), EVE);
    // Same time: bob (by name) first. The hard link is read; the links are not.
    assert_eq!([user(lines[1]), user(lines[3])], ["bob", "ann"]);
    assert!(lines[1].ends_with("not a user's") && lines[3].ends_with("ls"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_safe(&stderr);
    let p = parent.display();
    assert_eq!(
        stderr,
        format!(
            "{p}/mallory: skipped: a symbolic link, not followed\n\
             {p}/ann/audit-2026-04-25.tsv: skipped: a symbolic link, not followed\n\
             {p}/bob/audit-2026-04-26.tsv: read, but it has 2 hard links: its rows may be \
             in another user's log too\n"
        )
    );
    // JSON gives the name back exactly.
    let rows = json_rows(&parent, &["--users", "--all"]);
    let users: Vec<&str> = rows.iter().map(|r| r["user"].as_str().unwrap()).collect();
    assert_eq!(users, ["bob", EVE, "ann"]);
}

#[test]
fn users_names_are_escaped_in_the_summary_and_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let parent = planted(dir.path());
    let summary = stdout(&audit(&parent, &["--users", "--all", "--summary"]));
    assert_safe(&summary);
    let per_user = section(&summary, "users:");
    assert!(
        per_user[3].starts_with(&format!("  {EVE_SHOWN}  ")),
        "{summary}"
    );
    let slowest = section(&summary, "slowest:");
    assert!(
        slowest[0].ends_with(&format!("  {EVE_SHOWN}  id")),
        "{summary}"
    );
    // A malformed row in eve's log is named with the name escaped.
    let log = parent.join(EVE).join("audit-2026-04-26.tsv");
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(b"junk\n").unwrap();
    let out = audit(&parent, &["--users", "--date", "2026-04-26", "--json"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_safe(&stderr);
    let p = parent.display();
    let named = format!("{p}/{EVE_SHOWN}/audit-2026-04-26.tsv:2: malformed row skipped");
    assert!(stderr.contains(&named), "{named:?} in\n{stderr}");
}

#[test]
fn users_bad_flags_and_a_missing_parent() {
    let dir = tempfile::tempdir().unwrap();
    let missing = audit(&dir.path().join("nope"), &["--users"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));
    let both = audit(dir.path(), &["--users", "--json", "--summary"]);
    assert_eq!(both.status.code(), Some(2));
    // An empty parent: nothing, or zero totals.
    assert_eq!(stdout(&audit(dir.path(), &["--users", "--all"])), "");
    let zero = stdout(&audit(dir.path(), &["--users", "--summary"]));
    assert!(zero.starts_with("calls                0\n") && !zero.contains("users:"));
}
