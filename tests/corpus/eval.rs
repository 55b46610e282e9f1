//! Measures what the model is shown of the corpus of real logs (tests/corpus/logs),
//! against each log's ground truth: the share of items shown (failing test names,
//! file:line of errors, the missing package), whether the verdict line is shown, and
//! the failing runs whose answer shows none of their failures. The same figures for
//! the answer of before (the first 200 lines of stdout; stderr's first and last 100
//! lines) and for a cut of 20 KB from each end, as references.
//!
//! Shared by the integration test `presentation::the_corpus_meets_its_targets` and
//! `cargo run --example overflow_eval` (which prints every case).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use forge_bash::capture::{Captured, SHOW_BYTES, SHOW_LINES, Spiller, Stream};
use forge_bash::exec::{Ending, Output};
use forge_bash::present;
use forge_bash::render::{Keep, render};
use forge_bash::state::StateDir;

pub const CAP: u64 = 50 * 1024 * 1024;

/// One logged run and what the model must see of it.
pub struct Case {
    pub name: String,
    pub command: String,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: i32,
    pub verdict: Option<String>,
    pub items: Vec<String>,
}

impl Case {
    /// A failing run: it has failures to show.
    pub fn failing(&self) -> bool {
        !self.items.is_empty()
    }
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/logs")
}

pub fn load() -> Vec<Case> {
    let dir = corpus_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/corpus/logs")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".truth").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let truth = std::fs::read_to_string(dir.join(format!("{name}.truth"))).unwrap();
            let mut case = Case {
                stdout: std::fs::read(dir.join(format!("{name}.out"))).unwrap(),
                stderr: std::fs::read(dir.join(format!("{name}.err"))).unwrap(),
                name,
                command: String::new(),
                code: 0,
                verdict: None,
                items: Vec::new(),
            };
            for line in truth.lines() {
                let (key, value) = line.split_once('\t').unwrap_or((line, ""));
                match key {
                    "command" => case.command = value.to_owned(),
                    "exit" => case.code = value.parse().unwrap(),
                    "verdict" => case.verdict = Some(value.to_owned()),
                    "item" => case.items.push(value.to_owned()),
                    _ => panic!("{}: unknown truth line {line:?}", case.name),
                }
            }
            case
        })
        .collect()
}

/// What one way of answering shows of one case.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub items_shown: usize,
    pub items: usize,
    pub verdict_shown: Option<bool>,
    pub looks_clean: bool,
    pub bytes: usize,
    pub lines: usize,
}

pub fn judge(case: &Case, answer: &str) -> Seen {
    let items_shown = case
        .items
        .iter()
        .filter(|i| answer.contains(i.as_str()))
        .count();
    Seen {
        items_shown,
        items: case.items.len(),
        verdict_shown: case.verdict.as_ref().map(|v| answer.contains(v.as_str())),
        looks_clean: case.failing() && items_shown == 0,
        bytes: answer.len(),
        lines: answer.lines().count(),
    }
}

/// The server's answer, as `present::show` gives it, with the overflow files in `dir`.
pub fn answer_now(case: &Case, dir: &Path) -> String {
    let spiller = Spiller::new(Arc::new(StateDir::open(dir)));
    let out = Output {
        stdout: Captured::from_bytes(Stream::Stdout, &case.stdout, CAP, &spiller),
        stderr: Captured::from_bytes(Stream::Stderr, &case.stderr, CAP, &spiller),
        code: case.code,
        ending: Ending::Exited,
        background: None,
        rest: None,
        out_of_memory: None,
    };
    present::show(&out, 5, 300, CAP, present::Stderr::Always).text
}

/// The text a terminal shows of `bytes`, whole.
fn shown(bytes: &[u8]) -> String {
    if memchr_any(bytes) {
        render(
            bytes,
            Keep {
                head: usize::MAX / 4,
            },
        )
        .head
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

fn memchr_any(bytes: &[u8]) -> bool {
    bytes.iter().any(|&b| matches!(b, 0x1b | b'\r' | 0x08))
}

/// The answer of before: stdout whole or its first 200 lines (51,200 bytes), then on
/// failure stderr whole or its first and last 100 lines (25,600 bytes each).
pub fn answer_before(case: &Case) -> String {
    let stdout = shown(&case.stdout);
    let mut answer = String::new();
    let lines: Vec<&str> = stdout.split_inclusive('\n').collect();
    if lines.len() <= SHOW_LINES && stdout.len() <= SHOW_BYTES {
        answer.push_str(&stdout);
    } else {
        let mut head = String::new();
        for line in lines.iter().take(SHOW_LINES) {
            head.push_str(line);
        }
        head.truncate(floor(&head, SHOW_BYTES));
        answer.push_str(head.trim_end_matches('\n'));
        answer.push_str("\nOutput truncated. Full output written to cmd-1.txt");
    }
    if case.code != 0 && !case.stderr.is_empty() {
        answer.push_str("\n--- stderr ---\n");
        let stderr = shown(&case.stderr);
        let lines: Vec<&str> = stderr.split_inclusive('\n').collect();
        if lines.len() <= SHOW_LINES && stderr.len() <= SHOW_BYTES {
            answer.push_str(&stderr);
        } else {
            let head: String = lines.iter().take(100).copied().collect();
            let tail: String = lines[lines.len().saturating_sub(100)..].concat();
            answer.push_str(&head[..floor(&head, SHOW_BYTES / 2)]);
            answer.push_str("\n[... stderr omitted ...]\n");
            let from = tail.len().saturating_sub(SHOW_BYTES / 2);
            answer.push_str(&tail[ceil(&tail, from)..]);
        }
    }
    answer.push_str(&format!("\n[exit:{} | 5ms]", case.code));
    answer
}

/// A cut of 20 KB from each end of stdout and (on failure) stderr together.
pub fn answer_ends(case: &Case) -> String {
    let mut text = shown(&case.stdout);
    if case.code != 0 {
        text.push_str(&shown(&case.stderr));
    }
    const END: usize = 20 * 1024;
    if text.len() <= 2 * END {
        return text;
    }
    format!(
        "{}\n[... {} bytes omitted ...]\n{}",
        &text[..floor(&text, END)],
        text.len() - 2 * END,
        &text[ceil(&text, text.len() - END)..]
    )
}

fn floor(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The figures of one way of answering over the corpus.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub items_shown: usize,
    pub items: usize,
    pub verdicts_shown: usize,
    pub verdicts: usize,
    pub failing: usize,
    pub clean_looking: usize,
    pub bytes: usize,
    /// The largest answer past the limits: an overflow view.
    pub max_bytes: usize,
    /// The largest answer within them (200 lines, 51,200 bytes a stream): shown whole.
    pub max_whole: usize,
    pub answers: usize,
    pub overflowing: usize,
}

impl Figures {
    pub fn add(&mut self, seen: &Seen, failing: bool, whole: bool) {
        self.items_shown += seen.items_shown;
        self.items += seen.items;
        if let Some(shown) = seen.verdict_shown {
            self.verdicts += 1;
            self.verdicts_shown += usize::from(shown);
        }
        self.failing += usize::from(failing);
        self.clean_looking += usize::from(seen.looks_clean);
        self.bytes += seen.bytes;
        if whole {
            self.max_whole = self.max_whole.max(seen.bytes);
        } else {
            self.max_bytes = self.max_bytes.max(seen.bytes);
        }
        self.answers += 1;
    }

    pub fn item_share(&self) -> f64 {
        self.items_shown as f64 / self.items.max(1) as f64
    }

    pub fn mean_bytes(&self) -> f64 {
        self.bytes as f64 / self.answers.max(1) as f64
    }

    pub fn row(&self, what: &str) -> String {
        format!(
            "| {what} | {}/{} ({:.1}%) | {}/{} | {}/{} | {:.1} KB | {:.1} KB | {:.1} KB |",
            self.items_shown,
            self.items,
            100.0 * self.item_share(),
            self.verdicts_shown,
            self.verdicts,
            self.clean_looking,
            self.failing,
            self.mean_bytes() / 1024.0,
            self.max_bytes as f64 / 1024.0,
            self.max_whole as f64 / 1024.0,
        )
    }
}

pub const HEADER: &str = "| answer | items shown | verdicts shown | failing runs that look clean | mean size | largest view | largest shown whole |\n|---|---|---|---|---|---|---|";

/// The families (name prefixes) never looked at while the key line rules were written,
/// from `held-out.txt`.
pub fn held_out() -> Vec<String> {
    let path = corpus_dir().with_file_name("held-out.txt");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Whether the case `name` is of one of the `families`.
pub fn of_family(name: &str, families: &[String]) -> bool {
    families.iter().any(|f| {
        name.strip_prefix(f.as_str())
            .is_some_and(|r| r.starts_with('-'))
    })
}

/// The figures over the whole corpus: now, before, and the 20 KB ends cut.
pub struct Report {
    pub now: Figures,
    /// Now, on the families the rules were written from (all but the held-out ones).
    pub seen: Figures,
    /// Now, on the held-out families alone.
    pub held_out: Figures,
    /// Their names.
    pub held_out_families: Vec<String>,
    pub before: Figures,
    pub ends: Figures,
    /// Per case: name, what the answer now shows, and the answer.
    pub cases: Vec<(String, Seen, String)>,
}

pub fn evaluate() -> Report {
    let cases = load();
    assert!(!cases.is_empty(), "no corpus in {}", corpus_dir().display());
    let (mut now, mut before, mut ends) =
        (Figures::default(), Figures::default(), Figures::default());
    let families = held_out();
    let (mut held_out, mut seen) = (Figures::default(), Figures::default());
    let mut seen_cases = Vec::new();
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let answer = answer_now(case, dir.path());
        let judged = judge(case, &answer);
        let whole = !(answer.contains("Output truncated") || answer.contains("not shown"));
        now.add(&judged, case.failing(), whole);
        if of_family(&case.name, &families) {
            held_out.add(&judged, case.failing(), whole);
        } else {
            seen.add(&judged, case.failing(), whole);
        }
        now.overflowing += usize::from(!whole);
        before.add(&judge(case, &answer_before(case)), case.failing(), whole);
        ends.add(&judge(case, &answer_ends(case)), case.failing(), whole);
        seen_cases.push((case.name.clone(), judged, answer));
    }
    Report {
        now,
        seen,
        held_out,
        held_out_families: families,
        before,
        ends,
        cases: seen_cases,
    }
}

impl Report {
    pub fn table(&self) -> String {
        format!(
            "corpus: {} runs, {} failing, {} answers past the limits\n{HEADER}\n{}\n{}\n{}\n{}\n{}",
            self.now.answers,
            self.now.failing,
            self.now.overflowing,
            self.now.row("now: head, key lines, tail"),
            self.seen.row(&format!(
                "now, the families the rules were written from ({} runs)",
                self.seen.answers
            )),
            self.held_out.row(&format!(
                "now, held-out families alone ({} runs: {})",
                self.held_out.answers,
                self.held_out_families.join(", ")
            )),
            self.before.row("before: first 200 lines"),
            self.ends.row("reference: 20 KB from each end"),
        )
    }
}
