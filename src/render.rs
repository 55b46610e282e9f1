//! What a terminal would show: output rendered line by line, as it streams in.
//!
//! Escape sequences are parsed by the `vte` state machine (alacritty's) and removed:
//! CSI (colour, cursor, erase), OSC (a hyperlink's visible text stays) and the rest.
//! A CR returns to column 0 and what follows overwrites; CRLF is LF; a backspace moves
//! back one column, so `X\bX` and `_\bX` show `X`; `ESC[K` erases to the end of the
//! line and `ESC[2K` the whole line; tabs stay. Only the line's final state counts.
//!
//! Memory is bounded by a [`Keep`] the caller gives: the first `head` bytes of rendered
//! text, the current line (at most `head` characters; what is written past that is
//! dropped), and the last `tail` bytes of rendered lines. The counts Layer 2 decides by
//! (lines, bytes) cover the whole stream.

use vte::{Params, Parser, Perform};

/// How much of the rendered text a renderer keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    /// Bytes kept from the start; also the characters kept of the line being written,
    /// since no line shown to a model needs more.
    pub head: usize,
}

/// The rendered text of one stream, as Layer 2 reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The first [`Keep::head`] bytes of the rendered text (or all of it).
    pub head: String,
    /// Lines of the rendered text: `\n` ends one, and a last line without it counts.
    pub lines: u64,
    /// `\n`s of the rendered text.
    pub newlines: u64,
    /// Bytes of the rendered text (UTF-8).
    pub bytes: u64,
}

/// Renders a stream chunk by chunk.
pub struct Renderer {
    parser: Parser,
    screen: Screen,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer").finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer that keeps what `keep` says.
    pub fn new(keep: Keep) -> Renderer {
        Renderer {
            parser: Parser::new(),
            screen: Screen {
                keep,
                ..Screen::default()
            },
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.parser.advance(&mut self.screen, bytes);
    }

    /// The rendered lines finished since the last call, each with its `\n`, taken.
    pub fn take_lines(&mut self) -> String {
        std::mem::take(&mut self.screen.finished)
    }

    /// The rendered text so far; the line being written counts as a last line. Its
    /// text is left for [`Renderer::take_lines`] (without a `\n`).
    pub fn finish(&mut self) -> Rendered {
        if !self.screen.line.is_empty() || self.screen.written_past {
            self.screen.end_line(false);
        }
        let screen = &mut self.screen;
        Rendered {
            head: std::mem::take(&mut screen.head),
            lines: screen.lines,
            newlines: screen.newlines,
            bytes: screen.bytes,
        }
    }

    /// Starts rendering mid-stream, from what a capture kept of the plain text before:
    /// its head (`head`) and the unfinished line (`partial`: its first bytes, of
    /// `partial_len`), with the stream's counts. Plain text renders as itself.
    pub fn resume(
        keep: Keep,
        head: &[u8],
        partial: &[u8],
        partial_len: usize,
        newlines: u64,
        bytes: u64,
    ) -> Renderer {
        let mut renderer = Renderer::new(keep);
        renderer.push(head);
        renderer.screen.finished.clear();
        if head.len() as u64 == bytes {
            return renderer;
        }
        let screen = &mut renderer.screen;
        // The head is full: the first `keep.head` bytes of text, the partial line included.
        let line: String = screen.line.iter().collect();
        let room = keep.head.saturating_sub(screen.head.len());
        screen
            .head
            .push_str(&line[..floor_char_boundary(&line, room)]);
        screen.line.clear();
        screen.cursor = 0;
        screen.newlines = newlines;
        screen.lines = newlines;
        screen.bytes = bytes.saturating_sub(partial_len as u64);
        renderer.push(partial);
        renderer.screen.finished.clear();
        // What the line held before the bytes kept of it is past the head: counted.
        renderer.screen.written_past = partial_len > 0;
        renderer
    }
}

/// Renders a whole byte string at once.
pub fn render(bytes: &[u8], keep: Keep) -> Rendered {
    let mut renderer = Renderer::new(keep);
    renderer.push(bytes);
    renderer.finish()
}

/// The terminal's state, as far as the shown text needs it.
#[derive(Debug, Default)]
struct Screen {
    line: Vec<char>,
    cursor: usize,
    /// Something was written to the current line, even if it was all past the bound.
    written_past: bool,
    head: String,
    keep: Keep,
    /// Lines finished and not yet taken, each with its `\n`.
    finished: String,
    lines: u64,
    newlines: u64,
    bytes: u64,
}

impl Screen {
    fn write(&mut self, c: char) {
        self.written_past = true;
        if self.cursor < self.line.len() {
            self.line[self.cursor] = c;
        } else if self.cursor < self.keep.head {
            // Past the end after a cursor move: the gap shows as spaces.
            self.line.resize(self.cursor, ' ');
            self.line.push(c);
        }
        self.cursor += 1;
    }

    fn end_line(&mut self, newline: bool) {
        let mut text: String = self.line.iter().collect();
        if newline {
            text.push('\n');
            self.newlines += 1;
        }
        self.lines += 1;
        self.bytes += text.len() as u64;
        let room = self.keep.head.saturating_sub(self.head.len());
        if room > 0 {
            let cut = floor_char_boundary(&text, room);
            self.head.push_str(&text[..cut]);
        }
        self.finished.push_str(&text);
        self.line.clear();
        self.cursor = 0;
        self.written_past = false;
    }

    /// `ESC[K` (0), `ESC[1K` (1), `ESC[2K` (2).
    fn erase_in_line(&mut self, mode: u16) {
        match mode {
            0 => self.line.truncate(self.cursor),
            1 => {
                let end = (self.cursor + 1).min(self.line.len());
                self.line[..end].iter_mut().for_each(|c| *c = ' ');
            }
            _ => self.line.clear(),
        }
    }
}

impl Perform for Screen {
    fn print(&mut self, c: char) {
        self.write(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => self.end_line(true),
            b'\r' => self.cursor = 0,
            0x08 => self.cursor = self.cursor.saturating_sub(1),
            // Tabs and any other control character stay in the text as they are.
            other => self.write(char::from(other)),
        }
    }

    fn csi_dispatch(
        &mut self,
        params: &Params,
        _intermediates: &[u8],
        _ignore: bool,
        action: char,
    ) {
        let first = params
            .iter()
            .next()
            .and_then(|p| p.first().copied())
            .unwrap_or(0);
        match action {
            'K' => self.erase_in_line(first),
            // Cursor to column N (1-based), and cursor back N.
            'G' => self.cursor = usize::from(first.max(1) - 1),
            'D' => self.cursor = self.cursor.saturating_sub(usize::from(first.max(1))),
            'C' => self.cursor += usize::from(first.max(1)),
            _ => {}
        }
    }
}

/// The largest index ≤ `i` on a character boundary of `s`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a capture keeps.
    const HEAD: Keep = Keep { head: 51_204 };
    const BOTH: Keep = HEAD;

    #[track_caller]
    fn shows(raw: &str, expected: &str) {
        assert_eq!(render(raw.as_bytes(), HEAD).head, expected, "{raw:?}");
    }

    #[test]
    fn terminal_rules() {
        shows("\x1b[31mred\x1b[0m\n", "red\n");
        shows("\x1b[1;32mbold green\x1b[m plain\n", "bold green plain\n");
        shows("a\r\nb\r\n", "a\nb\n");
        shows("10%\r20%\r100%\ndone\n", "100%\ndone\n");
        shows("downloading 10%\rok\x1b[K\n", "ok\n");
        shows("long line here\rshort\n", "shortline here\n");
        shows("b\x08bo\x08ol\x08ld\x08d\n", "bold\n");
        shows("_\x08X_\x08Y\n", "XY\n");
        shows("a\tb\n", "a\tb\n");
        shows(
            "\x1b]8;;https://example.com\x1b\\link text\x1b]8;;\x1b\\\n",
            "link text\n",
        );
        shows("\x1b]0;window title\x07after\n", "after\n");
        shows("abc\x1b[2Kxy\n", "   xy\n");
        shows("no newline at end", "no newline at end");
        shows("progress\r", "progress");
        shows("é\rx\n", "x\n");
        shows("bell\x07 stays\n", "bell\x07 stays\n");
    }

    #[test]
    fn sequences_and_redraws_split_across_reads() {
        let raw = "\x1b[31mred\x1b[0m 10%\r\x1b[32m100%\x1b[0m\nnext\n".as_bytes();
        let whole = render(raw, BOTH);
        for at in 1..raw.len() {
            let mut renderer = Renderer::new(BOTH);
            renderer.push(&raw[..at]);
            renderer.push(&raw[at..]);
            assert_eq!(renderer.finish(), whole, "split at {at}");
            assert_eq!(renderer.take_lines(), whole.head);
        }
        assert_eq!(whole.head, "100%10%\nnext\n");
    }

    #[test]
    fn a_progress_bar_redrawn_20000_times_is_one_line() {
        let mut renderer = Renderer::new(HEAD);
        for n in 0..20_000 {
            renderer.push(format!("\r[{:<10}] {n:>5}/20000", "#".repeat(n % 11)).as_bytes());
        }
        renderer.push(b"\nafter\n");
        let rendered = renderer.finish();
        assert_eq!(rendered.head, "[#         ] 19999/20000\nafter\n");
        assert_eq!((rendered.lines, rendered.newlines), (2, 2));
    }

    #[test]
    fn a_line_that_never_ends_stays_bounded() {
        let mut renderer = Renderer::new(BOTH);
        for _ in 0..1000 {
            renderer.push(&[b'x'; 1000]);
        }
        assert!(renderer.screen.line.len() <= BOTH.head);
        let rendered = renderer.finish();
        assert_eq!(rendered.head.len(), BOTH.head);
        assert_eq!(rendered.lines, 1);
    }

    #[test]
    fn finished_lines_are_handed_over_as_they_end() {
        let text: String = (0..10_000)
            .map(|n| format!("\x1b[1mline\x1b[0m {n}\n"))
            .collect();
        let mut renderer = Renderer::new(BOTH);
        let mut lines = String::new();
        for chunk in text.as_bytes().chunks(1000) {
            renderer.push(chunk);
            lines.push_str(&renderer.take_lines());
        }
        renderer.push(b"last\rLAST, no newline");
        let rendered = renderer.finish();
        lines.push_str(&renderer.take_lines());
        let expected: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
        assert_eq!(lines, format!("{expected}LAST, no newline"));
        assert_eq!(rendered.lines, 10_001);
        assert_eq!(rendered.bytes, lines.len() as u64);
    }
}
