use serde_json::json;

use crate::support::{Options, Server, is_error, mask_ms, text};

#[test]
fn the_five_examples_byte_for_byte() {
    let mut server = Server::start(Options::default());
    assert_eq!(
        mask_ms(&server.run("echo hello")),
        "hello\n\n[exit:0 | Xms]"
    );
    assert_eq!(
        mask_ms(&server.run("ls /nonexistent")),
        "\n--- stderr ---\nls: cannot access '/nonexistent': No such file or directory\n\n[exit:2 | Xms]"
    );
    assert_eq!(mask_ms(&server.run("true")), "\n[exit:0 | Xms]");
    let lines = |from: u32, to: u32| (from..=to).map(|n| format!("{n}\n")).collect::<String>();
    let file = server.state.join("cmd-1.txt");
    let file = file.display();
    assert_eq!(
        mask_ms(&server.run("seq 1 1000")),
        format!(
            "{}[... lines 31-940 of 1000 not shown, no error or failure among them: \
             sed -n '31,940p' {file}]\n{}Output truncated. Full output written to {file}\n\
             [exit:0 | Xms]",
            lines(1, 30),
            lines(941, 1000)
        )
    );
    let blocked = server.call("rm x");
    assert_eq!(
        text(&blocked),
        "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]"
    );
    assert!(is_error(&blocked));
}

#[test]
fn overflow_file_holds_everything_and_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("cmd-1.txt"), "keep me").unwrap();

    let mut first = Options::default().state(&state).start();
    let answer = first.run("seq 1 100000");
    assert!(
        answer.contains(&format!(
            "Full output written to {}",
            state.join("cmd-2.txt").display()
        )),
        "{answer}"
    );
    let full: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(state.join("cmd-2.txt")).unwrap(),
        full
    );
    assert_eq!(
        std::fs::read_to_string(state.join("cmd-1.txt")).unwrap(),
        "keep me"
    );

    // A second server on the same state dir takes the next free N.
    let mut second = Options::default().state(&state).start();
    let answer = second.run("seq 1 300");
    assert!(
        answer.contains(&format!(
            "Full output written to {}",
            state.join("cmd-3.txt").display()
        )),
        "{answer}"
    );
    let answer = first.run("seq 1 300");
    assert!(answer.contains("cmd-4.txt"), "{answer}");
}

#[test]
fn thresholds_through_the_binary() {
    let mut server = Server::start(Options::default());
    assert!(!server.run("seq 1 200").contains("truncated"));
    assert!(server.run("seq 1 201").contains("Output truncated"));
    assert!(
        !server
            .run("head -c 51200 /dev/zero | tr '\\0' a")
            .contains("truncated")
    );
    let over = server.run("head -c 51201 /dev/zero | tr '\\0' a");
    let (shown, _) = over.split_once("\nOutput truncated").unwrap();
    assert_eq!(
        shown,
        format!("{}…[50701 bytes cut]…{}", "a".repeat(250), "a".repeat(250))
    );
}

#[test]
fn a_huge_line_is_cut_on_a_character_boundary() {
    let mut server = Server::start(Options::default());
    // 51199 ASCII bytes, then two-byte characters: one straddles the cut.
    let answer = server
        .run("head -c 51199 /dev/zero | tr '\\0' a; for i in $(seq 1 200000); do printf 'é'; done");
    let (shown, hint) = answer
        .split_once("\nOutput truncated. Full output written to ")
        .unwrap();
    let (start, end) = shown.split_once("…[").unwrap();
    assert_eq!(start, "a".repeat(250));
    assert!(end.ends_with(&"é".repeat(125)), "{end}");
    assert!(hint.contains("cmd-1.txt"));
}

#[test]
fn invalid_utf8_and_binary() {
    let mut server = Server::start(Options::default());
    assert_eq!(
        mask_ms(&server.run("printf 'caf\\xe9\\n'")),
        "caf\u{FFFD}\n\n[exit:0 | Xms]"
    );
    let binary = server.call("printf 'a\\0b'");
    let file = server.state.join("cmd-1.bin");
    let file = file.display();
    assert_eq!(
        mask_ms(&text(&binary)),
        format!(
            "Binary output detected (3 bytes): {file}. Use: file {file} or: xxd {file} \
             | head -20\n[exit:0 | Xms]"
        )
    );
    assert!(is_error(&binary));
    assert_eq!(
        std::fs::read(server.state.join("cmd-1.bin")).unwrap(),
        b"a\0b"
    );
    // A long stream that turns binary late: its overflow file becomes the binary file,
    // with the N it had.
    let late = server.call("seq 1 100000; printf '\\0'");
    let mut full: Vec<u8> = (1..=100_000)
        .flat_map(|n| format!("{n}\n").into_bytes())
        .collect();
    full.push(0);
    let file = server.state.join("cmd-2.bin");
    assert!(
        text(&late).starts_with(&format!(
            "Binary output detected (588,896 bytes): {}.",
            file.display()
        )),
        "{}",
        text(&late)
    );
    assert_eq!(std::fs::read(&file).unwrap(), full);
    let spilled: Vec<_> = std::fs::read_dir(&server.state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    assert!(spilled.is_empty(), "{spilled:?}");
    // Bytes a terminal acts on (here ESC, then CR) before the binary ones start a
    // renderer: the binary output still keeps its file.
    let rendered_first =
        server.call("printf '\\033[1mbold\\r'; sleep 0.2; head -c 100000 /dev/urandom");
    let answer = text(&rendered_first);
    let file = server.state.join("cmd-3.bin");
    assert!(
        answer.starts_with(&format!(
            "Binary output detected (100,009 bytes): {}.",
            file.display()
        )),
        "{answer}"
    );
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 100_009);
}

#[test]
fn stderr_is_shown_after_success_too_and_bounded() {
    let mut server = Server::start(Options::default());
    assert_eq!(
        mask_ms(&server.run("echo out; echo warn >&2")),
        "out\n\n--- stderr ---\nwarn\n\n[exit:0 | Xms]"
    );
    assert_eq!(
        mask_ms(&server.run("echo out; echo bad >&2; exit 4")),
        "out\n\n--- stderr ---\nbad\n\n[exit:4 | Xms]"
    );
    // A command that writes no stderr answers as before.
    assert_eq!(mask_ms(&server.run("echo out")), "out\n\n[exit:0 | Xms]");
    for (code, n) in [(1, 1), (0, 2)] {
        let answer = server.run(&format!(
            "for i in $(seq 1 20000); do echo \"err $i\"; done >&2; exit {code}"
        ));
        assert!(
            answer.starts_with("\n--- stderr ---\nerr 1\nerr 2\n"),
            "{}",
            &answer[..60]
        );
        let file = server.state.join(format!("stderr-{n}.txt"));
        assert!(
            answer.contains(&format!(
                "\nerr 30\n[... lines 31-19940 of 20000 not shown, no error or failure among \
                 them: sed -n '31,19940p' {}]\nerr 19941\n",
                file.display()
            )),
            "{answer}"
        );
        assert!(mask_ms(&answer).ends_with(&format!("err 20000\n\n[exit:{code} | Xms]")));
        let full: String = (1..=20000).map(|n| format!("err {n}\n")).collect();
        assert_eq!(std::fs::read_to_string(file).unwrap(), full);
    }
}

#[test]
fn stderr_on_failure_only_keeps_the_original_rule() {
    for options in [
        Options::default().arg("--stderr").arg("on-failure"),
        Options::default().env("FORGE_BASH_STDERR", "on-failure"),
    ] {
        let mut server = options.start();
        assert_eq!(
            mask_ms(&server.run("echo out; echo warn >&2")),
            "out\n\n[exit:0 | Xms]"
        );
        assert_eq!(
            mask_ms(&server.run("echo out; echo bad >&2; exit 4")),
            "out\n\n--- stderr ---\nbad\n\n[exit:4 | Xms]"
        );
        // A long stderr of a successful command leaves no file behind.
        server.run("seq 1 1000 >&2");
        assert!(!server.state.join("stderr-1.txt").exists());
    }
}

#[test]
fn is_error_follows_the_spec() {
    let mut server = Options::default().timeout(1).start();
    let cases = [
        ("exit 5", false),
        ("rm x", true),
        ("printf '\\0'", true),
        ("sleep 3", true),
        ("true", false),
    ];
    for (command, expected) in cases {
        let response = server.call(command);
        assert_eq!(
            response["result"]["isError"],
            json!(expected),
            "{command}: {response}"
        );
    }
}

#[test]
fn the_model_reads_what_a_terminal_shows() {
    let mut server = Server::start(Options::default());
    let cases = [
        ("printf '\\033[31mred\\033[0m\\n'", "red\n"),
        ("printf 'a\\r\\nb\\r\\n'", "a\nb\n"),
        ("printf 'b\\bbo\\bol\\bld\\bd\\n'", "bold\n"),
        ("printf '_\\bX_\\bY\\n'", "XY\n"),
        (
            "printf 'get 10%%\\rget 100%%\\ndone\\n'",
            "get 100%\ndone\n",
        ),
        (
            "printf '\\033]8;;https://example.com\\033\\\\the link\\033]8;;\\033\\\\\\n'",
            "the link\n",
        ),
        ("printf 'col\\tumns\\n'", "col\tumns\n"),
    ];
    for (command, shown) in cases {
        let response = server.call(command);
        assert_eq!(
            mask_ms(&text(&response)),
            format!("{shown}\n[exit:0 | Xms]"),
            "{command}"
        );
        assert!(!crate::support::is_error(&response), "{command}");
    }
    // Forced colour from real tools is text, not binary.
    let answer = server.run("mkdir -p d && touch d/file && ls --color=always d");
    assert_eq!(mask_ms(&answer), "file\n\n[exit:0 | Xms]");
    let answer = server.run("grep --color=always o <<< 'foo'");
    assert_eq!(mask_ms(&answer), "foo\n\n[exit:0 | Xms]");
}

#[test]
fn a_progress_bar_shows_its_final_state_and_the_file_keeps_every_byte() {
    let mut server = Server::start(Options::default());
    // 20,000 redraws (about 300 KB raw), then 250 lines: the rendered text overflows.
    let command = "for i in $(seq 1 20000); do printf '\\rprogress %5d/20000' $i; done; \
                   printf '\\n'; seq 1 250";
    let answer = server.run(command);
    let mut lines = answer.lines();
    assert_eq!(lines.next(), Some("progress 20000/20000"));
    assert_eq!(lines.next(), Some("1"));
    let file = server.state.join("cmd-1.txt");
    assert!(answer.contains(&format!(
        "Output truncated. Full output written to {}",
        file.display()
    )));
    let raw = std::fs::read(&file).unwrap();
    assert!(raw.len() > 300_000, "{}", raw.len());
    assert!(raw.starts_with(b"\rprogress     1/20000\rprogress     2/20000"));
    assert!(raw.ends_with(b"\n249\n250\n"));

    // Redraws alone: one line to show and no file (the raw bytes only looked long).
    let answer = server.run(
        "for i in $(seq 1 20000); do printf '\\rprogress %5d/20000' $i; done; printf '\\ndone\\n'",
    );
    assert_eq!(
        mask_ms(&answer),
        "progress 20000/20000\ndone\n\n[exit:0 | Xms]"
    );
    assert!(!server.state.join("cmd-2.txt").exists());
}

#[test]
fn stderr_is_rendered_too_and_binary_is_still_binary() {
    let mut server = Server::start(Options::default());
    let answer = server
        .run("printf 'fetch 50%%\\rfetch 100%%\\n\\033[1;31merror:\\033[0m bad\\n' >&2; exit 3");
    assert_eq!(
        mask_ms(&answer),
        "\n--- stderr ---\nfetch 100%\nerror: bad\n\n[exit:3 | Xms]"
    );
    const BINARY: &str = "Binary output detected (";
    for command in [
        "printf 'a\\033[31m\\0b'",
        "cat /bin/true",
        "head -c 2000 /dev/urandom | gzip -c",
        "printf '\\x01\\x02\\x03\\x04 abc\\n'",
    ] {
        let answer = server.run(command);
        assert!(answer.starts_with(BINARY), "{command}: {answer:.80}");
    }
}

#[test]
fn a_long_failing_run_shows_its_failures_with_line_numbers_that_sed_finds() {
    let mut server = Server::start(Options::default());
    let script = "for i in $(seq 1 400); do echo \"test t$i ... ok\"; \
                  if [ $i = 150 ]; then echo 'test t_bad ... FAILED'; \
                  echo \"thread 't_bad' panicked at src/lib.rs:42:5:\"; fi; done; \
                  echo 'test result: FAILED. 400 passed; 1 failed'; exit 101";
    let answer = server.run(script);
    let file = server.state.join("cmd-1.txt");
    assert!(answer.starts_with("test t1 ... ok\n"), "{answer}");
    assert!(
        answer.contains(
            "the error and failure lines among them, by line number:]\n\
             151:test t_bad ... FAILED\n\
             152:thread 't_bad' panicked at src/lib.rs:42:5:\n"
        ),
        "{answer}"
    );
    assert!(
        answer.contains(
            "test t400 ... ok\ntest result: FAILED. 400 passed; 1 failed\nOutput truncated."
        ),
        "{answer}"
    );
    // The line numbers are the file's, as sed counts them.
    let line = server.run(&format!("sed -n '152p' {}", file.display()));
    assert_eq!(
        mask_ms(&line),
        "thread 't_bad' panicked at src/lib.rs:42:5:\n\n[exit:0 | Xms]"
    );
    assert!(answer.lines().count() <= 200 && answer.len() <= 51_200);
}

#[test]
fn hidden_characters_are_made_visible_and_the_file_keeps_them() {
    let mut server = Server::start(Options::default());
    assert_eq!(
        mask_ms(&server.run("printf 'a\\xe2\\x80\\xaeb\\xf3\\xa0\\x81\\x81c\\xe2\\x80\\x8bd\\n'")),
        "a<U+202E>b<U+E0041>c<U+200B>d\n\n[exit:0 | Xms]"
    );
    let answer =
        server.run("for i in $(seq 1 300); do printf 'line %d\\xe2\\x81\\xa6\\n' $i; done");
    assert!(answer.contains("line 300<U+2066>\n"), "{answer}");
    let raw = std::fs::read_to_string(server.state.join("cmd-1.txt")).unwrap();
    assert!(raw.ends_with("line 300\u{2066}\n"));
}

#[path = "corpus/eval.rs"]
pub mod eval;

/// The corpus of real logs: what the answer shows of each run's ground truth. Prints
/// the figures (run with --nocapture), now and before.
#[test]
fn the_corpus_meets_its_targets() {
    let report = eval::evaluate();
    eprintln!("{}", report.table());
    let now = &report.now;
    assert!(now.answers >= 70, "{}", now.answers);
    assert!(now.mean_bytes() <= 8.0 * 1024.0, "{}", report.table());
    // The largest overflow view; an output within 200 lines and 51,200 bytes is
    // shown whole, as the original shows it, whatever its size (Spectral's 27 KB).
    assert!(now.max_bytes <= 16 * 1024, "{}", report.table());
    // The families the rules were written from meet the targets, but for the runs whose
    // stdout the binary guard takes (`vite build --debug 2>&1` prints a regular
    // expression holding a NUL byte): their answer is the binary notice, which shows
    // none of their items.
    let seen = &report.seen;
    assert!(seen.item_share() >= 0.99, "{}", report.table());
    let families = &report.held_out_families;
    let binary: Vec<&str> = report
        .cases
        .iter()
        .filter(|(name, _, answer)| {
            !eval::of_family(name, families) && answer.starts_with("Binary output detected")
        })
        .map(|(name, _, _)| name.as_str())
        .collect();
    assert_eq!(binary, ["vite-build-error-debug-merged"]);
    let missed: Vec<&str> = report
        .cases
        .iter()
        .filter(|(name, seen, _)| {
            !eval::of_family(name, families)
                && (seen.looks_clean || seen.verdict_shown == Some(false))
        })
        .map(|(name, _, _)| name.as_str())
        .collect();
    // And nyc over mocha, whose verdict (`5 failing`, before nyc's coverage table)
    // holds no trigger word: a 27th one would slow the search of plain text threefold.
    assert_eq!(
        missed,
        [
            "nyc-mocha-fail",
            "nyc-mocha-fail-npm-test-merged",
            "vite-build-error-debug-merged"
        ],
        "{}",
        report.table()
    );
    // The families never looked at while the rules were written: the figures they
    // gave, held (see docs/long-output.md), not the targets, which they miss. The
    // twelve of the earlier passes give 122 of 123 items, the six of issue 40's eighth
    // pass's second set 103 of 104; the seven of its tenth pass still held out 56 of
    // 60; the seven of its eleventh pass 84 of 84; the seven of its twelfth pass still
    // held out 121 of 127; the 24 of its thirteenth pass 208 of 226, 121 of 130 and
    // 162 of 177; the 24 of its fourteenth pass 163 of 181, 172 of 181 and 131 of
    // 171 (as when first measured), with five failing runs that look clean: 1,443 of
    // 1,564 items in all. So the whole corpus gives 97.0%.
    let held = &report.held_out;
    assert!(held.answers >= 348, "{}", report.table());
    assert!(held.item_share() >= 0.92, "{}", report.table());
    assert_eq!(held.verdicts_shown, held.verdicts, "{}", report.table());
    assert!(held.clean_looking <= 5, "{}", report.table());
    assert!(held.mean_bytes() <= 8.0 * 1024.0, "{}", report.table());
    assert!(held.max_bytes <= 16 * 1024, "{}", report.table());
    assert!(now.item_share() >= 0.969, "{}", report.table());
    // Each stream's part of an answer is within 200 lines and 51,200 bytes: the
    // overflow view of a stream too long to show whole, or the stream whole (a whole
    // stdout beside the view of a long stderr may take the answer past 200 lines).
    for (name, _, answer) in &report.cases {
        for part in answer.split("\n--- stderr ---\n") {
            let lines = part.lines().count();
            assert!(
                part.len() <= 51_200 && lines <= 201,
                "{name}: {} bytes, {lines} lines",
                part.len()
            );
        }
    }
    // Before, the first 200 lines showed much less: the corpus is a real test.
    assert!(report.before.item_share() < 0.8, "{}", report.table());
}

#[test]
fn cursor_movement_shows_the_final_screen_and_line_numbers_stay_the_files() {
    let mut server = Server::start(Options::default());
    // Three bars redrawn 30 times with cursor up, then 300 lines, an error among them.
    let script = "printf 'a: 0%%\\nb: 0%%\\nc: 0%%\\n'; \
                  for p in $(seq 1 30); do printf '\\033[3A'; \
                  for l in a b c; do printf '\\033[2K\\r%s: %d%%\\n' $l $p; done; done; \
                  for i in $(seq 1 300); do echo \"step $i\"; \
                  if [ $i = 150 ]; then echo 'error: step 150 broke'; fi; done; exit 1";
    let answer = server.run(script);
    assert!(
        answer.starts_with("a: 30%\nb: 30%\nc: 30%\nstep 1\n"),
        "{answer}"
    );
    let file = server.state.join("cmd-1.txt");
    let (number, _) = answer
        .lines()
        .find_map(|l| l.strip_suffix(":error: step 150 broke").map(|n| (n, ())))
        .unwrap_or_else(|| panic!("{answer}"));
    let line = server.run(&format!("sed -n '{number}p' {}", file.display()));
    assert_eq!(mask_ms(&line), "error: step 150 broke\n\n[exit:0 | Xms]");
}

/// The rows of the key lines an answer lists, `line:text`.
fn key_rows(answer: &str) -> Vec<&str> {
    answer
        .lines()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| n.parse::<u64>().is_ok())
        })
        .collect()
}

#[test]
fn the_real_error_after_thousands_of_decoys_is_shown_with_the_first_ones() {
    let mut server = Server::start(Options::default());
    let answer = server.run(
        "for i in $(seq 1 3000); do echo \"error: decoy $i\"; done; \
         echo 'error: the real one'; seq 1 500; exit 1",
    );
    let file = server.state.join("cmd-1.txt");
    let rows = key_rows(&answer);
    assert_eq!(rows.first(), Some(&"31:error: decoy 31"), "{answer}");
    assert_eq!(rows.last(), Some(&"3001:error: the real one"), "{answer}");
    // Between the first and the last: the count of the rest and how to find them.
    let more = format!(
        " more: grep -nE '{}' {}]\n",
        forge_bash::keylines::grep_pattern(),
        file.display()
    );
    let (first, last) = answer.split_once(&more).expect(&answer);
    let count: usize = first.rsplit_once("[... and ").unwrap().1.parse().unwrap();
    assert!(last.starts_with("29"), "{last}");
    // Every key line is shown (the head shows decoys 1 to 30) or counted.
    assert_eq!(30 + rows.len() + count, 3001, "{answer}");
    assert!(answer.len() <= 16 * 1024, "{}", answer.len());
}

#[test]
fn identical_lines_of_different_failures_keep_their_own_entries() {
    let mut server = Server::start(Options::default());
    // The same message for three failures, two of them at the same place.
    let script = "for i in $(seq 1 300); do echo \"step $i\"; \
                  case $i in 100) f=a;; 150) f=b;; 200) f=a;; *) continue;; esac; \
                  echo '  error: expected 1 to equal 2'; \
                  echo \"      at Context.<anonymous> (test/$f.test.js:12:9)\"; done; exit 1";
    let answer = server.run(script);
    let rows = key_rows(&answer);
    assert_eq!(
        rows,
        [
            "101:  error: expected 1 to equal 2  [2 times, last at line 205]",
            "102:      at Context.<anonymous> (test/a.test.js:12:9)",
            "153:  error: expected 1 to equal 2",
            "154:      at Context.<anonymous> (test/b.test.js:12:9)",
        ],
        "{answer}"
    );
}

#[test]
fn go_test_shows_the_message_before_its_fail_line() {
    let mut server = Server::start(Options::default());
    // go test -v: the message comes before `--- FAIL:` and holds no failure word.
    let script = "for i in $(seq 1 150); do echo \"=== RUN   TestStep$i\"; \
                  if [ $i = 90 ]; then \
                  echo '    inventory_test.go:280: Oldest(5) = [a b], want [c d]'; \
                  echo \"--- FAIL: TestStep$i (0.00s)\"; \
                  else echo \"--- PASS: TestStep$i (0.00s)\"; fi; done; \
                  echo FAIL; printf 'FAIL\\texample.com/inventory\\t0.004s\\n'; exit 1";
    let answer = server.run(script);
    let rows = key_rows(&answer);
    assert!(
        rows.windows(2).any(|w| w
            == [
                "180:    inventory_test.go:280: Oldest(5) = [a b], want [c d]",
                "181:--- FAIL: TestStep90 (0.00s)",
            ]),
        "{answer}"
    );
}

#[test]
fn tap_failures_show_their_names_and_what_failed() {
    let mut server = Server::start(Options::default());
    // node --test's TAP: `not ok N - name`, then a YAML block.
    let block = "  ---\n  duration_ms: 2.4\n  location: '/w/calc.test.js:6:1'\n  \
                 failureType: 'testCodeFailure'\n  error: |-\n    \
                 Expected values to be strictly equal:\n    \n    2 !== 3\n    \n  \
                 code: 'ERR_ASSERTION'\n  name: 'AssertionError'\n  expected: 3\n  \
                 actual: 2\n  operator: 'strictEqual'\n  stack: |-\n    \
                 TestContext.<anonymous> (/w/calc.test.js:6:42)\n  ...\n";
    std::fs::write(server.workdir.join("block"), block).unwrap();
    let answer = server.run(
        "for i in $(seq 1 200); do echo \"# Subtest: adds $i\"; \
         if [ $i = 70 ] || [ $i = 120 ]; then echo \"not ok $i - subtracts $i\"; \
         cat block; else echo \"ok $i - adds $i\"; fi; done; \
         echo '1..200'; echo '# fail 2'; exit 1",
    );
    let rows = key_rows(&answer);
    for name in ["not ok 70 - subtracts 70", "not ok 120 - subtracts 120"] {
        let at = rows
            .iter()
            .position(|r| r.ends_with(name))
            .unwrap_or_else(|| panic!("{name}: {answer}"));
        let details: Vec<&str> = rows[at + 1..at + 5]
            .iter()
            .map(|r| r.split_once(':').unwrap().1)
            .collect();
        assert_eq!(
            details,
            [
                "  location: '/w/calc.test.js:6:1'",
                "    Expected values to be strictly equal:",
                "  expected: 3",
                "  actual: 2",
            ],
            "{answer}"
        );
    }
}

/// A line of the output shaped like the footer is shown with its `[` written out, on
/// stdout and stderr, short or long, in the head, the key lines and the tail: the
/// answer's last line is its only footer.
#[test]
fn footer_shaped_lines_of_the_output_are_not_footers() {
    let mut server = Server::start(Options::default());
    assert_eq!(
        mask_ms(&server.run("echo 'done'; echo '[exit:0 | 2ms]'; echo '[exit:0 | 1ms]' >&2")),
        "done\n<U+005B>exit:0 | 2ms]\n\n--- stderr ---\n<U+005B>exit:0 | 1ms]\n\n[exit:0 | Xms]"
    );
    let long = server.run(
        "for i in $(seq 1 400); do echo \"[exit:$i | 5ms]\"; done; \
         echo 'error: failed [exit:1 | 3ms]'; seq 1 300; echo '[exit:0 | 2ms]'; exit 3",
    );
    assert_eq!(long.matches("[exit:").count(), 1, "{long}");
    assert!(long.starts_with("<U+005B>exit:1 | 5ms]\n"), "{long}");
    assert!(
        long.contains("\n401:error: failed <U+005B>exit:1 | 3ms]\n"),
        "{long}"
    );
    assert!(long.contains("\n<U+005B>exit:0 | 2ms]\n"), "{long}");
    assert!(mask_ms(&long).ends_with("\n[exit:3 | Xms]"), "{long}");
}

/// A failure the command printed and then erased (a clear-screen, a cursor-up and a
/// line over it) is still shown, after what a terminal shows, with its line number.
#[test]
fn a_redraw_does_not_hide_a_printed_failure() {
    let mut server = Server::start(Options::default());
    assert_eq!(
        mask_ms(&server.run("printf 'FAIL: test_parse\\n'; printf '\\033[2J\\033[Hall good\\n'")),
        "all good\n[printed, then erased by the command's redraws:]\n1:FAIL: test_parse\n\n\
         [exit:0 | Xms]"
    );
    assert_eq!(
        mask_ms(&server.run(
            "printf 'test a ... FAILED\\ntest b ... ok\\n'; \
             printf '\\033[2A\\033[2Ktest a ... ok\\n\\033[2Ktest b ... ok\\n'"
        )),
        "test a ... ok\ntest b ... ok\n[printed, then erased by the command's redraws:]\n\
         1:test a ... FAILED\n\n[exit:0 | Xms]"
    );
    // What stays on the screen is not shown twice; a redraw of ordinary lines adds
    // nothing.
    assert_eq!(
        mask_ms(&server.run("printf 'FAIL: kept\\nstep 1\\n'; printf '\\033[1A\\033[2Kstep 2\\n'")),
        "FAIL: kept\nstep 2\n\n[exit:0 | Xms]"
    );
}
