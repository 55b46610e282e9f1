//! Key lines: what a model must see of a long output that it is not shown whole.
//!
//! A [`Digest`] reads one stream's text as it streams in (the raw bytes of plain text,
//! or the lines a terminal would show) and keeps, in bounded memory, what Layer 2
//! shows of an output too long to show whole besides its head:
//!
//! - the key lines: errors, failures, panics, tracebacks, failed assertions, each with
//!   its line number (as `sed -n 'Np'` counts) and the line or two after or before it
//!   that locate it (rustc's ` --> file:line`, pytest's `file.py:NN:`, a stack frame,
//!   go's message before `--- FAIL:`, any line naming a file and line) or say what
//!   failed (the `error`, `expected` and `actual` of TAP's `not ok`), and the block
//!   that explains a failure marker (go's indented messages before `--- FAIL:`, the
//!   example, `Expected:` and `Got:` after doctest's `Failed example:`);
//!   identical key lines with identical locators are counted, not kept twice (the
//!   same text at another place is another failure); past [`MAX_KEYS`] distinct ones,
//!   only the last [`LAST_KEYS`] are kept, the others counted;
//! - the failing tests' names that key lines give, each once (up to
//!   [`FAILED_NAMES_BYTES`]), so that an answer can name every one;
//! - the diagnostics of the shape `path:line: severity: message [id]`, counted by kind;
//!   when they all carry one severity word, the rare kinds among many are key lines
//!   (see the `tally` module);
//! - the last lines ([`TAIL_KEEP`] bytes), where runners print their verdict;
//! - the counts of lines and bytes.
//!
//! Key lines are recognised by content, not by the command's name: a multi-pattern
//! search (Aho-Corasick) over each chunk finds the few lines holding a trigger word,
//! and only those lines are classified (by the rules in [`classify`]), with the lines
//! right after a key line (where its locator is) and a few before it. Plain text is
//! searched a chunk at a time, never line by line, so a 50 MB stream costs one pass.
//!
//! What it keeps is a function of the text, not of how it was cut into chunks: the
//! last four lines are kept from one chunk to the next for a key line that finds its
//! locator before it, and a line longer than 4 KB is read as its first and last 2 KB
//! whether it came in one chunk or many.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, Input, MatchKind};
use regex::Regex;

/// Distinct key lines kept from the start; past them, the last [`LAST_KEYS`] are kept
/// and the others counted.
pub const MAX_KEYS: usize = 200;

/// Distinct key lines kept from the end, past the first [`MAX_KEYS`]: the real error
/// after thousands of lesser ones.
pub const LAST_KEYS: usize = 40;

/// Bytes kept of a key line or a locator: longer ones are cut in their middle.
pub const KEY_LINE_BYTES: usize = 400;

/// Bytes of whole lines kept from the end of the stream.
pub const TAIL_KEEP: usize = 24 * 1024;

/// Lines after a key line within which a locator line is attached to it.
const LOCATOR_AFTER: u64 = 20;

/// TAP's diagnostic lines (`# …`) right after its `not ok` kept with it, at most.
const TAP_NOTES: usize = 2;

/// Lines right between a key line and its locator kept with them, at most.
const BETWEEN: usize = 2;

/// Lines kept of the YAML block of TAP's `not ok`: error, expected, actual, location.
const TAP_DETAILS: usize = 4;

/// Lines before a key line within which a locator line is attached to it.
const LOCATOR_BEFORE: u64 = 4;
/// Lines between a failure's numbered entry and its key line kept with them, at most:
/// the titles of the test under its suite's (Mocha's `  1) budget` over `reads the
/// budget of a missing team:`).
const ENTRY_TITLES: usize = 2;
/// The last lines read kept: where a key line finds what comes before it (a
/// stylish report's file, up to [`HEADER_BEFORE`] lines above its row), whichever
/// reads brought them.
const RECENT: usize = HEADER_BEFORE as usize;
/// Lines before a key line within which a title framed by rules is looked for.
const TITLE_BEFORE: usize = 8;

/// Lines before a stylish report's row within which the file it belongs to is looked
/// for (the rows of one file come between its name and a blank line).
const HEADER_BEFORE: u64 = 40;

/// Lines kept of the block that explains a failure marker: the example, `Expected:`
/// and `Got:` after doctest's `Failed example:`; the indented messages before go's
/// `--- FAIL:`.
const BLOCK_DETAILS: usize = 6;

/// Lines of the list under a status after dot leaders (or of the message under a
/// severity at its place) kept with it, at most.
const STATUS_DETAILS: usize = 3;

/// Bytes of failing tests' names kept (for the list of those the key lines cannot
/// show, which shows 6 KB of them at most).
pub const FAILED_NAMES_BYTES: usize = 32 * 1024;

/// Bytes of a line that are read: a longer line is read as its first and last
/// `LINE_VIEW / 2` bytes (see [`view`]), however the reads cut it.
const LINE_VIEW: usize = 4096;

/// Words that make a line a key line candidate. Every key line holds one, so
/// `grep -nE` of them ([`grep_pattern`]) finds every key line (and some more). Parts
/// of words, and few of them: up to 16 or so ASCII words the packed (SIMD) search
/// runs at several GB/s; past that, or with short non-ASCII ones, several times
/// slower.
const KEY_TRIGGERS: &[&str] = &[
    "rror", // error, Error, ERROR: "RROR" below
    "RROR",
    "FAIL",    // FAIL, FAILED
    "ailed",   // failed, Failed
    "anic",    // panic, panicked
    "ssert",   // assert, Assert, AssertionError
    "ception", // Exception
    "aceback", // Traceback
    "ERR!",    // npm ERR!
    "Killed",
    "Abort",         // Aborted (core dumped)
    "atal",          // fatal:, Fatal
    "egmentation",   // Segmentation fault
    "undefined ref", // ld's undefined reference
    "not found",     // command not found, module not found
    "No such file",
    "●", // jest's failed test
    // a stylish report's error row (`  5:3  ✖  Unknown unit "pz"  unit-no-unknown`),
    // the severity a symbol or a letter (other symbols, `✘`, `‼`, would slow the
    // packed search of plain text by a third or more: their rows are key lines
    // when another trigger word is on them)
    "✖",
    "  E  ",
    // a formatter's verdict on one file: `would reformat src/x.py`
    "reformat",
    "not ok", // TAP's failed test
    // a location's error code: pylint's `m.py:5:11: E1101:`, flake8's `m.py:6:12: F821`
    ": E",
    ": F",
    "generated", // a count of warnings: cargo's `generated 5 warnings`
    "ailure",    // a summary's count after its word: `Failures: 4`
    // a diagnostic's severity after its place (`m.c:4:5: warning: … [id]`): tallied
    // by kind, the rare kinds among many being key lines (see [`Tally`])
    ": warning",
];

/// What a line is to the digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Neither: a warning, a summary of zero failures, ordinary text.
    Plain,
    /// An error, failure, panic, traceback or failed assertion.
    Key,
    /// A line that says where (file:line) the key line near it is.
    Locator,
    /// A location that is also a failure (pytest's `tests/x.py:12: AssertionError`):
    /// a locator for a key line just before, else a key line of its own.
    KeyLocator,
}

struct Rules {
    triggers: AhoCorasick,
    exclude: Regex,
    locator: Regex,
    /// A file and line anywhere in the line: a locator when near a failure.
    location: Regex,
    key_locator: Regex,
    key: Regex,
    /// A severity word: with a location, a key line whatever printed it.
    severity: Regex,
    /// A count of warnings, a summary that is a key line though warnings are not.
    warnings: Regex,
    zero: Regex,
}

/// Warnings, notes and help of compilers; a line that is only about them.
const EXCLUDE: &str = concat!(
    r"^\s*(\S+:\d+:(\d+:)? )?(warning|note|help|info)(\[[\w-]+\])?: ",
    r"|^\s*= (note|help): ",
    r"|^\s*(warning|WARNING|WARN|DEBUG|INFO)\b[^:]*$",
);

/// Where a failure is: the lines of compilers, tracebacks and test runners that name
/// a file and line.
const LOCATOR: &str = concat!(
    r#"^\s*--> \S+:\d+(:\d+)?"#,
    r#"|^\s*File "[^"]+", line \d+"#,
    r"|^\s*at (.* \()?\S+:\d+:\d+\)?\s*$",
    r"|^\s*❯ \S+:\d+(:\d+)?",
    r"|: in function `[^']*':$",
    r"|^\s+\S+_test\.go:\d+: ",
);

/// A file and line anywhere in the line: a locator when near a failure.
const LOCATION: &str = concat!(
    r#"(^|[\s('"\[])(\S*/)?[\w.-]*\w\.[A-Za-z]\w*:\d+(:\d+)?([:)'"\],\s]|$)"#,
    r"|^\s*--> \S+:\d+",
    // Perl's `at t/calc.t line 62.`
    r"|\bat \S+ line \d+\.?$",
    // Erlang's `(test/a_tests.erl, line 44)`, a file and its line in words
    r"|[\w.-]*\w\.[A-Za-z]\w*\x22?, line \d+",
);

/// What a failure looks like, by shape first, then tool by tool.
const KEY: &str = concat!(
    // a location with an error code right after it, whatever printed it: pylint's
    // `m.py:5:11: E1101: …`, flake8's and ruff's `m.py:6:12: F821 …`; or a one-letter
    // severity of error or fatal (rubocop's `x.rb:3:5: E: Lint/Syntax: …`)
    r"\S:\d+(:\d+)?:? \[?[EF](\d{3,4}\b|: )",
    // rustc, gcc, clang, tsc, pip, npm, yarn, go and the generic forms
    // and a severity word with an error code after it: tsc's `error TS2322:`, the
    // .NET compilers' `error CS1002:`, msbuild's `error MSB3073:`; after a place, its
    // rule's id in parentheses (semgrep's `a.py:17:16:error(eval-of-request-data):`)
    r"|(^|[\s:(\[])(error|ERROR|fatal error)(\[[\w-]+\])?(:|!| [A-Z]{1,4}\d{2,5}:)",
    r"|\S:\d+(:\d+)?:(error|ERROR)\([\w./-]+\):",
    r"|^\s*(error|ERROR)\s",
    // a severity at its place in words: CSSLint's `2: error at line 8, col 11`
    r"|^\s*(\d+: *|\S+: *)?(error|ERROR|Error|fatal) at line \d+",
    // a stylish report's error rows, the severity a word, a symbol or a letter:
    // `  5:10  error  'x' is not defined  no-undef`, `  5:3  ✖  Unknown unit "pz"`
    r"|^\s+\d+:\d+\s+(error|✖|✘|×|‼|E)\s+\S",
    // a formatter's or linter's verdict on one file: `would reformat src/x.py`,
    // `Would reformat: x.py`, `x.go: needs formatting`
    r"|^\s*[Ww]ould (re)?format\b:? *\S",
    r"|\S: needs (re)?formatting\b",
    r"|(^|\s)(Error|FATAL|fatal):",
    // a log record's level: `2026-01-01 12:00:00 ERROR sync: …`
    r"|\bERROR\b",
    r"|^(\w+\.)*\w*(Error|Exception|Exit|Interrupt)\b(:|$)",
    r"|\b\w*(Error|Exception)\b: ",
    // with its code between: Node's `AssertionError [ERR_ASSERTION]: …`
    r"|\b\w*(Error|Exception) \[[A-Z][A-Z0-9_]+\]: ",
    r"|\bException\b",
    r"|^npm (ERR!|error) ",
    r"|\bERR!",
    // test runners: libtest, pytest, jest, vitest, go test
    r"|\bFAILED\b",
    // a test's status, wherever it stands: `  5/240 calc:rounds_5   FAIL   0.01s`
    r"|\bFAIL\b",
    // a step's status after dot leaders: pre-commit's `no debug prints.....Failed`
    r"|\S\.{4,} ?\**(Failed|Error)\s*$",
    // a failure marker that opens a line: doctest's `Failed example:`, busted's
    // `Failure -> spec/a.lua @ 12`
    r"|^\s*Failed\b",
    r"|^\s*(Failure|FAILURE)\b",
    r"|^--- FAIL: ",
    r"|^\s*not ok \d+",
    r"|^#\s+Failed test\b",
    r"|^---- .+ stdout ----$",
    r"|^_{3,} .+ _{3,}$",
    r"|^\s*(✕|✗|×) ",
    // a failure's mark opening a line: commitlint's `✖   type may not be empty`
    r"|^\s*✖ ",
    r"|^\s*● ",
    r"|^E\s+\S",
    r"|^\s+\S+_test\.go:\d+: ",
    r"|^\S+\.go:\d+:\d+: ",
    r"|\b[1-9]\d* (failed|failing|failures?|errors?)\b",
    // a summary's count after its word: phpunit's `Errors: 4, Failures: 4.`, `failed=1`
    r"|\b([Ff]ailed|FAILED|[Ff]ailures?|FAILURES?|[Ee]rrors?|ERRORS?)[:=] ?[1-9]\d*\b",
    r"|\bfailed\b",
    // crashes and failed assertions
    r"|\bpanic(ked)?\b",
    r"|^\s*Traceback \(most recent call last\)",
    r"|Segmentation fault|core dumped|\bKilled\b|\bAborted\b",
    r"|\b[Aa]ssert\w*\b.*\bfailed\b|\bAssertion\b",
    r"|^\s*assert ",
    // linkers and make
    r"|undefined reference to|ld returned \d+ exit status",
    r"|\bError \d+\s*$",
    r"|command not found|No such file or directory",
);

/// A severity word as a word of its own (not a file's `error.rs`), or a place's
/// `: Failure` (googletest's `a_test.cc:54: Failure`).
const SEVERITY: &str = concat!(
    r"(^|[\s\[(])(error|Error|ERROR|fatal|Fatal|FATAL|failed|Failed|FAILED|FAIL)([\]):,\s]|$)",
    r"|: (Failure|FAILURE)$",
);

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let re = |pattern: &str| pattern::regex(pattern).expect("a valid rule");
        Rules {
            // Leftmost-first lets the packed (SIMD) searcher run: any match will do.
            triggers: AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(KEY_TRIGGERS)
                .expect("valid triggers"),
            exclude: re(EXCLUDE),
            locator: re(LOCATOR),
            location: re(LOCATION),
            key_locator: re(r"^\S+\.py:\d+: \S"),
            key: re(KEY),
            severity: re(SEVERITY),
            warnings: re(r"\bgenerated [1-9]\d* warnings?\b|\b[1-9]\d* warnings? generated\b"),
            zero: re(r"\b0 (failed|errors?)\b|\b(failed|errors?)[:=] ?0\b"),
        }
    })
}

/// What `line` is (see [`Class`]).
pub fn classify(line: &str) -> Class {
    let rules = rules();
    if rules.key_locator.is_match(line) {
        return Class::KeyLocator;
    }
    if rules.locator.is_match(line) {
        return Class::Locator;
    }
    // Summaries are key lines anywhere, a count of warnings too.
    if rules.warnings.is_match(line) {
        return Class::Key;
    }
    if let Some(error) = closing_severity(line) {
        return if error { Class::Key } else { Class::Plain };
    }
    if rules.exclude.is_match(line) {
        return Class::Plain;
    }
    if rules.key.is_match(line) && !only_zero_failures(line) {
        return Class::Key;
    }
    if rules.location.is_match(line) {
        // A location with a severity word is a key line, whatever printed it.
        if rules.severity.is_match(line) && !only_zero_failures(line) {
            return Class::Key;
        }
        return Class::Locator;
    }
    Class::Plain
}

/// A key line (an error, a failure…): it holds a trigger word and [`classify`] says so.
pub fn is_key(line: &str) -> bool {
    rules().triggers.find(line).is_some() && classify(line) == Class::Key
}

/// The severity and rule closing a diagnostic's line, which say what it is whatever
/// its message says (ESLint's and solhint's unix format: `a.sol:7:5: Explicitly mark
/// visibility of state [Error/state-visibility]`; `a.sol:9:9: Error message for
/// require is too long [Warning/reason-string]`): whether it is an error.
fn closing_severity(line: &str) -> Option<bool> {
    static PLACE: OnceLock<Regex> = OnceLock::new();
    let inner = line.trim_end().strip_suffix(']')?;
    let (severity, rule) = inner[inner.rfind('[')? + 1..].split_once('/')?;
    let error = match severity {
        "Error" | "error" | "Fatal" | "fatal" => true,
        "Warning" | "warning" | "Info" | "info" => false,
        _ => return None,
    };
    let rule_like = !rule.is_empty()
        && rule
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@./_-".contains(&b));
    let placed = PLACE
        .get_or_init(|| pattern::regex(r"^\s*\S+:\d+(:\d+)?: ").expect("a valid rule"))
        .is_match(line);
    (rule_like && placed).then_some(error)
}

/// A summary that counts no failure: `test result: ok. 9 passed; 0 failed`.
fn only_zero_failures(line: &str) -> bool {
    let rules = rules();
    if !rules.zero.is_match(line) {
        return false;
    }
    // Still a key line if a failure word remains once the zero counts are removed.
    let rest = rules.zero.replace_all(line, "");
    !rules.key.is_match(&rest)
}

/// An extended regular expression for `grep -nE` that matches every key line.
pub fn grep_pattern() -> String {
    KEY_TRIGGERS
        .iter()
        .map(|t| {
            t.chars().fold(String::new(), |mut s, c| {
                if ".[]()*+?{}|^$\\".contains(c) {
                    s.push('\\');
                }
                s.push(c);
                s
            })
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// One numbered line of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered {
    /// 1-based, as `sed -n 'Np'` counts the lines of the saved file.
    pub line: u64,
    pub text: String,
}

/// A distinct key line and where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLine {
    /// Where it was first seen, and its text (cut in the middle when long).
    pub first: Numbered,
    /// How often it was seen, and where last.
    pub count: u64,
    pub last_line: u64,
    /// The lines beside it that say where or what failed, in line order: a locator
    /// before or after it, or the details of TAP's `not ok` (at most four).
    pub locators: Vec<Numbered>,
}

/// What a digest hands to Layer 2.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Distinct key lines, in the order first seen: the first [`MAX_KEYS`], then the
    /// last [`LAST_KEYS`] of the others.
    pub keys: Vec<KeyLine>,
    /// Key lines seen, repeats and those left out of `keys` included.
    pub key_lines: u64,
    /// The last whole lines within [`TAIL_KEEP`] bytes (the last may lack its `\n`).
    pub tail: String,
    /// The number of the tail's first line.
    pub tail_first_line: u64,
    /// Lines of the stream: `\n` ends one, and a last line without it counts.
    pub lines: u64,
    /// The failing tests' names that key lines give (`--- FAIL: TestX`, `not ok 3 -
    /// x`, `test x ... FAILED`), each once, with the line of the first: up to
    /// [`FAILED_NAMES_BYTES`].
    pub failed_tests: Vec<Numbered>,
    /// Failing tests' markers seen past the names kept.
    pub failed_tests_past: u64,
    /// Bytes of the first line, its `\n` left out.
    pub first_line_bytes: u64,
    /// The diagnostics of the shape `path:line[:col]: severity: message [id]`, by
    /// kind, most frequent first (empty when fewer than two kinds were seen).
    pub kinds: Vec<Kind>,
    /// All the diagnostics of that shape, those of kinds not kept included.
    pub diagnostics: u64,
    /// Lines unlike the many like them (see the `odd` module), the rarest first, with
    /// the file they belong to and the places named right after them: not key lines,
    /// and not counted among them.
    pub odd: Vec<KeyLine>,
    /// The records unlike the many like them inside long lines that open JSON (see
    /// the `long` module), numbered by their lines, each with the file its record
    /// names: what the middle of a one-line JSON report held.
    pub pieces: Vec<KeyLine>,
    /// The headers of the files a diff changes (`diff a/x b/x`, `+++ b/x`, rustfmt's
    /// `Diff in x:3:`), each file once, in line order: a check's findings, whether it
    /// failed or not (`gofmt -d` exits 0).
    pub diff_files: Vec<Numbered>,
    /// The places (`src/parse.c:12:5`) the lines the odd pass reads name, each once,
    /// the rarest first (see the `places` module).
    pub places: Vec<Place>,
}

/// One kind of diagnostic (its severity word and id, `warning [memleak]`), how many
/// lines gave it and the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    pub name: String,
    pub count: u64,
    pub first: u64,
}

/// Reads one stream's text; see the module docs.
#[derive(Debug, Default)]
pub struct Digest {
    /// Whole lines read.
    lines: u64,
    /// Bytes of the first line, once it ended.
    first_line_bytes: Option<u64>,
    /// The unfinished last line, and its length: all of it up to [`LINE_VIEW`] bytes,
    /// else its first `LINE_VIEW / 2` bytes and at least its last `LINE_VIEW / 2`.
    partial: Vec<u8>,
    partial_len: usize,
    /// The last lines read (their [`view`]s), at most [`RECENT`]: where a key line
    /// finds what comes before it, whichever read brought them.
    recent: VecDeque<(Vec<u8>, usize)>,
    /// Ring of the end of the text up to the last `\n` (oldest byte at `tail_start`).
    tail: Vec<u8>,
    tail_start: usize,
    keys: Vec<KeyLine>,
    /// The index in `keys` of each key line's identity ([`identity`]).
    index: HashMap<String, usize>,
    /// Past [`MAX_KEYS`]: the last distinct key lines, with their identities.
    last: VecDeque<(String, KeyLine)>,
    key_lines: u64,
    /// The key line waiting for a locator after it: which failure it is (and so
    /// whether it repeats one) is known once it has one, or none came.
    awaiting: Option<KeyLine>,
    /// The plain lines right after the key line waiting for a locator, at most
    /// [`BETWEEN`].
    between: Vec<Numbered>,
    /// The next line of TAP's block is the first of an `error: |-`.
    tap_error_next: bool,
    /// The line of the last pytest `E` line, so a block of them counts once.
    last_e_line: u64,
    /// Every line up to this one is looked at: it is close to a key line.
    look_until: u64,
    /// The failing tests' names seen, each once (see [`Summary::failed_tests`]).
    failed_tests: Vec<Numbered>,
    failed_seen: std::collections::HashSet<String>,
    failed_bytes: usize,
    failed_tests_past: u64,
    /// The diagnostics of one shape, by kind.
    tally: Tally,
    /// The lines unlike the many like them.
    odd: Odd,
}

impl Digest {
    pub fn new() -> Digest {
        Digest::default()
    }

    /// Takes the next chunk of text.
    pub fn push(&mut self, chunk: &[u8]) {
        let Some(last_nl) = memchr::memrchr(b'\n', chunk) else {
            self.keep_tail(chunk);
            self.extend_partial(chunk);
            if self.odd.reading() {
                self.odd.partial(chunk, self.lines + 1);
            }
            return;
        };
        let first_nl = memchr::memchr(b'\n', chunk).unwrap_or(last_nl);
        if self.lines == 0 {
            self.first_line_bytes = Some((self.partial_len + first_nl) as u64);
        }
        // The line that began in an earlier chunk ends here.
        self.lines += 1;
        if self.partial_len > 0 {
            self.extend_partial(&chunk[..first_nl]);
            let (line, omitted) = self.partial_view();
            self.partial.clear();
            self.partial_len = 0;
            self.scan_line(&line, omitted, self.lines, &[]);
            if self.odd.reading() {
                self.odd.partial(&chunk[..first_nl], self.lines);
                self.odd.ended_line(&line, self.lines);
            }
            self.remember(&line, omitted);
        } else {
            let first = &chunk[..first_nl];
            let (line, omitted) = view(first);
            self.scan_line(&line, omitted, self.lines, &[]);
            if self.odd.reading() {
                self.odd.push_line(first, self.lines);
            }
            self.remember(&line, omitted);
        }
        let whole = &chunk[first_nl + 1..=last_nl];
        self.scan(whole);
        self.remember_last(whole);
        self.keep_tail(chunk);
        self.extend_partial(&chunk[last_nl + 1..]);
        if self.odd.reading() && last_nl + 1 < chunk.len() {
            self.odd.partial(&chunk[last_nl + 1..], self.lines + 1);
        }
    }

    /// Ends the stream.
    pub fn finish(mut self) -> Summary {
        let tail = self.whole_tail();
        let mut lines = self.lines;
        if self.partial_len > 0 {
            let (line, omitted) = self.partial_view();
            lines += 1;
            self.scan_line(&line, omitted, lines, &[]);
            if self.odd.reading() {
                self.odd.ended_line(&line, lines);
            }
        }
        self.settle();
        let mut keys = std::mem::take(&mut self.keys);
        keys.extend(
            std::mem::take(&mut self.last)
                .into_iter()
                .map(|(_, key)| key),
        );
        let (kinds, diagnostics, rare) = std::mem::take(&mut self.tally).finish(&mut keys);
        let odd::Found {
            odd,
            named,
            pieces,
            diff_files,
            places,
            out_of_place,
        } = std::mem::take(&mut self.odd).finish();
        let (odd, coded) = with_coded(&mut keys, odd);
        let rare = rare + coded;
        // Where no line is a key line, the lines out of place are odd too.
        let odd = if keys.is_empty() {
            with_out_of_place(odd, out_of_place)
        } else {
            odd
        };
        self.named_tests(named);
        let tail_lines = memchr::memchr_iter(b'\n', &tail).count() as u64
            + u64::from(tail.last().is_some_and(|&b| b != b'\n'));
        Summary {
            first_line_bytes: self.first_line_bytes.unwrap_or(self.partial_len as u64),
            keys,
            failed_tests: std::mem::take(&mut self.failed_tests),
            failed_tests_past: self.failed_tests_past,
            key_lines: self.key_lines + rare,
            tail_first_line: (lines + 1).saturating_sub(tail_lines).max(1),
            tail: String::from_utf8_lossy(&tail).into_owned(),
            lines,
            kinds,
            diagnostics,
            odd,
            pieces,
            diff_files,
            places,
        }
    }

    /// The tail's whole lines, in order: a full ring starts mid-line, so its first
    /// whole line starts after a `\n` (unless it holds none: then it is the end of one
    /// huge line).
    fn whole_tail(&mut self) -> Vec<u8> {
        let mut tail = std::mem::take(&mut self.tail);
        tail.rotate_left(self.tail_start);
        let start = if tail.len() == TAIL_KEEP {
            memchr::memchr(b'\n', &tail[..tail.len() - 1]).map_or(0, |i| i + 1)
        } else {
            0
        };
        tail.split_off(start)
    }

    /// Whole lines read so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The unfinished line so far, taken out of the digest (a renderer starting
    /// mid-line renders it again): its start (all of it up to 4 KB, else its first
    /// 2 KB), and its length.
    pub fn take_partial(&mut self) -> (Vec<u8>, usize) {
        // The ring keeps it no more: the renderer hands the line back once rendered.
        self.untail(self.partial_len);
        let len = std::mem::take(&mut self.partial_len);
        let mut partial = std::mem::take(&mut self.partial);
        if len > LINE_VIEW {
            partial.truncate(LINE_VIEW / 2);
        }
        (partial, len)
    }

    /// The unfinished line as it is read: its [`view`], and the bytes left out of it.
    fn partial_view(&self) -> (Vec<u8>, usize) {
        if self.partial_len <= LINE_VIEW {
            return (self.partial.clone(), 0);
        }
        let half = LINE_VIEW / 2;
        let mut line = self.partial[..half].to_vec();
        line.extend_from_slice(&self.partial[self.partial.len() - half..]);
        (line, self.partial_len - LINE_VIEW)
    }

    /// A line was read (its [`view`], `omitted` bytes left out): it joins the last
    /// lines.
    fn remember(&mut self, line: &[u8], omitted: usize) {
        let mut slot = if self.recent.len() == RECENT {
            self.recent.pop_front().unwrap_or_default().0
        } else {
            Vec::new()
        };
        slot.clear();
        slot.extend_from_slice(line);
        self.recent.push_back((slot, omitted));
    }

    /// Whole lines were read: their last ones join the last lines.
    fn remember_last(&mut self, whole: &[u8]) {
        let mut start = whole.len();
        let mut ends = Vec::with_capacity(RECENT);
        for _ in 0..RECENT {
            if start == 0 {
                break;
            }
            let end = start - 1;
            start = memchr::memrchr(b'\n', &whole[..end]).map_or(0, |i| i + 1);
            ends.push((start, end));
        }
        for &(start, end) in ends.iter().rev() {
            let (line, omitted) = view(&whole[start..end]);
            self.remember(&line, omitted);
        }
    }

    /// Forgets the last `n` bytes given to the tail ring.
    fn untail(&mut self, n: usize) {
        if self.tail.len() < TAIL_KEEP {
            let keep = self.tail.len().saturating_sub(n);
            self.tail.truncate(keep);
        } else {
            // Rotate to oldest-first order, drop the end, and let it grow again.
            let mut ring = std::mem::take(&mut self.tail);
            ring.rotate_left(self.tail_start);
            ring.truncate(ring.len().saturating_sub(n));
            self.tail = ring;
            self.tail_start = 0;
        }
    }

    /// More of the unfinished line: kept whole up to [`LINE_VIEW`] bytes, then its
    /// first half and (at least) its last half.
    fn extend_partial(&mut self, bytes: &[u8]) {
        let half = LINE_VIEW / 2;
        self.partial_len += bytes.len();
        if bytes.len() > LINE_VIEW {
            let room = half.saturating_sub(self.partial.len());
            self.partial.extend_from_slice(&bytes[..room]);
            self.partial.truncate(half);
            self.partial.extend_from_slice(&bytes[bytes.len() - half..]);
        } else {
            self.partial.extend_from_slice(bytes);
            if self.partial.len() > 2 * LINE_VIEW {
                let end = self.partial.len() - half;
                self.partial.drain(half..end);
            }
        }
    }

    /// Finds the candidate lines of `whole` (whole lines, the first numbered
    /// `self.lines + 1`) and classifies them, counting its lines.
    fn scan(&mut self, whole: &[u8]) {
        let rules = rules();
        let base = self.lines;
        // `at` starts line number `line`; the odd lines are read up to `fed`, whose
        // line is `fed_line` (a key line finds the file it belongs to there).
        let (mut at, mut line) = (0, base + 1);
        let (mut fed, mut fed_line) = (0, base + 1);
        while at < whole.len() {
            // Near a key line every line is looked at (for its locator); elsewhere
            // only the lines holding a trigger word.
            let start = if line <= self.look_until {
                at
            } else {
                let Some(found) = rules.triggers.find(Input::new(whole).span(at..whole.len()))
                else {
                    break;
                };
                let start =
                    memchr::memrchr(b'\n', &whole[at..found.start()]).map_or(at, |i| at + i + 1);
                line += memchr::memchr_iter(b'\n', &whole[at..start]).count() as u64;
                start
            };
            let end = memchr::memchr(b'\n', &whole[start..]).map_or(whole.len(), |i| start + i);
            let (text, omitted) = view(&whole[start..end]);
            if self.odd.reading() {
                self.odd.push_lines(&whole[fed..start], fed_line);
            }
            (fed, fed_line) = (start, line);
            self.scan_line(&text, omitted, line, &whole[..start]);
            at = end + 1;
            line += 1;
        }
        if self.odd.reading() {
            self.odd.push_lines(&whole[fed..], fed_line);
        }
        self.lines = base + memchr::memchr_iter(b'\n', whole).count() as u64;
    }

    /// Classifies one line (its [`view`], with `omitted` bytes left out of its middle;
    /// numbered `line`; `before` is the text before it in the same chunk, and the
    /// last lines read come before that) when it holds a trigger word or follows a
    /// key line closely.
    fn scan_line(&mut self, bytes: &[u8], omitted: usize, line: u64, before: &[u8]) {
        let triggered = rules().triggers.find(bytes).is_some();
        if !triggered && line > self.look_until {
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches('\r');
        let seen = Seen {
            text,
            omitted,
            line,
        };
        // A diagnostic the tally finds plain (a warning) is nothing more, unless a
        // key line waits for the lines after it.
        if triggered && self.tally.add(&seen) && self.awaiting.is_none() {
            return;
        }
        if self.tap_detail(&seen) || self.block_detail(&seen, triggered) {
            return;
        }
        match classify(text) {
            Class::Plain => self.between(&seen),
            // A key line holds a trigger word (so that grep finds it); without one,
            // a line near a key line can only locate it.
            Class::Key if !triggered => {}
            Class::KeyLocator if !triggered => {
                self.locator(&seen);
            }
            Class::Locator => {
                self.locator(&seen);
            }
            Class::KeyLocator => {
                if !self.locator(&seen) {
                    self.key(&seen, before);
                }
            }
            Class::Key => self.key(&seen, before),
        }
    }

    /// A locator line: attached to the key line waiting for one. True when it was.
    fn locator(&mut self, seen: &Seen<'_>) -> bool {
        let (text, line) = (seen.text, seen.line);
        let numbered = seen.numbered(text);
        if let Some(key) = &mut self.awaiting
            && line <= key.first.line + LOCATOR_AFTER
            && !is_library_frame(text)
        {
            // The lines right between a failure and its place say what failed (the
            // test's name under busted's `Failure -> spec/a.lua @ 12`).
            let between = std::mem::take(&mut self.between);
            if between.last().is_some_and(|b| b.line + 1 == line) {
                key.locators.extend(between);
            }
            key.locators.push(numbered);
            self.settle();
            return true;
        }
        false
    }

    /// A plain line right after the key line waiting for a locator: kept in case its
    /// locator comes right after it (see [`BETWEEN`]).
    fn between(&mut self, seen: &Seen<'_>) {
        let Some(key) = &self.awaiting else {
            return;
        };
        let next = key.first.line + 1 + self.between.len() as u64;
        if seen.line == next && self.between.len() < BETWEEN && !seen.text.trim().is_empty() {
            self.between.push(seen.numbered(seen.text.trim_end()));
        }
    }

    /// A line of the YAML block after TAP's `not ok N - name` that waits: what failed
    /// (`error`, `expected`, `actual`, the first line of each when it is a block) and
    /// where (`location`, tape's `at`) are kept with it; the rest of the block is neither a key line nor
    /// a locator. True when the line belongs to the block.
    fn tap_detail(&mut self, seen: &Seen<'_>) -> bool {
        static FIELD: OnceLock<Regex> = OnceLock::new();
        let (text, line) = (seen.text, seen.line);
        let Some(key) = &mut self.awaiting else {
            return false;
        };
        let Some(indent) = tap_failure_indent(&key.first.text) else {
            return false;
        };
        // TAP's diagnostics right after it (`# spec/a.lua @ 12`), but a key line's.
        if text.starts_with('#')
            && line <= key.first.line + TAP_NOTES as u64
            && key.locators.len() < TAP_NOTES
            && classify(text) != Class::Key
        {
            key.locators.push(seen.numbered(text));
            return true;
        }
        let inner = text.len() - text.trim_start().len();
        if inner <= indent || line > key.first.line + LOCATOR_AFTER {
            // Past the block (or a block too long to read whole).
            self.tap_error_next = false;
            self.settle();
            return false;
        }
        let field = FIELD.get_or_init(|| {
            pattern::regex(r"^\s*(location|at|error|expected|actual): *(\S.*)?$")
                .expect("a valid rule")
        });
        let wanted = if self.tap_error_next {
            self.tap_error_next = false;
            !text.trim().is_empty()
        } else if let Some(found) = field.captures(text) {
            let value = found.get(2).map_or("", |v| v.as_str());
            // A block's value (`|-`) is on the lines after: its first one is kept.
            self.tap_error_next = value.starts_with('|');
            !self.tap_error_next && !value.is_empty()
        } else {
            false
        };
        if wanted && key.locators.len() < TAP_DETAILS {
            key.locators.push(seen.numbered(text));
        }
        if text.trim() == "..." {
            self.settle();
        }
        true
    }

    /// A line of the block after a failure marker that opens one (doctest's `Failed
    /// example:`): the example, `Expected:`, `Got:`, `Exception raised:` and their
    /// indented lines are kept with it (at most [`BLOCK_DETAILS`]); the block ends at
    /// the next unindented line of another kind, or at a key line of its own (an
    /// exception's). True when the line belongs to the block.
    fn block_detail(&mut self, seen: &Seen<'_>, triggered: bool) -> bool {
        let (text, line) = (seen.text, seen.line);
        let Some(key) = &mut self.awaiting else {
            return false;
        };
        if !opens_block(&key.first.text) {
            return false;
        }
        let status = is_status_title(&key.first.text);
        if status || says_no_message(&key.first.text) {
            // The list under a status after dot leaders: pre-commit's `- hook id: x`,
            // `- exit code: 1` under `no debug prints.....Failed`; the message under a
            // severity at its place: CSSLint's `Unknown property 'colr'.` under `2:
            // error at line 8, col 11`, and the line it quotes.
            let listed = !status || text.starts_with("- ") || text.starts_with([' ', '\t']);
            if !listed
                || text.trim().is_empty()
                || is_problem_header(text)
                || (triggered && classify(text) == Class::Key)
                || line > key.first.line + STATUS_DETAILS as u64
            {
                self.settle();
                return false;
            }
            key.locators.push(seen.numbered(text));
            return true;
        }
        let label = matches!(text, "Expected:" | "Got:" | "Exception raised:")
            || text.starts_with("Expected nothing")
            || text.starts_with("Got nothing");
        let indented = text.starts_with([' ', '\t']);
        let own_key = !label && triggered && classify(text) == Class::Key;
        if !(label || indented) || own_key || line > key.first.line + LOCATOR_AFTER {
            self.settle();
            return false;
        }
        let details = key
            .locators
            .iter()
            .filter(|l| l.line > key.first.line)
            .count();
        if details < BLOCK_DETAILS && !text.trim().is_empty() {
            key.locators.push(seen.numbered(text));
        }
        true
    }

    /// The key line waiting for a locator waits no more: it is kept as it is.
    fn settle(&mut self) {
        if let Some(key) = self.awaiting.take() {
            self.keep(key);
        }
    }

    /// Keeps a key line: counted with an identical one (same text, same locators)
    /// already kept, else kept as a failure of its own, among the first [`MAX_KEYS`]
    /// or the last [`LAST_KEYS`].
    fn keep(&mut self, key: KeyLine) {
        let id = identity(&key);
        let line = key.first.line;
        if let Some(&index) = self.index.get(&id) {
            let kept = &mut self.keys[index];
            kept.count += 1;
            kept.last_line = line;
        } else if self.keys.len() < MAX_KEYS {
            self.index.insert(id, self.keys.len());
            self.keys.push(key);
        } else if let Some((_, kept)) = self.last.iter_mut().find(|(kept, _)| *kept == id) {
            kept.count += 1;
            kept.last_line = line;
        } else {
            if self.last.len() == LAST_KEYS {
                self.last.pop_front();
            }
            self.last.push_back((id, key));
        }
    }

    fn key(&mut self, seen: &Seen<'_>, before: &[u8]) {
        let (text, line) = (seen.text, seen.line);
        self.settle();
        self.between.clear();
        self.look_until = line + LOCATOR_AFTER;
        // A block of pytest `E` lines is one failure: its first line stands for it.
        let is_e = text.starts_with("E ");
        if is_e && self.last_e_line > 0 && line <= self.last_e_line + 5 {
            self.last_e_line = line;
            return;
        }
        self.key_lines += 1;
        if is_e {
            self.last_e_line = line;
        }
        let text = seen.numbered(text.trim_end()).text;
        self.failed_test(&text, line);
        let mut locators = self.found_before(&text, before, line);
        // A count of warnings sums up what came before: no locator is its own.
        let summary = rules().warnings.is_match(&text);
        let waits = opens_block(&text) || (!has_location(&text) && locators.is_empty() && !summary);
        // The line led by another symbol right above a `✖` names what it fails:
        // commitlint's `⧗   input: fix(auth) refresh tokens` over `✖   subject may not
        // be empty [subject-empty]` (not a passing test's `✓` above it, nor the `→`
        // message of the failure before it).
        if locators.is_empty()
            && symbol_lead(&text) == Some("✖")
            && let Some(subject) = self.nearest_before(before, line, true, |_| true)
            && symbol_lead(&subject.text).is_some_and(|other| !MARKS.contains(&other))
            && classify(&subject.text) == Class::Plain
        {
            locators.push(subject);
        }
        // A row that names no file: the file it belongs to, the nearest less indented
        // line above it that names one (phpcs's `FILE: src/a.php` over `  7 | ERROR |`).
        if !odd::names_file(&text)
            && !locators.iter().any(|l| odd::names_file(&l.text))
            && let Some(file) = self.odd.file_above(&text, line)
        {
            locators.insert(0, file);
        }
        let key = KeyLine {
            first: Numbered { line, text },
            count: 1,
            last_line: line,
            locators,
        };
        if waits {
            self.awaiting = Some(key);
        } else {
            self.keep(key);
        }
    }

    /// What travels with key line `text` (numbered `line`) from the lines before it
    /// (`before`, then the last lines read): go's messages before `--- FAIL:`, a
    /// stylish row's file, an exception's place, the title or numbered entry that
    /// opens the failure (which names its test).
    fn found_before(&mut self, text: &str, before: &[u8], line: u64) -> Vec<Numbered> {
        let mut locators = Vec::new();
        if text.trim_start().starts_with("--- FAIL: ") {
            locators = self.block_before(before, line);
        }
        // A test's failure led by a bracketed status (googletest's `[  FAILED  ]
        // Suite.Test`) with no key line since the line that opened the test (`[ RUN
        // ]`): the lines between say what failed, in words no rule knows.
        if locators.is_empty() && odd::bracket_status(text.trim_start()).is_some() {
            locators = self.status_block_before(before, line);
        }
        if locators.is_empty()
            && is_stylish_row(text)
            && let Some(found) = self.header_before(before, line)
        {
            locators.push(found);
        }
        if locators.is_empty()
            && wants_locator_before(text)
            && let Some(found) = self.locator_before(before, line)
        {
            locators.push(found);
        }
        // The title framed by rules over the failure's block names its test (Catch2's
        // test case between two lines of `-`).
        if failed_test_name(text).is_none()
            && let Some(title) = self.title_before(before, line)
            && !locators.iter().any(|l| l.line == title.line)
        {
            self.failed_test_named(&title.text, title.line);
            locators.insert(0, title);
        }
        // The numbered entry that opens the failure (ExUnit's and Mocha's `  1) test
        // lists the codes (Shop.CouponsTest)` over its place and its assertion)
        // names the failing test, with the titles under it (Mocha's nested `it`).
        let entry = self.entry_before(before, line);
        if let Some(first) = entry.first()
            && !locators.iter().any(|l| l.line == first.line)
        {
            if let Some(name) = numbered_entry(&first.text) {
                let name = name.to_owned();
                self.failed_test_named(&name, first.line);
            }
            let entry: Vec<Numbered> = entry
                .into_iter()
                .filter(|e| !locators.iter().any(|l| l.line == e.line))
                .collect();
            locators.splice(0..0, entry);
        }
        locators
    }

    /// The failing tests a heading of failures' entries name, kept once each as
    /// those of key lines are, in line order.
    fn named_tests(&mut self, named: Vec<Numbered>) {
        let before = self.failed_tests.len();
        for name in named {
            if self.failed_tests_past == 0
                && self.failed_bytes + name.text.len() <= FAILED_NAMES_BYTES
                && self.failed_seen.insert(name.text.clone())
            {
                self.failed_bytes += name.text.len();
                self.failed_tests.push(name);
            }
        }
        if self.failed_tests.len() > before {
            self.failed_tests.sort_by_key(|n| n.line);
        }
    }

    /// The failing test a key line names, if it names one: kept once.
    fn failed_test(&mut self, text: &str, line: u64) {
        if let Some(name) = failed_test_name(text) {
            self.failed_test_named(name, line);
        }
    }

    /// Keeps the failing test `name` (named on line `line`), once.
    fn failed_test_named(&mut self, name: &str, line: u64) {
        if self.failed_tests_past > 0 || self.failed_bytes + name.len() > FAILED_NAMES_BYTES {
            self.failed_tests_past += 1;
        } else if self.failed_seen.insert(name.to_owned()) {
            self.failed_bytes += name.len();
            self.failed_tests.push(Numbered {
                line,
                text: cut_middle(name, KEY_LINE_BYTES),
            });
        }
    }

    /// The lines before line `line` (the last lines of `before`, then the last lines
    /// read) that are part of a block of indented messages, nearest first, if one
    /// of them names a file and line: go's `    calc_test.go:12: got 3, want 4`
    /// before `--- FAIL:`. In line order.
    /// The lines right before line `line` back to the line led by a bracketed status
    /// above them ([`LOCATOR_BEFORE`] lines at most), when none is blank or a key line.
    fn status_block_before(&self, before: &[u8], line: u64) -> Vec<Numbered> {
        let mut block = Vec::new();
        let lines = self.lines_before(before, LOCATOR_BEFORE as usize);
        for (back, (bytes, omitted)) in (1..=LOCATOR_BEFORE).zip(lines) {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.trim_end_matches('\r');
            if odd::bracket_status(text.trim_start()).is_some() {
                block.reverse();
                return block;
            }
            if text.trim().is_empty() || matches!(classify(text), Class::Key | Class::KeyLocator) {
                break;
            }
            let seen = Seen {
                text,
                omitted,
                line: line - back,
            };
            block.push(seen.numbered(text));
        }
        Vec::new()
    }

    fn block_before(&self, before: &[u8], line: u64) -> Vec<Numbered> {
        let mut block = Vec::new();
        let mut located = false;
        let lines = self.lines_before(before, LOCATOR_BEFORE as usize);
        for (back, (bytes, omitted)) in (1..=LOCATOR_BEFORE).zip(lines) {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.trim_end_matches('\r');
            if !text.starts_with([' ', '\t']) || text.trim_start().starts_with("--- ") {
                break;
            }
            located |= rules().location.is_match(text);
            let seen = Seen {
                text,
                omitted,
                line: line - back,
            };
            block.push(seen.numbered(text));
        }
        if !located {
            return Vec::new();
        }
        block.truncate(BLOCK_DETAILS);
        block.reverse();
        block
    }

    /// The lines before the one being read, nearest first, at most `max`: the last
    /// lines of `before` (the text right before it in the same chunk), then the last
    /// lines read before that chunk.
    /// Borrowed where a line fits its view: a flood of key lines looks back from each.
    fn lines_before<'a>(&'a self, before: &'a [u8], max: usize) -> Vec<(Cow<'a, [u8]>, usize)> {
        let mut found = Vec::with_capacity(max);
        let mut end = before.len();
        while end > 0 && found.len() < max {
            let start = memchr::memrchr(b'\n', &before[..end - 1]).map_or(0, |i| i + 1);
            found.push(view(&before[start..end - 1]));
            end = start;
        }
        let earlier =
            (self.recent.iter().rev()).map(|(text, omitted)| (Cow::Borrowed(&text[..]), *omitted));
        found.extend(earlier.take(max - found.len()));
        found
    }

    /// A title framed by rules (Catch2's test case name between two lines of `-`)
    /// among the [`TITLE_BEFORE`] lines before line `line`: the nearest.
    fn title_before(&self, before: &[u8], line: u64) -> Option<Numbered> {
        let lines = self.lines_before(before, TITLE_BEFORE);
        let texts: Vec<Cow<'_, str>> = lines
            .iter()
            .map(|(b, _)| String::from_utf8_lossy(b))
            .collect();
        (1..texts.len().saturating_sub(1)).find_map(|at| {
            let title = texts[at].trim();
            let framed = is_rule_line(&texts[at - 1]) && is_rule_line(&texts[at + 1]);
            (framed && !title.is_empty() && !is_rule_line(title)).then(|| {
                let seen = Seen {
                    text: title,
                    omitted: lines[at].1,
                    line: line - at as u64 - 1,
                };
                seen.numbered(title)
            })
        })
    }

    /// The file a stylish report's row (line `line`) belongs to: the nearest line
    /// before it that is not indented, when it is a bare path
    /// (`src/components/card23.css`), within [`HEADER_BEFORE`] lines: the lines of
    /// `before` (the text right before it in the same chunk), then the last lines
    /// read. A blank line or any other unindented line first: none.
    fn header_before(&self, before: &[u8], line: u64) -> Option<Numbered> {
        let mut end = before.len();
        let mut earlier = self.recent.iter().rev();
        for back in 1..=HEADER_BEFORE {
            let bytes = if end > 0 {
                let start = memchr::memrchr(b'\n', &before[..end - 1]).map_or(0, |i| i + 1);
                let bytes = &before[start..end - 1];
                end = start;
                bytes
            } else {
                earlier.next()?.0.as_slice()
            };
            let text = String::from_utf8_lossy(bytes);
            let text = text.trim_end();
            if text.starts_with([' ', '\t']) && !text.trim_start().is_empty() {
                continue;
            }
            if text.len() > KEY_LINE_BYTES || !is_bare_path(text) {
                return None;
            }
            let seen = Seen {
                text,
                omitted: 0,
                line: line - back,
            };
            return Some(seen.numbered(text));
        }
        None
    }

    /// A numbered entry (`  1) name`) among the [`LOCATOR_BEFORE`] lines before line
    /// `line`, since a blank line: the nearest.
    fn entry_before(&self, before: &[u8], line: u64) -> Vec<Numbered> {
        let lines = self.lines_before(before, LOCATOR_BEFORE as usize);
        let texts: Vec<Cow<'_, str>> = lines
            .iter()
            .map(|(b, _)| String::from_utf8_lossy(b))
            .collect();
        let text = |at: usize| texts[at].trim_end_matches('\r');
        // The entry first, by its shape alone; a blank line ends the search, but one
        // right above the failure under a title (Mocha's `labels a … case:` before its
        // assertion).
        let mut found = None;
        for at in 0..texts.len() {
            if text(at).trim().is_empty() {
                let titled = at == 0 && texts.get(1).is_some_and(|t| t.trim_end().ends_with(':'));
                if titled {
                    continue;
                }
                break;
            }
            if numbered_entry(text(at)).is_some() {
                found = Some(at);
                break;
            }
        }
        let Some(entry) = found else {
            return Vec::new();
        };
        let numbered = |at: usize| {
            Seen {
                text: text(at),
                omitted: lines[at].1,
                line: line - at as u64 - 1,
            }
            .numbered(text(at))
        };
        // The titles between are plain lines; a place or a step's mark (`✔ And …`)
        // between is not one.
        let mut kept = vec![numbered(entry)];
        for at in (0..entry).rev() {
            let title = text(at);
            if !title.trim().is_empty()
                && classify(title) == Class::Plain
                && symbol_lead(title).is_none()
                && kept.len() <= ENTRY_TITLES
            {
                kept.push(numbered(at));
            }
        }
        kept
    }

    /// The locator among the [`LOCATOR_BEFORE`] lines before line `line`, the nearest
    /// first: the last lines of `before` (the text right before it in the same
    /// chunk), then the last lines read before that chunk.
    fn locator_before(&self, before: &[u8], line: u64) -> Option<Numbered> {
        // Not the place of a step that passed (cucumber's `✔ And a price of 250 cents #
        // features/steps.js:5` over the next step's failure).
        self.nearest_before(before, line, false, |text| {
            matches!(classify(text), Class::Locator | Class::KeyLocator)
                && !symbol_lead(text).is_some_and(|s| PASS_MARKS.contains(&s))
        })
    }

    /// The nearest of the [`LOCATOR_BEFORE`] lines before line `line` that is
    /// `wanted` (since a blank line, when `to_blank`).
    fn nearest_before(
        &self,
        before: &[u8],
        line: u64,
        to_blank: bool,
        wanted: impl Fn(&str) -> bool,
    ) -> Option<Numbered> {
        let lines = self.lines_before(before, LOCATOR_BEFORE as usize);
        for (back, (bytes, omitted)) in (1..=LOCATOR_BEFORE).zip(lines) {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.trim_end_matches('\r');
            if to_blank && text.trim().is_empty() {
                return None;
            }
            if wanted(text) {
                let seen = Seen {
                    text,
                    omitted,
                    line: line - back,
                };
                return Some(seen.numbered(text));
            }
        }
        None
    }

    fn keep_tail(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(TAIL_KEEP)..];
        if self.tail.len() < TAIL_KEEP {
            let room = TAIL_KEEP - self.tail.len();
            let (now, rest) = bytes.split_at(bytes.len().min(room));
            self.tail.extend_from_slice(now);
            self.ring(rest);
        } else {
            self.ring(bytes);
        }
    }

    /// Writes into the full ring, over its oldest bytes.
    fn ring(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = TAIL_KEEP - self.tail_start;
            let (now, rest) = bytes.split_at(bytes.len().min(room));
            self.tail[self.tail_start..self.tail_start + now.len()].copy_from_slice(now);
            self.tail_start = (self.tail_start + now.len()) % TAIL_KEEP;
            bytes = rest;
        }
    }
}

/// What makes two key lines the same failure: their text and their locators' texts.
fn identity(key: &KeyLine) -> String {
    let mut id = key.first.text.clone();
    // A stylish report's row is the same failure in every file it is seen in (the
    // same rule broken at the same place): counted, with the first file's name.
    if is_stylish_row(&id) && key.locators.iter().all(|l| l.line < key.first.line) {
        return id;
    }
    for locator in &key.locators {
        id.push('\n');
        id.push_str(&locator.text);
    }
    id
}

/// A stack frame in a runtime or dependency, not the code under test.
fn is_library_frame(text: &str) -> bool {
    [
        "node_modules",
        "node:internal",
        "/rustc/",
        "/.cargo/registry/",
        "/site-packages/",
        // Python's standard library (`/usr/lib/python3.11/unittest/case.py`)
        "/lib/python3.",
    ]
    .iter()
    .any(|part| text.contains(part))
}

/// A line as it is classified: its text (its [`view`]), the bytes left out of its
/// middle, and its number.
struct Seen<'a> {
    text: &'a str,
    omitted: usize,
    line: u64,
}

impl Seen<'_> {
    /// `text` (this line's, or a part of it) numbered, cut in its middle to
    /// [`KEY_LINE_BYTES`] as the whole line would be.
    fn numbered(&self, text: &str) -> Numbered {
        let text = if self.omitted == 0 || text.len() <= KEY_LINE_BYTES {
            cut_line(text, KEY_LINE_BYTES)
        } else {
            let half = KEY_LINE_BYTES / 2;
            let head = crate::render::floor_char_boundary(text, half);
            let mut tail = text.len() - half;
            while !text.is_char_boundary(tail) {
                tail += 1;
            }
            let cut = tail - head + self.omitted;
            format!("{}…[{cut} bytes cut]…{}", &text[..head], &text[tail..])
        };
        Numbered {
            line: self.line,
            text,
        }
    }
}

/// How a line is read: whole up to [`LINE_VIEW`] bytes, else its first and last
/// `LINE_VIEW / 2` bytes; with the bytes left out.
fn view(line: &[u8]) -> (Cow<'_, [u8]>, usize) {
    if line.len() <= LINE_VIEW {
        return (Cow::Borrowed(line), 0);
    }
    let half = LINE_VIEW / 2;
    let mut kept = line[..half].to_vec();
    kept.extend_from_slice(&line[line.len() - half..]);
    (Cow::Owned(kept), line.len() - LINE_VIEW)
}

/// TAP's `not ok N - name`: the indent of its line.
fn tap_failure_indent(text: &str) -> Option<usize> {
    let trimmed = text.trim_start();
    let rest = trimmed.strip_prefix("not ok ")?;
    rest.starts_with(|c: char| c.is_ascii_digit())
        .then_some(text.len() - trimmed.len())
}

/// Key lines whose locator comes before them: an exception after its traceback's
/// frames, an undefined reference after ld's `in function`, go's `--- FAIL:` after
/// the messages of `go test -v`.
/// A stylish report's row: `  5:3  ✖  Unknown unit "pz"  unit-no-unknown`, any
/// severity (the rows of one file follow its name, indented).
fn is_stylish_row(text: &str) -> bool {
    static ROW: OnceLock<Regex> = OnceLock::new();
    ROW.get_or_init(|| pattern::regex(r"^\s+\d+:\d+\s+\S+\s+\S").expect("a valid rule"))
        .is_match(text)
}

/// A line that is only a file's path: a stylish report's header
/// (`src/components/card23.css`, `C:\src\a.cs`). Read by hand, not by a regular
/// expression: the odd lines' pass asks it of every line.
pub fn is_bare_path(text: &str) -> bool {
    let bytes = text.as_bytes();
    let rest = match bytes {
        [drive, b':', rest @ ..] if drive.is_ascii_alphabetic() => rest,
        _ => bytes,
    };
    if rest.is_empty() || rest.iter().any(|&b| b == b':' || b.is_ascii_whitespace()) {
        return false;
    }
    if rest.iter().any(|&b| b == b'/' || b == b'\\') {
        return true;
    }
    // `\w\.[A-Za-z]\w*` at its end
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let ext = rest.iter().rev().take_while(|b| word(b)).count();
    let dot = rest.len() - ext;
    ext > 0
        && rest[dot].is_ascii_alphabetic()
        && dot >= 2
        && rest[dot - 1] == b'.'
        && word(&rest[dot - 2])
}

/// A line of one character again and again (`-----`, `=====`): a rule.
fn is_rule_line(text: &str) -> bool {
    let text = text.trim();
    text.len() >= 10 && {
        let first = text.as_bytes()[0];
        b"-=_*#~".contains(&first) && text.bytes().all(|b| b == first)
    }
}

/// The name a numbered entry gives (`  1) test lists the codes (Shop.CouponsTest)`,
/// `3) cart rounds the price:`): one to four digits and `) ` first.
pub(crate) fn numbered_entry(text: &str) -> Option<&str> {
    let trimmed = text.trim_start();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    let name = trimmed[digits..]
        .strip_prefix(") ")
        .filter(|_| (1..=4).contains(&digits))?;
    let name = name.trim().trim_end_matches(':').trim_end();
    (!name.is_empty()).then_some(name)
}

fn wants_locator_before(text: &str) -> bool {
    static EXCEPTION: OnceLock<Regex> = OnceLock::new();
    text.contains("undefined reference")
        || text == "Failed example:"
        || text.starts_with("E   ")
        || text.starts_with("--- FAIL: ")
        || EXCEPTION
            .get_or_init(|| {
                pattern::regex(r"^\s*(\w+\.)*\w*(Error|Exception|Exit|Interrupt)\b")
                    .expect("a valid rule")
            })
            .is_match(text)
}

/// The odd lines, then the lines out of place that are not among them.
fn with_out_of_place(mut odd: Vec<KeyLine>, out_of_place: Vec<KeyLine>) -> Vec<KeyLine> {
    for line in out_of_place {
        if !odd.iter().any(|o| o.first.line == line.first.line) {
            odd.push(line);
        }
    }
    odd
}

/// The marks of a step or a test that passed.
const PASS_MARKS: &[&str] = &["✓", "✔", "√"];

/// The marks of an outcome, a failure's message or a place, which name no subject.
const MARKS: &[&str] = &["✖", "✓", "✔", "√", "✗", "✘", "×", "✕", "→", "›", "❯", "●"];

/// The symbol a line is led by: a word of one to four characters, none a letter, a
/// digit or ASCII (`✖`, `⧗`; not `-`, `*` or `#`).
fn symbol_lead(text: &str) -> Option<&str> {
    let first = text.trim_start().split(char::is_whitespace).next()?;
    let symbol = !first.is_empty()
        && first.chars().count() <= 4
        && first.chars().all(|c| !c.is_alphanumeric() && !c.is_ascii());
    symbol.then_some(first)
}

/// A failure marker that opens a block explaining it (doctest's `Failed example:`), or
/// a status after dot leaders, the list under which says what failed.
fn opens_block(text: &str) -> bool {
    text == "Failed example:" || is_status_title(text) || says_no_message(text)
}

/// A severity at its place in words that ends its line, its message on the lines
/// under it: CSSLint's `2: error at line 8, col 11`.
fn says_no_message(text: &str) -> bool {
    static PLACE: OnceLock<Regex> = OnceLock::new();
    PLACE
        .get_or_init(|| pattern::regex(NO_MESSAGE).expect("a valid rule"))
        .is_match(text)
}

const NO_MESSAGE: &str =
    r"^\s*(\d+: *)?(error|ERROR|Error|fatal) at line \d+(, col(umn)? \d+)?:?\s*$";

/// The header of a problem of a report like CSSLint's, whatever its severity: `3:
/// warning at line 9, col 2`.
fn is_problem_header(text: &str) -> bool {
    static HEADER: OnceLock<Regex> = OnceLock::new();
    HEADER
        .get_or_init(|| pattern::regex(r"^\s*\d+: *\w+ at line \d+").expect("a valid rule"))
        .is_match(text)
}

/// A step's status of failure after dot leaders, ending its line: pre-commit's `no
/// debug prints.....Failed`.
fn is_status_title(text: &str) -> bool {
    static TITLE: OnceLock<Regex> = OnceLock::new();
    TITLE
        .get_or_init(|| pattern::regex(STATUS_TITLE).expect("a valid rule"))
        .is_match(text)
}

const STATUS_TITLE: &str = r"\S\.{4,} ?\**(Failed|FAILED|Error|ERROR)\s*$";

/// The failing test a key line names, by the shapes of test runners' failure
/// markers: go's `--- FAIL: TestX (0.00s)`, libtest's `test x ... FAILED`, TAP's
/// `not ok 3 - x`, pytest's `FAILED path::x - …`, jest's and vitest's `✕ x (3 ms)`
/// and jest's `● suite › x`, a status column's `  5/240 x   FAIL   0.01s`, nextest's
/// `FAIL [ 0.004s] crate x`, ctest's `Test #61: x ....***Failed`.
pub fn failed_test_name(text: &str) -> Option<&str> {
    static SHAPES: OnceLock<Regex> = OnceLock::new();
    let shapes = SHAPES.get_or_init(|| {
        pattern::regex(concat!(
            r"^\s*--- FAIL: (?<go>\S+)",
            r"|^test (?<libtest>\S+) \.\.\. FAILED",
            r"|^\s*not ok \d+ (- )?(?<tap>[^#]*[^#\s])",
            r"|^FAILED (?<pytest>\S+)",
            r"|^\s*(✕|✗|×) (?<jest>.+?)( \(\d+(\.\d+)? ?m?s\))?$",
            r"|^\s*● (?<bullet>.+)$",
            r"|^\s*\d+/\d+ +(Test +#\d+: +)?(?<status>\S+)( \.+\**)? *(FAIL|Failed|\*\*\*Failed)\b",
            r"|^\s*FAIL \[ *[\d.]+s\] (?<nextest>.+)$",
        ))
        .expect("a valid rule")
    });
    let found = shapes.captures(text)?;
    [
        "go", "libtest", "tap", "pytest", "jest", "bullet", "status", "nextest",
    ]
    .iter()
    .find_map(|name| found.name(name))
    .map(|m| m.as_str())
}

/// The error code a line gives (`E1101`, `F821`, `TS2322`, `E0308`), if any: what
/// kind of error it is.
pub fn error_code(text: &str) -> Option<&str> {
    static CODE: OnceLock<Regex> = OnceLock::new();
    let code = CODE.get_or_init(|| pattern::regex(r"\b[A-Z]{1,3}\d{3,4}\b").expect("a valid rule"));
    code.find(text).map(|m| m.as_str())
}

/// The odd diagnostics with their code (`a.py:7:1: DAR101 …` among many `E501`) made
/// key lines, as the rare kinds the tally finds are: the odd lines left, and how many
/// key lines that adds (a key line of its own left out of `keys` was counted already).
fn with_coded(keys: &mut Vec<KeyLine>, odd: Vec<KeyLine>) -> (Vec<KeyLine>, u64) {
    let (coded, odd): (Vec<KeyLine>, Vec<KeyLine>) = odd
        .into_iter()
        .partition(|o| is_coded_diagnostic(&o.first.text));
    let mut added = 0;
    for key in coded {
        if !keys.iter().any(|k| k.first.line == key.first.line) {
            if !matches!(classify(&key.first.text), Class::Key | Class::KeyLocator) {
                added += 1;
            }
            let at = keys.partition_point(|k| k.first.line < key.first.line);
            keys.insert(at, key);
        }
    }
    (odd, added)
}

/// A diagnostic: a place with its code right after it, in the place's word or the
/// next: `a.py:10:1: DAR102 …`, `a.yaml:76:7:76:24:E3012:…` (not a log line that
/// names `X509` further on).
fn is_coded_diagnostic(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().take(8).collect();
    words.iter().enumerate().any(|(i, word)| {
        let word = word.trim_start_matches(['[', '(']);
        let mut parts = word.split(':');
        let file = parts.next().unwrap_or_default();
        let located = parts
            .next()
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let next = words.get(i + 1).map(|w| w.trim_end_matches(':'));
        odd::names_file(file)
            && located
            && (parts.any(odd::is_code) || next.is_some_and(odd::is_code))
    })
}

/// The place (`file:line`) a key line or its first locator names, if any.
pub fn place(key: &KeyLine) -> Option<&str> {
    static PLACE: OnceLock<Regex> = OnceLock::new();
    let place = PLACE.get_or_init(|| pattern::regex(r"[\w./-]*\w\.\w+:\d+").expect("a valid rule"));
    key.locators
        .iter()
        .map(|l| l.text.as_str())
        .chain(std::iter::once(key.first.text.as_str()))
        .find_map(|text| place.find(text))
        .map(|m| m.as_str())
}

/// The key line says where it is, or a locator does.
pub fn locates(key: &KeyLine) -> bool {
    !key.locators.is_empty() || has_location(&key.first.text)
}

/// Whether a line warns of something or says where: a word of a warning or worse
/// (`WARNING`, `error`, `High`) or a place (`file:line`). Of a run that succeeded,
/// only such odd lines are shown.
pub fn warns(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "warning", "warn", "error", "errors", "fatal", "critical", "high", "severe", "failed",
        "failure",
    ];
    has_location(text)
        || text
            .split(|c: char| !c.is_ascii_alphabetic())
            .any(|w| w.len() <= 8 && WORDS.iter().any(|x| x.eq_ignore_ascii_case(w)))
}

/// The key line says where it is already (`file:line` or `file(line,col)`).
fn has_location(text: &str) -> bool {
    static LOCATION: OnceLock<Regex> = OnceLock::new();
    LOCATION
        .get_or_init(|| pattern::regex(r"[\w./-]+\.\w+(:\d+|\(\d+,\d+\))").expect("a valid rule"))
        .is_match(text)
}

/// A line cut to `max` bytes as [`cut_middle`] cuts it, unless the record that says
/// error lies in what that leaves out (one `<error … severity="error" …/>` among a
/// file's warnings, all on one line): then its start, and that record from its
/// opening on.
pub fn cut_line(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mark = error_mark();
    let half = max / 2;
    let Some(at) = mark
        .find_iter(text)
        .map(|m| m.start())
        .find(|&at| at >= half && at + half < text.len())
    else {
        return cut_middle(text, max);
    };
    let floor = |at: usize| crate::render::floor_char_boundary(text, at);
    let head = floor(max / 4);
    // The record opens at the last `<` or `{` before its severity, near it.
    let near = floor(at.saturating_sub(max / 2)).max(head);
    // Not a record without its opening (a command line's `--severity=ERROR`).
    let Some(from) = text[near..at].rfind(['<', '{']).map(|o| near + o) else {
        return cut_middle(text, max);
    };
    let to = floor(from + max - head);
    let mut out = format!(
        "{}…[{} bytes cut]…{}",
        &text[..head],
        from - head,
        &text[from..to]
    );
    if to < text.len() {
        out.push_str(&format!("…[{} bytes cut]…", text.len() - to));
    }
    out
}

/// A record's severity of error inside a line: `severity="error"`, `"severity":
/// "fatal"`.
fn error_mark() -> &'static Regex {
    static MARK: OnceLock<Regex> = OnceLock::new();
    MARK.get_or_init(|| {
        pattern::regex(
            r#"(?i)\bseverity\\?["']?\s*[=:]\s*\\?["']?(error|fatal|critical|blocker)\b"#,
        )
        .expect("a valid rule")
    })
}

/// Whether `text` holds a record's severity of error ([`error_mark`]).
fn says_error_within(text: &str) -> bool {
    // The word first, as plain text is searched: most long lines have none.
    memchr::memmem::find(text.as_bytes(), b"everity").is_some() && error_mark().is_match(text)
}

/// `text`, or its first and last `max / 2` bytes around a marker of what was cut.
pub fn cut_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let half = max / 2;
    let head = crate::render::floor_char_boundary(text, half);
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}…[{} bytes cut]…{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// Consecutive identical lines collapse: `line` then `[previous line repeated N more
/// times]`. Lines keep their `\n`.
pub fn collapse_repeats(lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && lines[j].trim_end_matches('\n') == lines[i].trim_end_matches('\n')
        {
            j += 1;
        }
        out.push(lines[i].to_owned());
        let repeats = j - i - 1;
        if repeats >= 2 {
            out.push(format!("[previous line repeated {repeats} more times]\n"));
        } else if repeats == 1 {
            out.push(lines[i + 1].to_owned());
        }
        i = j;
    }
    out
}

mod long;
mod odd;
mod pattern;
mod places;
pub use odd::record_says_error;
pub use places::Place;
mod tally;
use odd::Odd;
use tally::Tally;

#[cfg(test)]
mod tests;
