//! The answer is a function of the bytes of each stream and of their end, not of how
//! the reads of the pipe cut them: the same bytes fed to the capture in any chunking
//! give the same capture, the same answer and the same overflow files.

use std::path::Path;
use std::sync::Arc;

use forge_bash::capture::{Captured, Sink, Spill, Spiller, Stream};
use forge_bash::exec::{Ending, Output};
use forge_bash::present;
use forge_bash::state::StateDir;
use proptest::prelude::*;

use crate::presentation::eval;
use crate::support::{Options, Server, mask_ms};

/// `go test -v` of a package with 1,250 passing subtests and one failure, whose
/// message (`inventory_test.go:280: …`) comes on the line before its `--- FAIL:`, at
/// line 1503 of 2,505.
fn go_test_log() -> String {
    let mut log = String::new();
    let passing = |log: &mut String, range: std::ops::RangeInclusive<u32>| {
        for n in range {
            log.push_str(&format!(
                "=== RUN   TestStock/item_{n:04}\n    --- PASS: TestStock/item_{n:04} (0.00s)\n"
            ));
        }
    };
    passing(&mut log, 1..=750);
    log.push_str("=== RUN   TestOldest\n");
    log.push_str("    inventory_test.go:280: Oldest(5) = [A B C A], want [A B C]\n");
    log.push_str("--- FAIL: TestOldest (0.00s)\n");
    passing(&mut log, 751..=1250);
    log.push_str("FAIL\nFAIL\texample.com/inventory\t0.042s\n");
    log
}

/// One run to capture: its two streams and exit code.
#[derive(Debug, Clone)]
struct Run {
    name: String,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    code: i32,
    cap: u64,
}

impl Run {
    fn new(name: &str, stdout: impl Into<Vec<u8>>, stderr: impl Into<Vec<u8>>) -> Run {
        Run {
            name: name.to_owned(),
            stdout: stdout.into(),
            stderr: stderr.into(),
            code: 1,
            cap: eval::CAP,
        }
    }
}

/// The corpus of real logs, the go run above, and outputs made to reach the edges
/// where a decision needs more than one read: long lines, the first escape sequence
/// late, binary output late, the cap.
fn runs() -> &'static [Run] {
    static RUNS: std::sync::OnceLock<Vec<Run>> = std::sync::OnceLock::new();
    RUNS.get_or_init(made_runs)
}

fn made_runs() -> Vec<Run> {
    let mut runs: Vec<Run> = eval::load()
        .into_iter()
        .map(|case| Run {
            name: case.name,
            stdout: case.stdout,
            stderr: case.stderr,
            code: case.code,
            cap: eval::CAP,
        })
        .collect();
    assert!(runs.len() >= 45, "{} runs in the corpus", runs.len());
    let go = go_test_log();
    runs.push(Run::new("go-test-line-by-line", go.clone(), ""));
    runs.push(Run::new("go-test-on-stderr", "", go.clone()));
    let lines =
        |n: u32, what: &str| -> String { (1..=n).map(|i| format!("{what} {i}\n")).collect() };
    // A key line longer than a line is kept whole, with its locator before it.
    let long_key = format!(
        "{}  src/lib.rs:10: in setup\nerror: {}{}\n{}",
        lines(300, "step"),
        "x".repeat(9000),
        " the end",
        lines(300, "after")
    );
    runs.push(Run::new("long-key-line", long_key, ""));
    // Progress redrawn with CR after long plain lines, and a cursor movement.
    let progress = format!(
        "{}{}\r{}\n{}\x1b[2A\x1b[2Kredrawn\n{}",
        lines(120, "plain"),
        "y".repeat(70_000),
        "z".repeat(10),
        lines(3, "more"),
        lines(300, "then")
    );
    runs.push(Run::new("late-escape-after-long-line", progress, ""));
    let bars: String = (0..=400)
        .map(|i| format!("\rdownloading {i}/400"))
        .collect();
    runs.push(Run::new(
        "late-progress-bar",
        format!("{}{bars}\ndone\nerror: one\n", lines(260, "fetch")),
        "",
    ));
    // Nested progress bars that move the cursor up, a screen that calms down, and
    // a scroll region.
    let mut bars = lines(80, "resolve");
    for i in 0..=60 {
        bars.push_str(&format!("layer a {i}%\nlayer b {}%\n\x1b[2A", 60 - i));
    }
    bars.push_str("FAIL: flaky\n\x1b[1A\x1b[2Kretried\n\x1b[2B");
    bars.push_str(&lines(150, "extract"));
    bars.push_str("\x1b[1;10r\x1b[5;1Hin region\n\x1b[r");
    bars.push_str(&lines(250, "error: late"));
    runs.push(Run::new("cursor-up-bars", bars, ""));
    // Binary stdout after text, and a short stream mostly of control bytes.
    let mut binary = lines(9000, "text").into_bytes();
    binary.extend_from_slice(b"\x00\x01\x02 blob");
    runs.push(Run::new("late-binary", binary, "warning: x\n"));
    runs.push(Run::new("short-control", vec![1u8, 2, 3, b'a', 4, 5], ""));
    // The cap cuts both streams.
    let mut capped = Run::new("capped", lines(5000, "out"), lines(5000, "err"));
    capped.cap = 20_000;
    runs.push(capped);
    // Invalid UTF-8 and a last line without its newline.
    let mut ragged = lines(400, "é").into_bytes();
    ragged.extend_from_slice(b"\xe2\x80 cut\nFAILED: \xff the end");
    runs.push(Run::new("ragged-utf8", ragged, ""));
    runs
}

/// What a capture gave, as comparable bytes: the capture (spill files named, not
/// placed), the answer, and each file in the state dir with its content.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    captured: [String; 2],
    answer: String,
    files: Vec<(String, Vec<u8>)>,
}

/// Captures `run`, each stream cut into chunks of the sizes `sizes` gives (cycled),
/// and presents it, in a fresh state dir.
fn capture(run: &Run, sizes: &[usize]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let spiller = Spiller::new(Arc::new(StateDir::open(dir.path())));
    let stream = |which: Stream, bytes: &[u8]| {
        let mut sink = Sink::new(which, run.cap, spiller.clone());
        let mut at = 0;
        for &size in sizes.iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + size.max(1)).min(bytes.len());
            sink.push(&bytes[at..end]);
            at = end;
        }
        sink.finish()
    };
    let out = Output {
        stdout: stream(Stream::Stdout, &run.stdout),
        stderr: stream(Stream::Stderr, &run.stderr),
        code: run.code,
        ending: Ending::Exited,
        background: None,
        rest: None,
        out_of_memory: None,
    };
    let answer = present::show(&out, 5, 300, run.cap, present::Stderr::Always).text;
    let place = dir.path().display().to_string();
    let named = |captured: &Captured| {
        let mut captured = captured.clone();
        captured.spill = captured.spill.map(|spill| match spill {
            Spill::Written(path) => Spill::Written(path.file_name().unwrap().into()),
            Spill::Failed(why) => Spill::Failed(why.replace(&place, "STATE")),
        });
        format!("{captured:#?}")
    };
    Outcome {
        captured: [named(&out.stdout), named(&out.stderr)],
        answer: answer.replace(&place, "STATE"),
        files: files(dir.path()),
    }
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Where two results part, for a readable failure.
fn differ(name: &str, chunks: &str, whole: &Outcome, got: &Outcome) -> String {
    for (i, (a, b)) in whole.captured.iter().zip(&got.captured).enumerate() {
        if a != b {
            let at = a.lines().zip(b.lines()).position(|(x, y)| x != y);
            let stream = ["stdout", "stderr"][i];
            let (x, y) = at.map_or(("", ""), |at| {
                (a.lines().nth(at).unwrap(), b.lines().nth(at).unwrap())
            });
            let (x, y) = (short(x), short(y));
            return format!("{name} {chunks}: {stream} capture differs: {x:?} vs {y:?}");
        }
    }
    if whole.answer != got.answer {
        return format!(
            "{name} {chunks}: answer differs\n--- one chunk\n{}\n--- chunked\n{}",
            whole.answer, got.answer
        );
    }
    format!("{name} {chunks}: files differ")
}

/// The first and last 300 bytes of a long line.
fn short(line: &str) -> String {
    if line.len() <= 600 {
        return line.to_owned();
    }
    let head = forge_bash::render::floor_char_boundary(line, 300);
    let mut tail = line.len() - 300;
    while !line.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…{}", &line[..head], &line[tail..])
}

/// Every run, a byte at a time and in one chunk: the same capture, answer and files.
#[test]
fn a_byte_at_a_time_gives_what_one_chunk_gives() {
    for run in runs() {
        let whole = capture(run, &[usize::MAX]);
        let bytewise = capture(run, &[1]);
        assert!(
            whole == bytewise,
            "{}",
            differ(&run.name, "1 byte", &whole, &bytewise)
        );
    }
}

/// The go run of the issue, line by line as a shell loop writes it: the message shows.
#[test]
fn a_line_at_a_time_keeps_the_message_before_the_failure() {
    let run = runs()
        .iter()
        .find(|r| r.name == "go-test-line-by-line")
        .unwrap();
    let log = go_test_log();
    let mut sizes: Vec<usize> = log.split_inclusive('\n').map(str::len).collect();
    sizes.push(1);
    let lines = capture(run, &sizes);
    let whole = capture(run, &[usize::MAX]);
    assert!(
        lines
            .answer
            .contains("1502:    inventory_test.go:280: Oldest(5) = [A B C A], want [A B C]\n"),
        "{}",
        lines.answer
    );
    assert!(
        whole == lines,
        "{}",
        differ(&run.name, "lines", &whole, &lines)
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random chunkings of random runs: small reads, reads of any size up to more than
    /// a pipe holds, and a mix.
    #[test]
    fn any_chunking_gives_what_one_chunk_gives(
        pick in any::<prop::sample::Index>(),
        sizes in prop_oneof![
            prop::collection::vec(1usize..8, 1..64),
            prop::collection::vec(1usize..4096, 1..64),
            prop::collection::vec(1usize..100_000, 1..16),
            prop::collection::vec(prop_oneof![1usize..3, 60usize..200, 3000usize..70_000], 1..64),
        ],
    ) {
        let run = pick.get(runs());
        let whole = capture(run, &[usize::MAX]);
        let got = capture(run, &sizes);
        prop_assert!(whole == got, "{}", differ(&run.name, &format!("{sizes:?}"), &whole, &got));
    }
}

/// Through the binary: the go run written line by line by a shell loop, and the same
/// bytes written by one `cat`, give the same answer, which shows the failure's message.
#[test]
fn the_answer_does_not_depend_on_how_the_command_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("go.log"), go_test_log()).unwrap();
    let mut server = Options::default().workdir(dir.path()).start();
    let state = server.state.display().to_string();
    let answer = |server: &mut Server, command: &str| {
        mask_ms(&server.run(command))
            .replace(&state, "STATE")
            .replace("cmd-2.txt", "cmd-1.txt")
    };
    // One printf per line, with a pause before each of the 100 lines from the
    // failure on, so that reads end between lines there whatever the load (the
    // capture holds the last 50 lines back, so its cuts come 50 lines later).
    let lines = answer(
        &mut server,
        r#"n=0
           while IFS= read -r line; do
             n=$((n + 1))
             if [ $n -ge 1500 ] && [ $n -lt 1600 ]; then sleep 0.03; fi
             printf '%s\n' "$line"
           done < go.log"#,
    );
    let whole = answer(&mut server, "cat go.log");
    assert!(
        lines.contains("1502:    inventory_test.go:280: Oldest(5) = [A B C A], want [A B C]\n"),
        "{lines}"
    );
    assert_eq!(lines, whole);
}
