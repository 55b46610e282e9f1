//! Layer 2: what the model reads.
//!
//! One pure function turns Layer 1's result into the answer text, in the seed's order:
//! binary guard, overflow notice, stderr block, footer. The texts are the TypeScript
//! server's, byte for byte; the bounds on one huge line and on stderr are ours.

use crate::capture::{Captured, Spill};
use crate::exec::{Ending, Output};
use crate::exit;
use crate::keylines;

/// What a call answers: the text, and whether MCP should flag it as a tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub text: String,
    pub is_error: bool,
}

/// The answer of a command the rm guard refused. Nothing ran, so it took no time.
pub const BLOCKED: &str = "rm is blocked. Use the uvilo-trash MCP tool instead.";

pub fn blocked() -> Answer {
    Answer {
        text: format!("{BLOCKED}{}", footer(exit::BLOCKED, 0)),
        is_error: true,
    }
}

/// The answer of a call whose command could not be run at all.
pub fn failure(message: &str, ms: u128) -> Answer {
    Answer {
        text: format!(
            "ERROR: Execution failed: {message}{}",
            footer(exit::FAILURE, ms)
        ),
        is_error: true,
    }
}

/// The answer of a command that ran (to its end or until it was stopped).
///
/// `cap` is the configured output cap and `timeout_secs` the configured timeout, both
/// only for the messages that name them; `stderr` says when stderr is shown.
pub fn show(out: &Output, ms: u128, timeout_secs: u64, cap: u64, stderr: Stderr) -> Answer {
    let mut body = String::new();
    let binary = out.stdout.binary;
    if binary {
        body.push_str(&binary_notice(&out.stdout));
    } else {
        push_streams(&mut body, out, cap, shows_stderr(out, stderr));
    }

    let headline = match out.ending {
        Ending::Exited => out.out_of_memory.map(out_of_memory),
        Ending::TimedOut => Some(format!("ERROR: Command timed out after {timeout_secs} s.")),
        Ending::Cancelled => Some("ERROR: Command cancelled by the client.".to_owned()),
        Ending::ShutDown => Some("ERROR: Server shutting down; command stopped.".to_owned()),
        Ending::Yielded => None,
    };
    // Answered early: no exit code yet.
    let end = match out.ending {
        Ending::Yielded => format!("\n[running | {ms}ms]"),
        _ => footer(out.code, ms),
    };
    // A job left running: one line before the footer says where its output goes.
    let footer = match &out.background {
        Some(background) => format!("\n{}{end}", background.line()),
        None => end,
    };
    let text = match headline {
        None => format!("{body}{footer}"),
        Some(line) if body.is_empty() => format!("{line}{footer}"),
        Some(line) => format!("{line}\n{body}{footer}"),
    };
    let capped = out.stdout.capped || out.stderr.capped;
    let is_error = binary
        || capped
        || out.out_of_memory.is_some()
        || !matches!(out.ending, Ending::Exited | Ending::Yielded);
    Answer { text, is_error }
}

/// Stdout, then the stderr shown (`shown`), each whole or as its overflow view, with
/// the line that says the output cap stopped the command.
fn push_streams(body: &mut String, out: &Output, cap: u64, shown: bool) {
    let both = out.stdout.overflows() && shown && out.stderr.overflows();
    let budget = if both { BUDGET.half() } else { BUDGET };
    // A run that succeeded: what differs in it is no sign of what failed, but a
    // warning may be (go vet's finding in a report of passing packages).
    let budget = if out.code == 0 {
        budget.warnings_only()
    } else {
        budget
    };
    // What the stderr shown takes beside stdout's view: its view's budget, or all of
    // it, shown whole.
    let beside = match (shown, out.stderr.overflows()) {
        (false, _) => 0,
        (true, true) => budget.view_bytes,
        (true, false) => visible(&shown_text(&out.stderr)).len(),
    };
    // Stdout's view takes what the stderr shown whole leaves of an answer's bytes.
    let stdout_budget = if shown && !out.stderr.overflows() {
        budget.within(ANSWER_BYTES.saturating_sub(beside + ANSWER_MARKERS))
    } else {
        budget
    };
    push_stdout(
        body,
        &out.stdout,
        Budget {
            beside,
            ..stdout_budget
        },
    );
    if out.stdout.capped || out.stderr.capped {
        body.push_str(&format!(
            "\nOutput limit of {} reached; the command was stopped.",
            human_bytes(cap)
        ));
    }
    if shown {
        body.push_str("\n--- stderr ---\n");
        let beside = body.len();
        // Stderr's view takes what stdout shown whole leaves, as stdout's does.
        let stderr_budget = if out.stdout.overflows() {
            budget
        } else {
            budget.within(ANSWER_BYTES.saturating_sub(beside + ANSWER_MARKERS))
        };
        push_stderr(
            body,
            &out.stderr,
            Budget {
                beside,
                ..stderr_budget
            },
        );
    }
}

/// The first line of the answer of a command the memory limit killed.
pub fn out_of_memory(limit: u64) -> String {
    format!(
        "ERROR: Out of memory: the command reached its limit of {} (--max-memory) and was killed.",
        crate::contain::limits::human(limit)
    )
}

/// The answer of binary stdout: its size and the file that holds it.
fn binary_notice(stdout: &Captured) -> String {
    let size = grouped(stdout.total_bytes);
    match &stdout.spill {
        Some(Spill::Written(path)) => {
            let path = path.display();
            format!(
                "Binary output detected ({size} bytes): {path}. Use: file {path} or: xxd {path} | head -20"
            )
        }
        Some(Spill::Failed(why)) => {
            format!("Binary output detected ({size} bytes). It could not be saved: {why}")
        }
        None => format!("Binary output detected ({size} bytes)."),
    }
}

/// `4096` → `4,096`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// When the answer shows stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Stderr {
    /// After stdout, whatever the exit code: warnings, a test runner's report and
    /// progress written to stderr by a command that succeeded are seen.
    #[default]
    Always,
    /// Only after a non-zero exit (the original rule).
    OnFailure,
}

/// Whether the answer shows stderr: when it holds anything, unless `when` keeps it to
/// failures and the exit code is 0; never in place of binary output.
pub fn shows_stderr(out: &Output, when: Stderr) -> bool {
    let failed = out.code != 0;
    (failed || when == Stderr::Always) && !out.stdout.binary && out.stderr.total_bytes > 0
}

/// The line an answer gains, before its footer, when its call's audit row could not
/// be written (`why`); the server's log has the row.
pub fn unaudited(answer: &mut Answer, why: &dyn std::fmt::Display) {
    let line = format!(
        "\nWARNING: this call's audit row could not be written ({why}); the server's log holds it."
    );
    let footer = answer.text.rfind('\n').unwrap_or(answer.text.len());
    answer.text.insert_str(footer, &line);
}

/// `⏎[exit:N | Xms]`, appended to every answer.
pub fn footer(code: i32, ms: u128) -> String {
    format!("\n[exit:{code} | {ms}ms]")
}

/// `52428800` → `50 MB`, `1024` → `1 KB`, `1000` → `1000 bytes`.
pub fn human_bytes(n: u64) -> String {
    const MB: u64 = 1024 * 1024;
    const KB: u64 = 1024;
    if n >= MB && n.is_multiple_of(MB) {
        format!("{} MB", n / MB)
    } else if n >= KB && n.is_multiple_of(KB) {
        format!("{} KB", n / KB)
    } else {
        format!("{n} bytes")
    }
}

/// How much of a stream too long to show whole is shown, part by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub head_lines: usize,
    pub head_bytes: usize,
    pub key_lines: usize,
    pub key_bytes: usize,
    pub tail_lines: usize,
    pub tail_bytes: usize,
    /// Rows of the lines unlike the many like them ([`keylines::Summary::odd`]), with
    /// the lines that locate them, shown of a run that failed besides its key lines.
    pub odd_lines: usize,
    pub odd_bytes: usize,
    /// Only the odd lines that warn or name a place, or whose record says error (of a
    /// run that succeeded).
    pub odd_warnings_only: bool,
    /// Bytes of the whole view, at most: the key lines get what the head and the
    /// tail leave (the tail at most what leaves them a third).
    pub view_bytes: usize,
    /// Bytes the answer shows beside this view (the other stream), which the list of
    /// places leaves room for.
    pub beside: usize,
}

/// The budget of one stream shown alone. Its parts and markers stay well within
/// [`SHOW_LINES`](crate::capture::SHOW_LINES) lines and
/// [`SHOW_BYTES`](crate::capture::SHOW_BYTES) bytes.
pub const BUDGET: Budget = Budget {
    head_lines: 30,
    head_bytes: 6 * 1024,
    key_lines: 80,
    key_bytes: 16 * 1024,
    tail_lines: 60,
    tail_bytes: 12 * 1024,
    odd_lines: 20,
    odd_bytes: 4 * 1024,
    odd_warnings_only: false,
    view_bytes: 15 * 1024,
    beside: 0,
};

impl Budget {
    /// Half of each part: for an answer that shows two streams too long to show whole.
    pub const fn half(self) -> Budget {
        Budget {
            head_lines: self.head_lines / 2,
            head_bytes: self.head_bytes / 2,
            key_lines: self.key_lines / 2,
            key_bytes: self.key_bytes / 2,
            tail_lines: self.tail_lines / 2,
            tail_bytes: self.tail_bytes / 2,
            odd_lines: self.odd_lines / 2,
            odd_bytes: self.odd_bytes / 2,
            odd_warnings_only: self.odd_warnings_only,
            view_bytes: self.view_bytes / 2,
            beside: self.beside,
        }
    }

    /// Each part cut in the same proportion, for a view of `bytes` at most (of a
    /// sixteenth of this one's at least: its first and last lines, a few key lines):
    /// beside a stream shown whole.
    pub fn within(self, bytes: usize) -> Budget {
        if self.view_bytes == 0 {
            return self;
        }
        let bytes = bytes.clamp(self.view_bytes / 16, self.view_bytes);
        let part = |n: usize| (n * bytes + self.view_bytes / 2) / self.view_bytes;
        Budget {
            head_lines: part(self.head_lines).max(1),
            head_bytes: part(self.head_bytes),
            key_lines: part(self.key_lines).max(1),
            key_bytes: part(self.key_bytes),
            tail_lines: part(self.tail_lines).max(1),
            tail_bytes: part(self.tail_bytes),
            odd_lines: part(self.odd_lines),
            odd_bytes: part(self.odd_bytes),
            view_bytes: bytes,
            ..self
        }
    }

    /// What the key lines may take: what the first and last lines (`ends` bytes) and
    /// the markers leave of the view. A view cut small, beside a stream shown whole,
    /// leaves its markers less, and room for one key line whatever its ends take.
    fn middle(self, ends: usize) -> Budget {
        let markers = MARKER_BYTES.min(self.view_bytes / 4);
        let middle = self
            .view_bytes
            .saturating_sub(ends + markers)
            .max((keylines::KEY_LINE_BYTES + 24).min(self.view_bytes / 2));
        Budget {
            key_bytes: self.key_bytes.min(middle),
            odd_bytes: self.odd_bytes.min(middle),
            ..self
        }
    }

    /// Room only for the odd lines that warn or name a place: for a run that
    /// succeeded.
    pub const fn warnings_only(self) -> Budget {
        Budget {
            odd_warnings_only: true,
            ..self
        }
    }
}

/// Bytes shown of one head or tail line of a stream too long to show whole; a longer
/// line is cut in its middle.
pub const LINE_BYTES: usize = 500;

fn push_stdout(body: &mut String, stdout: &Captured, budget: Budget) {
    let text = shown_text(stdout);
    if !stdout.overflows() {
        body.push_str(&visible(&text));
        push_erased(body, stdout);
        return;
    }
    body.push_str(&overflow_view(&text, stdout, budget));
    push_erased(body, stdout);
    match &stdout.spill {
        Some(Spill::Written(path)) => body.push_str(&format!(
            "Output truncated. Full output written to {}",
            path.display()
        )),
        Some(Spill::Failed(why)) => body.push_str(&format!(
            "Output truncated. The full output could not be saved: {why}"
        )),
        None => body.push_str("Output truncated."),
    }
}

fn push_stderr(body: &mut String, stderr: &Captured, budget: Budget) {
    let text = shown_text(stderr);
    if !stderr.overflows() {
        body.push_str(&visible(&text));
        push_erased(body, stderr);
        return;
    }
    body.push_str(&overflow_view(&text, stderr, budget));
    push_erased(body, stderr);
}

/// The key lines a rendered stream printed that its rendering erased or redrew (a
/// clear-screen, a cursor-up and a new line over them): shown after what `body` shows
/// of the stream, with their line numbers, so that the rendering hides no failure.
/// Those the answer or the stream's key lines hold already are left out.
fn push_erased(body: &mut String, captured: &Captured) {
    let Some(rendered) = &captured.rendered else {
        return;
    };
    if rendered.printed.is_empty() {
        return;
    }
    let mut seen: std::collections::HashSet<&str> = body.lines().map(str::trim_end).collect();
    seen.extend(captured.summary.keys.iter().map(|k| k.first.text.as_str()));
    let erased: Vec<&(u64, String)> = rendered
        .printed
        .iter()
        .filter(|(_, text)| !seen.contains(visible(text).as_ref()) && !seen.contains(text.as_str()))
        .collect();
    if erased.is_empty() {
        return;
    }
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    body.push_str("[printed, then erased by the command's redraws:]\n");
    for (line, text) in erased {
        body.push_str(&format!("{line}:{}\n", visible(text)));
    }
}

/// The start of the text shown: rendered, or the raw bytes.
fn shown_text(captured: &Captured) -> std::borrow::Cow<'_, str> {
    match &captured.rendered {
        Some(rendered) => std::borrow::Cow::Borrowed(rendered.head.as_str()),
        None => String::from_utf8_lossy(&captured.head),
    }
}

/// One line shown, numbered as in the saved file.
struct Shown {
    line: u64,
    text: String,
    /// Identical lines right after it, collapsed into it.
    repeats: u64,
}

impl Shown {
    fn render(&self, out: &mut String) {
        out.push_str(&visible(&self.text));
        out.push('\n');
        if self.repeats > 0 {
            out.push_str(&format!(
                "[previous line repeated {} more times]\n",
                self.repeats
            ));
        }
    }

    fn cost(&self) -> (usize, usize) {
        let marker = if self.repeats > 0 { 44 } else { 0 };
        (
            1 + usize::from(self.repeats > 0),
            self.text.len() + 1 + marker,
        )
    }
}

/// Numbered lines of `text` (the first numbered `first`), long ones cut in their
/// middle and runs of identical lines collapsed.
fn numbered(text: &str, first: u64) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = keylines::cut_middle(line, LINE_BYTES);
        match out.last_mut() {
            Some(last) if last.text == line => last.repeats += 1,
            _ => out.push(Shown {
                line: first + i as u64,
                text: line,
                repeats: 0,
            }),
        }
    }
    // A line twice is shown twice: a marker would be no shorter.
    let mut expanded = Vec::with_capacity(out.len());
    for shown in out {
        if shown.repeats == 1 {
            expanded.push(Shown {
                line: shown.line + 1,
                text: shown.text.clone(),
                repeats: 0,
            });
            expanded.insert(
                expanded.len() - 1,
                Shown {
                    repeats: 0,
                    ..shown
                },
            );
        } else {
            expanded.push(shown);
        }
    }
    expanded
}

/// Bytes of the view kept for the markers of the lines left out.
const MARKER_BYTES: usize = 1024;
/// Bytes of an answer that shows a stream too long to show whole beside the other
/// shown whole, at most: the view takes what the other leaves, down to a sixteenth of
/// its budget and room for one key line (past that, the answer takes more, as the
/// other stream shown whole does); and what its markers besides the views take (the
/// stderr's heading, the saved file's line, the footer).
const ANSWER_BYTES: usize = 16 * 1024;
const ANSWER_MARKERS: usize = 512;

/// A stream too long to show whole: its first lines, the key lines of the part not
/// shown with their line numbers, its last lines, and markers that say what was left
/// out and how to read it from the saved file.
fn overflow_view(head_text: &str, captured: &Captured, budget: Budget) -> String {
    let summary = &captured.summary;
    let total = summary.lines.max(1);
    let file = match &captured.spill {
        Some(Spill::Written(path)) => Some(path.display().to_string()),
        _ => None,
    };
    let head = head_lines(head_text, captured, budget);
    let head_end = head.last().map_or(0, |s| s.line + s.repeats);
    let bytes = |shown: &[Shown]| shown.iter().map(|s| s.cost().1).sum::<usize>();
    let head_bytes = bytes(&head);
    let tail_room = budget.tail_bytes.min(
        budget
            .view_bytes
            .saturating_sub(head_bytes + budget.view_bytes / 3),
    );
    let tail = tail_lines(
        summary,
        head_end,
        Budget {
            tail_bytes: tail_room,
            ..budget
        },
    );
    let budget = budget.middle(head_bytes + bytes(&tail));
    let tail_start = tail.first().map_or(total + 1, |s| s.line);

    let mut out = String::new();
    for shown in &head {
        shown.render(&mut out);
    }
    if head_end + 1 < tail_start {
        let (from, to) = (head_end + 1, tail_start - 1);
        let view = View {
            from,
            to,
            total,
            in_view: keys_in_view(&head, &tail, summary),
            rendered: captured.rendered.as_ref(),
            tail: &tail,
        };
        out.push_str(&omitted(&view, summary, file.as_deref(), budget));
    }
    for shown in &tail {
        shown.render(&mut out);
    }
    push_pieces(&mut out, captured, budget);
    push_diff_files(&mut out, captured, head_end + 1..tail_start, budget);
    push_places(&mut out, captured, head_end + 1..tail_start, budget);
    out
}

/// The list of places of a failing run's lines not shown (`hidden`), within the view
/// of a stream shown alone, whatever the answer shows beside it ([`places_line`]).
fn push_places(
    out: &mut String,
    captured: &Captured,
    hidden: std::ops::Range<u64>,
    budget: Budget,
) {
    if budget.odd_warnings_only {
        return;
    }
    let room = PLACES_BYTES.min(BUDGET.view_bytes.saturating_sub(out.len() + budget.beside));
    let line = places_line(captured, hidden, out, room);
    out.push_str(&line);
}

/// Bytes of the list of places named only in the lines not shown, at most.
const PLACES_BYTES: usize = 2 * 1024;

/// The places (`src/parse.c:12:5`) a failing run named first in the lines not shown
/// (`hidden`) that the view (`shown`) does not name, the rarest first, as one line
/// within `room` bytes: where a tool no rule knows put its errors, whatever lines say
/// so. Empty when there are none.
fn places_line(
    captured: &Captured,
    hidden: std::ops::Range<u64>,
    shown: &str,
    room: usize,
) -> String {
    let heading = "[... places named in the lines not shown, the rarest first: ";
    // The heading, a place and the end: no room, no list.
    if room < heading.len() + 80 {
        return String::new();
    }
    let places: Vec<&keylines::Place> = captured
        .summary
        .places
        .iter()
        .filter(|p| hidden.contains(&p.first) && !names_place(shown, &p.text))
        .collect();
    let mut list = String::new();
    let mut listed = 0;
    for place in &places {
        let entry = visible(&place.text);
        if heading.len() + list.len() + entry.len() + 40 > room {
            break;
        }
        if listed > 0 {
            list.push_str(", ");
        }
        list.push_str(&entry);
        listed += 1;
    }
    if listed == 0 {
        return String::new();
    }
    let more = match places.len() - listed {
        0 => String::new(),
        n => format!(" … and {n} more"),
    };
    format!("{heading}{list}{more}]\n")
}

/// Whether `text` names `place` as a whole: `a.c:1` is not in `a.c:12`, nor
/// `main.rs:10` in `domain.rs:10`.
fn names_place(text: &str, place: &str) -> bool {
    let path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    text.match_indices(place).any(|(at, _)| {
        !text[..at].ends_with(path)
            && !text[at + place.len()..].starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Rows of the diff's file headers shown, at most.
const DIFF_FILES_SHOWN: usize = 40;
/// Bytes of the rows of the diff's file headers, at most.
const DIFF_FILES_BYTES: usize = 3 * 1024;

/// The headers of the files a diff changes ([`keylines::Summary::diff_files`]) among
/// the lines not shown (`hidden`): a check's findings, each file once.
fn push_diff_files(
    out: &mut String,
    captured: &Captured,
    hidden: std::ops::Range<u64>,
    budget: Budget,
) {
    let files = captured
        .summary
        .diff_files
        .iter()
        .filter(|f| hidden.contains(&f.line))
        .map(|f| (f.line, visible(&f.text).into_owned()));
    let heading = "[the files the diff changes, among the lines not shown:]";
    push_listed(
        out,
        captured,
        heading,
        files,
        // A view cut small (beside a stream shown whole) lists fewer.
        (
            DIFF_FILES_SHOWN,
            DIFF_FILES_BYTES * budget.view_bytes / BUDGET.view_bytes,
        ),
        true,
    );
}

/// The records unlike the many like them inside the long lines of a one-line JSON
/// report ([`keylines::Summary::pieces`]), whose view shows only their ends: within
/// the room for odd lines, each with the file its record names.
fn push_pieces(out: &mut String, captured: &Captured, budget: Budget) {
    let pieces = captured
        .summary
        .pieces
        .iter()
        .filter(|p| !budget.odd_warnings_only || keylines::warns(&p.first.text))
        .map(|piece| {
            let mut row = visible(&piece.first.text).into_owned();
            if let Some(file) = piece.locators.first() {
                row.push_str(&format!("  [in {}]", visible(&file.text)));
            }
            (piece.first.line, row)
        });
    let heading = "[records unlike the many like them, inside the long lines cut above:]";
    push_listed(
        out,
        captured,
        heading,
        pieces,
        (budget.odd_lines, budget.odd_bytes),
        false,
    );
}

/// `rows` (line, text) under `heading`, numbered as the saved file counts its lines,
/// up to `room` (rows, bytes); those left out counted when `count_left`.
fn push_listed(
    out: &mut String,
    captured: &Captured,
    heading: &str,
    rows: impl Iterator<Item = (u64, String)>,
    room: (usize, usize),
    count_left: bool,
) {
    let raw = |line: u64| {
        captured
            .rendered
            .as_ref()
            .map_or(line, |r| r.raw_line(line))
    };
    let (mut listed, mut shown, mut left) = (String::new(), 0, 0);
    for (line, text) in rows {
        let row = format!("{}:{text}\n", raw(line));
        if left > 0 || shown == room.0 || listed.len() + row.len() > room.1 {
            left += 1;
            continue;
        }
        listed.push_str(&row);
        shown += 1;
    }
    if shown == 0 {
        return;
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(heading);
    out.push('\n');
    out.push_str(&listed);
    if count_left && left > 0 {
        out.push_str(&format!("[... and {left} more]\n"));
    }
}

/// The first lines, within the budget (at least one, cut when long). The head kept
/// may end mid-line: that line is left to the tail or the part not shown.
fn head_lines(head_text: &str, captured: &Captured, budget: Budget) -> Vec<Shown> {
    let text_bytes = captured
        .rendered
        .as_ref()
        .map_or(captured.total_bytes, |r| r.bytes);
    let mut candidates = numbered(head_text, 1);
    if (head_text.len() as u64) < text_bytes && !head_text.ends_with('\n') {
        candidates.pop();
    }
    if candidates.is_empty() {
        candidates.push(first_line_cut(head_text, &captured.summary));
    }
    let mut head = Vec::new();
    let (mut lines, mut bytes) = (0, 0);
    for shown in candidates {
        let (l, b) = shown.cost();
        if !head.is_empty() && (lines + l > budget.head_lines || bytes + b > budget.head_bytes) {
            break;
        }
        lines += l;
        bytes += b;
        head.push(shown);
    }
    head
}

/// The last lines, within the budget, after the head (which ends at line `head_end`).
fn tail_lines(summary: &keylines::Summary, head_end: u64, budget: Budget) -> Vec<Shown> {
    let mut tail: Vec<Shown> = Vec::new();
    let (mut lines, mut bytes) = (0, 0);
    for shown in numbered(&summary.tail, summary.tail_first_line)
        .into_iter()
        .rev()
    {
        let (l, b) = shown.cost();
        if shown.line <= head_end
            || (!tail.is_empty()
                && (lines + l > budget.tail_lines || bytes + b > budget.tail_bytes))
        {
            break;
        }
        lines += l;
        bytes += b;
        tail.push(shown);
    }
    tail.reverse();
    tail
}

/// The key lines the head and tail show (with their repeats): they are not left out.
/// Those of a rare kind of diagnostic ([`keylines::Kind`]) are key lines by the
/// digest's tally, not by their text: known by their line.
fn keys_in_view(head: &[Shown], tail: &[Shown], summary: &keylines::Summary) -> u64 {
    head.iter()
        .chain(tail)
        .map(|s| {
            if keylines::classify(&s.text) == keylines::Class::Key {
                1 + s.repeats
            } else {
                u64::from(summary.keys.iter().any(|k| k.first.line == s.line))
            }
        })
        .sum()
}

/// A first line longer than the head kept: its start, and its end when the stream
/// has no other line.
fn first_line_cut(head_text: &str, summary: &keylines::Summary) -> Shown {
    let half = LINE_BYTES / 2;
    let start = &head_text[..crate::render::floor_char_boundary(head_text, half)];
    let end = if summary.lines <= 1 {
        let tail = summary.tail.as_str();
        let mut from = tail.len().saturating_sub(half);
        while !tail.is_char_boundary(from) {
            from += 1;
        }
        &tail[from..]
    } else {
        ""
    };
    let cut = summary
        .first_line_bytes
        .saturating_sub((start.len() + end.len()) as u64);
    Shown {
        line: 1,
        text: format!("{start}…[{cut} bytes cut]…{end}"),
        repeats: 0,
    }
}

/// The lines left out (`from..=to` of `total`), and the key lines head and tail show.
struct View<'a> {
    from: u64,
    to: u64,
    total: u64,
    in_view: u64,
    /// Maps rendered line numbers to the saved file's, where cursor movement redrew.
    rendered: Option<&'a crate::render::Rendered>,
    /// The last lines shown after them.
    tail: &'a [Shown],
}

impl View<'_> {
    /// The saved file's number of rendered line `line`.
    fn raw(&self, line: u64) -> u64 {
        self.rendered.map_or(line, |r| r.raw_line(line))
    }
}

/// The rows the marker of the lines left out shows, and what they leave.
struct Rows<'a> {
    shown: Vec<KeyRows<'a>>,
    /// Key lines seen that neither the rows, the head nor the tail show.
    left_out: u64,
    /// How many of `shown` are key lines (the first), not odd lines.
    keys: usize,
    /// Bytes of the key line budget the rows leave, for the lists after them.
    left: usize,
}

/// The key lines, then the odd lines, of the lines left out that the budget shows;
/// the list of failing tests keeps its room (up to a third of the key lines').
fn rows_shown<'a>(view: &View, summary: &'a keylines::Summary, budget: Budget) -> Rows<'a> {
    let names: usize = summary
        .failed_tests
        .iter()
        .filter(|n| (view.from..=view.to).contains(&n.line))
        .map(|n| n.text.len() + 24)
        .sum();
    let reserve = names.min(FAILED_LIST_BYTES).min(budget.key_bytes / 3);
    let keys_budget = Budget {
        key_bytes: budget.key_bytes - reserve,
        ..budget
    };
    let mut shown = keys_shown(view, summary, keys_budget);
    // Every key line seen but those shown here, in the head or in the tail.
    let listed: u64 = shown.iter().map(|(key, _, _)| key.count).sum();
    let left_out = summary.key_lines.saturating_sub(listed + view.in_view);
    let keys = shown.len();
    let used = |shown: &[KeyRows<'_>]| -> usize {
        shown
            .iter()
            .flat_map(|(_, rows, _)| rows.iter().map(|r| r.text.len() + 24))
            .sum()
    };
    let odd_budget = Budget {
        odd_bytes: budget
            .odd_bytes
            .min(budget.key_bytes.saturating_sub(used(&shown))),
        ..budget
    };
    odd_shown(view, summary, odd_budget, &mut shown);
    let left = budget.key_bytes.saturating_sub(used(&shown));
    Rows {
        shown,
        left_out,
        keys,
        left,
    }
}

/// The marker of the lines left out, with their key lines.
fn omitted(view: &View, summary: &keylines::Summary, file: Option<&str>, budget: Budget) -> String {
    let Rows {
        shown,
        left_out,
        keys,
        left,
    } = rows_shown(view, summary, budget);
    let odd = shown.len() > keys;
    // Numbers as the saved file counts its lines.
    let (from, to, total) = (
        view.raw(view.from - 1) + 1,
        view.raw(view.to + 1)
            .saturating_sub(1)
            .max(view.raw(view.from - 1) + 1),
        view.raw(view.total),
    );
    let sed = |from: u64, to: u64| match file {
        Some(path) => format!("sed -n '{from},{to}p' {path}"),
        None => "the full output was not saved".to_owned(),
    };
    let failed = failed_not_listed(view, summary, &shown, left);
    let mut out = String::new();
    if shown.is_empty() && left_out == 0 && failed.is_empty() {
        out.push_str(&format!(
            "[... lines {from}-{to} of {total} not shown, no error or failure among them: {}]\n",
            sed(from, to)
        ));
        out.push_str(&kinds_line(view, summary, left));
        return out;
    }
    let among = match (keys > 0 || left_out > 0, odd) {
        (true, false) => "the error and failure lines among them",
        (true, true) => {
            "the error and failure lines among them, and the lines unlike the many like them"
        }
        (false, true) => "no error or failure line among them; the lines unlike the many like them",
        (false, false) => "the failing tests among them",
    };
    out.push_str(&format!(
        "[... lines {from}-{to} of {total} not shown; {among}, by line number:]\n"
    ));
    push_rows(&mut out, view, &shown, left_out, file);
    out.push_str(&failed);
    out.push_str(&kinds_line(
        view,
        summary,
        left.saturating_sub(failed.len()),
    ));
    out.push_str(&format!(
        "[... end of lines {from}-{to}: {}]\n",
        sed(from, to)
    ));
    out
}

/// The rows of `shown` by line number, the count of the key lines `left_out` before
/// the rows of the last key lines.
fn push_rows(
    out: &mut String,
    view: &View,
    shown: &[KeyRows<'_>],
    left_out: u64,
    file: Option<&str>,
) {
    let rows = key_rows(view, shown);
    let last_from = shown
        .iter()
        .filter(|(_, _, last)| *last)
        .flat_map(|(_, rows, _)| rows.iter().map(|row| view.raw(row.line)))
        .min();
    let (before, after): (Vec<_>, Vec<_>) = rows
        .into_iter()
        .partition(|(line, _)| last_from.is_none_or(|from| *line < from));
    for (line, text) in before {
        out.push_str(&format!("{line}:{text}\n"));
    }
    if left_out > 0 {
        out.push_str(&more_key_lines(left_out, file));
    }
    for (line, text) in after {
        out.push_str(&format!("{line}:{text}\n"));
    }
}

/// The count of the key lines left out of the view, with the way to find them.
fn more_key_lines(left_out: u64, file: Option<&str>) -> String {
    match file {
        Some(path) => format!(
            "[... and {left_out} more: grep -nE '{}' {path}]\n",
            keylines::grep_pattern()
        ),
        None => format!("[... and {left_out} more]\n"),
    }
}

/// Bytes of the tally of diagnostics by kind, at most.
pub const KINDS_BYTES: usize = 1024;

/// Diagnostics of the shape `path:line: severity: message [id]` that a tally by kind
/// is worth showing for, at least.
const KINDS_MIN: u64 = 10;

/// The diagnostics of the shape `path:line: severity: message [id]` in the whole
/// stream, by kind (most frequent first, each with the line of its first), as one
/// line up to [`KINDS_BYTES`]: which kinds differ from the many. Empty when fewer than
/// [`KINDS_MIN`] or of one kind.
fn kinds_line(view: &View, summary: &keylines::Summary, room: usize) -> String {
    if summary.kinds.len() < 2 || summary.diagnostics < KINDS_MIN {
        return String::new();
    }
    let mut list = String::new();
    let mut listed = 0;
    for kind in &summary.kinds {
        let entry = format!(
            "{} {} (line {})",
            kind.name,
            kind.count,
            view.raw(kind.first)
        );
        if list.len() + entry.len() + 2 > KINDS_BYTES.min(room) {
            break;
        }
        if listed > 0 {
            list.push_str(", ");
        }
        list.push_str(&visible(&entry));
        listed += 1;
    }
    let more = match summary.kinds.len() - listed {
        0 => String::new(),
        n => format!(" … and {n} more kinds"),
    };
    format!(
        "[... {} diagnostics `path:line: severity: message [id]` in the whole output, by kind (count, first at): {list}{more}]\n",
        summary.diagnostics
    )
}

/// Bytes of the list of failing tests the key lines shown leave out, at most.
pub const FAILED_LIST_BYTES: usize = 6 * 1024;

/// The failing tests of the lines left out whose names neither the key lines shown
/// nor the last lines give, as one line: each name with the place its failure names
/// (`TestAvg13 (sum_test.go:1205)`), up to [`FAILED_LIST_BYTES`], then how many more
/// (the markers past the names a digest keeps, [`keylines::FAILED_NAMES_BYTES`], are
/// counted there). Empty when there are none.
fn failed_not_listed(
    view: &View,
    summary: &keylines::Summary,
    shown: &[KeyRows<'_>],
    room: usize,
) -> String {
    let printed: std::collections::HashSet<u64> = shown
        .iter()
        .flat_map(|(key, rows, _)| rows.iter().map(|r| r.line).chain([key.first.line]))
        .collect();
    let tail: String = view
        .tail
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<&keylines::Numbered> = summary
        .failed_tests
        .iter()
        .filter(|n| (view.from..=view.to).contains(&n.line) && !printed.contains(&n.line))
        .filter(|n| !names_whole(&tail, &n.text))
        .collect();
    // The markers past the names kept, less those the last lines show.
    let last_kept = summary.failed_tests.last().map_or(0, |n| n.line);
    let past = summary.failed_tests_past.saturating_sub(
        view.tail
            .iter()
            .filter(|s| s.line > last_kept && keylines::failed_test_name(&s.text).is_some())
            .map(|s| 1 + s.repeats)
            .sum(),
    );
    if missing.is_empty() && past == 0 {
        return String::new();
    }
    let (list, listed) = names_with_places(summary, &missing, FAILED_LIST_BYTES.min(room));
    let more = (missing.len() - listed) as u64 + past;
    let more = if more > 0 {
        format!(" … and {more} more")
    } else {
        String::new()
    };
    format!(
        "[... failing tests among them not listed above ({}): {list}{more}]\n",
        missing.len() as u64 + past
    )
}

/// The failing tests `missing`, each with the place its failure names, comma-separated
/// up to [`FAILED_LIST_BYTES`], and how many the list holds.
fn names_with_places(
    summary: &keylines::Summary,
    missing: &[&keylines::Numbered],
    room: usize,
) -> (String, usize) {
    let mut list = String::new();
    let mut listed = 0;
    for name in missing {
        let place = summary
            .keys
            .iter()
            .find(|k| k.first.line == name.line)
            .and_then(keylines::place)
            .filter(|p| !name.text.contains(p));
        let entry = match place {
            Some(place) => format!("{} ({place})", name.text),
            None => name.text.clone(),
        };
        if list.len() + entry.len() + 2 > room {
            break;
        }
        if listed > 0 {
            list.push_str(", ");
        }
        list.push_str(&visible(&entry));
        listed += 1;
    }
    (list, listed)
}

/// Whether `text` holds `name` as a whole (`TestA1` is not in `TestA10`).
fn names_whole(text: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(name).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + name.len()..].chars().next())
    })
}

/// A key line to show, with the rows it takes (itself and its locators not shown
/// yet), and whether it is one of the last ones, shown after the count of the rest.
type KeyRows<'a> = (&'a keylines::KeyLine, Vec<&'a keylines::Numbered>, bool);

/// Share of the key line budget kept for the last key lines, when they are too many.
const LAST_SHARE: usize = 4;

/// The key lines of the lines left out that the budget shows. Past the budget, both
/// the first and the last: a quarter of it for the last ones (the error that ended a
/// run comes after its lesser ones), the rest for the first, those that say where
/// (file:line) going first.
fn keys_shown<'a>(view: &View, summary: &'a keylines::Summary, budget: Budget) -> Vec<KeyRows<'a>> {
    let range = view.from..=view.to;
    // A key line the head shows whose locator is left out shows its locator.
    let candidates: Vec<&keylines::KeyLine> = summary
        .keys
        .iter()
        .filter(|k| {
            range.contains(&k.first.line)
                || (k.first.line < view.from && k.locators.iter().any(|l| range.contains(&l.line)))
        })
        .collect();

    let mut shown = Vec::new();
    let mut printed = std::collections::BTreeSet::new();
    let mut room = Room {
        lines: budget.key_lines,
        bytes: budget.key_bytes,
        from: view.from,
    };
    let mut taken = vec![false; candidates.len()];
    if candidates.len() > budget.key_lines {
        let mut last = Room {
            lines: budget.key_lines / LAST_SHARE,
            bytes: budget.key_bytes / LAST_SHARE,
            from: view.from,
        };
        let before = (last.lines, last.bytes);
        for i in (0..candidates.len()).rev() {
            if !last.take(candidates[i], &mut printed, &mut shown, true) {
                break;
            }
            taken[i] = true;
        }
        room.lines -= before.0 - last.lines;
        room.bytes -= before.1 - last.bytes;
    }
    let mut order: Vec<usize> = (0..candidates.len()).filter(|&i| !taken[i]).collect();
    if candidates.len() > budget.key_lines {
        // Those that say where first; among them, those of a kind (an error code:
        // `E1101`, `F821`, `TS2322`) seen less often: one undefined name before the
        // hundredth line too long.
        let mut kinds: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for key in &candidates {
            if let Some(code) = keylines::error_code(&key.first.text) {
                *kinds.entry(code).or_default() += 1;
            }
        }
        order.sort_by_key(|&i| {
            let key = candidates[i];
            let seen = keylines::error_code(&key.first.text).map_or(1, |c| kinds[c]);
            (!keylines::locates(key), seen, i)
        });
    }
    for i in order {
        room.take(candidates[i], &mut printed, &mut shown, false);
    }
    shown
}

/// The lines unlike the many like them ([`keylines::Summary::odd`]) of the lines left
/// out, within the budget's room for them, after the key lines `shown`: the rows the
/// key lines show are not shown again.
fn odd_shown<'a>(
    view: &View,
    summary: &'a keylines::Summary,
    budget: Budget,
    shown: &mut Vec<KeyRows<'a>>,
) {
    let mut printed: std::collections::BTreeSet<u64> = shown
        .iter()
        .flat_map(|(_, rows, _)| rows.iter().map(|r| r.line))
        .collect();
    let mut room = Room {
        lines: budget.odd_lines,
        bytes: budget.odd_bytes,
        from: view.from,
    };
    // An odd line that is a key line shown adds the lines that locate it.
    for odd in &summary.odd {
        // Of a run that succeeded, the odd lines that warn, or whose record says error.
        if budget.odd_warnings_only
            && !keylines::warns(&odd.first.text)
            && !odd
                .locators
                .iter()
                .any(|l| keylines::record_says_error(&l.text))
        {
            continue;
        }
        if (view.from..=view.to).contains(&odd.first.line) {
            room.take(odd, &mut printed, shown, false);
        }
    }
}

/// What is left of the key line budget.
struct Room {
    lines: usize,
    bytes: usize,
    /// The first line left out.
    from: u64,
}

impl Room {
    /// Shows `key` (with its locators not printed yet) when it fits; false if not.
    fn take<'a>(
        &mut self,
        key: &'a keylines::KeyLine,
        printed: &mut std::collections::BTreeSet<u64>,
        shown: &mut Vec<KeyRows<'a>>,
        last: bool,
    ) -> bool {
        // Its rows among the lines left out (a key line the head shows has its
        // locator there), those not printed yet.
        let mut rows = Vec::new();
        if key.first.line >= self.from && !printed.contains(&key.first.line) {
            rows.push(&key.first);
        }
        rows.extend(
            key.locators
                .iter()
                .filter(|l| l.line >= self.from && !printed.contains(&l.line)),
        );
        // The name of the file a stylish report's row belongs to costs its bytes, not
        // a line: shown once for the rows of its file.
        let names = rows
            .iter()
            .filter(|r| r.line < key.first.line && keylines::is_bare_path(&r.text))
            .count();
        if rows.is_empty() {
            return true;
        }
        let cost_lines = rows.len() - names;
        let cost_bytes: usize = rows.iter().map(|r| r.text.len() + 24).sum();
        if cost_lines > self.lines || cost_bytes > self.bytes {
            return false;
        }
        self.lines -= cost_lines;
        self.bytes -= cost_bytes;
        for row in &rows {
            printed.insert(row.line);
        }
        shown.push((key, rows, last));
        true
    }
}

/// The rows of the key lines shown, `(line, text)`, in the saved file's line order.
fn key_rows(view: &View, shown: &[KeyRows<'_>]) -> Vec<(u64, String)> {
    let mut rows: Vec<(u64, String)> = Vec::new();
    for (key, locators, _) in shown {
        for row in locators {
            let mut text = visible(&row.text).into_owned();
            if row.line == key.first.line && key.count > 1 {
                text.push_str(&format!(
                    "  [{} times, last at line {}]",
                    key.count,
                    view.raw(key.last_line)
                ));
            }
            rows.push((view.raw(row.line), text));
        }
    }
    rows.sort_by_key(|(line, _)| *line);
    rows.dedup_by_key(|(line, _)| *line);
    rows
}

/// Characters of the line a progress message carries, at most.
pub const PROGRESS_CHARS: usize = 200;

/// The last line with text in it of `bytes` (the last bytes a stream wrote), as the
/// answer would show it, at most [`PROGRESS_CHARS`] characters: for a progress message.
pub fn last_line(bytes: &[u8]) -> Option<String> {
    let rendered = crate::render::render(
        bytes,
        crate::render::Keep {
            head: 2 * bytes.len(),
        },
    );
    let line = rendered.head.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(
        visible(line.trim_end())
            .chars()
            .take(PROGRESS_CHARS)
            .collect(),
    )
}

/// How the footer starts (see [`footer`]).
const FOOTER_START: &str = "[exit:";

/// How the footer's start is shown in a command's output: its `[` written out, so that
/// the answer's last line is the only one a model can take for its footer.
const FOOTER_MARKED: &str = "<U+005B>exit:";

/// `text` with every character a terminal does not show but a model reads, or that
/// reorders what it reads, written out as `<U+XXXX>`: control characters but TAB and
/// LF, DEL and the C1 controls, Unicode tag characters, bidi controls, zero-width
/// characters (and a byte order mark past the start); and with the `[` of anything
/// shaped like the footer (`[exit:`) written out as `<U+005B>`.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let footer = memchr::memmem::find(text.as_bytes(), FOOTER_START.as_bytes()).is_some();
    let shown = hidden_written_out(text);
    if !footer {
        return shown;
    }
    std::borrow::Cow::Owned(shown.replace(FOOTER_START, FOOTER_MARKED))
}

/// `text` with the characters [`visible`] names written out as `<U+XXXX>`.
fn hidden_written_out(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |(i, c): (usize, char)| -> bool {
        match c {
            '\t' | '\n' => false,
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' => true,
            '\u{61c}' | '\u{e0000}'..='\u{e007f}' => true,
            '\u{feff}' => i > 0,
            _ => false,
        }
    };
    let fast = text
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\t' || b == b'\n');
    if fast || !text.char_indices().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, c) in text.char_indices() {
        if hidden((i, c)) {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests;
