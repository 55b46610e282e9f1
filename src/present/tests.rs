//! Tests of the presentation: the examples of the spec, thresholds, guards, views.

use std::sync::Arc;

use super::*;
use crate::capture::{Spiller, Stream};

const CAP: u64 = 50 * 1024 * 1024;

struct Fixture {
    dir: tempfile::TempDir,
    spiller: Arc<Spiller>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let spiller = Spiller::new(Arc::new(crate::state::StateDir::open(dir.path())));
        Fixture { dir, spiller }
    }

    fn output(&self, stdout: &[u8], stderr: &[u8], code: i32) -> Output {
        Output {
            stdout: Captured::from_bytes(Stream::Stdout, stdout, CAP, &self.spiller),
            stderr: Captured::from_bytes(Stream::Stderr, stderr, CAP, &self.spiller),
            code,
            ending: Ending::Exited,
            background: None,
            rest: None,
            out_of_memory: None,
        }
    }

    fn show(&self, stdout: &[u8], stderr: &[u8], code: i32) -> Answer {
        show(
            &self.output(stdout, stderr, code),
            5,
            300,
            CAP,
            Stderr::Always,
        )
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

#[test]
fn the_five_examples_of_the_spec() {
    let f = Fixture::new();
    assert_eq!(f.show(b"hello\n", b"", 0).text, "hello\n\n[exit:0 | 5ms]");
    let ls = b"ls: cannot access '/nonexistent': No such file or directory\n";
    assert_eq!(
        show(&f.output(b"", ls, 2), 6, 300, CAP, Stderr::Always).text,
        "\n--- stderr ---\nls: cannot access '/nonexistent': No such file or directory\n\n[exit:2 | 6ms]"
    );
    assert_eq!(
        show(&f.output(b"", b"", 0), 1, 300, CAP, Stderr::Always).text,
        "\n[exit:0 | 1ms]"
    );
    let seq: String = (1..=1000).map(|n| format!("{n}\n")).collect();
    let lines = |from: u32, to: u32| (from..=to).map(|n| format!("{n}\n")).collect::<String>();
    let file = f.path("cmd-1.txt");
    assert_eq!(
        show(
            &f.output(seq.as_bytes(), b"", 0),
            4,
            300,
            CAP,
            Stderr::Always
        )
        .text,
        format!(
            "{}[... lines 31-940 of 1000 not shown, no error or failure among them: \
             sed -n '31,940p' {file}]\n{}Output truncated. Full output written to {file}\n\
             [exit:0 | 4ms]",
            lines(1, 30),
            lines(941, 1000),
        )
    );
    assert_eq!(std::fs::read_to_string(f.path("cmd-1.txt")).unwrap(), seq);
    assert_eq!(
        blocked().text,
        "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]"
    );
}

#[test]
fn line_threshold() {
    let f = Fixture::new();
    let lines = |n: usize| (1..=n).map(|i| format!("{i}\n")).collect::<String>();
    let at = f.show(lines(200).as_bytes(), b"", 0);
    assert_eq!(at.text, format!("{}\n[exit:0 | 5ms]", lines(200)));
    // Without the trailing newline, 200 lines are still 200 lines.
    let no_newline = lines(200).trim_end().to_owned();
    assert!(
        !f.show(no_newline.as_bytes(), b"", 0)
            .text
            .contains("truncated")
    );
    let over = f.show(lines(201).as_bytes(), b"", 0);
    assert!(over.text.contains("Output truncated"), "{}", over.text);
    assert!(over.text.starts_with("1\n2\n"));
    assert!(
        over.text
            .contains("\n30\n[... lines 31-141 of 201 not shown")
    );
    assert!(over.text.contains("\n142\n"));
    assert!(over.text.contains("\n201\nOutput truncated."));
    assert!(!over.is_error);
}

#[test]
fn byte_threshold() {
    let f = Fixture::new();
    let at = vec![b'a'; 51_200];
    let answer = f.show(&at, b"", 0);
    assert!(!answer.text.contains("truncated"));
    assert_eq!(answer.text.len(), 51_200 + "\n[exit:0 | 5ms]".len());
    // One line too long: its ends, and the file holds it all.
    let over = vec![b'a'; 51_201];
    let answer = f.show(&over, b"", 0);
    let (shown, rest) = answer.text.split_once("\nOutput truncated.").unwrap();
    assert_eq!(
        shown,
        format!("{}…[50701 bytes cut]…{}", "a".repeat(250), "a".repeat(250))
    );
    assert!(rest.contains(&f.path("cmd-1.txt")));
    assert_eq!(std::fs::read(f.path("cmd-1.txt")).unwrap(), over);
}

#[test]
fn one_huge_line_is_cut_on_a_character_boundary() {
    let f = Fixture::new();
    // "é" is two bytes: 249 bytes of 'a' put one across the 250-byte cut.
    let mut line = vec![b'a'; 249];
    for _ in 0..500_000 {
        line.extend_from_slice("é".as_bytes());
    }
    let answer = f.show(&line, b"", 0);
    let (shown, _) = answer.text.split_once("\nOutput truncated.").unwrap();
    let (start, end) = shown.split_once("…[").unwrap();
    assert_eq!(start, "a".repeat(249));
    assert!(end.ends_with(&"é".repeat(125)), "{end}");
    // Lines past the first: each cut in its middle, on character boundaries.
    let mut text = String::new();
    for n in 0..300 {
        text.push_str(&format!("{n} {}\n", "✓".repeat(1000)));
    }
    let answer = f.show(text.as_bytes(), b"", 0);
    assert!(answer.text.lines().count() < 200);
    assert!(answer.text.len() < 51_200);
    for line in answer.text.lines().filter(|l| l.contains('✓')) {
        assert!(line.len() <= 500 + 30, "{}", line.len());
        assert!(line.contains(" bytes cut]…✓"), "{line}");
    }
}

#[test]
fn invalid_utf8_shows_replacement_characters() {
    let f = Fixture::new();
    let answer = f.show(b"caf\xe9 ok\n", b"", 0);
    assert_eq!(answer.text, "caf\u{FFFD} ok\n\n[exit:0 | 5ms]");
}

#[test]
fn binary_guard_nul_anywhere() {
    let f = Fixture::new();
    let mut bytes = vec![b'a'; 100_000];
    bytes[99_999] = 0;
    let answer = f.show(&bytes, b"", 0);
    let file = f.path("cmd-1.bin");
    assert_eq!(
        answer.text,
        format!(
            "Binary output detected (100,000 bytes): {file}. Use: file {file} or: xxd {file} \
             | head -20\n[exit:0 | 5ms]"
        )
    );
    assert!(answer.is_error);
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(std::fs::read_dir(f.dir.path()).unwrap().count(), 1);
    // Short binary output, and output judged binary only at its end, are kept too.
    let short = f.show(b"a\0b", b"", 0).text;
    assert!(
        short.starts_with("Binary output detected (3 bytes): "),
        "{short}"
    );
    assert_eq!(std::fs::read(f.path("cmd-2.bin")).unwrap(), b"a\0b");
    let control = f.show(b"\x01\x02\x03 abc\n", b"", 0).text;
    assert!(control.contains(&f.path("cmd-3.bin")), "{control}");
    assert_eq!(
        std::fs::read(f.path("cmd-3.bin")).unwrap(),
        b"\x01\x02\x03 abc\n"
    );
}

#[test]
fn grouped_numbers() {
    for (n, text) in [
        (0, "0"),
        (999, "999"),
        (4096, "4,096"),
        (52_428_800, "52,428,800"),
    ] {
        assert_eq!(grouped(n), text);
    }
}

#[test]
fn binary_guard_control_ratio_boundary() {
    let f = Fixture::new();
    let sample = |control: usize, len: usize| {
        let mut bytes = vec![b'a'; len];
        bytes[..control].fill(0x01);
        bytes
    };
    // 1024-byte sample: 102 control bytes is 9.96%, 103 is 10.06%.
    assert!(!f.show(&sample(102, 2000), b"", 0).is_error);
    assert!(f.show(&sample(103, 2000), b"", 0).is_error);
    // A short stream is judged on what it has: 10 of 100 is not more than 10%.
    assert!(!f.show(&sample(10, 100), b"", 0).is_error);
    assert!(f.show(&sample(11, 100), b"", 0).is_error);
    // Control bytes past the first 1024 do not count.
    let mut late = vec![b'a'; 1024];
    late.extend(std::iter::repeat_n(0x01, 5000));
    assert!(!f.show(&late, b"", 0).text.starts_with("Binary"));
    // TAB, LF and CR are text.
    assert!(
        !f.show(&b"\t\r\n".repeat(300), b"", 0)
            .text
            .starts_with("Binary")
    );
}

#[test]
fn stderr_always_or_only_on_failure() {
    let f = Fixture::new();
    assert_eq!(
        f.show(b"out\n", b"warning\n", 0).text,
        "out\n\n--- stderr ---\nwarning\n\n[exit:0 | 5ms]"
    );
    let quiet = f.output(b"out\n", b"warning\n", 0);
    assert_eq!(
        show(&quiet, 5, 300, CAP, Stderr::OnFailure).text,
        "out\n\n[exit:0 | 5ms]"
    );
    let failed = f.output(b"out\n", b"boom\n", 1);
    assert_eq!(
        show(&failed, 5, 300, CAP, Stderr::OnFailure).text,
        show(&failed, 5, 300, CAP, Stderr::Always).text
    );
    assert_eq!(
        f.show(b"out\n", b"boom\n", 1).text,
        "out\n\n--- stderr ---\nboom\n\n[exit:1 | 5ms]"
    );
    assert_eq!(f.show(b"out\n", b"", 3).text, "out\n\n[exit:3 | 5ms]");
    assert!(
        !f.show(b"", b"boom", 1).is_error,
        "a non-zero exit is not a tool error"
    );
}

#[test]
fn long_stderr_shows_head_key_lines_and_tail() {
    let f = Fixture::new();
    let mut stderr = String::new();
    for n in 1..=5000 {
        stderr.push_str(&format!("compiling unit {n}\n"));
        if n % 1000 == 0 {
            stderr.push_str(&format!("unit{n}.c:12:5: error: bad thing {n}\n"));
        }
    }
    let answer = f.show(b"", stderr.as_bytes(), 1);
    let text = &answer.text;
    let path = f.path("stderr-1.txt");
    assert!(
        text.starts_with("\n--- stderr ---\ncompiling unit 1\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\ncompiling unit 30\n[... lines 31-4945 of 5005 not shown; the error and failure \
         lines among them, by line number:]\n1001:unit1000.c:12:5: error: bad thing 1000\n\
         2002:unit2000.c:12:5: error: bad thing 2000\n3003:unit3000.c:12:5: error: bad \
         thing 3000\n4004:unit4000.c:12:5: error: bad thing 4000\n[... end of lines \
         31-4945: sed -n '31,4945p' {path}]\ncompiling unit 4942\n"
        )),
        "{text}"
    );
    assert!(text.ends_with("bad thing 5000\n\n[exit:1 | 5ms]"), "{text}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[1000], "unit1000.c:12:5: error: bad thing 1000");
    assert_eq!(std::fs::read_to_string(path).unwrap(), stderr);
    assert!(text.len() < 16_000);

    // One huge line: both ends within their byte budgets.
    let huge = "e".repeat(1_000_000);
    let answer = f.show(b"", huge.as_bytes(), 1);
    assert!(answer.text.len() < 700, "{}", answer.text.len());
    assert!(
        answer.text.contains("…[999500 bytes cut]…"),
        "{}",
        answer.text
    );
}

#[test]
fn a_flood_of_key_lines_is_counted_with_the_grep_that_finds_them() {
    let f = Fixture::new();
    let stdout: String = (1..=3000)
        .map(|n| format!("src/m{n}.rs:1:1: error: broken {n}\n"))
        .collect();
    let answer = f.show(stdout.as_bytes(), b"", 1);
    let text = &answer.text;
    let listed = text
        .lines()
        .filter(|l| l.contains(": error: broken"))
        .count();
    assert!(listed > 100, "{listed}");
    let more = 3000 - listed as u64;
    let file = f.path("cmd-1.txt");
    assert!(
        text.contains(&format!("[... and {more} more: grep -nE '")),
        "{text}"
    );
    assert!(text.contains(&format!("' {file}]\n")), "{text}");
    assert!(text.lines().count() <= 200, "{}", text.lines().count());
    assert!(text.len() <= 51_200);
    // The grep command finds every key line of the file.
    let pattern = keylines::grep_pattern();
    let grep = std::process::Command::new("grep")
        .args(["-cE", &pattern, &file])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&grep.stdout).trim(), "3000");
}

#[test]
fn stopped_commands_keep_their_output() {
    let f = Fixture::new();
    let mut out = f.output(b"step 1\n", b"", TIMEOUT);
    out.ending = Ending::TimedOut;
    assert_eq!(
        show(&out, 1003, 1, CAP, Stderr::Always).text,
        "ERROR: Command timed out after 1 s.\nstep 1\n\n[exit:124 | 1003ms]"
    );
    let mut silent = f.output(b"", b"", TIMEOUT);
    silent.ending = Ending::TimedOut;
    let answer = show(&silent, 1003, 300, CAP, Stderr::Always);
    assert_eq!(
        answer.text,
        "ERROR: Command timed out after 300 s.\n[exit:124 | 1003ms]"
    );
    assert!(answer.is_error);
}

const TIMEOUT: i32 = crate::exit::TIMEOUT;

#[test]
fn cap_keeps_the_head_and_says_so() {
    let f = Fixture::new();
    let mut out = f.output(b"", b"", 137);
    out.stdout = Captured::from_bytes(Stream::Stdout, &b"y\n".repeat(1000), 1024, &f.spiller);
    assert!(out.stdout.capped);
    assert_eq!(out.stdout.total_bytes, 1024);
    let answer = show(&out, 9, 300, 1024, Stderr::Always);
    assert!(
        answer
            .text
            .starts_with("y\n[previous line repeated 511 more times]\nOutput truncated."),
        "{}",
        answer.text
    );
    assert!(
        answer.text.ends_with(
            "\nOutput limit of 1 KB reached; the command was stopped.\n[exit:137 | 9ms]"
        )
    );
    assert!(answer.is_error);
}

#[test]
fn hidden_characters_are_made_visible() {
    let f = Fixture::new();
    let cases = [
        ("tag\u{E0041}\u{E007F} end\n", "tag<U+E0041><U+E007F> end\n"),
        (
            "bidi \u{202E}gnp.exe\u{202C}\n",
            "bidi <U+202E>gnp.exe<U+202C>\n",
        ),
        ("iso \u{2066}x\u{2069}\n", "iso <U+2066>x<U+2069>\n"),
        (
            "zw\u{200B}s\u{200C}\u{200D}\u{2060}\n",
            "zw<U+200B>s<U+200C><U+200D><U+2060>\n",
        ),
        (
            "\u{FEFF}bom at start\u{FEFF}\n",
            "\u{FEFF}bom at start<U+FEFF>\n",
        ),
        (
            "del\u{7F} c1\u{85}\u{9B}\n",
            "del<U+007F> c1<U+0085><U+009B>\n",
        ),
        ("bell\u{7} ff\u{c}\n", "bell<U+0007> ff<U+000C>\n"),
        (
            "plain, tabs\tand ünïcödé stay\n",
            "plain, tabs\tand ünïcödé stay\n",
        ),
    ];
    for (raw, shown) in cases {
        assert_eq!(
            f.show(raw.as_bytes(), b"", 0).text,
            format!("{shown}\n[exit:0 | 5ms]"),
            "{raw:?}"
        );
    }
    // In stderr, in rendered text, and in the lines of a long output too.
    let answer = f.show(b"", "\x1b[31mred\u{202E}x\x1b[0m\n".as_bytes(), 1);
    assert!(answer.text.contains("red<U+202E>x\n"), "{}", answer.text);
    let long: String = (0..300).map(|n| format!("{n}\u{200B}\n")).collect();
    let answer = f.show(long.as_bytes(), b"", 0);
    assert!(answer.text.contains("299<U+200B>\n"));
    assert!(!answer.text.contains('\u{200B}'));
    // The file keeps the raw bytes.
    assert_eq!(std::fs::read_to_string(f.path("cmd-1.txt")).unwrap(), long);
    // FF, VT, SO and SI are text to the binary guard.
    let answer = f.show(&b"page\x0c\x0b\x0e\x0f\n".repeat(40), b"", 0);
    assert!(!answer.is_error, "{}", answer.text);
}

#[test]
fn failure_and_sizes() {
    assert_eq!(
        failure("working directory /nope does not exist", 0).text,
        "ERROR: Execution failed: working directory /nope does not exist\n[exit:1 | 0ms]"
    );
    assert_eq!(human_bytes(52_428_800), "50 MB");
    assert_eq!(human_bytes(2048), "2 KB");
    assert_eq!(human_bytes(1000), "1000 bytes");
}

#[test]
fn binary_output_that_cannot_be_kept_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    // A state dir under a regular file cannot be made, whoever runs this.
    let spiller = Spiller::new(Arc::new(crate::state::StateDir::open(file.join("state"))));
    let out = Output {
        stdout: Captured::from_bytes(Stream::Stdout, b"a\0b", CAP, &spiller),
        stderr: Captured::default(),
        code: 0,
        ending: Ending::Exited,
        background: None,
        rest: None,
        out_of_memory: None,
    };
    let answer = show(&out, 5, 300, CAP, Stderr::Always);
    assert!(
        answer
            .text
            .starts_with("Binary output detected (3 bytes). It could not be saved: "),
        "{}",
        answer.text
    );
    assert!(answer.is_error);
}

mod progress {
    use super::*;

    fn last(writes: &[(crate::capture::Stream, &[u8])]) -> Option<String> {
        let tail = crate::tail::Tail::default();
        for (stream, bytes) in writes {
            tail.push(*stream, bytes);
        }
        tail.last().and_then(|bytes| last_line(&bytes))
    }

    #[test]
    fn the_last_line_of_the_stream_that_wrote_last_as_the_answer_shows_it() {
        use crate::capture::Stream::{Stderr, Stdout};
        assert_eq!(last(&[]), None);
        assert_eq!(last(&[(Stdout, b"\n\n")]), None);
        assert_eq!(last(&[(Stdout, b"one\ntwo\n")]).as_deref(), Some("two"));
        assert_eq!(
            last(&[(Stdout, b"one\npart"), (Stdout, b"ial")]).as_deref(),
            Some("partial")
        );
        assert_eq!(
            last(&[(Stdout, b"out\n"), (Stderr, b"warning: x\n\n")]).as_deref(),
            Some("warning: x")
        );
        assert_eq!(
            last(&[(Stdout, b"\x1b[32m 10%\r 50%\r\x1b[0m 90%")]).as_deref(),
            Some(" 90%")
        );
        assert_eq!(
            last(&[(Stdout, "tag\u{e0041}\n".as_bytes())]).as_deref(),
            Some("tag<U+E0041>")
        );
        let long = "x".repeat(10_000);
        assert_eq!(last(&[(Stdout, long.as_bytes())]), Some("x".repeat(200)));
        let many: Vec<u8> = (0..2000)
            .flat_map(|n| format!("line {n}\n").into_bytes())
            .collect();
        assert_eq!(last(&[(Stdout, &many)]).as_deref(), Some("line 1999"));
    }
}

#[test]
fn an_unaudited_call_says_so_before_its_footer() {
    let f = Fixture::new();
    let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
    let mut answer = f.show(b"made\n", b"", 0);
    unaudited(&mut answer, &full);
    assert_eq!(
        answer.text,
        "made\n\nWARNING: this call's audit row could not be written (No space left on device \
         (os error 28)); the server's log holds it.\n[exit:0 | 5ms]"
    );
    let mut answer = blocked();
    unaudited(&mut answer, &full);
    assert!(
        answer.text.starts_with(BLOCKED) && answer.text.ends_with("holds it.\n[exit:-1 | 0ms]"),
        "{}",
        answer.text
    );
}

#[test]
fn every_failing_tests_name_is_shown_past_what_the_key_lines_fit() {
    // `go test -v`'s shape (tests/corpus/logs/go-test-v-long-46-failures.out): 150
    // failing tests among 3000 passing ones, each with its message before its marker.
    let f = Fixture::new();
    let mut stdout = String::new();
    for n in 1..=3000 {
        stdout.push_str(&format!(
            "=== RUN   TestSum{n}\n    sum_test.go:{n}: summing {n}\n--- PASS: TestSum{n} (0.00s)\n"
        ));
        if n % 20 == 7 {
            stdout.push_str(&format!(
                "=== RUN   TestAvg{n}\n    sum_test.go:{}: Avg([{n} {}]) = {n}, want {}\n--- FAIL: TestAvg{n} (0.00s)\n",
                n + 5000,
                n + 1,
                n + 1
            ));
        }
    }
    stdout.push_str("FAIL\nFAIL\texample.com/calc\t0.048s\nFAIL\n");
    let answer = f.show(stdout.as_bytes(), b"", 1);
    let text = &answer.text;
    for n in (1..=3000).filter(|n| n % 20 == 7) {
        assert!(text.contains(&format!("TestAvg{n} ")), "TestAvg{n}: {text}");
        // With the place its failure names.
        assert!(
            text.contains(&format!("sum_test.go:{}", n + 5000)),
            "{n}: {text}"
        );
    }
    let lists: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("[... failing tests among them not listed above ("))
        .collect();
    assert_eq!(lists.len(), 1, "{text}");
    assert!(
        lists[0].contains("TestAvg1507 (sum_test.go:6507), TestAvg1527 (sum_test.go:6527)"),
        "{}",
        lists[0]
    );
    assert!(text.lines().count() <= 200 && text.len() <= 16 * 1024 + 20 * 1024);

    // Past the list's bytes, the names left are counted (the markers past the names
    // a digest keeps too).
    let mut stdout = String::new();
    for n in 1..=3000 {
        stdout.push_str(&format!("--- FAIL: TestLongerNameNumber{n} (0.00s)\n"));
    }
    let answer = f.show(stdout.as_bytes(), b"", 1);
    let list = answer
        .text
        .lines()
        .find(|l| l.starts_with("[... failing tests among them not listed above ("))
        .unwrap_or_else(|| panic!("{}", answer.text));
    assert!(list.len() <= FAILED_LIST_BYTES + 100, "{}", list.len());
    let listed = list.matches("TestLongerNameNumber").count();
    let (_, more) = list.rsplit_once(" … and ").unwrap();
    let more: usize = more.trim_end_matches(" more]").parse().unwrap();
    let in_rows = answer
        .text
        .lines()
        .filter(|l| l.contains(":--- FAIL: ") || l.starts_with("--- FAIL: "))
        .count();
    assert_eq!(listed + more + in_rows, 3000, "{}", answer.text);
}

#[test]
fn a_key_line_the_head_shows_has_its_locator_listed_when_left_out() {
    // jest's stderr (tests/corpus/logs/jest-43-failures.err): a failure in the head,
    // its stack frame just past it.
    let f = Fixture::new();
    let mut stderr: String = (1..=10)
        .map(|n| format!("  ✓ adds {n} items (1 ms)\n"))
        .collect();
    stderr.push_str("FAIL src/cart5.test.js\n  ● cart 5 › totals an empty cart\n\n");
    for n in 1..=18 {
        stderr.push_str(&format!("    Expected: {n}\n"));
    }
    stderr.push_str("      at Object.toEqual (src/cart5.test.js:54:58)\n");
    for n in 1..=300 {
        stderr.push_str(&format!("  ✓ totals {n} items (1 ms)\n"));
    }
    let answer = f.show(b"", stderr.as_bytes(), 1);
    let text = &answer.text;
    assert!(
        text.contains("\n32:      at Object.toEqual (src/cart5.test.js:54:58)\n"),
        "{text}"
    );
    // The key line itself is not listed again.
    assert!(!text.contains("\n12:  ● cart 5"), "{text}");
}

#[test]
fn the_rare_kinds_of_diagnostics_of_one_severity_are_shown_with_the_tally() {
    // The shape of cppcheck's `--template=gcc` run in the corpus: every line says
    // `warning:`, the two real errors are the ids seen once.
    let f = Fixture::new();
    let mut err = String::new();
    for n in 1..=140 {
        err.push_str(&format!(
            "src/part{n}.c:2:0: warning: The function 'sum_{n}' is never used. [unusedFunction]\n^\n"
        ));
        if n == 60 {
            err.push_str("src/part58.c:4:57: warning: Memory leak: p [memleak]\n^\n");
        }
    }
    let answer = f.show(b"", err.as_bytes(), 0).text;
    assert!(
        answer.contains("\n121:src/part58.c:4:57: warning: Memory leak: p [memleak]\n"),
        "{answer}"
    );
    assert!(
        answer.contains(
            "[... 141 diagnostics `path:line: severity: message [id]` in the whole output, \
             by kind (count, first at): warning [unusedFunction] 140 (line 1), \
             warning [memleak] 1 (line 121)]\n"
        ),
        "{answer}"
    );
    assert!(
        !answer.contains("no error or failure among them"),
        "{answer}"
    );
}

#[test]
fn a_stylish_reports_rows_show_their_files_name_which_costs_no_line() {
    // stylelint's report (tests/corpus/logs/stylelint-errors.err), one error row in
    // each of 150 files: the key line budget (80 lines) shows as many rows as it
    // would without the names, each under the name of its file (in the head and the
    // tail, a warning row between them).
    let f = Fixture::new();
    let stderr: String = (1..=150)
        .map(|n| {
            format!(
                "src/components/card{n}.css\n  2:12  ⚠  Disallowed unit  length-zero-no-unit\n  \
                 5:3   ✖  Unknown property \"widht{n}\"  property-no-unknown\n\n"
            )
        })
        .collect();
    let answer = f.show(b"", stderr.as_bytes(), 2);
    let lines: Vec<&str> = answer.text.lines().collect();
    let rows: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("Unknown property"))
        .collect();
    assert!(rows.len() >= 100, "{}\n{}", rows.len(), answer.text);
    for &i in &rows {
        let n = lines[i]
            .split("widht")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let name = format!("src/components/card{n}.css");
        assert!(
            lines[i.saturating_sub(3)..i]
                .iter()
                .any(|l| l.ends_with(&name)),
            "{}\n{}",
            lines[i],
            answer.text
        );
    }
}

#[test]
fn a_failing_runs_odd_lines_are_shown_a_passing_runs_are_not() {
    // sqlfluff's report (tests/corpus/logs/sqlfluff-lint.out): rows of a few rules
    // again and again; the rows of the failing file are of rules seen once.
    let f = Fixture::new();
    let mut out = String::new();
    for n in 1..=120 {
        out.push_str(&format!(
            "== [queries/report_{n:03}.sql] PASS\n\
             L:   1 | P:   1 | LT09 | WARNING: Select targets should be on a new line.\n\
             L:   3 | P:  15 | LT01 | WARNING: Expected only single space.\n"
        ));
        if n == 77 {
            out.push_str(
                "L:   4 | P:  30 | RF02 | Unqualified reference found in select.\n\
                 L:   4 | P:  50 | AL01 | Implicit aliasing of table.\n",
            );
        }
    }
    let row = "L:   4 | P:  30 | RF02 | Unqualified reference found in select.";
    let failed = f.show(out.as_bytes(), b"", 1).text;
    assert!(failed.contains(&format!(":{row}\n")), "{failed}");
    assert!(
        failed.contains("the lines unlike the many like them, by line number:]"),
        "{failed}"
    );
    let passed = f.show(out.as_bytes(), b"", 0).text;
    assert!(!passed.contains(row), "{passed}");
}

#[test]
fn a_view_stays_within_its_bytes_however_long_its_lines() {
    // Long head and tail lines, many key lines and failing tests: the view gives
    // the key lines what head and tail leave of it.
    let f = Fixture::new();
    let long = "x".repeat(480);
    let mut out = String::new();
    for n in 0..2000 {
        if n % 10 == 0 {
            out.push_str(&format!("--- FAIL: TestCase{n} ({long})\n"));
        } else {
            out.push_str(&format!("ok {n} {long}\n"));
        }
    }
    let answer = f.show(out.as_bytes(), b"", 1).text;
    assert!(
        answer.len() <= BUDGET.view_bytes + 1024,
        "{}\n{answer}",
        answer.len()
    );
    assert!(answer.contains("--- FAIL: TestCase10 "), "{answer}");
}

#[test]
fn a_passing_runs_odd_lines_are_shown_when_they_warn() {
    // mkdocs without --strict (tests/corpus/logs/mkdocs-warnings-verbose.err): it
    // succeeds, and its one `WARNING` among 400 `DEBUG` lines is a finding.
    let f = Fixture::new();
    let mut err = String::new();
    for n in 1..=400 {
        err.push_str(&format!("DEBUG   -  Reading: guide/chapter{n}.md\n"));
        if n == 140 {
            err.push_str(
                "WARNING -  Doc file 'guide/chapter14.md' contains a link 'refunds.md', but \
                 the target is not found among documentation files.\n",
            );
        }
    }
    err.push_str("INFO    -  Documentation built in 0.66 seconds\n");
    let answer = f.show(b"", err.as_bytes(), 0).text;
    assert!(
        answer.contains(":WARNING -  Doc file 'guide/chapter14.md' contains a link"),
        "{answer}"
    );
}

#[test]
fn a_passing_runs_odd_record_is_shown_when_its_record_says_error() {
    // dependency-cruiser's JSON report (tests/corpus/logs/depcruise-errors-json.out):
    // it exits 0, and five of its 240 violations are errors, whose `"from"` names an
    // unusual file; their severity is a field some lines below it, less rare than the
    // thirty files imported once each.
    let f = Fixture::new();
    let mut out = String::from("{\n  \"violations\": [\n");
    for n in 1..=240 {
        let (from, severity) = match n {
            60 => ("src/core/total.js".to_owned(), "error"),
            // An error right after a record whose `"to"` is rare (96's).
            97 => (format!("src/features/f{}/part{n}.js", n % 7), "error"),
            _ if n % 40 == 0 => ("src/features/f1/part1.js".to_owned(), "error"),
            _ => (format!("src/features/f{}/part{n}.js", n % 7), "warn"),
        };
        let to = if n % 8 == 0 {
            // A name of letters alone, unlike any other.
            let once: String = [n / 26, n % 26]
                .iter()
                .map(|&c| char::from(b'a' + c as u8))
                .collect();
            format!("src/vendor/{once}.js")
        } else {
            format!("src/legacy/helper{}.js", n % 9)
        };
        out.push_str(&format!(
            "    {{\n      \"type\": \"dependency\",\n      \"from\": \"{from}\",\n      \
             \"to\": \"{to}\",\n      \"rule\": {{\n        \
             \"severity\": \"{severity}\",\n        \"name\": \"no-legacy\"\n      }}\n    }},\n"
        ));
    }
    out.push_str("  ]\n}\n");
    let answer = f.show(out.as_bytes(), b"", 0).text;
    assert!(
        answer.contains(":      \"from\": \"src/core/total.js\","),
        "{answer}"
    );
    // The next record's error is not the one before's.
    assert!(!answer.contains("src/vendor/ds.js"), "{answer}");
    // A field as rare, whose record says only warn, stays hidden.
    let warned = out.replace("\"severity\": \"error\"", "\"severity\": \"warn\"");
    let answer = f.show(warned.as_bytes(), b"", 0).text;
    assert!(!answer.contains("src/core/total.js"), "{answer}");
}

#[test]
fn a_one_line_json_reports_odd_records_are_shown_under_its_ends() {
    // RuboCop's `--format json` (tests/corpus/logs/rubocop-offenses-json.out): one
    // line of 85 KB, its view its ends; the one `"error"` record is in its middle.
    let f = Fixture::new();
    let mut out = String::from(r#"{"metadata":{"rubocop_version":"1.39.0"},"files":["#);
    for n in 1..=500 {
        let (severity, message) = if n == 250 {
            (
                "error",
                "Lint/Debugger: Remove debugger entry point `byebug`.",
            )
        } else {
            (
                "convention",
                "Style/StringLiterals: Prefer single-quoted strings.",
            )
        };
        out.push_str(&format!(
            r#"{{"path":"lib/shop/item_{n}.rb","offenses":[{{"severity":"{severity}","message":"{message}","location":{{"line":5,"column":5}}}}]}},"#
        ));
    }
    out.push_str(r#"{"path":"lib/z.rb","offenses":[]}],"summary":{"offense_count":500}}"#);
    assert!(out.len() > 51_200);
    let answer = f.show(out.as_bytes(), b"", 1).text;
    assert!(
        answer.contains("[records unlike the many like them, inside the long lines cut above:]"),
        "{answer}"
    );
    assert!(
        answer.lines().any(|l| l.starts_with("1:")
            && l.contains("Remove debugger entry point `byebug`.")
            && l.ends_with("[in lib/shop/item_250.rb]")),
        "{answer}"
    );
    assert!(answer.len() < 4 * 1024, "{}\n{answer}", answer.len());
}

#[test]
fn a_diffs_files_are_listed_though_the_check_succeeded() {
    // `gofmt -d` (tests/corpus/logs/gofmt-diff.out) exits 0 and prints a diff of each
    // file it would change: the files are its findings.
    let f = Fixture::new();
    let mut out = String::new();
    for n in 1..=12 {
        out.push_str(&format!(
            "diff internal/orders/orders_{n}.go.orig internal/orders/orders_{n}.go\n\
             --- internal/orders/orders_{n}.go.orig\n+++ internal/orders/orders_{n}.go\n@@ -1,30 +1,40 @@\n"
        ));
        for k in 0..40 {
            out.push_str(&format!("-  total:=total+{k}\n+\ttotal := total + {k}\n"));
        }
    }
    let answer = f.show(out.as_bytes(), b"", 0).text;
    assert!(
        answer.contains("[the files the diff changes, among the lines not shown:]"),
        "{answer}"
    );
    for n in 2..=11 {
        let header =
            format!(":diff internal/orders/orders_{n}.go.orig internal/orders/orders_{n}.go\n");
        assert!(answer.contains(&header), "{n}: {answer}");
    }
}

/// A runner no rule knows (`nope N - …` for a failure) among 260 passing tests: its
/// failures' lines are shown as lines out of place, each with the frame under it
/// that names the test's place, and the places the other frames name are listed, the
/// rarest first. A run that succeeded shows and lists none.
#[test]
fn a_failing_run_lists_the_places_named_only_in_lines_not_shown() {
    let f = Fixture::new();
    let mut log = String::new();
    for n in 1..=260 {
        match n {
            100 | 150 => {
                let (test, place) = if n == 100 {
                    ("cart rounds the total", "test/cart.test.js:37:5")
                } else {
                    ("tax applies per line", "test/tax.test.js:12:9")
                };
                log.push_str(&format!("nope {n} - {test}\n"));
                log.push_str(&format!("    at Object.<anonymous> ({place})\n"));
                log.push_str("    at run (node_modules/runner/lib/run.js:120:10)\n");
                log.push_str("    at next (node_modules/runner/lib/run.js:88:3)\n");
            }
            _ => log.push_str(&format!("ok {n} - case {n} holds\n")),
        }
    }
    log.push_str("# pass 258, fail 2\n");
    let answer = f.show(log.as_bytes(), b"", 1).text;
    assert!(
        answer.contains(
            "100:nope 100 - cart rounds the total\n\
             101:    at Object.<anonymous> (test/cart.test.js:37:5)\n"
        ),
        "{answer}"
    );
    assert!(
        answer.contains(
            "[... places named in the lines not shown, the rarest first: \
             node_modules/runner/lib/run.js:120:10, node_modules/runner/lib/run.js:88:3]\n"
        ),
        "{answer}"
    );
    let answer = f.show(log.as_bytes(), b"", 0).text;
    assert!(!answer.contains("places named"), "{answer}");
    assert!(!answer.contains("nope 100"), "{answer}");
}

/// A place the view shows already (in its last lines) is not listed again, nor is a
/// place only a longer one holds taken for it (`a.c:1` is not in `a.c:12`, `main.rs:4`
/// not in `domain.rs:4`).
#[test]
fn places_the_view_shows_are_not_listed_again() {
    let f = Fixture::new();
    let mut log = String::new();
    for n in 1..=240 {
        log.push_str(&format!("checked part {n}\n"));
        if n == 120 {
            log.push_str("bad part: src/a.c:1 and src/b.c:7, main.rs:4\n");
        }
    }
    // A key line: the line out of place is not shown for it.
    log.push_str("error: first bad part was src/a.c:12, see src/b.c:7 and domain.rs:4\n");
    let answer = f.show(log.as_bytes(), b"", 1).text;
    assert!(
        answer.contains(
            "[... places named in the lines not shown, the rarest first: src/a.c:1, main.rs:4]\n"
        ),
        "{answer}"
    );
}

/// Two streams too long to show whole, each naming hundreds of places in long lines:
/// the lists of places keep the answer within the view of one stream shown alone.
#[test]
fn the_lists_of_places_keep_two_views_within_one() {
    let f = Fixture::new();
    let stream = |name: &str| {
        (1..=600)
            .map(|n| format!("{name}: error: step {n} failed at lib/{name}/part{n}.c:{n}:2\n"))
            .collect::<String>()
    };
    let answer = f
        .show(stream("out").as_bytes(), stream("err").as_bytes(), 1)
        .text;
    assert!(
        answer.contains("places named in the lines not shown"),
        "{answer}"
    );
    assert!(
        answer.len() <= BUDGET.view_bytes + 1024,
        "{} bytes:\n{answer}",
        answer.len()
    );
}

#[test]
fn a_stdout_view_beside_a_stderr_shown_whole_keeps_the_answer_within_16_kb() {
    // A build through make: its commands on stdout, 1,000 lines; its compiler's
    // warnings and errors on stderr, 150 lines and 14 KB, shown whole.
    let f = Fixture::new();
    let mut stdout = String::new();
    for n in 1..=1000 {
        stdout.push_str(&format!(
            "tcc -Wall -c src/module_{n:03}.c -o build/module_{n:03}.o   # compiling the {n}th unit\n"
        ));
        if n == 500 {
            stdout.push_str("make: *** [Makefile:12: build/module_500.o] Error 1\n");
        }
    }
    let mut stderr = String::new();
    for n in 1..=150 {
        stderr.push_str(&format!(
            "src/module_{n:03}.c:41: warning: assignment from incompatible pointer type in the rates table, row {n}\n"
        ));
    }
    stderr.push_str("src/module_500.c:12: error: 'total' undeclared\n");
    assert!((13_000..16_000).contains(&stderr.len()), "{}", stderr.len());
    let answer = f.show(stdout.as_bytes(), stderr.as_bytes(), 2);
    let text = &answer.text;
    assert!(text.len() <= 16 * 1024, "{}", text.len());
    assert!(
        text.contains(&format!("\n--- stderr ---\n{stderr}")),
        "{text}"
    );
    assert!(
        text.contains("501:make: *** [Makefile:12: build/module_500.o] Error 1\n"),
        "{text}"
    );
    // A small stderr leaves stdout's view as it is alone.
    let alone = f.show(stdout.as_bytes(), b"", 2).text;
    let beside = f.show(stdout.as_bytes(), b"one warning\n", 2).text;
    let view = |t: &str, n: u32| {
        t[..t.find("\nOutput truncated").unwrap()].replace(&f.path(&format!("cmd-{n}.txt")), "FILE")
    };
    assert_eq!(view(&beside, 3), view(&alone, 2));
}

#[test]
fn a_view_cut_small_keeps_a_key_line_and_its_lists_within_the_answer() {
    // Found in review: beside 14 KB of stderr shown whole, a diff's list of files and
    // long first and last lines kept the answer past 16 KB or its one key line out;
    // beside a stdout shown whole, stderr's view takes what is left too.
    let f = Fixture::new();
    let mut stderr = String::new();
    for n in 1..=140 {
        stderr.push_str(&format!(
            "src/module_{n:03}.c:41: warning: assignment from incompatible pointer type here\n"
        ));
    }
    let mut diff = String::new();
    for n in 1..=120 {
        diff.push_str(&format!(
            "diff --git a/src/file_{n:03}.rs b/src/file_{n:03}.rs\n--- a/src/file_{n:03}.rs\n\
             +++ b/src/file_{n:03}.rs\n@@ -1 +1 @@\n-old line {n}\n+new line {n}\n"
        ));
    }
    let answer = f.show(diff.as_bytes(), stderr.as_bytes(), 1).text;
    assert!(answer.len() <= 16 * 1024, "{}", answer.len());
    let flags = "-O2 -Wall -Wextra ".repeat(24);
    let mut long = String::new();
    for n in 1..=400 {
        long.push_str(&format!("gcc {flags}-c src/unit_{n:03}.c\n"));
        if n == 200 {
            long.push_str("make: *** [Makefile:12: build/unit_200.o] Error 1\n");
        }
    }
    let answer = f.show(long.as_bytes(), stderr.as_bytes(), 2).text;
    assert!(
        answer.contains("201:make: *** [Makefile:12: build/unit_200.o] Error 1\n"),
        "{answer}"
    );
    let whole: String = (1..=120)
        .map(|n| format!("checked module {n:03} of the shop\n"))
        .collect();
    let mut errors = String::new();
    for n in 1..=3000 {
        errors.push_str(&format!("src/m{n}.c:4:5: error: {}\n", "x".repeat(120)));
    }
    let answer = f.show(whole.as_bytes(), errors.as_bytes(), 1).text;
    assert!(answer.len() <= 16 * 1024, "{}", answer.len());
    assert!(answer.starts_with(&whole), "{answer}");
    assert_eq!(
        BUDGET.half().within(100).view_bytes,
        BUDGET.half().view_bytes / 16
    );
    let zero = Budget {
        view_bytes: 0,
        ..BUDGET
    };
    assert_eq!(zero.within(100).view_bytes, 0);
}
