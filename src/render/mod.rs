//! What a terminal would show: output rendered as it streams in.
//!
//! Two modes share one output:
//!
//! - **Lines** (the common case, and fast): escape sequences are parsed by the `vte`
//!   state machine and removed (CSI colour and erase, OSC: a hyperlink's visible text
//!   stays). A CR returns to column 0 and what follows overwrites; CRLF is LF; a
//!   backspace moves back one column, so `X\bX` and `_\bX` show `X`; `ESC[K` erases
//!   to the end of the line and `ESC[2K` the whole line; `ESC[@`, `ESC[P` and `ESC[X`
//!   insert, delete and erase characters. Columns are a terminal's: a wide character
//!   takes two, a tab moves to the next multiple of 8 (and stays a tab in the text), a
//!   combining character stays with its base. Other control characters take no
//!   column; they stay in the text for Layer 2 to show as `<U+XXXX>`.
//! - **Screen**: at the first sequence that moves the cursor to another line (cursor
//!   up, down or to a position, save and restore, erase in display, insert or delete
//!   lines, scroll regions: nested progress bars, `docker pull`, apt), the last
//!   [`ROWS`] lines and the rest of the stream go to a VT screen of [`ROWS`] × [`COLS`]
//!   (the `vt100` crate) until [`ROWS`] × 2 lines have passed without such a sequence;
//!   lines that scroll off its top are final. Only that part pays for a full terminal.
//!
//! A line is final once [`ROWS`] lines follow it (a cursor may still move up to it
//! before), or at the end. Each finished line keeps the number of the raw line that
//! ended it, so Layer 2 can name lines as `sed -n 'Np'` counts them in the saved file.
//!
//! Memory is bounded: the first [`Keep::head`] bytes of rendered text, the line being
//! written (at most [`Keep::head`] columns; what is written past that is dropped), the
//! [`ROWS`] lines not yet final, the screen while it is in use, and the lines finished
//! since the caller last took them. The counts Layer 2 decides by cover the stream.

mod lines;
mod screen;
#[cfg(test)]
mod tests;

use vte::Parser;

use lines::Lines;
use screen::Screen;

/// Lines of the screen: how far back a cursor may move and still change a line.
pub const ROWS: u16 = 50;

/// Columns of the screen; a longer line wraps there while the screen is in use.
pub const COLS: u16 = 400;

/// Bytes of the lines not yet final; past that the oldest are final sooner.
const PENDING_BYTES: usize = 256 * 1024;

/// Renumbering points kept (see [`Rendered::renumber`]); past that, numbers after the
/// last point are approximate.
const MAX_RENUMBER: usize = 4096;

/// Lines kept of those a watch picked (see [`Renderer::watch`]).
const MAX_PRINTED: usize = 20;

/// How much of the rendered text a renderer keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    /// Bytes kept from the start; also the columns kept of the line being written,
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
    /// Where rendered line numbers part from the raw ones (cursor movement redrew
    /// lines): from rendered line `.0` on, raw = rendered + (`.1` - `.0`).
    pub renumber: Vec<(u64, u64)>,
    /// The lines a watch picked as the screen showed them (see [`Renderer::watch`]),
    /// with their raw line numbers: cursor movement may have redrawn or erased them
    /// since. At most [`MAX_PRINTED`], each once.
    pub printed: Vec<(u64, String)>,
}

impl Rendered {
    /// The raw line (as `sed` counts the saved file) of rendered line `line`.
    pub fn raw_line(&self, line: u64) -> u64 {
        match self.renumber.iter().rev().find(|(from, _)| *from <= line) {
            Some(&(from, raw)) => raw + (line - from),
            None => line,
        }
    }
}

/// Renders a stream chunk by chunk.
pub struct Renderer {
    parser: Parser,
    lines: Lines,
    screen: Option<Screen>,
    out: Out,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("screen", &self.screen.is_some())
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer that keeps what `keep` says.
    pub fn new(keep: Keep) -> Renderer {
        Renderer {
            parser: Parser::new(),
            lines: Lines {
                width: keep.head,
                ..Lines::default()
            },
            screen: None,
            out: Out {
                keep,
                ..Out::default()
            },
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let used = match &mut self.screen {
                None => {
                    let used = self.parser.advance_until_terminated(&mut self.lines, bytes);
                    self.lines.settle(&mut self.out);
                    if let Some(sequence) = self.lines.moved.take() {
                        self.enter_screen(&sequence);
                    }
                    used
                }
                Some(screen) => {
                    let used = screen.feed(bytes, &mut self.out);
                    if screen.calm() {
                        self.leave_screen();
                    }
                    used
                }
            };
            bytes = &bytes[used..];
        }
    }

    /// Keeps the lines `pick` picks as the screen shows them, before any cursor
    /// movement can redraw or erase them: a failure a command printed and then
    /// cleared is still known ([`Rendered::printed`]). Line mode needs no watch: what
    /// it shows is final but for a CR's overwrite.
    pub fn watch(&mut self, pick: fn(&str) -> bool) {
        self.out.watch = Some(pick);
    }

    /// The rendered lines finished since the last call, each with its `\n`, taken.
    pub fn take_lines(&mut self) -> String {
        std::mem::take(&mut self.out.finished)
    }

    /// The rendered text so far: every line is final now, and the line being written
    /// counts as a last line. Its text is left for [`Renderer::take_lines`].
    pub fn finish(&mut self) -> Rendered {
        if let Some(screen) = self.screen.take() {
            screen.finish(&mut self.out, &mut self.lines);
        }
        self.lines.flush(&mut self.out);
        let out = &mut self.out;
        Rendered {
            head: std::mem::take(&mut out.head),
            lines: out.lines,
            newlines: out.newlines,
            bytes: out.bytes,
            renumber: std::mem::take(&mut out.renumber),
            printed: std::mem::take(&mut out.printed),
        }
    }

    /// Starts rendering mid-stream, from what a capture kept of the plain text before:
    /// its head (`head`: the first bytes of the stream), what the capture has already
    /// taken as final (`released`), and the text after that (`held`: the last lines,
    /// which cursor movement may still redraw, and the line being written; its start
    /// is missing when `cut`). Plain text renders as itself.
    pub fn resume(keep: Keep, head: &[u8], released: Released, held: &[u8], cut: bool) -> Renderer {
        let mut renderer = Renderer::new(keep);
        let prefix = &head[..head.len().min(released.bytes as usize)];
        renderer.push(prefix);
        renderer.lines.flush_pending(&mut renderer.out);
        let out = &mut renderer.out;
        if (prefix.len() as u64) < released.bytes {
            // The head ends mid-line: its start is the head's end.
            let line = renderer.lines.text();
            let room = keep.head.saturating_sub(out.head.len());
            out.head.push_str(&line[..floor_char_boundary(&line, room)]);
        }
        out.finished.clear();
        out.lines = released.lines;
        out.newlines = released.lines;
        out.bytes = released.bytes;
        renderer.lines = Lines {
            width: keep.head,
            raw: released.lines,
            ..Lines::default()
        };
        renderer.push(held);
        // What the line held before the bytes kept of it was counted: it ends a line.
        renderer.lines.written_past |= cut;
        renderer
    }

    fn enter_screen(&mut self, sequence: &str) {
        let mut screen = Screen::new(self.lines.raw);
        screen.seed(&mut self.lines, &mut self.out);
        screen.feed_raw(sequence.as_bytes(), &mut self.out);
        self.screen = Some(screen);
    }

    fn leave_screen(&mut self) {
        if let Some(screen) = self.screen.take() {
            self.lines = screen.into_lines(&mut self.out, self.lines.width);
        }
    }
}

/// What a capture took as final before rendering started: bytes and whole lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    pub bytes: u64,
    pub lines: u64,
}

/// Renders a whole byte string at once.
pub fn render(bytes: &[u8], keep: Keep) -> Rendered {
    let mut renderer = Renderer::new(keep);
    renderer.push(bytes);
    renderer.finish()
}

/// Where finished lines go: the head, the lines not yet taken, the counts.
#[derive(Debug, Default)]
struct Out {
    keep: Keep,
    head: String,
    /// Lines finished and not yet taken, each with its `\n`.
    finished: String,
    lines: u64,
    newlines: u64,
    bytes: u64,
    renumber: Vec<(u64, u64)>,
    /// Raw minus rendered line number, as of the last line.
    offset: i64,
    watch: Option<fn(&str) -> bool>,
    printed: Vec<(u64, String)>,
}

impl Out {
    /// A line the screen shows, ended by the raw line `raw`: kept if the watch picks it.
    fn saw(&mut self, text: &str, raw: u64) {
        let Some(pick) = self.watch else {
            return;
        };
        let text = text.trim_end();
        if self.printed.len() < MAX_PRINTED
            && pick(text)
            && !self.printed.iter().any(|(_, kept)| kept == text)
        {
            self.printed.push((raw, text.to_owned()));
        }
    }

    /// A final line, ended by the raw line `raw`.
    fn emit(&mut self, text: &str, raw: u64, newline: bool) {
        self.lines += 1;
        let offset = raw as i64 - self.lines as i64;
        if offset != self.offset && raw > 0 && self.renumber.len() < MAX_RENUMBER {
            self.offset = offset;
            self.renumber.push((self.lines, raw));
        }
        let room = self.keep.head.saturating_sub(self.head.len());
        if room > 0 {
            self.head.push_str(&text[..floor_char_boundary(text, room)]);
            if newline && self.head.len() < self.keep.head {
                self.head.push('\n');
            }
        }
        self.finished.push_str(text);
        self.bytes += text.len() as u64;
        if newline {
            self.finished.push('\n');
            self.newlines += 1;
            self.bytes += 1;
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
