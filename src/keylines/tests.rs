//! Tests of key lines: classification, the digest, cuts and repeats.

use super::*;

/// The digest's view of a tail ring: kept for tests of the ring alone.
fn tail_of(data: &[u8], chunk: usize) -> Summary {
    let mut digest = Digest::new();
    for piece in data.chunks(chunk) {
        digest.push(piece);
    }
    digest.finish()
}

#[track_caller]
fn is(class: Class, lines: &[&str]) {
    for line in lines {
        assert_eq!(classify(line), class, "{line:?}");
    }
}

#[test]
fn key_lines_by_content() {
    is(
        Class::Key,
        &[
            "error[E0425]: cannot find value `x` in this scope",
            "error: could not compile `shapes` (lib) due to 3 previous errors",
            "src/part23.c:4:16: error: 'missing_total' undeclared (first use in this function)",
            "src/orders1.ts(4,9): error TS2322: Type 'string' is not assignable to type 'number'.",
            "src/orders1.ts:4:9 - error TS2322: Type 'string' is not assignable",
            "thread 'tests::adds_wrongly' panicked at src/lib.rs:408:41:",
            "---- tests::adds_wrongly stdout ----",
            "test tests::adds_wrongly ... FAILED",
            "test result: FAILED. 400 passed; 4 failed; 0 ignored",
            "FAILED tests/test_calc_2.py::test_ratio_by_zero - ZeroDivisionError: division by zero",
            "_____________________ test_ratio_by_zero _____________________",
            "E       ZeroDivisionError: division by zero",
            "Traceback (most recent call last):",
            "AttributeError: 'NoneType' object has no attribute 'split'",
            "  ● cart 2 › applies a 15% discount",
            "    ✕ applies a 15% discount (3 ms)",
            "FAIL src/cart2.test.js",
            "    TypeError: Cannot read properties of undefined (reading 'name')",
            "--- FAIL: TestAvgRounds (0.00s)",
            "FAIL\texample.com/calc\t0.005s",
            "panic: runtime error: index out of range [3] with length 1",
            "./calc.go:5:2: undefined: foo",
            "npm error code E404",
            "npm ERR! 404 Not Found - GET https://registry.example/x - Not found",
            "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io",
            "ERROR: Cannot install requests==2.31.0 and urllib3==1.20",
            "main.c:(.text+0x1c4): undefined reference to `checksum'",
            "collect2: error: ld returned 1 exit status",
            "make: *** [Makefile:7: app] Error 1",
            "Segmentation fault (core dumped)",
            "bash: line 1: 4242 Killed                  ./eat-memory",
            "bash: foo: command not found",
            "Error: Cannot find module 'left-pad'",
            "Exception in thread \"main\" java.lang.NullPointerException",
            "assertion `left == right` failed",
            "Tests:       3 failed, 297 passed, 300 total",
            "fatal: not a git repository (or any of the parent directories): .git",
            "  5:10  error  'totl1' is not defined                        no-undef",
            "2026-12-01 16:02:11,332 ERROR sync: batch 301: upstream returned 503",
            "not ok 6 - subtracts wrongly",
            "#   Failed test 'sorts the basket'",
            "    not ok 1 - inner case",
        ],
    );
}

#[test]
fn plain_lines_by_content() {
    is(
        Class::Plain,
        &[
            "warning: unused variable: `unused_1`",
            "src/part1.c:3:9: warning: unused variable 'unused_1' [-Wunused-variable]",
            "  = note: `#[warn(unused_variables)]` on by default",
            "test result: ok. 400 passed; 0 failed; 0 ignored; 0 measured",
            "test tests::adds_1 ... ok",
            "tests/test_calc_1.py::test_add_1[0] PASSED                [  0%]",
            "INFO migrate: row 5: user5 -> example.org",
            "   Compiling calc v0.1.0 (/home/dev/work/cargo-fail)",
            "let errors = 0;",
            "Tests:       300 passed, 300 total",
        ],
    );
}

#[test]
fn locators_by_content() {
    is(
        Class::Locator,
        &[
            "  --> src/lib.rs:47:28",
            "   --> src/lib.rs:47:28",
            "  File \"/home/dev/work/py-script/migrate.py\", line 15, in check",
            "      at Object.toBe (src/cart2.test.js:53:80)",
            " ❯ src/cart2.test.js:53:80",
            "/usr/bin/ld: build/main.o: in function `main':",
            "    calc_test.go:254: Avg([1 2]) = 1, want 2",
            // A file and line anywhere: a locator near a failure, whatever the tool.
            "    TestContext.<anonymous> (/w/calc.test.js:6:42)",
            "  location: '/w/calc.test.js:6:1'",
            "#   at t/calc2.t line 62.",
            "rspec ./spec/calc_spec.rb:103 # Calc finds the customer",
            "     # ./spec/calc_spec.rb:103:in `block (2 levels) in <top (required)>'",
        ],
    );
}

#[test]
fn key_lines_that_locate_by_content() {
    is(
        Class::KeyLocator,
        &["tests/test_calc_2.py:9: ZeroDivisionError"],
    );
}

#[test]
fn every_key_line_holds_a_trigger_of_the_grep_pattern() {
    let pattern = grep_pattern();
    assert!(
        pattern.starts_with("rror|RROR|FAIL|ailed|anic"),
        "{pattern}"
    );
    let triggers = &rules().triggers;
    for line in [
        "main.c:(.text+0x1c4): undefined reference to `checksum'",
        "  ● cart 2 › applies a 15% discount",
        "npm ERR! 404 Not Found",
        "bash: foo: command not found",
        "Segmentation fault (core dumped)",
    ] {
        assert!(triggers.find(line).is_some(), "{line}");
    }
    // A key line with no trigger word is only a locator.
    let text = "--- FAIL: TestAvgRounds (0.00s)\n    calc_test.go:254: Avg = 1, want 2\n\
                ---- tests::x stdout ----\n";
    let summary = digest(text, 7);
    assert_eq!(summary.keys.len(), 1);
    assert_eq!(
        summary.keys[0].locators[0].text,
        "    calc_test.go:254: Avg = 1, want 2"
    );
}

fn digest(text: &str, chunk: usize) -> Summary {
    tail_of(text.as_bytes(), chunk)
}

#[test]
fn key_lines_carry_line_numbers_and_locators_whatever_the_chunks() {
    let mut text = String::new();
    for n in 1..=500 {
        text.push_str(&format!("   Compiling crate{n} v0.1.0\n"));
        if n == 100 {
            text.push_str("error[E0425]: cannot find value `x` in this scope\n");
            text.push_str("  --> src/lib.rs:12:5\n");
        }
        if n == 300 {
            text.push_str("Traceback (most recent call last):\n");
            text.push_str("  File \"app.py\", line 3, in <module>\n");
            text.push_str("    main()\n");
            text.push_str("ValueError: bad value\n");
        }
    }
    let whole = digest(&text, text.len());
    for chunk in [1, 3, 64, 4096] {
        assert_eq!(digest(&text, chunk), whole, "chunk {chunk}");
    }
    let keys: Vec<(u64, &str, Vec<u64>)> = whole
        .keys
        .iter()
        .map(|k| {
            (
                k.first.line,
                k.first.text.as_str(),
                k.locators.iter().map(|l| l.line).collect(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (
                101,
                "error[E0425]: cannot find value `x` in this scope",
                vec![102]
            ),
            (303, "Traceback (most recent call last):", vec![304]),
            (306, "ValueError: bad value", vec![304]),
        ]
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[100],
        "error[E0425]: cannot find value `x` in this scope"
    );
    assert_eq!(whole.lines, 506);
    assert!(whole.tail.ends_with("crate500 v0.1.0\n"));
    let tail_lines = whole.tail.lines().count() as u64;
    assert_eq!(whole.tail_first_line + tail_lines - 1, 506);
    assert_eq!(
        whole.tail.lines().next().unwrap(),
        lines[whole.tail_first_line as usize - 1]
    );
}

#[test]
fn repeats_are_counted_and_memory_is_bounded() {
    let mut text = String::new();
    for n in 0..5000 {
        text.push_str("npm error code E404\n");
        text.push_str(&format!("src/a{n}.c:1:1: error: bad {n}\n"));
    }
    let summary = digest(&text, 65_536);
    // The first distinct ones, then the last ones.
    assert_eq!(summary.keys.len(), MAX_KEYS + LAST_KEYS);
    assert_eq!(summary.keys[0].count, 5000);
    assert_eq!(summary.keys[0].last_line, 9999);
    assert_eq!(
        summary.keys[MAX_KEYS - 1].first.text,
        "src/a198.c:1:1: error: bad 198"
    );
    let last = summary.keys.last().unwrap();
    assert_eq!(last.first.text, "src/a4999.c:1:1: error: bad 4999");
    assert_eq!(last.first.line, 10_000);
    let lines: Vec<u64> = summary.keys.iter().map(|k| k.first.line).collect();
    assert!(lines.is_sorted(), "{lines:?}");
    assert_eq!(summary.key_lines, 10_000);
    assert!(summary.tail.len() <= TAIL_KEEP);
}

#[test]
fn the_same_text_at_another_place_is_another_failure() {
    let mut text = String::new();
    for (n, file) in ["a", "b", "a", "a"].iter().enumerate() {
        text.push_str(&format!(
            "test t{n} ... ok\n  error: |-\n  at Object.<anonymous> ({file}.test.js:3:9)\n"
        ));
    }
    text.push_str("error: |-\nplain\n");
    let summary = digest(&text, 7);
    let shown: Vec<(u64, u64, Vec<&str>)> = summary
        .keys
        .iter()
        .map(|k| {
            let locators = k.locators.iter().map(|l| l.text.as_str()).collect();
            (k.first.line, k.count, locators)
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (2, 3, vec!["  at Object.<anonymous> (a.test.js:3:9)"]),
            (5, 1, vec!["  at Object.<anonymous> (b.test.js:3:9)"]),
            (13, 1, vec![]),
        ]
    );
    assert_eq!(summary.keys[0].last_line, 11);
    assert_eq!(summary.key_lines, 5);
}

#[test]
fn a_huge_line_is_cut_in_its_middle() {
    let line = format!("error: {}", "x".repeat(100_000));
    let summary = digest(&line, 4096);
    let key = &summary.keys[0].first.text;
    assert!(key.len() < KEY_LINE_BYTES + 40, "{}", key.len());
    assert!(key.starts_with("error: xxx"));
    assert!(key.contains("bytes cut]"));
    assert_eq!(summary.lines, 1);
    assert_eq!(summary.tail_first_line, 1);
}

#[test]
fn repeats_collapse() {
    let lines = ["a\n", "b\n", "b\n", "b\n", "b\n", "c\n", "c\n", "d"];
    assert_eq!(
        collapse_repeats(&lines),
        vec![
            "a\n",
            "b\n",
            "[previous line repeated 3 more times]\n",
            "c\n",
            "c\n",
            "d"
        ]
    );
}
