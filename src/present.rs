//! Layer 2: what the model reads.
//!
//! One pure function turns Layer 1's result into the answer text, in the seed's order:
//! binary guard, overflow notice, stderr block, footer. The texts are the TypeScript
//! server's, byte for byte; the bounds on one huge line and on stderr are ours.

use crate::capture::{self, Captured, Spill};
use crate::exec::{Ending, Output};
use crate::exit;
use crate::render::floor_char_boundary;

/// What a call answers: the text, and whether MCP should flag it as a tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub text: String,
    pub is_error: bool,
}

/// The answer of a command the rm guard refused. Nothing ran, so it took no time.
pub const BLOCKED: &str = "rm is blocked. Use the uvilo-trash MCP tool instead.";

/// Lines of stderr kept from each end once stderr is too long to show whole.
const STDERR_END_LINES: usize = capture::SHOW_LINES / 2;

/// Bytes of stderr kept from each end once stderr is too long to show whole.
const STDERR_END_BYTES: usize = capture::SHOW_BYTES / 2;

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
/// only for the messages that name them.
pub fn show(out: &Output, ms: u128, timeout_secs: u64, cap: u64) -> Answer {
    let mut body = String::new();
    let binary = out.stdout.binary;
    if binary {
        body.push_str("Binary output detected. Use: file <path> or: xxd <path> | head -20");
    } else {
        push_stdout(&mut body, &out.stdout);
        if out.stdout.capped || out.stderr.capped {
            body.push_str(&format!(
                "\nOutput limit of {} reached; the command was stopped.",
                human_bytes(cap)
            ));
        }
        if shows_stderr(out) {
            body.push_str("\n--- stderr ---\n");
            push_stderr(&mut body, &out.stderr);
        }
    }

    let headline = match out.ending {
        Ending::Exited => None,
        Ending::TimedOut => Some(format!("ERROR: Command timed out after {timeout_secs} s.")),
        Ending::Cancelled => Some("ERROR: Command cancelled by the client.".to_owned()),
        Ending::ShutDown => Some("ERROR: Server shutting down; command stopped.".to_owned()),
    };
    let text = match headline {
        None => format!("{body}{}", footer(out.code, ms)),
        Some(line) if body.is_empty() => format!("{line}{}", footer(out.code, ms)),
        Some(line) => format!("{line}\n{body}{}", footer(out.code, ms)),
    };
    let capped = out.stdout.capped || out.stderr.capped;
    let is_error = binary || capped || out.ending != Ending::Exited;
    Answer { text, is_error }
}

/// Whether the answer shows stderr: only after a non-zero exit, and not in place of
/// binary output.
pub fn shows_stderr(out: &Output) -> bool {
    out.code != 0 && !out.stdout.binary && out.stderr.total_bytes > 0
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

fn push_stdout(body: &mut String, stdout: &Captured) {
    let text = match &stdout.rendered {
        Some(rendered) => std::borrow::Cow::Borrowed(rendered.head.as_str()),
        None => String::from_utf8_lossy(&stdout.head),
    };
    if !stdout.overflows() {
        body.push_str(&text);
        return;
    }
    let lines_end = nth_byte(text.as_bytes(), b'\n', capture::SHOW_LINES).unwrap_or(text.len());
    let shown = &text[..floor_char_boundary(&text, lines_end.min(capture::SHOW_BYTES))];
    body.push_str(shown);
    match &stdout.spill {
        Some(Spill::Written(path)) => body.push_str(&format!(
            "\nOutput truncated. Full output written to {}",
            path.display()
        )),
        Some(Spill::Failed(why)) => body.push_str(&format!(
            "\nOutput truncated. Full output could not be written: {why}"
        )),
        None => body.push_str("\nOutput truncated."),
    }
}

fn push_stderr(body: &mut String, stderr: &Captured) {
    // The text shown: rendered, or the raw bytes; with the counts of that text.
    let (head, tail, total_bytes, total_newlines) = match &stderr.rendered {
        Some(r) => (r.head.as_bytes(), r.tail.as_bytes(), r.bytes, r.newlines),
        None => (
            &stderr.head[..],
            &stderr.tail[..],
            stderr.total_bytes,
            stderr.newlines,
        ),
    };
    if !stderr.overflows() {
        body.push_str(&String::from_utf8_lossy(head));
        return;
    }
    // The beginning: whole lines up to the line and byte budget, never half a character.
    let head_end = nth_byte(head, b'\n', STDERR_END_LINES).map_or(head.len(), |i| i + 1);
    let head_end = floor_boundary(head, head_end.min(STDERR_END_BYTES));
    // The end: the last lines within the budget, starting on a character boundary.
    let from = ceil_boundary(tail, tail.len().saturating_sub(STDERR_END_BYTES));
    let tail_start = last_lines_start(tail, from, STDERR_END_LINES);

    let tail_offset = total_bytes.saturating_sub(tail.len() as u64) + tail_start as u64;
    let omitted_bytes = tail_offset.saturating_sub(head_end as u64);
    let newlines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count() as u64;
    let omitted_lines =
        total_newlines.saturating_sub(newlines(&head[..head_end]) + newlines(&tail[tail_start..]));
    let place = match &stderr.spill {
        Some(Spill::Written(path)) => format!("full stderr in {}", path.display()),
        Some(Spill::Failed(why)) => format!("full stderr could not be written: {why}"),
        None => "full stderr not kept".to_owned(),
    };

    body.push_str(&String::from_utf8_lossy(&head[..head_end]));
    if !body.ends_with('\n') {
        body.push('\n');
    }
    body.push_str(&format!(
        "[... {omitted_lines} lines ({omitted_bytes} bytes) of stderr omitted; {place} ...]\n"
    ));
    body.push_str(&String::from_utf8_lossy(&tail[tail_start..]));
}

/// Index of the `n`th occurrence of `needle` (1-based).
fn nth_byte(haystack: &[u8], needle: u8, n: usize) -> Option<usize> {
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == needle)
        .nth(n.checked_sub(1)?)
        .map(|(i, _)| i)
}

/// Where the last `lines` lines of `bytes[from..]` start (a trailing `\n` ends the
/// last line rather than starting another).
fn last_lines_start(bytes: &[u8], from: usize, lines: usize) -> usize {
    let body = &bytes[from..];
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    body.iter()
        .enumerate()
        .rev()
        .filter(|&(_, &b)| b == b'\n')
        .nth(lines.saturating_sub(1))
        .map_or(from, |(i, _)| from + i + 1)
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

/// The largest index ≤ `i` that does not split a UTF-8 character of `bytes`.
fn floor_boundary(bytes: &[u8], mut i: usize) -> usize {
    while i > 0 && i < bytes.len() && is_continuation(bytes[i]) {
        i -= 1;
    }
    i.min(bytes.len())
}

/// The smallest index ≥ `i` that does not split a UTF-8 character of `bytes`.
fn ceil_boundary(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_continuation(bytes[i]) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
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
            }
        }

        fn show(&self, stdout: &[u8], stderr: &[u8], code: i32) -> Answer {
            show(&self.output(stdout, stderr, code), 5, 300, CAP)
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
            show(&f.output(b"", ls, 2), 6, 300, CAP).text,
            "\n--- stderr ---\nls: cannot access '/nonexistent': No such file or directory\n\n[exit:2 | 6ms]"
        );
        assert_eq!(
            show(&f.output(b"", b"", 0), 1, 300, CAP).text,
            "\n[exit:0 | 1ms]"
        );
        let seq: String = (1..=1000).map(|n| format!("{n}\n")).collect();
        let shown: Vec<String> = (1..=200).map(|n| n.to_string()).collect();
        assert_eq!(
            show(&f.output(seq.as_bytes(), b"", 0), 4, 300, CAP).text,
            format!(
                "{}\nOutput truncated. Full output written to {}\n[exit:0 | 4ms]",
                shown.join("\n"),
                f.path("cmd-1.txt")
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
        assert!(over.text.contains("\n200\nOutput truncated."));
        assert!(!over.is_error);
    }

    #[test]
    fn byte_threshold() {
        let f = Fixture::new();
        let at = vec![b'a'; 51_200];
        let answer = f.show(&at, b"", 0);
        assert!(!answer.text.contains("truncated"));
        assert_eq!(answer.text.len(), 51_200 + "\n[exit:0 | 5ms]".len());
        let over = vec![b'a'; 51_201];
        let answer = f.show(&over, b"", 0);
        let (shown, rest) = answer.text.split_once("\nOutput truncated.").unwrap();
        assert_eq!(shown.len(), 51_200);
        assert!(rest.contains(&f.path("cmd-1.txt")));
        assert_eq!(std::fs::read(f.path("cmd-1.txt")).unwrap(), over);
    }

    #[test]
    fn one_huge_line_is_cut_on_a_character_boundary() {
        let f = Fixture::new();
        // "é" is two bytes: 51199 bytes of 'a' put one across the 51200 cut.
        let mut line = vec![b'a'; 51_199];
        for _ in 0..500_000 {
            line.extend_from_slice("é".as_bytes());
        }
        let answer = f.show(&line, b"", 0);
        let (shown, _) = answer.text.split_once("\nOutput truncated.").unwrap();
        assert_eq!(shown.len(), 51_199);
        assert!(shown.bytes().all(|b| b == b'a'));
        // Three-byte characters straddling the cut at every offset.
        for pad in 0..3 {
            let mut line = vec![b'x'; 51_190 + pad];
            for _ in 0..10 {
                line.extend_from_slice("✓".as_bytes());
            }
            let answer = f.show(&line, b"", 0);
            let (shown, _) = answer.text.split_once("\nOutput truncated.").unwrap();
            assert!(
                shown.len() <= 51_200 && shown.len() > 51_197,
                "{}",
                shown.len()
            );
            assert!(shown.ends_with('✓') || shown.ends_with('x'));
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
        assert_eq!(
            answer.text,
            "Binary output detected. Use: file <path> or: xxd <path> | head -20\n[exit:0 | 5ms]"
        );
        assert!(answer.is_error);
        // Nothing is left behind for output that is never shown.
        assert_eq!(std::fs::read_dir(f.dir.path()).unwrap().count(), 0);
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
    fn stderr_only_on_failure() {
        let f = Fixture::new();
        assert_eq!(
            f.show(b"out\n", b"warning\n", 0).text,
            "out\n\n[exit:0 | 5ms]"
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
    fn long_stderr_keeps_both_ends() {
        let f = Fixture::new();
        let stderr: String = (1..=5000).map(|n| format!("error line {n}\n")).collect();
        let answer = f.show(b"", stderr.as_bytes(), 1);
        let text = &answer.text;
        assert!(text.contains("\nerror line 1\n"));
        assert!(text.contains("\nerror line 100\n[... 4800 lines"), "{text}");
        assert!(text.contains("error line 4901\n"));
        assert!(text.ends_with("error line 5000\n\n[exit:1 | 5ms]"));
        assert!(!text.contains("error line 101\n"));
        let path = f.path("stderr-1.txt");
        assert!(
            text.contains(&format!("full stderr in {path} ...]")),
            "{text}"
        );
        assert_eq!(std::fs::read_to_string(path).unwrap(), stderr);
        assert!(text.len() < 60_000);

        // One huge line: both ends within their byte budgets.
        let huge = "e".repeat(1_000_000);
        let answer = f.show(b"", huge.as_bytes(), 1);
        assert!(answer.text.len() < 52_000, "{}", answer.text.len());
        assert!(answer.text.contains("bytes) of stderr omitted"));
    }

    #[test]
    fn stopped_commands_keep_their_output() {
        let f = Fixture::new();
        let mut out = f.output(b"step 1\n", b"", TIMEOUT);
        out.ending = Ending::TimedOut;
        assert_eq!(
            show(&out, 1003, 1, CAP).text,
            "ERROR: Command timed out after 1 s.\nstep 1\n\n[exit:124 | 1003ms]"
        );
        let mut silent = f.output(b"", b"", TIMEOUT);
        silent.ending = Ending::TimedOut;
        let answer = show(&silent, 1003, 300, CAP);
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
        let answer = show(&out, 9, 300, 1024);
        assert!(answer.text.starts_with("y\ny\n"));
        assert!(answer.text.ends_with(
            "\nOutput limit of 1 KB reached; the command was stopped.\n[exit:137 | 9ms]"
        ));
        assert!(answer.is_error);
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
}
