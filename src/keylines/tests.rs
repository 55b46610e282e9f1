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

/// The key lines of a digest of `text`: (line, text, the locators' lines).
fn keys_of(text: &str) -> Vec<(u64, String, Vec<u64>)> {
    rows(&digest(text, text.len()).keys)
}

/// Key lines as (line, text, the lines of their locators).
fn rows(keys: &[KeyLine]) -> Vec<(u64, String, Vec<u64>)> {
    keys.iter()
        .map(|k| {
            let lines = k.locators.iter().map(|l| l.line).collect();
            (k.first.line, k.first.text.clone(), lines)
        })
        .collect()
}

#[test]
fn a_location_with_a_severity_word_or_an_error_code_is_a_key_line_whatever_printed_it() {
    // Lines of the corpus (pylint, flake8, javac, pyright, meson, doctest), and of
    // tools no rule names.
    is(
        Class::Key,
        &[
            "shop/m47.py:5:11: E1101: Instance of 'list' has no 'head' member (no-member)",
            "shop/m75.py:5:11: E0602: Undefined variable 'missing_rate' (undefined-variable)",
            "shop/m23.py:6:12: F821 undefined name 'subtotal'",
            "shop/m71.py:6:1: F811 redefinition of unused 'total_71' from line 4",
            "src/shop/Cart31.java:5: error: cannot find symbol",
            "  /home/dev/work/pyright/shop/m40.py:6:12 - error: Type \"Literal[3]\" is not assignable to return type \"str\"",
            "deploy/app.yaml:4:15: [error] syntax error: expected ',' or ']', but got '<stream end>'",
            "lib/report.ex:12: (FAILED) report totals",
            "  5/240 calc:rounds_5   FAIL            0.01s   exit status 1",
            "Failed example:",
        ],
    );
    // A location with a warning or a convention code alone only locates; a file
    // named error is no severity word.
    is(
        Class::Locator,
        &[
            "shop/m68.py:1:0: W0611: Unused import os (unused-import)",
            "shop/m68.py:1:0: C0114: Missing module docstring (missing-module-docstring)",
            "src/error.rs:12:5: in fn parse",
        ],
    );
}

#[test]
fn summaries_are_key_lines_anywhere_a_count_of_warnings_too() {
    is(
        Class::Key,
        &[
            "warning: `part11` (lib) generated 5 warnings (run `cargo fix --lib -p part11` to apply 5 suggestions)",
            "3 warnings generated.",
            "180 passed and 3 failed.",
            "***Test Failed*** 3 failures.",
            "4 errors",
        ],
    );
    is(
        Class::Plain,
        &[
            "warning: unused variable: `unused_5`",
            "183 tests in 61 items.",
            "warning: `part1` (lib) generated 0 warnings",
        ],
    );
    // A summary in a successful build's stderr, among the warnings it counts, is a
    // key line of its own: not a locator's, and the next warning's is not its.
    let text = concat!(
        "warning: unused variable: `unused_2`\n",
        " --> part4/src/lib.rs:2:44\n",
        "warning: `part4` (lib) generated 2 warnings (run `cargo fix --lib -p part4` to apply 2 suggestions)\n",
        "   Compiling part6 v0.1.0 (/home/dev/work/cargo-workspace/part6)\n",
        "warning: unused variable: `unused_1`\n",
        " --> part6/src/lib.rs:1:44\n",
    );
    assert_eq!(
        keys_of(text),
        vec![(
            3,
            "warning: `part4` (lib) generated 2 warnings (run `cargo fix --lib -p part4` to apply 2 suggestions)".to_owned(),
            vec![]
        )]
    );
}

#[test]
fn doctests_failure_block_travels_with_its_marker() {
    // `python3 -m doctest -v prices.py` (tests/corpus/logs/doctest-fail-verbose.out).
    let text = concat!(
        "Trying:\n",
        "    price_17(3)\n",
        "Expecting:\n",
        "    51\n",
        "ok\n",
        "Trying:\n",
        "    price_17(0.5)\n",
        "Expecting:\n",
        "    8\n",
        "**********************************************************************\n",
        "File \"/home/dev/work/doctest/prices.py\", line 186, in prices.price_17\n",
        "Failed example:\n",
        "    price_17(0.5)\n",
        "Expected:\n",
        "    8\n",
        "Got:\n",
        "    8.5\n",
        "Trying:\n",
        "    price_18(1)\n",
    );
    let whole = digest(text, text.len());
    for chunk in [1, 7, 64] {
        assert_eq!(digest(text, chunk), whole, "chunk {chunk}");
    }
    assert_eq!(
        keys_of(text),
        vec![(
            12,
            "Failed example:".to_owned(),
            vec![11, 13, 14, 15, 16, 17]
        )]
    );
    assert_eq!(
        whole.keys[0].locators[0].text,
        "File \"/home/dev/work/doctest/prices.py\", line 186, in prices.price_17"
    );
    // An exception raised in the example: the block ends where the traceback, a
    // failure of its own, starts.
    let text = concat!(
        "File \"/home/dev/work/doctest/prices.py\", line 419, in prices.price_38\n",
        "Failed example:\n",
        "    price_38(None)\n",
        "Exception raised:\n",
        "    Traceback (most recent call last):\n",
        "      File \"/usr/lib/python3.11/doctest.py\", line 1353, in __run\n",
        "        exec(compile(example.source, filename, \"single\",\n",
        "      File \"<doctest prices.price_38[3]>\", line 1, in <module>\n",
        "        price_38(None)\n",
        "      File \"/home/dev/work/doctest/prices.py\", line 422, in price_38\n",
        "        return qty * 38\n",
        "               ~~~~^~~~\n",
        "    TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'\n",
        "Trying:\n",
    );
    let keys = keys_of(text);
    assert_eq!(keys[0], (2, "Failed example:".to_owned(), vec![1, 3, 4]));
    assert_eq!(
        keys.last().unwrap(),
        &(
            13,
            "    TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'".to_owned(),
            vec![10]
        )
    );
}

#[test]
fn gos_indented_messages_before_its_marker_travel_with_it() {
    // `go test -v` (tests/corpus/logs/go-test-v-long-46-failures.out), a passing
    // test's log line right before.
    let text = concat!(
        "=== RUN   TestSum12\n",
        "    sum_test.go:15: summing 12\n",
        "--- PASS: TestSum12 (0.00s)\n",
        "=== RUN   TestAvg13\n",
        "    sum_test.go:18: Avg([13 14]) = 13, want 14\n",
        "--- FAIL: TestAvg13 (0.00s)\n",
        "=== RUN   TestSum13\n",
    );
    assert_eq!(
        keys_of(text),
        vec![(6, "--- FAIL: TestAvg13 (0.00s)".to_owned(), vec![5])]
    );
    // A message of several lines (go 1.19's `t.Errorf("totals differ:\nwant: 3\ngot:  4")`):
    // all of it, its location first.
    let text = concat!(
        "=== RUN   TestTotals\n",
        "    m_test.go:5: totals differ:\n",
        "        want: 3\n",
        "        got:  4\n",
        "--- FAIL: TestTotals (0.00s)\n",
        "FAIL\n",
    );
    let whole = digest(text, text.len());
    for chunk in [1, 5, 64] {
        assert_eq!(digest(text, chunk), whole, "chunk {chunk}");
    }
    assert_eq!(
        keys_of(text)[0],
        (5, "--- FAIL: TestTotals (0.00s)".to_owned(), vec![2, 3, 4])
    );
}

#[test]
fn failing_tests_names_by_the_shape_of_their_marker() {
    for (line, name) in [
        ("--- FAIL: TestAvg13 (0.00s)", "TestAvg13"),
        ("    --- FAIL: TestSplit/empty (0.00s)", "TestSplit/empty"),
        ("test tests::adds_wrongly ... FAILED", "tests::adds_wrongly"),
        ("not ok 6 - subtracts wrongly", "subtracts wrongly"),
        (
            "        not ok 26 - applies the coupon",
            "applies the coupon",
        ),
        ("not ok 3 - reads config # TODO later", "reads config"),
        (
            "FAILED tests/test_calc_2.py::test_ratio_by_zero - ZeroDivisionError: division by zero",
            "tests/test_calc_2.py::test_ratio_by_zero",
        ),
        (
            "    ✕ applies a 15% discount (3 ms)",
            "applies a 15% discount",
        ),
        (
            "  ● cart 5 › rounds the discount of order 5.1",
            "cart 5 › rounds the discount of order 5.1",
        ),
        (
            "  5/240 calc:rounds_5   FAIL            0.01s   exit status 1",
            "calc:rounds_5",
        ),
        (
            "61/62 Test #61: divides_by_zero ..................***Failed    0.00 sec",
            "divides_by_zero",
        ),
        (
            "        FAIL [   0.004s] calc tests::adds_wrongly",
            "calc tests::adds_wrongly",
        ),
    ] {
        assert_eq!(failed_test_name(line), Some(name), "{line:?}");
    }
    for line in [
        "FAIL\texample.com/calc\t0.005s",
        "error: test failed",
        "ok 5 - adds",
    ] {
        assert_eq!(failed_test_name(line), None, "{line:?}");
    }
    // A digest keeps each name once, with the line of its first marker.
    let text = concat!(
        "--- FAIL: TestA (0.00s)\n",
        "ok\n",
        "--- FAIL: TestB (0.00s)\n",
        "--- FAIL: TestA (0.00s)\n",
    );
    let names: Vec<(u64, String)> = digest(text, 5)
        .failed_tests
        .into_iter()
        .map(|n| (n.line, n.text))
        .collect();
    assert_eq!(
        names,
        vec![(1, "TestA".to_owned()), (3, "TestB".to_owned())]
    );
}

#[test]
fn failing_tests_names_kept_are_bounded_and_the_rest_counted() {
    let text: String = (1..=100_000)
        .map(|n| format!("--- FAIL: TestNumber{n} (0.00s)\n"))
        .collect();
    let summary = digest(&text, 64 * 1024);
    let kept: usize = summary.failed_tests.iter().map(|n| n.text.len()).sum();
    assert!(kept <= FAILED_NAMES_BYTES, "{kept}");
    assert!(kept > FAILED_NAMES_BYTES - 64, "{kept}");
    assert_eq!(
        summary.failed_tests.len() as u64 + summary.failed_tests_past,
        100_000
    );
}

/// Lines of cppcheck's `--template=gcc` run in the corpus (tests/corpus/logs/
/// cppcheck-errors.err): every diagnostic says `warning:`, its kind is the id that
/// ends it; the real errors are the two ids seen once among 212.
fn cppcheck_like(rare: &[&str]) -> String {
    let mut text = String::new();
    for n in 1..=70 {
        text.push_str(&format!(
            "src/part{n}.c:3:27: warning: Unused variable: unused [unusedVariable]\n\
             int scale_{n}(int x) {{ int unused; return x * {n}; }}\n                          ^\n"
        ));
        if n == 19 || n == 58 {
            text.push_str(rare[usize::from(n == 58)]);
            text.push_str("\n    ^\n");
        }
    }
    text
}

#[test]
fn the_rare_kinds_among_many_diagnostics_of_one_severity_are_key_lines() {
    let text = cppcheck_like(&[
        "src/part19.c:4:33: warning: Array 'a[4]' accessed at index 4, which is out of bounds. [arrayIndexOutOfBounds]",
        "src/part58.c:4:57: warning: Memory leak: p [memleak]",
    ]);
    let whole = digest(&text, text.len());
    for chunk in [1, 5, 4096] {
        assert_eq!(digest(&text, chunk), whole, "chunk {chunk}");
    }
    let keys: Vec<&str> = whole.keys.iter().map(|k| k.first.text.as_str()).collect();
    assert_eq!(
        keys,
        [
            "src/part19.c:4:33: warning: Array 'a[4]' accessed at index 4, which is out of bounds. [arrayIndexOutOfBounds]",
            "src/part58.c:4:57: warning: Memory leak: p [memleak]",
        ]
    );
    assert_eq!(whole.key_lines, 2);
    assert_eq!(whole.diagnostics, 72);
    let kinds: Vec<(&str, u64)> = whole
        .kinds
        .iter()
        .map(|k| (k.name.as_str(), k.count))
        .collect();
    assert_eq!(
        kinds,
        [
            ("warning [unusedVariable]", 70),
            ("warning [arrayIndexOutOfBounds]", 1),
            ("warning [memleak]", 1),
        ]
    );
    assert_eq!(whole.kinds[1].first, 58);
}

#[test]
fn rare_kinds_are_not_key_lines_beside_another_severity_nor_when_common() {
    // An `error:` among the warnings is the key line; the warnings stay warnings.
    let text = cppcheck_like(&[
        "src/part19.c:4:33: error: Array 'a[4]' accessed at index 4, which is out of bounds. [arrayIndexOutOfBounds]",
        "src/part58.c:4:57: warning: Memory leak: p [memleak]",
    ]);
    let summary = digest(&text, 4096);
    let keys: Vec<u64> = summary.keys.iter().map(|k| k.first.line).collect();
    assert_eq!(keys, [58]);
    assert_eq!(summary.kinds.len(), 3);
    // Two kinds, half and half: neither is rare; gcc's `[-W…]` ids are kinds too.
    let mut text = String::new();
    for n in 1..=20 {
        text.push_str(&format!(
            "m.c:{n}:5: warning: unused variable 'x{n}' [-Wunused-variable]\n\
             m.c:{n}:9: warning: format '%d' expects argument of type 'int' [-Wformat=]\n"
        ));
    }
    let summary = digest(&text, 4096);
    assert!(summary.keys.is_empty(), "{:?}", summary.keys);
    assert_eq!(summary.kinds.len(), 2);
    assert_eq!(summary.kinds[1].name, "warning [-Wformat=]");
}

#[test]
fn a_summary_counts_failures_after_its_word() {
    // phpunit's summary in the corpus (tests/corpus/logs/phpunit-fail.out), a junit
    // style one and ansible's recap: a count after the word is a summary too.
    is(
        Class::Key,
        &[
            "Tests: 368, Assertions: 364, Errors: 4, Failures: 4.",
            "Tests run: 12, Failures: 1, Errors: 0, Skipped: 0",
            "web1 : ok=3    changed=0    unreachable=0    failed=1    skipped=0",
        ],
    );
    is(
        Class::Plain,
        &[
            "Tests run: 12, Failures: 0, Errors: 0, Skipped: 0",
            "OK (368 tests, 364 assertions)",
        ],
    );
    // Found by the trigger words, so a digest keeps it and grep finds it.
    assert!(is_key("Tests run: 12, Failures: 1, Errors: 0, Skipped: 0"));
}

#[test]
fn a_severity_word_with_an_error_code_or_a_one_letter_severity_is_a_failure() {
    // The .NET compilers' and msbuild's lines, rubocop's offenses: `E` and `F` are
    // error and fatal, `W` and `C` a warning and a convention (a place alone).
    is(
        Class::Key,
        &[
            "Program.cs(12,17): error CS1002: ; expected [/src/app/app.csproj]",
            "/src/app/app.csproj : error MSB1009: Project file does not exist.",
            "lib/calc.rb:12:3: E: Lint/Syntax: unexpected token kEND",
            "lib/calc.rb:1:1: F: Lint/Syntax: invalid multibyte char (UTF-8)",
        ],
    );
    is(
        Class::Locator,
        &[
            "lib/calc.rb:3:1: C: [Correctable] Style/FrozenStringLiteralComment: Missing frozen string literal comment.",
        ],
    );
    assert!(is_key(
        "lib/calc.rb:12:3: E: Lint/Syntax: unexpected token kEND"
    ));
}

#[test]
fn a_stylish_reports_error_rows_are_key_lines_with_the_file_they_belong_to() {
    // stylelint's report (tests/corpus/logs/stylelint-errors.err): a file's name, then
    // its rows; `✖` an error, `⚠` a warning. The severity may be a word, a symbol or
    // a letter.
    let rows = [
        r#"  5:3   ✖  Unknown property "widht"        property-no-unknown"#,
        "  5:10  error  'x' is not defined  no-undef",
        "  7:1   ✘  Unexpected empty block  block-no-empty",
        "  9:4   ‼  Unexpected token  parse",
        "  3:2  E  Undefined variable 'x'  undefined-var",
    ];
    is(Class::Key, &rows);
    // Found by the trigger words (`✘` and `‼` are not among them).
    for row in [rows[0], rows[1], rows[4]] {
        assert!(is_key(row), "{row:?}");
    }
    is(
        Class::Plain,
        &[
            "  2:12  ⚠  Disallowed unit                 length-zero-no-unit",
            r#"  3:10  ⚠  Disallowed named color "white"  color-named"#,
            "  4:1  W  Line too long  line-length",
        ],
    );
    let mut log = String::new();
    for card in 20..30 {
        log.push_str(&format!("src/components/card{card}.css\n"));
        log.push_str("  2:12  ⚠  Disallowed unit                 length-zero-no-unit\n");
        log.push_str("  3:10  ⚠  Disallowed named color \"white\"  color-named\n");
        if card == 23 || card == 29 {
            log.push_str("  5:3   ✖  Unknown property \"widht\"        property-no-unknown\n");
        }
        if card == 27 {
            log.push_str("  5:19  ✖  Unknown unit \"pz\"               unit-no-unknown\n");
        }
        log.push('\n');
    }
    log.push_str("✖ 33 problems (3 errors, 30 warnings)\n");
    // However the text is cut, each error row is kept with its file's name; the same
    // row in another file is counted with the first.
    let named = |line, card: u32| Numbered {
        line,
        text: format!("src/components/card{card}.css"),
    };
    for chunk in [log.len(), 7, 64] {
        let summary = tail_of(log.as_bytes(), chunk);
        let rows: Vec<_> = summary
            .keys
            .iter()
            .filter(|k| k.first.text.contains('✖') && k.first.text.starts_with(' '))
            .map(|k| (k.first.line, k.count, k.last_line, k.locators.clone()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (16, 2, 42, vec![named(13, 23)]),
                (33, 1, 33, vec![named(30, 27)])
            ],
            "chunk {chunk}"
        );
    }
}

#[test]
fn a_formatters_verdict_on_one_file_is_a_key_line() {
    // black --check -v (tests/corpus/logs/black-check-verbose-merged.out), among
    // many files left unchanged; and the same verdict of other formatters.
    is(
        Class::Key,
        &[
            "would reformat /home/dev/work/black/src/app/mod_160.py",
            "Would reformat: src/app/mod_19.py",
            "src/app/main.go: needs formatting",
            "error: cannot parse: /home/dev/work/black-broken/src/app/mod_140.py:5:11",
        ],
    );
    assert!(is_key(
        "would reformat /home/dev/work/black/src/app/mod_160.py"
    ));
    is(
        Class::Plain,
        &[
            "/home/dev/work/black/src/app/mod_1.py already well formatted, good job.",
            "3 files would be reformatted, 227 files would be left unchanged.",
            "Reformatted the code base to a new style",
        ],
    );
}

/// The odd lines of `text`: (line, text, the lines kept with it).
fn odd_of(text: &str, chunk: usize) -> Vec<(u64, String, Vec<u64>)> {
    rows(&digest(text, chunk).odd)
}

#[test]
fn a_line_unlike_the_many_like_it_is_odd_with_the_place_named_after_it() {
    // bandit's report (tests/corpus/logs/bandit-high.out): a block per finding, the
    // severity in a field; the one `High` among many `Low`, with its `Location:`.
    let mut text = String::new();
    for n in 1..=60 {
        let (id, severity) = if n == 40 {
            ("B602:subprocess_popen_with_shell_equals_true", "High")
        } else {
            ("B404:blacklist", "Low")
        };
        text.push_str(&format!(
            ">> Issue: [{id}] Consider the security implications.\n   \
             Severity: {severity}   Confidence: High\n   \
             CWE: CWE-78 (https://cwe.mitre.org/data/definitions/78.html)\n   \
             Location: src/billing/invoice_{n:03}.py:8:4\n\
             8\t    subprocess.call(cmd, shell=True)\n\
             --------------------------------------------------\n"
        ));
    }
    for chunk in [text.len(), 7, 100] {
        let odd = odd_of(&text, chunk);
        let high = odd
            .iter()
            .find(|(_, t, _)| t.contains("Severity: High"))
            .unwrap_or_else(|| panic!("chunk {chunk}: {odd:?}"));
        assert_eq!(high.0, 39 * 6 + 2, "{odd:?}");
        assert_eq!(high.2, vec![39 * 6 + 4], "its Location: line, {odd:?}");
        assert!(
            odd.iter().all(|(_, t, _)| !t.contains("Severity: Low")),
            "{odd:?}"
        );
    }
}

#[test]
fn odd_lines_are_found_by_their_codes_and_carry_the_file_they_belong_to() {
    // htmlhint's report (tests/corpus/logs/htmlhint-errors-nocolor.out): a file's
    // path, then its rows; one `(id-unique)` among many `(alt-require)`.
    let mut text = String::from("   Config loaded: .htmlhintrc\n\n");
    for n in 1..=40 {
        text.push_str(&format!(
            "   /work/htmlhint/src/pages/product_{n:03}.html\n      \
             L6 |<img src=\"product-{n:03}.png\">\n              \
             ^ An alt attribute must be present on <img> elements. (alt-require)\n"
        ));
        if n == 12 {
            text.push_str(
                "      L8 |<div id=\"product-012\">duplicate</div>\n              \
                 ^ The id value [ product-012 ] must be unique. (id-unique)\n",
            );
        }
        text.push('\n');
    }
    let odd = odd_of(&text, text.len());
    let unique = odd
        .iter()
        .find(|(_, t, _)| t.ends_with("(id-unique)"))
        .unwrap_or_else(|| panic!("{odd:?}"));
    let summary = digest(&text, text.len());
    let kept = &summary
        .odd
        .iter()
        .find(|k| k.first.line == unique.0)
        .unwrap();
    assert!(
        kept.locators[0]
            .text
            .ends_with("src/pages/product_012.html"),
        "{kept:?}"
    );
    assert!(
        odd.iter().all(|(_, t, _)| !t.contains("(alt-require)")),
        "{odd:?}"
    );
}

#[test]
fn a_family_of_lines_all_unlike_each_other_has_no_odd_line() {
    // Source lines, test names, a build's crates: every line differs, so none is odd.
    let text: String = (1..=300)
        .map(|n| {
            format!(
                "   Compiling crate_{} v0.{n}.0 ({})\n",
                "x".repeat(n % 17),
                n * 7
            )
        })
        .chain((1..=300).map(|n| format!("let value_{n} = compute(\"{}\");\n", "y".repeat(n % 23))))
        .collect();
    let odd = odd_of(&text, 4096);
    assert!(odd.is_empty(), "{odd:?}");
}

#[test]
fn odd_lines_are_read_in_bounded_memory_and_time() {
    // 200,000 lines of distinct shapes: past the lines read for them, none is kept.
    let text: String = (0..200_000)
        .map(|n| format!("{n:x}{} rare {n}\n", "z".repeat(n % 50)))
        .collect();
    let summary = digest(&text, 64 * 1024);
    assert!(summary.odd.len() <= odd::MAX_ODD, "{}", summary.odd.len());
}

#[test]
fn the_lines_between_a_failure_and_its_place_travel_with_it() {
    // busted's report (tests/corpus/logs/busted-35-failures.out): the marker names a
    // place of its own shape, the test's name is the line after it, then the place.
    let text = "600 successes / 2 failures / 0 errors / 0 pending : 0.06 seconds\n\n\
                Failure -> spec/cart_spec.lua @ 158\n\
                cart rounds the cart price 1\n\
                spec/cart_spec.lua:159: Expected objects to be equal.\n\
                Passed in:\n\
                (number) 9\n\n\
                Failure -> spec/cart_spec.lua @ 161\n\
                cart rounds the cart price 2\n\
                spec/cart_spec.lua:162: Expected objects to be equal.\n";
    let keys = keys_of(text);
    assert!(
        keys.contains(&(
            3,
            "Failure -> spec/cart_spec.lua @ 158".to_owned(),
            vec![4, 5]
        )),
        "{keys:?}"
    );
    assert!(
        keys.contains(&(
            9,
            "Failure -> spec/cart_spec.lua @ 161".to_owned(),
            vec![10, 11]
        )),
        "{keys:?}"
    );
}

#[test]
fn taps_diagnostics_right_after_not_ok_travel_with_it() {
    // busted -o TAP (tests/corpus/logs/busted-fail-tap.out).
    let text = "ok 50 - cart computes the cart total 50\n\
                not ok 51 - cart discount applies ten percent off\n\
                # spec/cart_spec.lua @ 159\n\
                # Failure message: spec/cart_spec.lua:160: Expected objects to be equal.\n\
                # Passed in:\n\
                ok 52 - coupons computes the coupons total 1\n";
    let keys = keys_of(text);
    assert_eq!(
        keys,
        vec![(
            2,
            "not ok 51 - cart discount applies ten percent off".to_owned(),
            vec![3, 4]
        )],
    );
}

#[test]
fn a_line_led_by_a_rare_symbol_is_odd_whatever_its_text() {
    // ava's report (tests/corpus/logs/ava-fail.out): a `✔` per passing test, whose
    // names are all different, and a `✘` per failing one.
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!(
            "  ✔ sku › parses sku {}-{n}\n",
            ["AB", "CD", "EF"][n % 3]
        ));
        if n % 100 == 50 {
            text.push_str(&format!("  ✘ [fail]: net › net of {n} at 7%\n"));
        }
    }
    let odd = odd_of(&text, 333);
    let failed: Vec<&str> = odd.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(
        failed,
        [
            "  ✘ [fail]: net › net of 50 at 7%",
            "  ✘ [fail]: net › net of 150 at 7%",
            "  ✘ [fail]: net › net of 250 at 7%",
        ],
    );
}

#[test]
fn an_odd_record_carries_the_file_its_record_names() {
    // markdownlint's JSON report (tests/corpus/logs/markdownlint-errors-json.err): one
    // object per finding, its file a field above the rule that differs.
    let mut text = String::from("[\n");
    for n in 1..=80 {
        let rule = if n == 57 { "MD001" } else { "MD004" };
        text.push_str(&format!(
            "  {{\n    \"fileName\": \"docs/guide/step-{n}.md\",\n    \"lineNumber\": 7,\n    \
             \"ruleNames\": [\n      \"{rule}\",\n      \"heading\"\n    ],\n    \
             \"severity\": \"warning\"\n  }},\n"
        ));
    }
    text.push_str("]\n");
    let summary = digest(&text, 100);
    let odd = summary
        .odd
        .iter()
        .find(|k| k.first.text.contains("MD001"))
        .unwrap_or_else(|| panic!("{:?}", summary.odd));
    assert!(
        odd.locators[0]
            .text
            .contains("\"fileName\": \"docs/guide/step-57.md\""),
        "{odd:?}"
    );
}

#[test]
fn a_key_row_that_names_no_file_carries_the_file_above_it() {
    // phpcs's report (tests/corpus/logs/phpcs-errors.out): a file's block, its rows
    // indented under it.
    let mut text = String::new();
    for n in 1..=30 {
        text.push_str(&format!(
            "\nFILE: /work/phpcs/src/Billing/Invoice{n}.php\n{}\n\
             FOUND 1 ERROR AFFECTING 1 LINE\n{}\n  \
             7 | ERROR | Visibility must be declared on method \"amount{n}\"\n{}\n",
            "-".repeat(40),
            "-".repeat(40),
            "-".repeat(40)
        ));
    }
    for chunk in [text.len(), 50] {
        let keys = digest(&text, chunk).keys;
        let row = keys
            .iter()
            .find(|k| k.first.text.contains("\"amount29\""))
            .unwrap_or_else(|| panic!("{keys:?}"));
        assert_eq!(
            row.locators[0].text, "FILE: /work/phpcs/src/Billing/Invoice29.php",
            "chunk {chunk}: {row:?}"
        );
    }
}

#[test]
fn a_log_records_rare_level_is_odd() {
    // mkdocs --verbose (tests/corpus/logs/mkdocs-strict-verbose.err): hundreds of
    // DEBUG records, a few WARNING ones.
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!("DEBUG   -  Reading: guide/chapter{n}.md\n"));
        if n % 100 == 14 {
            text.push_str(&format!(
                "WARNING -  Doc file 'guide/chapter{n}.md' contains a link 'refunds.md', but \
                 the target is not found.\n"
            ));
        }
    }
    let odd = odd_of(&text, 1000);
    let lines: Vec<u64> = odd.iter().map(|(line, _, _)| *line).collect();
    assert_eq!(lines, [15, 116, 217], "{odd:?}");
}

#[test]
fn a_few_diagnostics_in_a_long_output_are_odd_whatever_their_words() {
    // go vet -v (tests/corpus/logs/go-vet-verbose.err): the packages it checks, and a
    // diagnostic with no severity word.
    let mut text: String = (1..=200).map(|n| format!("internal/pkg{n}\n")).collect();
    text.push_str(
        "# example.com/shop/pkg/area23\n\
         pkg/area23/area.go:33:17: Snapshot passes lock by value: area23.Cache contains sync.Mutex\n",
    );
    text.extend((201..=220).map(|n| format!("internal/pkg{n}\n")));
    let odd = odd_of(&text, text.len());
    assert!(
        odd.iter()
            .any(|(line, t, _)| *line == 202 && t.starts_with("pkg/area23/area.go:33:17: ")),
        "{odd:?}"
    );
}

#[test]
fn a_heading_of_failures_entries_name_the_failing_tests() {
    // jasmine (tests/corpus/logs/jasmine-31-failures.out): `Failures:`, then a
    // numbered entry per failing spec, with no word a key line rule knows.
    let mut text = String::from("Started\n..F..F\n\nFailures:\n");
    for n in 1..=31 {
        text.push_str(&format!(
            "{n}) cart rounds the cart price {n}\n  Message:\n    Expected 9 to be 10.\n  \
             Stack:\n        at <Jasmine>\n\n"
        ));
    }
    text.push_str("600 specs, 31 failures\n");
    let names: Vec<String> = digest(&text, 77)
        .failed_tests
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(names.len(), 31, "{names:?}");
    assert_eq!(names[0], "cart rounds the cart price 1");
    assert_eq!(names[30], "cart rounds the cart price 31");
}

#[test]
fn a_line_led_by_a_rare_code_is_odd_whatever_code_leads_the_others() {
    // cfn-lint's report (tests/corpus/logs/cfn-lint-errors.out): a code and its
    // message, the place on the next line; one `E3012` among many `W2001`.
    let mut text = String::new();
    for n in 1..=80 {
        let code = if n % 9 == 0 { "W1020" } else { "W2001" };
        text.push_str(&format!(
            "{code} Parameter Env{n} not used.\ntemplates/stack{n}.yaml:4:3\n\n"
        ));
        if n == 50 {
            text.push_str("E3012 'soon' is not of type 'integer'\ntemplates/stack6.yaml:76:7\n\n");
        }
    }
    for chunk in [text.len(), 7, 100] {
        let odd = odd_of(&text, chunk);
        let error = odd
            .iter()
            .find(|(_, t, _)| t.starts_with("E3012 "))
            .unwrap_or_else(|| panic!("chunk {chunk}: {odd:?}"));
        assert_eq!(error.2.first(), Some(&(error.0 + 1)), "its place, {odd:?}");
        assert!(odd.iter().all(|(_, t, _)| !t.starts_with('W')), "{odd:?}");
    }
    // The same findings in its `parseable` form: the code is in the place's word.
    let mut text = String::new();
    for n in 1..=80 {
        text.push_str(&format!(
            "templates/stack{n}.yaml:4:3:4:7:W2001:Parameter Env{n} not used.\n"
        ));
        if n == 50 {
            text.push_str(
                "templates/stack6.yaml:76:7:76:24:E3012:'soon' is not of type 'integer'\n",
            );
        }
    }
    // Led by its place, with its code, the odd diagnostic is a key line.
    let summary = digest(&text, 64);
    assert!(summary.odd.is_empty(), "{:?}", summary.odd);
    let keys: Vec<&str> = summary.keys.iter().map(|k| k.first.text.as_str()).collect();
    assert_eq!(
        keys,
        ["templates/stack6.yaml:76:7:76:24:E3012:'soon' is not of type 'integer'"]
    );
}

#[test]
fn a_records_severity_counts_even_as_a_number_and_its_message_travels_with_it() {
    // Spectral's JSON report (tests/corpus/logs/spectral-errors-json.out): records of
    // a field a line; `"severity": 0` (an error) in one record among many of `1`.
    let mut text = String::from("[\n");
    for n in 1..=60 {
        let (code, message, severity) = if n == 33 {
            (
                "oas3-valid-schema-example",
                "\\\"example\\\" property type must be integer",
                0,
            )
        } else {
            (
                "operation-description",
                "Operation \\\"description\\\" must be present.",
                1,
            )
        };
        text.push_str(&format!(
            "\t{{\n\t\t\"code\": \"{code}\",\n\t\t\"path\": [\n\t\t\t\"paths\",\n\t\t\t\
             \"/stores/{n}\"\n\t\t],\n\t\t\"message\": \"{message}\",\n\t\t\
             \"severity\": {severity},\n\t\t\"source\": \"/work/openapi.yaml\"\n\t}},\n"
        ));
    }
    text.push_str("]\n");
    let odd = odd_of(&text, 100);
    assert!(
        odd.iter().any(|(_, t, _)| t == "\t\t\"severity\": 0,"),
        "{odd:?}"
    );
    assert!(
        odd.iter()
            .any(|(_, t, _)| t.contains("property type must be integer")),
        "{odd:?}"
    );
    assert!(
        odd.iter().all(|(_, t, _)| !t.contains("\"severity\": 1")),
        "{odd:?}"
    );
}

#[test]
fn a_records_place_is_a_diagnostic_and_warns() {
    // `go vet -json` (tests/corpus/logs/go-vet-json-verbose.err): the packages vetted,
    // and a few records whose `posn` is a place in a file.
    let mut text = String::new();
    for n in 1..=80 {
        text.push_str(&format!("# example.com/shop/pkg/area{n}\n"));
        if n % 20 == 7 {
            text.push_str(&format!(
                "{{\n\t\"example.com/shop/pkg/area{n}\": {{\n\t\t\"copylocks\": [\n\t\t\t{{\n\t\t\t\t\
                 \"posn\": \"/work/pkg/area{n}/area.go:33:17\",\n\t\t\t\t\
                 \"message\": \"Snapshot passes lock by value\"\n\t\t\t}}\n\t\t]\n\t}}\n}}\n"
            ));
        }
    }
    let odd = odd_of(&text, 64);
    let posn: Vec<&str> = odd
        .iter()
        .map(|(_, t, _)| t.as_str())
        .filter(|t| t.contains("\"posn\""))
        .collect();
    assert_eq!(posn.len(), 4, "{odd:?}");
    assert!(posn.iter().all(|t| warns(t)), "{posn:?}");
    assert!(!warns(
        "L:   4 | P:  30 | RF02 | Unqualified reference found in select."
    ));
}

#[test]
fn the_records_inside_a_long_json_line_are_read_whatever_the_chunks() {
    // RuboCop's `--format json` (tests/corpus/logs/rubocop-offenses-json.out): the
    // whole report on one line of 147 KB, no newline at its end; 3 `"error"` records
    // among hundreds of `"convention"`.
    let long = format!(
        "Style/Documentation: {}",
        "Missing class documentation. ".repeat(100)
    );
    // An error record longer than what is kept of it, shown by its ends.
    let kend = format!(
        "Lint/Syntax: unexpected token kEND{}",
        " (here)".repeat(400)
    );
    let mut text = String::from(r#"{"metadata":{"rubocop_version":"1.39.0"},"files":["#);
    for n in 1..=140 {
        text.push_str(&format!(r#"{{"path":"lib/shop/item_{n}.rb","offenses":["#));
        let offenses: Vec<String> = (0..3)
            .map(|k| {
                let (severity, message) = match (n, k) {
                    (31, 1) => ("error", "Lint/Debugger: Remove debugger entry point `binding.pry`."),
                    (77, 2) => ("error", kend.as_str()),
                    (_, 0) if n % 7 == 0 => ("warning", "Lint/UselessAssignment: Useless assignment."),
                    // A record longer than what is kept of it.
                    (_, 1) if n % 9 == 0 => ("convention", long.as_str()),
                    _ => ("convention", "Style/StringLiterals: Prefer single-quoted strings."),
                };
                format!(
                    r#"{{"severity":"{severity}","message":"{message}","cop_name":"X","location":{{"start_line":{k},"column":5}}}}"#
                )
            })
            .collect();
        text.push_str(&offenses.join(","));
        text.push_str("]}");
        text.push(if n < 140 { ',' } else { ']' });
    }
    text.push_str(r#","summary":{"offense_count":420}}"#);
    assert!(text.len() > 40_000 && !text.contains('\n'));
    let pieces = |chunk: usize| {
        let summary = digest(&text, chunk);
        rows(&summary.pieces)
    };
    let whole = pieces(text.len());
    for chunk in [1, 7, 4096, 65536] {
        assert_eq!(pieces(chunk), whole, "chunk {chunk}");
    }
    let errors: Vec<&(u64, String, Vec<u64>)> = whole
        .iter()
        .filter(|(_, t, _)| t.contains(r#""error""#))
        .collect();
    assert_eq!(errors.len(), 2, "{whole:?}");
    assert!(errors[0].1.contains("binding.pry"), "{whole:?}");
    assert!(errors[1].1.contains("kEND"), "{whole:?}");
    assert!(errors.iter().all(|(line, _, _)| *line == 1), "{whole:?}");
    assert!(
        whole.iter().all(|(_, t, _)| !t.contains("convention")),
        "{whole:?}"
    );
    let summary = digest(&text, 4096);
    let files: Vec<&str> = summary
        .pieces
        .iter()
        .filter(|p| p.first.text.contains(r#""error""#))
        .map(|p| p.locators[0].text.as_str())
        .collect();
    assert_eq!(files, ["lib/shop/item_31.rb", "lib/shop/item_77.rb"]);
    // The same report printed over many lines is not read by pieces.
    let lines = text.replace("},{", "},\n{");
    assert!(digest(&lines, 4096).pieces.is_empty());
}

#[test]
fn a_line_led_by_a_rare_rule_id_is_odd_whatever_id_leads_the_others() {
    // ansible-lint's report (tests/corpus/logs/ansible-lint-failures.out): a rule's id
    // as a hyperlink, its message, the place on the next line; one `package-latest`
    // among many `name[casing]` and `fqcn[action-core]`.
    // With its colours and hyperlinks, and without (`--nocolor`).
    for colour in [true, false] {
        rule_ids_odd(colour);
    }
}

fn rule_ids_odd(colour: bool) {
    let link = |id: &str| {
        if colour {
            format!(
                "\x1b[33m\x1b[34m\x1b]8;;https://docs.ansible.com/lint/rules/{id}/\x1b\\{id}\x1b]8;;\x1b\\\x1b[0m\x1b[2m:\x1b[0m"
            )
        } else {
            format!("{id}:")
        }
    };
    let mut text = String::new();
    for n in 1..=60 {
        let id = if n % 2 == 0 {
            "name[casing]"
        } else {
            "fqcn[action-core]"
        };
        text.push_str(&format!(
            "{} All names should start with an uppercase letter.\n\
             roles/r{n}/tasks/main.yml:{n}:9 Task/Handler: install {n}\n\n",
            link(id)
        ));
        if n == 30 {
            text.push_str(&format!(
                "{} Package installs should not use latest.\n\
                 roles/cache/tasks/main.yml:24:9 Task/Handler: install 24\n\n",
                link("package-latest")
            ));
        }
    }
    for chunk in [text.len(), 7, 100] {
        let odd = odd_of(&text, chunk);
        let rule = odd
            .iter()
            .find(|(_, t, _)| t.contains("Package installs should not use latest."))
            .unwrap_or_else(|| panic!("chunk {chunk}: {odd:?}"));
        assert_eq!(rule.2.first(), Some(&(rule.0 + 1)), "its place, {odd:?}");
        assert!(
            odd.iter()
                .all(|(_, t, _)| !t.contains("casing") && !t.contains("action-core")),
            "{odd:?}"
        );
    }
}

#[test]
fn a_long_json_lines_records_are_the_objects_of_its_arrays() {
    // ansible-lint's `-f json` (tests/corpus/logs/ansible-lint-failures-json.out): one
    // line; each issue holds a `location` object, which stays with its record.
    let issue = |check: &str, severity: &str, n: usize| {
        format!(
            r#"{{"type": "issue", "check_name": "{check}", "categories": ["formatting"], "url": "https://docs.ansible.com/lint/rules/{check}/", "severity": "{severity}", "description": "Use FQCN for builtin module actions.", "fingerprint": "{n:064}", "location": {{"path": "roles/r{n}/tasks/main.yml", "lines": {{"begin": {n}}}}}, "content": {{"body": "Use `ansible.builtin.apt` instead."}}}}"#
        )
    };
    let mut issues: Vec<String> = (1..=120)
        .map(|n| issue("fqcn[action-core]", "minor", n))
        .collect();
    issues[70] = issue("package-latest", "major", 71);
    let text = format!("[{}]", issues.join(", "));
    let whole = rows(&digest(&text, text.len()).pieces);
    assert_eq!(rows(&digest(&text, 333).pieces), whole);
    assert_eq!(whole.len(), 1, "{whole:?}");
    let shown = &whole[0].1;
    assert!(
        shown.contains(r#""check_name": "package-latest""#),
        "{shown}"
    );
    assert!(
        shown.contains(r#""path": "roles/r71/tasks/main.yml", "lines": {"begin": 71}"#),
        "{shown}"
    );
}

#[test]
fn a_numbered_entry_over_a_failure_names_the_failing_test_and_a_file_and_line_in_words_locate() {
    // `mix test --trace` (tests/corpus/logs/mix-test-fail-trace.out): the failure is a
    // numbered entry, its place, its assertion, among hundreds of passing tests.
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!("  * test sums line {n} (0.00ms) [L#{n}]\n"));
        if n == 150 {
            text.push_str(
                "\n  1) test lists the codes (Shop.CouponsTest)\n     \
                 test/coupons_test.exs:165\n     Assertion with == failed\n     \
                 code:  assert Enum.sort([\"b\", \"a\"]) == [\"a\", \"c\"]\n\n",
            );
        }
    }
    let summary = digest(&text, 64);
    let names: Vec<&str> = summary
        .failed_tests
        .iter()
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(names, ["test lists the codes (Shop.CouponsTest)"]);
    let key = rows(&summary.keys);
    assert!(
        key.iter()
            .any(|(line, t, locators)| t.contains("Assertion with == failed")
                && locators.contains(&(line - 2))),
        "{key:?}"
    );
    // EUnit's `*failed*` and the place it gives in words, on the next line.
    let text = "  coupons_tests: lists_the_codes_test...*failed*\n\
                in function coupons_tests:lists_the_codes_test/0 (/work/test/coupons_tests.erl, line 44)\n";
    let key = rows(&digest(text, 7).keys);
    assert_eq!(key[0].2, vec![2], "{key:?}");
}

#[test]
fn a_googletest_failures_place_is_a_key_line_and_its_passing_tests_names_are_not_odd() {
    // A googletest binary (tests/corpus/logs/gtest-fail.out): 600 tests, the names of
    // the passing ones varied; a failure's place says `Failure`.
    let mut text = String::from("[==========] Running 600 tests from 12 test suites.\n");
    for n in 1..=300 {
        let name = if n % 10 == 0 {
            format!("SkuOf{n}")
        } else {
            format!("TotalOf{n}")
        };
        text.push_str(&format!(
            "[ RUN      ] AuditTest.{name}\n[       OK ] AuditTest.{name} (0 ms)\n"
        ));
        if n == 150 {
            text.push_str(
                "[ RUN      ] ReportsTest.TotalOfMany\n\
                 /work/tests/reports_test.cc:57: Failure\n\
                 Expected equality of these values:\n  Total(v)\n    Which is: 250\n  260\n\
                 [  FAILED  ] ReportsTest.TotalOfMany (0 ms)\n",
            );
        }
    }
    let summary = digest(&text, 100);
    let keys = rows(&summary.keys);
    assert!(
        keys.iter()
            .any(|(_, t, _)| t == "/work/tests/reports_test.cc:57: Failure"),
        "{keys:?}"
    );
    let odd = rows(&summary.odd);
    assert!(
        odd.iter().all(|(_, t, _)| !t.contains("] AuditTest.")),
        "{odd:?}"
    );
}

#[test]
fn the_files_a_diff_changes_are_kept_each_once() {
    // `gofmt -d` (tests/corpus/logs/gofmt-diff.out) and rustfmt's `Diff in` headers,
    // one for each hunk (tests/corpus/logs/rustfmt-check.out).
    let mut text = String::new();
    for n in 1..=9 {
        text.push_str(&format!(
            "diff internal/billing/billing_{n}.go.orig internal/billing/billing_{n}.go\n\
             --- internal/billing/billing_{n}.go.orig\n+++ internal/billing/billing_{n}.go\n\
             @@ -1,3 +1,4 @@\n package billing\n-import (\"fmt\"; \"strings\")\n+\n+import (\n"
        ));
    }
    let files: Vec<String> = digest(&text, 64)
        .diff_files
        .iter()
        .map(|f| f.text.clone())
        .collect();
    assert_eq!(files.len(), 9, "{files:?}");
    assert_eq!(
        files[2],
        "diff internal/billing/billing_3.go.orig internal/billing/billing_3.go"
    );
    let mut text = String::new();
    for n in 1..=6 {
        for hunk in [1, 15] {
            text.push_str(&format!(
                "Diff in /work/crates/api/src/part{n:02}.rs:{hunk}:\n-fn total( a:u32 ) -> u32 {{\n+fn total(a: u32) -> u32 {{\n"
            ));
        }
    }
    let files: Vec<(u64, String)> = digest(&text, 7)
        .diff_files
        .iter()
        .map(|f| (f.line, f.text.clone()))
        .collect();
    assert_eq!(files.len(), 6, "{files:?}");
    assert_eq!(
        files[1],
        (7, "Diff in /work/crates/api/src/part02.rs:1:".to_owned())
    );
}

#[test]
fn a_title_framed_by_rules_over_a_failure_names_its_test() {
    // A Catch2 binary (tests/corpus/logs/catch2-fail.out): each failing test case's
    // name between two rules, its place, then the failing check.
    let rule = "-".repeat(79);
    let dots = ".".repeat(79);
    let mut text = String::new();
    for n in 0..20 {
        text.push_str(&format!(
            "{rule}\nrounds {c} cents to the next ten\n{rule}\ntests/rounding_test.cpp:{l}\n{dots}\n\n\
             tests/rounding_test.cpp:{f}: FAILED:\n  CHECK( rounded({c}, 10) == {r} )\nwith expansion:\n  {w} == {r}\n\n",
            c = 17 + 10 * n,
            l = 203 + 3 * n,
            f = 204 + 3 * n,
            r = 20 + 10 * n,
            w = 10 + 10 * n,
        ));
    }
    let summary = digest(&text, 100);
    let names: Vec<&str> = summary
        .failed_tests
        .iter()
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(names.len(), 20, "{names:?}");
    assert_eq!(names[3], "rounds 47 cents to the next ten");
    let keys = rows(&summary.keys);
    assert_eq!(
        keys[0].1, "tests/rounding_test.cpp:204: FAILED:",
        "{keys:?}"
    );
    assert_eq!(keys[0].2, vec![2], "{keys:?}");
}

#[test]
fn a_unified_diffs_files_are_kept_by_their_first_header() {
    // `docformatter --check --diff` (tests/corpus/logs/docformatter-check-diff.out):
    // `--- before/x` and `+++ after/x`, no `diff` line over them.
    let mut text = String::new();
    for n in [7, 31, 52] {
        text.push_str(&format!(
            "--- before/src/ledger/entry{n:03}.py\n+++ after/src/ledger/entry{n:03}.py\n@@ -6,48 +6,48 @@\n\
             -    \"\"\"   posts an amount   \"\"\"\n+    \"\"\"Posts an amount.\"\"\"\n"
        ));
    }
    let files: Vec<(u64, String)> = digest(&text, 9)
        .diff_files
        .iter()
        .map(|f| (f.line, f.text.clone()))
        .collect();
    assert_eq!(
        files,
        [
            (1, "--- before/src/ledger/entry007.py".to_owned()),
            (6, "--- before/src/ledger/entry031.py".to_owned()),
            (11, "--- before/src/ledger/entry052.py".to_owned()),
        ]
    );
}

#[test]
fn a_share_is_not_made_alike_and_a_coverage_tables_rows_are_a_family_of_their_own() {
    // `coverage run -m pytest -v; coverage report` (tests/corpus/logs/
    // coverage-fail-under-verbose-merged.out): 300 tests' lines, then a row for each
    // module, one at 0% among rows at 75%.
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!(
            "tests/test_rules.py::test_rule_{n:03} PASSED {:>9}\n",
            format!("[{:>3}%]", n / 3)
        ));
    }
    text.push_str("Name                Stmts   Miss  Cover\n");
    for n in 1..=200 {
        let (miss, cover) = if n == 33 { (12, "0%") } else { (3, "75%") };
        text.push_str(&format!(
            "shop/rules{n:03}.py      12     {miss:>2}    {cover}\n"
        ));
    }
    let odd = odd_of(&text, 100);
    assert!(
        odd.iter()
            .any(|(_, t, _)| t.starts_with("shop/rules033.py ")),
        "{odd:?}"
    );
    assert!(odd.iter().all(|(_, t, _)| !t.contains("PASSED")), "{odd:?}");
}

#[test]
fn a_letter_alone_leads_a_line_as_a_symbol_does() {
    // oxlint (tests/corpus/logs/oxlint-errors.out): `x` for an error among `!` for
    // warnings, the place on the next line.
    let mut text = String::new();
    for n in 1..=60 {
        let mark = if n == 40 { "x" } else { "!" };
        text.push_str(&format!(
            "  {mark} eslint(no-unused-vars): Variable 'v{n}' is declared but never used.\n   \
             ,-[src/api/client{n}.js:4:18]\n 4 |   const v{n} = 1;\n   `----\n\n"
        ));
    }
    let odd = odd_of(&text, 64);
    let error = odd
        .iter()
        .find(|(_, t, _)| t.starts_with("  x "))
        .unwrap_or_else(|| panic!("{odd:?}"));
    assert_eq!(error.2, vec![error.0 + 1], "its place, {odd:?}");
}

#[test]
fn tapes_yaml_block_keeps_what_was_expected_and_where() {
    // tape (tests/corpus/logs/tape-fail.out): block values (`|-`) and `at:`.
    let text = "ok 97 invoices totals 97\n\
                not ok 98 invoices keeps its tags\n  ---\n    operator: deepEqual\n    \
                expected: |-\n      { id: 1, tags: [ 'a', 'b' ] }\n    actual: |-\n      \
                { id: 1, tags: [ 'a' ] }\n    \
                at: Test.<anonymous> (/work/tape/test/invoices.test.js:37:5)\n    \
                stack: |-\n      Error: invoices keeps its tags\n  ...\nok 99 invoices totals 99\n";
    let keys = keys_of(text);
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(keys[0].2, vec![6, 8, 9], "{keys:?}");
}

#[test]
fn a_records_fields_are_told_apart_by_their_depth_and_its_file_comes_with_it() {
    // djLint's SARIF report (tests/corpus/logs/djlint-lint-sarif.out): a catalog of
    // rules each said once, then results of a few rules again and again; one result
    // of a rule seen once, its file 8 lines below.
    let mut text =
        String::from("{\n  \"runs\": [\n    {\n      \"tool\": {\n        \"rules\": [\n");
    for n in 1..=30 {
        text.push_str(&format!(
            "              {{\n              \"id\": \"H{n:03}\",\n                \
             \"text\": \"Rule {n} says something of its own.\"\n              }},\n"
        ));
    }
    text.push_str("        ]\n      },\n      \"results\": [\n");
    for n in 1..=80 {
        let rule = match n {
            50 => "T027",
            _ if n % 2 == 0 => "H013",
            _ => "H021",
        };
        text.push_str(&format!(
            "        {{\n          \"ruleId\": \"{rule}\",\n          \"level\": \"warning\",\n          \
             \"message\": {{\n            \"text\": \"Something.\"\n          }},\n          \
             \"locations\": [\n            {{\n              \"physicalLocation\": {{\n                \
             \"artifactLocation\": {{\n                  \"uri\": \"templates/page{n:03}.html\"\n                \
             }}\n              }}\n            }}\n          ]\n        }},\n"
        ));
    }
    text.push_str("      ]\n    }\n  ]\n}\n");
    let odd = odd_of(&text, 4096);
    let result = odd
        .iter()
        .find(|(_, t, _)| t.contains("\"ruleId\": \"T027\""))
        .unwrap_or_else(|| panic!("{odd:?}"));
    let uri = result.0 + 9;
    assert!(result.2.contains(&uri), "its file, {odd:?}");
    // The rarest first, and of those, the lines of the family with fewest rare ones.
    assert!(odd[0].1.contains("T027"), "{odd:?}");
}

#[test]
fn a_failure_led_by_a_mark_comes_with_the_line_led_by_a_symbol_above_it() {
    // commitlint --verbose (tests/corpus/logs/commitlint-errors-verbose.out): a `⧗`
    // line names each commit, a `✖` line each problem found in it.
    let mut text = String::new();
    for n in 1..=120 {
        text.push_str(&format!(
            "⧗   input: docs(ui): update step {n} of the rollout\n"
        ));
        if n == 77 {
            text.push_str("✖   subject may not be empty [subject-empty]\n");
            text.push_str("✖   type may not be empty [type-empty]\n\n");
            text.push_str("✖   found 2 problems, 0 warnings\n");
        } else {
            text.push_str("✔   found 0 problems, 0 warnings\n");
        }
    }
    assert_eq!(
        keys_of(&text),
        [
            (
                154,
                "✖   subject may not be empty [subject-empty]".to_owned(),
                vec![153]
            ),
            (
                155,
                "✖   type may not be empty [type-empty]".to_owned(),
                vec![]
            ),
            (157, "✖   found 2 problems, 0 warnings".to_owned(), vec![]),
        ]
    );
    // A mark of an outcome above names no subject: a passing check's, a test's.
    let passing = text.replace("✖   subject", "✔   subject");
    assert_eq!(
        keys_of(&passing),
        [
            (
                155,
                "✖   type may not be empty [type-empty]".to_owned(),
                vec![]
            ),
            (157, "✖   found 2 problems, 0 warnings".to_owned(), vec![]),
        ]
    );
    let jest = "  ✓ totals 50 items (1 ms)\n  ✖ finds a missing item (3 ms)\n";
    assert_eq!(
        keys_of(jest),
        [(2, "  ✖ finds a missing item (3 ms)".to_owned(), vec![])]
    );
}

#[test]
fn an_odd_line_comes_with_the_line_that_opened_its_block() {
    // gitlint (tests/corpus/logs/gitlint-commits.err): a block per commit, opened by
    // its `Commit <sha>:`; one `T3` among many `B6`.
    let mut text = String::new();
    for n in 1..=120 {
        text.push_str(&format!("Commit {:010x}:\n", 0x5a00_0000_u64 + n * 7919));
        if n == 70 {
            text.push_str("1: T3 Title has trailing punctuation (!): \"Release 2.288!\"\n\n");
        } else {
            text.push_str("3: B6 Body message is missing\n\n");
        }
    }
    let odd = odd_of(&text, 4096);
    assert_eq!(
        odd,
        [(
            209,
            "1: T3 Title has trailing punctuation (!): \"Release 2.288!\"".to_owned(),
            vec![208]
        )]
    );
}

#[test]
fn a_line_out_of_place_is_odd_where_no_line_is_a_key_line() {
    // gitlint --debug (tests/corpus/logs/gitlint-commits-debug-ignore.err): each commit
    // logged in the same lines, a rule after them; after three of those rules, the
    // commit's violation instead of the next commit's first record.
    let mut text = String::new();
    for n in 1..=150 {
        text.push_str(&format!(
            "DEBUG: gitlint.lint Linting commit {n:040x}\n--- Commit Message ----\n\
             Add the handler of route {n}\n--- Meta info ---------\n\
             Author: Dana Dev <dana@example.org>\n-----------------------\n"
        ));
        if n % 50 == 25 {
            text.push_str(&format!(
                "Commit {n:010x}:\n1: T8 Title is too short (3<5): \"fix\"\n"
            ));
        }
    }
    let odd = odd_of(&text, 4096);
    let out_of_place: Vec<(u64, String, Vec<u64>)> = odd
        .into_iter()
        .filter(|(_, text, _)| text.starts_with("Commit"))
        .collect();
    assert_eq!(
        out_of_place,
        [
            (151, "Commit 0000000019:".to_owned(), vec![152]),
            (453, "Commit 000000004b:".to_owned(), vec![454]),
            (755, "Commit 000000007d:".to_owned(), vec![756]),
        ]
    );
    // Beside a key line, they are not odd.
    let failing = format!("{text}error: 3 violations\n");
    assert!(
        odd_of(&failing, 4096)
            .iter()
            .all(|(_, text, _)| !text.starts_with("Commit"))
    );
}

#[test]
fn lines_out_of_place_are_counted_by_the_bytes_kept() {
    // Two families in turn, their lines of Latin-1 (each byte kept as three) or longer
    // than a key line (kept cut): what is let go is what was counted.
    for line in [
        b"caf\xe9 cr\xe8me br\xfbl\xe9e \xe0 la carte".to_vec(),
        vec![b'x'; 410],
    ] {
        let mut text = Vec::new();
        for n in 0..200 {
            text.extend_from_slice(if n % 2 == 0 { b"alpha " } else { b"beta " });
            text.extend_from_slice(&line);
            text.push(b'\n');
        }
        let summary = tail_of(&text, 4096);
        assert_eq!(summary.lines, 200);
    }
}

#[test]
fn a_records_field_is_signed_by_its_name_and_value_and_its_message_travels_with_its_severity() {
    // ty's GitLab report (tests/corpus/logs/ty-check-errors-gitlab.out): a field a
    // line, each record's `fingerprint` its own, three `"major"` among many
    // `"minor"`; the finding's words are in the `description` above its severity.
    let mut text = String::from("[\n");
    for n in 1..=120 {
        let (check, description, severity) = if n % 40 == 17 {
            (
                "missing-attribute",
                "missing-attribute: Object of type `int` has no attribute `upper`",
                "major",
            )
        } else if n % 2 == 0 {
            (
                "redundant-cast",
                "redundant-cast: Value is already of type `float`",
                "minor",
            )
        } else {
            (
                "possibly-unresolved-reference",
                "possibly-unresolved-reference: Name `name` used when possibly not defined",
                "minor",
            )
        };
        text.push_str(&format!(
            "  {{\n    \"check_name\": \"{check}\",\n    \"description\": \"{description}\",\n    \
             \"severity\": \"{severity}\",\n    \"fingerprint\": \"{:x}\",\n    \"location\": \
             {{\n      \"path\": \"billing/invoice_{n:03}.py\",\n      \"positions\": {{\n        \
             \"begin\": {{\n          \"line\": 16,\n          \"column\": 12\n        }}\n      \
             }}\n    }}\n  }},\n",
            0xca8c_92ab_aefc_1270_u64.wrapping_mul(n * 7919)
        ));
    }
    text.push_str("]\n");
    let odd = odd_of(&text, 4096);
    let major: Vec<&(u64, String, Vec<u64>)> = odd
        .iter()
        .filter(|(_, t, _)| t.contains("\"major\""))
        .collect();
    assert_eq!(major.len(), 3, "{odd:?}");
    for (line, _, kept) in major {
        // The description right above it, and the file its record names.
        assert_eq!(kept, &[line - 1, line + 3], "{odd:?}");
    }
    assert!(
        odd.iter().all(|(_, t, _)| !t.contains("fingerprint")),
        "{odd:?}"
    );
}

#[test]
fn a_records_severity_of_error_comes_first_with_the_first_file_its_record_names() {
    // dependency-cruiser's JSON report (tests/corpus/logs/depcruise-errors-json.out):
    // modules with odd fields of their own, then violations, each `from` a file and
    // `to` another, its rule's severity nested; three `"error"` among many `"warn"`.
    let mut text = String::from("{\n  \"modules\": [\n");
    for n in 1..=240 {
        // Odd fields at three depths, eleven of each.
        let field = |at: u32, name: &str, value: &str| {
            if n % 22 == at {
                format!("\"{name}{n}\": {value}")
            } else {
                format!("\"{name}\": {value}")
            }
        };
        text.push_str(&format!(
            "    {{\n      \"source\": \"src/m{n}.js\",\n      {},\n      \"dependencies\": [\n        \
             {{\n          \"module\": \"./d{n}.js\",\n          {},\n          \"rules\": {{\n            \
             {}\n          }}\n        }}\n      ]\n    }},\n",
            field(3, "orphan", "false"),
            field(5, "dynamic", "false"),
            field(7, "kind", "\"local\""),
        ));
    }
    text.push_str("  ],\n  \"summary\": {\n    \"violations\": [\n");
    for n in 1..=240 {
        let severity = if n % 80 == 40 { "error" } else { "warn" };
        text.push_str(&format!(
            "      {{\n        \"type\": \"dependency\",\n        \"from\": \"src/features/f{n}/cart.js\",\n        \
             \"to\": \"src/core/total{n}.js\",\n        \"rule\": {{\n          \"severity\": \"{severity}\",\n          \
             \"name\": \"no-cross-feature\"\n        }}\n      }},\n"
        ));
    }
    text.push_str("    ]\n  }\n}\n");
    let odd = odd_of(&text, 4096);
    assert!(odd.len() > 3, "{odd:?}");
    for (line, text, kept) in &odd[..3] {
        assert!(text.contains("\"severity\": \"error\""), "{odd:?}");
        // Its record's `from`, not its `to`.
        assert_eq!(kept, &[line - 3], "{odd:?}");
    }
}

#[test]
fn a_catalog_of_rules_ranks_after_a_finding_seen_twice() {
    // djLint's SARIF report (tests/corpus/logs/djlint-lint-sarif.out): its catalog of
    // rules, each id once, then its results: `H025` twice among many `H013`.
    let mut text =
        String::from("{\n  \"runs\": [\n    {\n      \"tool\": {\n        \"rules\": [\n");
    for n in 1..=30 {
        text.push_str(&format!(
            "          {{\n            \"id\": \"H{n:03}\",\n            \"name\": \"rule\",\n            \
             \"helpUri\": \"https://djlint.com\",\n            \"enabled\": true,\n            \
             \"kind\": \"lint\"\n          }},\n"
        ));
    }
    text.push_str("        ]\n      },\n      \"results\": [\n");
    for n in 1..=140 {
        let rule = match n {
            50 | 90 => "H025",
            _ if n % 2 == 0 => "H013",
            _ => "H021",
        };
        text.push_str(&format!(
            "        {{\n          \"ruleId\": \"{rule}\",\n          \"level\": \"warning\",\n          \
             \"uri\": \"templates/page{n:03}.html\"\n        }},\n"
        ));
    }
    text.push_str("      ]\n    }\n  ]\n}\n");
    let odd = odd_of(&text, 4096);
    let found: Vec<&str> = odd.iter().map(|(_, t, _)| t.trim()).collect();
    assert_eq!(
        &found[..2],
        ["\"ruleId\": \"H025\",", "\"ruleId\": \"H025\","]
    );
}

#[test]
fn a_one_line_records_severity_signs_it_past_its_first_fields() {
    // semgrep's JSON report (tests/corpus/logs/semgrep-scan-errors-json.out): one
    // line, its severity far into each record; html-validate's
    // (tests/corpus/logs/html-validate-errors-json.out), its severity a number.
    for (severities, rare) in [(["WARNING", "ERROR"], "\"ERROR\""), (["1", "2"], ":2,")] {
        let mut text = String::from("{\"results\":[");
        for n in 1..=200 {
            let severity = if n % 50 == 7 {
                severities[1]
            } else {
                severities[0]
            };
            let quoted = severity
                .parse::<u8>()
                .map_or(format!("\"{severity}\""), |_| severity.to_owned());
            text.push_str(&format!(
                "{}{{\"check_id\":\"print-in-service-code\",\"path\":\"shop/carts/view_{n}.py\",\
                 \"start\":{{\"line\":{},\"col\":5,\"offset\":{}}},\"end\":{{\"line\":10,\"col\":36}},\
                 \"extra\":{{\"message\":\"print() left in service code; use the logger\",\
                 \"metadata\":{{}},\"severity\":{quoted},\"fingerprint\":\"requires login\"}}}}",
                if n == 1 { "" } else { "," },
                n % 30,
                n * 37
            ));
        }
        text.push_str("]}\n");
        for chunk in [7, 4096] {
            let pieces = digest(&text, chunk).pieces;
            let records: Vec<&str> = pieces
                .iter()
                .map(|p| p.first.text.as_str())
                .filter(|t| t.contains("check_id"))
                .collect();
            assert_eq!(records.len(), 4, "{rare}, chunk {chunk}: {pieces:?}");
            assert!(
                records.iter().all(|t| t.contains(rare)),
                "{rare}, chunk {chunk}: {pieces:?}"
            );
        }
    }
}

#[test]
fn an_error_with_its_rules_id_in_parentheses_is_a_key_line() {
    // semgrep's `--emacs` form (tests/corpus/logs/semgrep-scan-errors-emacs-merged.out).
    is(
        Class::Key,
        &[
            "shop/payments/view_31.py:17:16:error(eval-of-request-data):    discount = eval(x):eval() on request data runs arbitrary code",
        ],
    );
    assert!(!is_key(
        "shop/carts/view_01.py:10:5:warning(print-in-service-code):    print(\"carts 1\"):print() left in service code"
    ));
}

#[test]
fn a_traceback_is_located_by_its_first_frame_past_pythons_own_library() {
    // zope.testrunner (tests/corpus/logs/zope-testrunner-fail-vv.out): unittest's
    // frames first, then the test's own.
    let text = "Error in test test_net_of_italian_salary (payroll.tests.test_countries.CountriesTests.test_net_of_italian_salary)\n\
        Traceback (most recent call last):\n  \
        File \"/root/.pyenv/versions/3.11.7/lib/python3.11/unittest/case.py\", line 57, in testPartExecutor\n    \
        yield\n  \
        File \"/usr/lib/python3.11/unittest/case.py\", line 623, in run\n    \
        self._callTestMethod(testMethod)\n  \
        File \"/work/src/payroll/tests/test_countries.py\", line 369, in test_net_of_italian_salary\n    \
        self.assertEqual(net(1000, \"IT\"), 780)\n  \
        File \"/work/src/payroll/__init__.py\", line 7, in net\n    \
        return round(gross * (1 - RATES[country]), 2)\n\
        KeyError: 'IT'\n";
    let keys = keys_of(text);
    let traceback = keys
        .iter()
        .find(|(_, t, _)| t.starts_with("Traceback"))
        .unwrap_or_else(|| panic!("{keys:?}"));
    assert_eq!(traceback.2, [7], "{keys:?}");
}

#[test]
fn an_odd_diagnostic_with_its_code_is_a_key_line_among_many() {
    // flake8 with darglint (tests/corpus/logs/darglint-flake8-errors.out): 300 lines
    // too long before and after the one `DAR101`, which holds no word of an error.
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!(
            "src/weather/station_{n:03}.py:15:89: E501 line too long (105 > 88 characters)\n"
        ));
        if n == 220 {
            text.push_str("src/weather/pricing/station_041.py:10:1: DAR102 Excess parameter(s) in Docstring: + station\n");
        }
    }
    let summary = digest(&text, 4096);
    assert!(summary.keys.len() < 260, "{}", summary.keys.len());
    assert!(
        summary
            .keys
            .iter()
            .any(|k| k.first.line == 221 && k.first.text.contains("DAR102")),
        "{:?}",
        &summary.keys[190..]
    );
}

#[test]
fn a_failure_led_by_a_status_brings_the_lines_since_its_test_opened() {
    // googletest (tests/corpus/logs/gtest-fail.out): an exception thrown in a test
    // body, said in words no rule knows, between `[ RUN      ]` and `[  FAILED  ]`.
    let mut text = String::new();
    for n in 1..=40 {
        text.push_str(&format!(
            "[ RUN      ] BillingTest.Rounds{n}\n[       OK ] BillingTest.Rounds{n} (0 ms)\n"
        ));
    }
    text.push_str(
        "[ RUN      ] BillingTest.ParsesEmptyAmount\nunknown file: Failure\n\
         C++ exception with description \"empty amount\" thrown in the test body.\n\
         [  FAILED  ] BillingTest.ParsesEmptyAmount (0 ms)\n\
         [ RUN      ] BillingTest.DiscountRoundsUp\n\
         /work/tests/billing_test.cc:54: Failure\nExpected equality of these values:\n  849\n\
         [  FAILED  ] BillingTest.DiscountRoundsUp (0 ms)\n",
    );
    let keys = keys_of(&text);
    let failed: Vec<&(u64, String, Vec<u64>)> = keys
        .iter()
        .filter(|(_, t, _)| t.starts_with("[  FAILED  ]"))
        .collect();
    assert_eq!(failed.len(), 2, "{keys:?}");
    assert_eq!(failed[0].2, [82, 83], "{keys:?}");
    // A key line since the test opened says what failed: nothing more is brought.
    assert!(failed[1].2.is_empty(), "{keys:?}");
}

#[test]
fn a_records_reading_keeps_its_own_message_file_and_words() {
    // Found in review: a severity before its message takes no message of the record
    // before it; flat `Key: value` blocks keep each block's own file; a state said in
    // a word (`"crashed"` among `"done"`), a numbered field's name, a word past an
    // apostrophe near the cut and a one-line record's `priority` number do not hide
    // the odd line.
    let mut text = String::from("[\n");
    for n in 1..=100 {
        let severity = if n == 60 { "major" } else { "minor" };
        text.push_str(&format!(
            "  {{\n    \"severity\": \"{severity}\",\n    \"message\": \"finding number {n} here\"\n  }},\n"
        ));
    }
    text.push_str("]\n");
    let odd = odd_of(&text, 4096);
    let major: Vec<_> = odd.iter().filter(|(_, t, _)| t.contains("major")).collect();
    assert_eq!(major.len(), 1, "{odd:?}");
    assert!(major[0].2.iter().all(|&k| k > major[0].0), "{odd:?}");

    for blocks in [40, 80] {
        let mut text = String::new();
        for n in 1..=blocks {
            let severity = if n == blocks - 10 { "HIGH" } else { "LOW" };
            text.push_str(&format!(
                "Check: CKV_AWS_{n}\nFile: modules/s3/main_{n:03}.tf\nLine: 12\nSeverity: {severity}\n\n"
            ));
        }
        let odd = odd_of(&text, 4096);
        let high: Vec<_> = odd.iter().filter(|(_, t, _)| t.contains("HIGH")).collect();
        assert_eq!(high.len(), 1, "{odd:?}");
        let file = text.lines().nth(high[0].2[0] as usize - 1).unwrap();
        assert_eq!(file, format!("File: modules/s3/main_{:03}.tf", blocks - 10));
    }

    let mut cases = Vec::new();
    let mut state = String::from("{\n  \"jobs\": [\n");
    let mut named = String::from("{\n  \"results\": {\n");
    let mut apostrophe = String::new();
    let mut priority = String::new();
    for n in 1..=200 {
        let (end, word) = if n == 120 {
            ("declined", "crashed")
        } else {
            ("accepted", "done")
        };
        state.push_str(&format!(
            "    {{\n      \"name\": \"build\",\n      \"state\": \"{word}\",\n      \"duration\": {}\n    }},\n",
            n * 37
        ));
        named.push_str(&format!("    \"task_{n:03}\": \"{word}\",\n"));
        apostrophe.push_str(&format!(
            "worker {} the customer's payment of order {n} was {end} by the bank and then some more words past the cut\n",
            "x".repeat(100)
        ));
        let status = if n == 120 { "failed" } else { "passed" };
        priority.push_str(&format!(
            "{{\"task\":\"build-{n}\",\"priority\":{n},\"status\":\"{status}\"}}\n"
        ));
    }
    cases.extend([
        (state, "crashed"),
        (named, "crashed"),
        (apostrophe, "declined"),
        (priority, "failed"),
    ]);
    for (text, rare) in cases {
        let odd = odd_of(&text, 4096);
        assert!(
            odd.iter().any(|(_, t, _)| t.contains(rare)),
            "{rare}: {odd:?}"
        );
    }
}

#[test]
fn a_code_elsewhere_on_a_line_makes_no_key_line_nor_is_counted_twice() {
    // Found in review: a log line naming `X509` is no diagnostic; a coded line that is
    // a key line of its own is counted once; code that calls `error(…)` is no error.
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!(
            "2024/01/02 15:04:05 server.go:88: handled request id={n} in {}ms\n",
            n % 17
        ));
        if n == 150 {
            text.push_str(
                "2024/01/02 15:04:05 tls.go:41: loaded X509 certificate chain for api.example.com\n",
            );
        }
    }
    assert!(digest(&text, 4096).keys.is_empty());
    let mut text = String::new();
    for n in 1..=300 {
        text.push_str(&format!(
            "src/weather/station_{n:03}.py:15:89: E501 line too long (105 > 88 characters)\n"
        ));
        if n == 100 {
            text.push_str("src/weather/station_x.py:10:1: E999 SyntaxError: invalid syntax\n");
        }
    }
    let summary = digest(&text, 4096);
    assert_eq!(summary.key_lines, 301);
    assert_eq!(
        summary
            .keys
            .iter()
            .filter(|k| k.first.text.contains("E999"))
            .count(),
        1
    );
    for line in [
        "    def error(self):",
        "  error(message): void {",
        "def error(msg):",
    ] {
        assert!(!is_key(line), "{line}");
    }
}

#[test]
fn a_long_json_lines_records_are_told_apart_by_the_field_of_their_array() {
    // knip's `--reporter json` (tests/corpus/logs/knip-issues-json.out): one line, a
    // record per file; 320 unused exports alike, and among them two unused
    // dependencies, a devDependency and an unlisted one, records of the same shape in
    // other arrays.
    let empty = |fields: &[&str]| {
        fields
            .iter()
            .map(|f| format!(r#""{f}":[]"#))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut records = vec![
        format!(
            r#"{{"file":"package.json",{},"dependencies":[{{"name":"rollup","line":8,"col":6,"pos":136}},{{"name":"left-pad","line":9,"col":6,"pos":160}}],"devDependencies":[{{"name":"vite","line":13,"col":6,"pos":237}}],{}}}"#,
            empty(&["binaries", "catalog"]),
            empty(&["exports", "files", "types", "unlisted"])
        ),
        format!(
            r#"{{"file":"src/lib/version.js",{},"unlisted":[{{"name":"chalk","line":2,"col":19,"pos":47}}],"unresolved":[]}}"#,
            empty(&[
                "binaries",
                "dependencies",
                "devDependencies",
                "exports",
                "files",
                "types"
            ])
        ),
    ];
    for n in 1..=160 {
        records.push(format!(
            r#"{{"file":"src/lib/price{n}.js",{},"exports":[{{"name":"unused{n}","line":3,"col":14,"pos":106}},{{"name":"spare{n}","line":4,"col":14,"pos":136}}],{}}}"#,
            empty(&["binaries", "dependencies", "devDependencies"]),
            empty(&["files", "types", "unlisted", "unresolved"])
        ));
    }
    records.swap(1, 90);
    let text = format!(r#"{{"issues":[{}]}}"#, records.join(","));
    assert!(text.len() > 20_000 && !text.contains('\n'));
    let whole = rows(&digest(&text, text.len()).pieces);
    for chunk in [1, 7, 4096] {
        assert_eq!(rows(&digest(&text, chunk).pieces), whole, "chunk {chunk}");
    }
    for (field, name) in [
        ("dependencies", "rollup"),
        ("dependencies", "left-pad"),
        ("devDependencies", "vite"),
        ("unlisted", "chalk"),
    ] {
        let shown = format!(r#""{field}":[ {{"name":"{name}","line""#);
        assert!(
            whole.iter().any(|(_, t, _)| t.starts_with(&shown)),
            "{shown}: {whole:?}"
        );
    }
    assert!(
        whole.iter().all(|(_, t, _)| !t.contains("unused")),
        "{whole:?}"
    );
}

#[test]
fn a_json_path_reads_strings_as_strings_and_names_the_array_it_stands_in() {
    let path = |text: &str| {
        let mut path = long::JsonPath::default();
        // However the reads cut it.
        let whole = {
            let mut p = long::JsonPath::default();
            p.read(text.as_bytes());
            p.array_field()
        };
        for chunk in text.as_bytes().chunks(3) {
            path.read(chunk);
        }
        assert_eq!(path.array_field(), whole, "{text}");
        whole
    };
    assert_eq!(path(r#"{"errors":["#).as_deref(), Some("errors"));
    assert_eq!(path(r#"{"errors" : [ {"a":1},"#).as_deref(), Some("errors"));
    // A bracket or a quote in a string opens nothing.
    assert_eq!(
        path(r#"{"warnings":[],"errors":[{"message":"a [b] \"c\": [","x":["#).as_deref(),
        Some("x")
    );
    assert_eq!(
        path(r#"{"errors":[{"message":"a [b] \"c\": [","#).as_deref(),
        None,
        "inside an object"
    );
    assert_eq!(
        path(r#"{"errors":[{"message":"say \"[\" here","x":1},"#).as_deref(),
        Some("errors")
    );
    assert_eq!(
        path(r#"[[{"a":1},"#).as_deref(),
        None,
        "an array in an array"
    );
    assert_eq!(path(r#"{"a":[1],"b":"#).as_deref(), None);
}

#[test]
fn a_record_of_errors_ranks_first_its_message_shown_whole_where_its_start_would_cut_it() {
    // webpack's `--json` (tests/corpus/logs/webpack-errors-json.out): an error record
    // whose message starts within what is shown of its start, and ends past it, after
    // hundreds of modules' records (and a rare one: the report's head).
    let error = r#"{"moduleIdentifier":"/home/dev/work/webpack/src/index.js","moduleName":"./src/index.js","loc":"91:0-45","message":"Module not found: Error: Can't resolve './lib/money.js' in '/home/dev/work/webpack/src'","details":"resolve './lib/money.js' in '/home/dev/work/webpack/src'\n  Parsed request is a module","stack":"ModuleNotFoundError: Module not found{}"}"#;
    let error = error.replace(
        "{}",
        &"\\n    at /home/dev/work/node-tools/node_modules/webpack/lib/Compilation.js:2243:28"
            .repeat(20),
    );
    let module = |n: usize| {
        format!(
            r#"{{"type":"module","moduleType":"javascript/auto","size":{n},"identifier":"/home/dev/work/webpack/src/lib/price{n}.js","name":"./src/lib/price{n}.js","failed":false,"errors":0,"warnings":0}}"#
        )
    };
    let modules: Vec<String> = (1..=200).map(module).collect();
    let text = format!(
        r#"{{"hash":"0255","modules":[{}],"errors":[{error}],"errorsCount":1}}"#,
        modules.join(",")
    );
    let whole = rows(&digest(&text, text.len()).pieces);
    // A record of the errors ranks first, before the rare records of other arrays.
    let shown = whole
        .first()
        .filter(|(_, t, _)| t.starts_with(r#""errors":[ "#))
        .unwrap_or_else(|| panic!("{whole:?}"));
    assert!(
        shown.1.contains(
            "Module not found: Error: Can't resolve './lib/money.js' in '/home/dev/work/webpack/src'"
        ),
        "{shown:?}"
    );
    assert!(shown.1.len() <= KEY_LINE_BYTES, "{}", shown.1.len());
}

#[test]
fn a_steps_failure_after_dot_leaders_is_a_key_line_with_the_list_under_it() {
    // pre-commit (tests/corpus/logs/pre-commit-fail.out): each hook's status after
    // dot leaders, its id and exit code listed under it, hundreds of `ok` lines after.
    let mut text = String::from(
        "trim trailing spaces.....................................................Passed\n",
    );
    for n in 1..=120 {
        text.push_str(&format!("ok      src/shop/part{n}.py\n"));
    }
    text.push_str(
        "no debug prints..........................................................Failed\n\
         - hook id: no-debug-prints\n\
         - exit code: 1\n\
         \n\
         src/shop/part119.py:4:    print('total', items)\n\
         \n\
         config files are valid JSON..............................................Failed\n\
         - hook id: json-valid\n\
         - exit code: 1\n\
         \n\
         config/region7.json: Expecting property name enclosed in double quotes: line 4 column 1 (char 38)\n\
         \n\
         modules start with a docstring...........................................Passed\n\
         - hook id: headers\n\
         - duration: 0.06s\n\
         \n",
    );
    for n in 1..=120 {
        text.push_str(&format!("ok      src/shop/part{n}.py\n"));
    }
    let whole = rows(&digest(&text, text.len()).keys);
    for chunk in [1, 7, 4096] {
        assert_eq!(rows(&digest(&text, chunk).keys), whole, "chunk {chunk}");
    }
    let keys: Vec<(u64, &str, Vec<u64>)> = whole
        .iter()
        .map(|(line, t, l)| (*line, t.split('.').next().unwrap_or(""), l.clone()))
        .collect();
    assert_eq!(
        keys,
        [
            (122, "no debug prints", vec![123, 124]),
            (128, "config files are valid JSON", vec![129, 130]),
        ]
    );
    let summary = digest(&text, 4096);
    assert_eq!(
        summary.keys[0].locators[0].text,
        "- hook id: no-debug-prints"
    );
    // Not a step that passed, nor a status that does not end its line.
    for line in [
        "modules start with a docstring...........................................Passed",
        "Checking for stdio.h.... Failed to read the cache, retrying",
    ] {
        assert!(!is_key(line), "{line}");
    }
}

#[test]
fn a_severity_at_its_place_in_words_is_a_key_line_with_the_message_under_it() {
    // CSSLint's compact report (tests/corpus/logs/csslint-errors.out): each problem a
    // numbered severity at its place, the message and the line it quotes under it;
    // 473 warnings, 5 errors.
    let mut text = String::new();
    for n in 1..=120 {
        text.push_str(&format!(
            "csslint: There are 2 problems in /home/dev/work/csslint/css/page{n:03}.css.\n\n\
             page{n:03}.css\n\
             1: warning at line 5, col 3\n\
             Using width with padding can sometimes make elements larger than you expect.\n  \
             padding: 4px;\n\n"
        ));
        if n == 21 {
            text.push_str(
                "page021.css\n\
                 2: error at line 8, col 11\n\
                 Unknown property 'colr'.\n\
                 .banner { colr: #fff; height: 40px; }\n\n",
            );
        }
    }
    let whole = rows(&digest(&text, text.len()).keys);
    for chunk in [1, 7, 4096] {
        assert_eq!(rows(&digest(&text, chunk).keys), whole, "chunk {chunk}");
    }
    let summary = digest(&text, 4096);
    assert_eq!(summary.keys.len(), 1, "{whole:?}");
    let key = &summary.keys[0];
    assert_eq!(key.first.text, "2: error at line 8, col 11");
    let under: Vec<&str> = key.locators.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        under,
        [
            "Unknown property 'colr'.",
            ".banner { colr: #fff; height: 40px; }"
        ]
    );
    assert!(!is_key("1: warning at line 5, col 3"));
    // A severity at its place with a message of its own waits for no message.
    assert!(is_key("Error at line 3: unexpected token"));
    assert!(!says_no_message("Error at line 3: unexpected token"));
}

#[test]
fn a_long_lines_record_that_says_error_is_kept_where_its_middle_would_be_cut() {
    // CSSLint's checkstyle report (tests/corpus/logs/csslint-errors-checkstyle.out): a
    // file's problems on one line, its error between warnings.
    let warning = |line: u32| {
        format!(
            r#"<error line="{line}" column="3" severity="warning" message="Using width with padding can sometimes make elements larger than you expect." source="net.csslint.Bewareofbrokenboxsize"/>"#
        )
    };
    let error = r#"<error line="8" column="11" severity="error" message="Unknown property 'colr'." source="net.csslint.Requireuseofknownproperties"/>"#;
    let line = format!(
        r#"<file name="/home/dev/work/csslint/css/page021.css">{}{}{error}{}{}</file>"#,
        warning(5),
        warning(6),
        warning(9),
        warning(10)
    );
    assert!(!cut_middle(&line, KEY_LINE_BYTES).contains(error));
    let cut = cut_line(&line, KEY_LINE_BYTES);
    assert!(cut.contains(error), "{cut}");
    assert!(cut.starts_with(r#"<file name="/home/dev/work/csslint/css/page021.css">"#));
    assert!(cut.len() <= KEY_LINE_BYTES + 64, "{}", cut.len());
    // A JSON record's severity too; a line that says no error is cut in its middle.
    let json = line.replace(
        error,
        r#"{"severity":"error","message":"Unknown property"}"#,
    );
    assert!(cut_line(&json, KEY_LINE_BYTES).contains(r#"{"severity":"error","#));
    let calm = line.replace(error, "");
    assert_eq!(
        cut_line(&calm, KEY_LINE_BYTES),
        cut_middle(&calm, KEY_LINE_BYTES)
    );
    // What is cut never splits a character.
    let wide = format!("{}{error}{}", "é".repeat(150), "ü".repeat(150));
    assert!(cut_line(&wide, KEY_LINE_BYTES).contains(error));
    // The report's odd line, the file with an error among 120 with warnings only,
    // shows its error.
    let mut report = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><checkstyle>\n");
    for n in 1..=120 {
        let file = format!(
            r#"<file name="/home/dev/work/csslint/css/page{n:03}.css">{}{}{}{}</file>"#,
            warning(5),
            warning(6),
            warning(9),
            warning(10)
        );
        report.push_str(&if n == 21 { line.clone() } else { file });
        report.push('\n');
    }
    report.push_str("</checkstyle>\n");
    let odd = odd_of(&report, 4096);
    assert!(odd.iter().any(|(_, t, _)| t.contains(error)), "{odd:?}");
    // Its error past the line's first 512 bytes, which sign it, signs it too.
    let late = format!(
        r#"<file name="/home/dev/work/csslint/css/page140.css">{}{}{}{error}</file>"#,
        warning(5),
        warning(6),
        warning(9)
    );
    assert!(late.find(r#"severity="error""#).unwrap() > 512);
    let mut report = String::new();
    for n in 1..=120 {
        let file = format!(
            r#"<file name="/home/dev/work/csslint/css/page{n:03}.css">{}{}{}{}</file>"#,
            warning(5),
            warning(6),
            warning(9),
            warning(10)
        );
        report.push_str(&if n == 40 { late.clone() } else { file });
        report.push('\n');
    }
    let odd = odd_of(&report, 4096);
    assert!(odd.iter().any(|(_, t, _)| t.contains(error)), "{odd:?}");
}

#[test]
fn mochas_failure_keeps_its_entry_and_the_tests_title_under_it() {
    // nyc over mocha (tests/corpus/logs/nyc-mocha-fail.out): 620 passing tests, the
    // summary, then each failure's numbered entry (its suite), the test's title, a
    // blank line before an assertion with Node's error code; a coverage table after.
    let mut text = String::from("\n  budget\n");
    for n in 1..=300 {
        text.push_str(&format!("    ✔ adds case {n}\n"));
    }
    text.push_str(
        "\n\n  620 passing (65ms)\n  2 failing\n\n\
         \x20 1) budget\n\
         \x20      reads the budget of a missing team:\n\
         \x20    TypeError: Cannot read properties of undefined (reading 'total')\n\
         \x20     at Context.<anonymous> (test/budget.test.js:33:105)\n\n\
         \x20 2) currency\n\
         \x20      labels a currency code in upper case:\n\n\
         \x20     AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\
         + actual - expected\n\n\
         + 'currency:eur'\n\
         - 'currency:EUR'\n\n\
         \x20     at Context.<anonymous> (test/currency.test.js:41:67)\n\n",
    );
    for n in 1..=100 {
        text.push_str(&format!(" src/mod{n}.js | 41.3 | 20 | 50 | 41.3 | 3-9\n"));
    }
    let whole = rows(&digest(&text, text.len()).keys);
    for chunk in [1, 7, 4096] {
        assert_eq!(rows(&digest(&text, chunk).keys), whole, "chunk {chunk}");
    }
    let summary = digest(&text, 4096);
    let shown: Vec<(&str, Vec<&str>)> = summary
        .keys
        .iter()
        .map(|k| {
            let locators = k.locators.iter().map(|l| l.text.trim()).collect();
            (k.first.text.trim(), locators)
        })
        .collect();
    // Its summary, `2 failing`, holds no trigger word: one more would slow the search
    // of plain text (a 27th word, whatever it is, makes it three times slower).
    assert!(shown.iter().all(|(t, _)| *t != "2 failing"), "{shown:?}");
    assert_eq!(
        shown[0].1[..2],
        ["1) budget", "reads the budget of a missing team:"],
        "{shown:?}"
    );
    assert!(
        shown[1].0.starts_with("AssertionError [ERR_ASSERTION]:"),
        "{shown:?}"
    );
    assert_eq!(
        shown[1].1[..2],
        ["2) currency", "labels a currency code in upper case:"],
        "{shown:?}"
    );
}

#[test]
fn a_step_that_passed_does_not_locate_the_failure_after_it() {
    // cucumber-js (tests/corpus/logs/cucumber-33-failures.out): the passing steps'
    // places right above a failing step's assertion.
    let mut text = String::new();
    for n in 1..=80 {
        text.push_str(&format!(
            "   ✔ Given a cart with {n} items # features/steps.js:4\n"
        ));
    }
    text.push_str(
        "1) Scenario: cart totals 6 items # features/cart.feature:33\n\
         \x20  ✔ And a price of 250 cents # features/step_definitions/steps.js:5\n\
         \x20      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n",
    );
    let summary = digest(&text, text.len());
    let key = summary
        .keys
        .iter()
        .find(|k| k.first.text.contains("AssertionError"))
        .unwrap_or_else(|| panic!("{:?}", summary.keys));
    assert!(
        key.locators.iter().all(|l| !l.text.contains('✔')),
        "{:?}",
        key.locators
    );
}

#[test]
fn a_severity_and_rule_closing_a_line_say_what_it_is_whatever_its_message_says() {
    // solhint's unix format (tests/corpus/logs/solhint-errors-unix-merged.out), ESLint's
    // too: 1721 warnings, some of them about an `Error message`, and 5 errors.
    let mut text = String::new();
    for n in 1..=150 {
        text.push_str(&format!(
            "contracts/vaults/Vault{n}.sol:9:9: Error message for require is too long: 55 counted / 40 allowed [Warning/reason-string]\n\
             contracts/vaults/Vault{n}.sol:4:1: Missing @title tag in contract 'Vault{n}' [Warning/use-natspec]\n"
        ));
        if n == 61 {
            text.push_str(
                "contracts/vaults/Vault61.sol:7:5: Explicitly mark visibility of state [Error/state-visibility]\n",
            );
        }
    }
    text.push_str("\n1726 problem/s (1 error/s, 300 warning/s)\n");
    let keys: Vec<String> = digest(&text, 4096)
        .keys
        .into_iter()
        .map(|k| k.first.text)
        .collect();
    assert_eq!(
        keys,
        [
            "contracts/vaults/Vault61.sol:7:5: Explicitly mark visibility of state [Error/state-visibility]",
            "1726 problem/s (1 error/s, 300 warning/s)",
        ]
    );
}

#[test]
fn review_fixes_of_the_fourteenth_pass_hold() {
    // A blank line above a failure ends the search for its entry, unless a title
    // ending in `:` is right above it (Mocha): a numbered list of steps names no test.
    let text = "Steps to reproduce:\n  1) open the page\n  2) click save\n\nError: save failed\n";
    let summary = digest(text, text.len());
    assert!(
        summary.failed_tests.is_empty(),
        "{:?}",
        summary.failed_tests
    );
    assert!(summary.keys[0].locators.is_empty(), "{:?}", summary.keys);
    // The message under a severity at its place ends at the next problem's header.
    let text = "page021.css\n2: error at line 8, col 11\nUnknown property 'colr'.\n\
                3: warning at line 9, col 2\nUnknown property 'x'.\n";
    let summary = digest(text, text.len());
    let under: Vec<&str> = summary.keys[0]
        .locators
        .iter()
        .map(|l| l.text.as_str())
        .collect();
    assert_eq!(under, ["Unknown property 'colr'."]);
    // A severity at a place in words opens its line (or follows its number or name).
    assert!(!is_key("the check found no error at line 5 of the file"));
    assert!(is_key("config.y: error at line 5"));
    // A command line's `--severity=ERROR` is no record: the line keeps its end.
    let line = format!(
        "Error: Command failed: semgrep {} --severity=ERROR {} -> exit 2: 3 blocking findings",
        "--include=src/x.py ".repeat(12),
        "--exclude=vendor/y ".repeat(12)
    );
    assert!(cut_line(&line, KEY_LINE_BYTES).ends_with("3 blocking findings"));
    // A `{"` inside a string starts no record.
    let mut records: Vec<String> = (1..=200)
        .map(|n| {
            format!(r#"{{"path":"src/a{n}.rb","severity":"convention","message":"Line too long"}}"#)
        })
        .collect();
    records[77] = r#"{"path":"src/odd.rb","message":"expected [{","severity":"error"}"#.to_owned();
    let text = format!(r#"{{"files":[{}]}}"#, records.join(",")) + "\n";
    let whole = rows(&digest(&text, text.len()).pieces);
    let odd = whole
        .iter()
        .find(|(_, t, _)| t.contains("src/odd.rb"))
        .unwrap_or_else(|| panic!("{whole:?}"));
    assert!(
        odd.1.starts_with(r#""files":[ {"path""#) && odd.1.contains(r#""severity":"error""#),
        "{whole:?}"
    );
    // Empty reads between bytes change nothing (the held-back `{` stays held).
    for chunk in [1, 2, 7] {
        let mut split = Digest::new();
        for c in text.as_bytes().chunks(chunk) {
            split.push(c);
            split.push(b"");
        }
        assert_eq!(rows(&split.finish().pieces), whole, "chunk {chunk}");
    }
    // A record's file and message both far in it are shown within a key line's bytes.
    let record = format!(
        r#"{{"rule":"x","pad":"{}","file":"src/lib/a.js","pad2":"{}","message":"{}END"}}"#,
        "a".repeat(300),
        "b".repeat(300),
        "M".repeat(140)
    );
    let records: Vec<String> = (1..=200)
        .map(|n| format!(r#"{{"rule":"y","n":{n},"pad":"{}"}}"#, "c".repeat(20)))
        .collect();
    let text = format!(
        r#"{{"errors":[{record}],"others":[{}]}}"#,
        records.join(",")
    );
    let whole = rows(&digest(&text, text.len()).pieces);
    let shown = whole
        .iter()
        .find(|(_, t, _)| t.starts_with(r#""errors":[ "#))
        .unwrap_or_else(|| panic!("{whole:?}"));
    assert!(shown.1.len() <= KEY_LINE_BYTES, "{}", shown.1.len());
    assert!(
        shown.1.contains(r#""file":"src/lib/a.js","pad2":"b"#)
            && shown.1.contains(r#""message":"MMMM"#)
            && !shown.1.contains("bytes cut"),
        "{shown:?}"
    );
}
