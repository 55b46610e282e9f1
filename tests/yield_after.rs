//! `--yield-after SECS`: a call still running after SECS is answered with what it
//! wrote so far and the file the rest goes to; the command goes on under its timeout.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::{Options, Server, alive, eventually, landlock_here, mask_ms};

/// The process group and the file the answer's background line names, and the wait it
/// names.
fn named(answer: &str) -> (i32, PathBuf, String) {
    let line = answer
        .lines()
        .find(|l| l.starts_with("[still running in the background (process group "))
        .unwrap_or_else(|| panic!("no background line: {answer}"));
    let pgid = line["[still running in the background (process group ".len()..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let file = line.split("its output goes to ").nth(1).unwrap();
    let file = PathBuf::from(file.split(' ').next().unwrap());
    let wait = line.split("wait for it with: ").nth(1).unwrap();
    let wait = wait.split(';').next().unwrap().to_owned();
    (pgid, file, wait)
}

/// `text` with every footer's milliseconds as `X`.
fn mask_all(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let (body, newline) = match line.strip_suffix('\n') {
                Some(body) => (body, "\n"),
                None => (line, ""),
            };
            format!("{}{newline}", mask_ms(body))
        })
        .collect()
}

/// The answer of `command`, and how long it took.
fn timed(server: &mut Server, command: &str) -> (String, Duration) {
    let started = Instant::now();
    let answer = server.run(command);
    (answer, started.elapsed())
}

#[test]
fn a_call_that_ends_before_its_yield_time_is_unchanged() {
    let command = "echo out; echo err >&2; sleep 0.3; exit 3";
    let mut plain = Server::start(Options::default());
    let mut yielding = Options::default().arg("--yield-after").arg("2").start();
    assert_eq!(
        mask_ms(&yielding.run(command)),
        mask_ms(&plain.run(command))
    );
    let rows = yielding.audit_rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][2..3], ["3"], "{rows:?}");
    assert_eq!(rows[0].len(), 4, "no background column: {rows:?}");
}

#[test]
fn a_long_call_answers_at_its_yield_time_and_its_file_gets_the_rest() {
    let mut server = Options::default()
        .timeout(30)
        .arg("--yield-after")
        .arg("2")
        .start();
    let (answer, took) = timed(&mut server, "echo a; sleep 6; echo b");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(4),
        "answered after {took:?}"
    );
    let (pgid, file, wait) = named(&answer);
    assert_eq!(
        mask_ms(&answer),
        format!(
            "a\n\n[still running in the background (process group {pgid}); its output goes to {} — wait for it with: timeout 1 tail -n +1 --pid={pgid} -f {}; stop it with: kill -- -{pgid}]\n[running | Xms]",
            file.display(),
            file.display()
        )
    );
    assert_eq!(
        wait,
        format!("timeout 1 tail -n +1 --pid={pgid} -f {}", file.display())
    );
    // The audit row waits for the end, and then has the real exit code.
    assert!(server.audit_rows().is_empty());
    assert!(alive(pgid));
    assert!(eventually(Duration::from_secs(15), || {
        std::fs::read_to_string(&file).is_ok_and(|text| text.contains("[exit:"))
    }));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(mask_all(&text), "b\n[exit:0 | Xms]\n");
    assert!(eventually(Duration::from_secs(5), || server
        .audit_rows()
        .len()
        == 1));
    let row = &server.audit_rows()[0];
    assert_eq!(row[1..3], ["echo a; sleep 6; echo b", "0"], "{row:?}");
    assert!(row[3].parse::<u64>().unwrap() >= 6000, "{row:?}");
    assert_eq!(
        row.get(4).map(String::as_str),
        Some("background"),
        "{row:?}"
    );
}

#[test]
fn a_yielded_call_s_timeout_still_stops_it_and_says_so_in_its_file() {
    let mut server = Options::default()
        .timeout(3)
        .arg("--yield-after")
        .arg("1")
        .start();
    let (answer, took) = timed(&mut server, "echo a; sleep 1.5; echo b; sleep 600");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    let (pgid, file, _) = named(&answer);
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&file).is_ok_and(|text| text.contains("[exit:"))
    }));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        mask_all(&text),
        "b\nERROR: Command timed out after 3 s.\n[exit:124 | Xms]\n"
    );
    assert!(eventually(Duration::from_secs(5), || !alive(pgid)));
    assert!(eventually(Duration::from_secs(5), || server
        .audit_rows()
        .len()
        == 1));
    assert_eq!(server.audit_rows()[0][2], "124");
}

#[test]
fn the_wait_the_answer_names_works_under_the_sandbox() {
    if !landlock_here(1) {
        return;
    }
    let mut server = Options::default()
        .timeout(30)
        .arg("--sandbox")
        .arg("--yield-after")
        .arg("5")
        .start();
    let (answer, _) = timed(&mut server, "echo a; sleep 6; echo b");
    let (_, _, wait) = named(&answer);
    assert!(wait.starts_with("timeout 4 tail "), "{wait}");
    // The job ends a second after the answer; tail sees it within a second more.
    let (waited, took) = timed(&mut server, &wait);
    assert!(took < Duration::from_secs(4), "waited {took:?}");
    // The file's exit line, shown through a call, is marked as no footer of that call.
    assert_eq!(
        mask_all(&waited),
        "b\n<U+005B>exit:0 | Xms]\n\n[exit:0 | Xms]"
    );
}
