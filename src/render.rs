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

use std::collections::VecDeque;

use unicode_width::UnicodeWidthChar;
use vte::{Params, Parser, Perform};

/// Lines of the screen: how far back a cursor may move and still change a line.
pub const ROWS: u16 = 50;

/// Columns of the screen; a longer line wraps there while the screen is in use.
pub const COLS: u16 = 400;

/// Bytes of the lines not yet final; past that the oldest are final sooner.
const PENDING_BYTES: usize = 256 * 1024;

/// Renumbering points kept (see [`Rendered::renumber`]); past that, numbers after the
/// last point are approximate.
const MAX_RENUMBER: usize = 4096;

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
}

impl Out {
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

/// One column of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Char(char),
    /// The second column of the wide character before it.
    WideTail,
    /// A column a tab moved over.
    TabFill,
}

/// Line mode: the line being written, and the last lines, not final yet.
#[derive(Debug, Default)]
struct Lines {
    cells: Vec<Cell>,
    /// Characters that take no column, after the character of their column.
    marks: Vec<(usize, char)>,
    cursor: usize,
    /// Columns kept of a line.
    width: usize,
    /// Something was written to the current line, even if it was all past the bound.
    written_past: bool,
    /// Finished lines a cursor may still move up to, with their raw line numbers,
    /// and their bytes.
    pending: VecDeque<(String, u64)>,
    pending_bytes: usize,
    /// Raw `\n`s so far.
    raw: u64,
    /// The sequence that moved the cursor to another line: the screen takes over.
    moved: Option<String>,
}

impl Lines {
    fn text(&self) -> String {
        let mut text = String::with_capacity(self.cells.len());
        let mut marks = self.marks.iter().peekable();
        let mut in_tab = false;
        let mut after_wide = false;
        for (col, cell) in self.cells.iter().enumerate() {
            match *cell {
                Cell::Char(c) => {
                    text.push(c);
                    in_tab = c == '\t';
                    after_wide = c.width().unwrap_or(0) == 2;
                }
                Cell::WideTail => {
                    if !after_wide {
                        text.push(' ');
                    }
                    after_wide = false;
                }
                Cell::TabFill => {
                    if !in_tab {
                        text.push(' ');
                    }
                }
            }
            while let Some(&&(at, mark)) = marks.peek() {
                if at != col {
                    break;
                }
                text.push(mark);
                marks.next();
            }
        }
        for (_, mark) in marks {
            text.push(*mark);
        }
        text
    }

    fn put(&mut self, col: usize, cell: Cell) {
        if col >= self.width {
            return;
        }
        if col >= self.cells.len() {
            self.cells.resize(col, Cell::Char(' '));
            self.cells.push(cell);
            return;
        }
        // Half of a wide character overwritten: the other half shows blank.
        match self.cells[col] {
            Cell::WideTail if col > 0 => self.cells[col - 1] = Cell::Char(' '),
            Cell::Char(c)
                if c.width() == Some(2) && self.cells.get(col + 1) == Some(&Cell::WideTail) =>
            {
                self.cells[col + 1] = Cell::Char(' ');
            }
            _ => {}
        }
        self.cells[col] = cell;
        if !self.marks.is_empty() {
            self.marks.retain(|&(at, _)| at != col);
        }
    }

    fn write(&mut self, c: char) {
        self.written_past = true;
        match c.width() {
            Some(2) => {
                self.put(self.cursor, Cell::Char(c));
                self.put(self.cursor + 1, Cell::WideTail);
                self.cursor += 2;
            }
            Some(1) => {
                self.put(self.cursor, Cell::Char(c));
                self.cursor += 1;
            }
            // Combining characters, zero-width ones and controls: no column.
            _ => {
                let col = self.cursor.saturating_sub(1);
                if col < self.width && self.marks.len() < self.width {
                    let at = self.marks.partition_point(|&(m, _)| m <= col);
                    self.marks.insert(at, (col, c));
                }
            }
        }
    }

    fn tab(&mut self) {
        self.written_past = true;
        let stop = (self.cursor / 8 + 1) * 8;
        if self.cursor >= self.cells.len() {
            // Past the end: the tab stays in the text.
            self.put(self.cursor, Cell::Char('\t'));
            for col in self.cursor + 1..stop {
                self.put(col, Cell::TabFill);
            }
        }
        self.cursor = stop;
    }

    fn end_line(&mut self) {
        self.raw += 1;
        let text = self.text();
        self.pending_bytes += text.len();
        self.pending.push_back((text, self.raw));
        self.cells.clear();
        self.marks.clear();
        self.cursor = 0;
        self.written_past = false;
    }

    /// Makes final the lines no cursor movement can reach any more, and the oldest
    /// past [`PENDING_BYTES`].
    fn settle(&mut self, out: &mut Out) {
        while self.pending.len() >= usize::from(ROWS) || self.pending_bytes > PENDING_BYTES {
            let Some((text, raw)) = self.pending.pop_front() else {
                break;
            };
            self.pending_bytes -= text.len();
            out.emit(&text, raw, true);
        }
    }

    fn flush_pending(&mut self, out: &mut Out) {
        for (text, raw) in self.pending.drain(..) {
            out.emit(&text, raw, true);
        }
        self.pending_bytes = 0;
    }

    /// Every line is final: the end of the stream.
    fn flush(&mut self, out: &mut Out) {
        self.flush_pending(out);
        if !self.cells.is_empty() || !self.marks.is_empty() || self.written_past {
            let text = self.text();
            out.emit(&text, self.raw + 1, false);
            self.cells.clear();
            self.marks.clear();
            self.written_past = false;
        }
    }

    /// `ESC[K` (0), `ESC[1K` (1), `ESC[2K` (2).
    fn erase_in_line(&mut self, mode: u16) {
        let cursor = self.cursor.min(self.cells.len());
        match mode {
            0 => {
                self.cells.truncate(cursor);
                self.marks.retain(|&(at, _)| at < cursor);
            }
            1 => {
                let end = (self.cursor + 1).min(self.cells.len());
                self.cells[..end].fill(Cell::Char(' '));
                self.marks.retain(|&(at, _)| at >= end);
            }
            _ => {
                self.cells.clear();
                self.marks.clear();
            }
        }
    }
}

impl Perform for Lines {
    fn print(&mut self, c: char) {
        self.write(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => self.end_line(),
            b'\r' => self.cursor = 0,
            0x08 => self.cursor = self.cursor.saturating_sub(1),
            b'\t' => self.tab(),
            // Any other control character takes no column and stays in the text.
            other => self.write(char::from(other)),
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], _ignore: bool, action: char) {
        let first = params
            .iter()
            .next()
            .and_then(|p| p.first().copied())
            .unwrap_or(0);
        let n = usize::from(first.max(1));
        match action {
            'K' => self.erase_in_line(first),
            // Cursor to column N (1-based), and cursor back and forward N.
            'G' | '`' => self.cursor = n - 1,
            'D' => self.cursor = self.cursor.saturating_sub(n),
            'C' => self.cursor += n,
            // Insert, delete and erase characters at the cursor.
            '@' if self.cursor < self.cells.len() => {
                let at = self.cursor;
                for _ in 0..n.min(self.width) {
                    self.cells.insert(at, Cell::Char(' '));
                }
                self.cells.truncate(self.width);
                self.marks.retain(|&(col, _)| col < at);
            }
            'P' if self.cursor < self.cells.len() => {
                let at = self.cursor;
                let end = (at + n).min(self.cells.len());
                self.cells.drain(at..end);
                self.marks.retain(|&(col, _)| col < at);
            }
            'X' => {
                let end = (self.cursor + n).min(self.cells.len());
                for col in self.cursor..end {
                    self.put(col, Cell::Char(' '));
                }
            }
            // The cursor leaves the line: a screen takes over, from this sequence on.
            'A' | 'B' | 'E' | 'F' | 'H' | 'f' | 'd' | 'e' | 'J' | 'L' | 'M' | 'S' | 'T' | 'r'
            | 's' | 'u'
                if intermediates.is_empty() =>
            {
                self.moved = Some(csi_text(params, intermediates, action));
            }
            'h' | 'l' if intermediates == b"?" && params_have(params, &[47, 1047, 1049]) => {
                self.moved = Some(csi_text(params, intermediates, action));
            }
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, byte: u8) {
        // Save and restore cursor, reverse index, index, next line.
        if intermediates.is_empty() && matches!(byte, b'7' | b'8' | b'M' | b'D' | b'E') {
            self.moved = Some(format!("\x1b{}", char::from(byte)));
        }
    }

    fn terminated(&self) -> bool {
        self.moved.is_some()
    }
}

fn params_have(params: &Params, wanted: &[u16]) -> bool {
    params.iter().flatten().any(|p| wanted.contains(p))
}

/// The text of a CSI sequence, to feed the screen the one that made it take over.
fn csi_text(params: &Params, intermediates: &[u8], action: char) -> String {
    let mut text = String::from("\x1b[");
    text.extend(intermediates.iter().map(|&b| char::from(b)));
    let params: Vec<String> = params
        .iter()
        .map(|p| p.iter().map(u16::to_string).collect::<Vec<_>>().join(":"))
        .collect();
    text.push_str(&params.join(";"));
    text.push(action);
    text
}

/// Screen mode: a VT screen, and what it needs to hand lines over.
struct Screen {
    parser: vt100::Parser<Rows>,
    /// Watches the bytes for cursor movement, to know when the screen may go.
    watch: Parser,
    watcher: Watcher,
    raw: u64,
}

impl Screen {
    fn new(raw: u64) -> Screen {
        Screen {
            parser: vt100::Parser::new_with_callbacks(
                std::num::NonZeroU16::new(ROWS).unwrap_or(std::num::NonZeroU16::MIN),
                std::num::NonZeroU16::new(COLS).unwrap_or(std::num::NonZeroU16::MIN),
                0,
                Rows::default(),
            ),
            watch: Parser::new(),
            watcher: Watcher::default(),
            raw,
        }
    }

    /// Puts the lines not yet final and the line being written on the screen.
    fn seed(&mut self, lines: &mut Lines, out: &mut Out) {
        lines.pending_bytes = 0;
        for (text, raw) in std::mem::take(&mut lines.pending) {
            self.parser.process(text.as_bytes());
            self.mark_row(raw);
            self.parser.process(b"\r\n");
            self.drain(out);
        }
        let text = lines.text();
        self.parser.process(text.as_bytes());
        self.parser
            .process(format!("\r\x1b[{}G", lines.cursor + 1).as_bytes());
        self.drain(out);
    }

    /// Feeds bytes of the stream, up to and including a `\n`; returns how many.
    fn feed(&mut self, bytes: &[u8], out: &mut Out) -> usize {
        let end = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
        self.feed_raw(&bytes[..end], out);
        end
    }

    fn feed_raw(&mut self, bytes: &[u8], out: &mut Out) {
        self.watch.advance(&mut self.watcher, bytes);
        match bytes.split_last() {
            Some((b'\n', line)) => {
                self.parser.process(line);
                self.raw += 1;
                self.mark_row(self.raw);
                // A terminal's line discipline turns LF into CR LF.
                self.parser.process(b"\r\n");
            }
            _ => self.parser.process(bytes),
        }
        self.drain(out);
    }

    /// The raw line number of the line on the cursor's row.
    fn mark_row(&mut self, raw: u64) {
        let row = usize::from(self.parser.screen().cursor_position().0);
        let rows = &mut self.parser.callbacks_mut().raw;
        if rows.len() <= row {
            rows.resize(row + 1, raw);
        }
        rows[row] = raw;
    }

    fn drain(&mut self, out: &mut Out) {
        for (text, raw) in self.parser.callbacks_mut().done.drain(..) {
            out.emit(&text, raw, true);
        }
    }

    /// No cursor movement for a while, no scroll region, no alternate screen.
    fn calm(&self) -> bool {
        self.watcher.calm >= 2 * u32::from(ROWS)
            && !self.watcher.region
            && !self.parser.screen().alternate_screen()
            && self.parser.screen().cursor_position().1 == 0
    }

    /// The screen's lines: those finished (rows before the cursor's, and rows with
    /// text below it) and the line under the cursor, when it is the last.
    fn rows(&mut self, out: &mut Out) -> (Vec<(String, u64)>, String) {
        self.drain(out);
        let callbacks = self.parser.callbacks_mut();
        let mut lines: Vec<(String, u64)> = callbacks.line.take().into_iter().collect();
        let raws = callbacks.raw.clone();
        let screen = self.parser.screen();
        let cursor_row = usize::from(screen.cursor_position().0);
        let rows: Vec<String> = screen
            .rows(0, COLS)
            .map(|row| row.trim_end_matches(' ').to_owned())
            .collect();
        let end = rows
            .iter()
            .rposition(|r| !r.is_empty())
            .map_or(0, |last| last + 1)
            .max(cursor_row + 1)
            .min(rows.len());
        let mut current = String::new();
        let mut joined = false;
        for (i, row) in rows.iter().enumerate().take(end) {
            if i == cursor_row && i + 1 == end {
                current = row.clone();
                break;
            }
            let raw = raws.get(i).copied().unwrap_or(self.raw + 1);
            match lines.last_mut() {
                Some((text, line_raw)) if joined => {
                    text.push_str(row);
                    *line_raw = raw;
                }
                _ => lines.push((row.clone(), raw)),
            }
            joined = screen.row_wrapped(i as u16);
        }
        (lines, current)
    }

    /// Hands the screen's lines back to line mode.
    fn into_lines(mut self, out: &mut Out, width: usize) -> Lines {
        let (rows, current) = self.rows(out);
        let mut lines = Lines {
            width,
            raw: self.raw,
            ..Lines::default()
        };
        lines.pending_bytes = rows.iter().map(|(text, _)| text.len()).sum();
        lines.pending.extend(rows);
        lines.settle(out);
        for c in current.chars() {
            lines.write(c);
        }
        lines
    }

    /// The end of the stream: every line is final.
    fn finish(mut self, out: &mut Out, lines: &mut Lines) {
        let (rows, current) = self.rows(out);
        for (text, raw) in rows {
            out.emit(&text, raw, true);
        }
        *lines = Lines {
            width: lines.width,
            raw: self.raw,
            ..Lines::default()
        };
        for c in current.chars() {
            lines.write(c);
        }
    }
}

/// The screen's callbacks: lines scrolled off its top, joined where they wrapped.
#[derive(Default)]
struct Rows {
    /// The raw line number of each row's line.
    raw: Vec<u64>,
    /// The logical line being assembled from rows that wrapped, and its raw number.
    line: Option<(String, u64)>,
    done: Vec<(String, u64)>,
    buf: String,
    state: vt100::capture::BasicFormattedCaptureState,
}

impl vt100::Callbacks for Rows {
    fn on_scroll(&mut self, row: vt100::capture::RowContents<'_>, alternate_screen: bool) {
        if alternate_screen {
            return;
        }
        self.buf.clear();
        let _ = row.write_formatted_basic(&mut self.buf, &mut self.state);
        let raw = if self.raw.is_empty() {
            0
        } else {
            let raw = self.raw.remove(0);
            let last = self.raw.last().copied().unwrap_or(raw);
            self.raw.push(last);
            raw
        };
        let (new_line, text) = match self.buf.strip_prefix('\n') {
            Some(rest) => (true, rest),
            None => (self.line.is_none(), self.buf.as_str()),
        };
        let plain: String = vt100::capture::basic_formatted_to_plain(text).collect();
        // Blanks a redraw wrote at the end of a row show as nothing.
        let plain = plain.trim_end_matches(' ').to_owned();
        if new_line {
            if let Some(line) = self.line.take() {
                self.done.push(line);
            }
            self.line = Some((plain, raw));
        } else if let Some((line, line_raw)) = &mut self.line {
            line.push_str(&plain);
            *line_raw = raw;
        }
    }
}

/// Watches a screen's input for cursor movement and scroll regions.
#[derive(Debug, Default)]
struct Watcher {
    /// `\n`s since the last cursor movement to another line.
    calm: u32,
    /// A scroll region is set.
    region: bool,
}

impl Perform for Watcher {
    fn execute(&mut self, byte: u8) {
        if byte == b'\n' {
            self.calm = self.calm.saturating_add(1);
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], _ignore: bool, action: char) {
        match action {
            'r' if intermediates.is_empty() => {
                // `ESC[r` (or a region of the whole screen) resets it.
                let values: Vec<u16> = params.iter().flatten().copied().collect();
                self.region = !(values.is_empty()
                    || values == [0]
                    || (values.first() <= Some(&1) && values.get(1).is_none_or(|&b| b >= ROWS)));
                self.calm = 0;
            }
            'A' | 'B' | 'E' | 'F' | 'H' | 'f' | 'd' | 'e' | 'J' | 'L' | 'M' | 'S' | 'T' | 's'
            | 'u'
                if intermediates.is_empty() =>
            {
                self.calm = 0;
            }
            'h' | 'l' if intermediates == b"?" => self.calm = 0,
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, byte: u8) {
        if intermediates.is_empty() && matches!(byte, b'7' | b'8' | b'M') {
            self.calm = 0;
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
        assert!(renderer.lines.cells.len() <= BOTH.head);
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

#[cfg(test)]
mod screen_tests {
    use super::*;

    const KEEP: Keep = Keep { head: 51_204 };

    #[track_caller]
    fn shows(raw: &str, expected: &str) {
        let mut renderer = Renderer::new(KEEP);
        renderer.push(raw.as_bytes());
        let rendered = renderer.finish();
        let lines = renderer.take_lines();
        assert_eq!(rendered.head, expected, "{raw:?}");
        assert_eq!(lines, expected, "{raw:?}");
        // Byte by byte, the same.
        let mut renderer = Renderer::new(KEEP);
        for b in raw.as_bytes() {
            renderer.push(std::slice::from_ref(b));
        }
        assert_eq!(renderer.finish().head, expected, "{raw:?} byte by byte");
    }

    #[test]
    fn columns_are_a_terminals() {
        shows("你好\rx\n", "x 好\n");
        shows("你好\r\x1b[2Cx\n", "你x \n");
        shows("a\tb\rxyz\n", "xyz     b\n");
        shows("ab\tc\n", "ab\tc\n");
        shows("e\u{301}\rx\n", "x\n");
        shows("e\u{301}x\n", "e\u{301}x\n");
        shows("\x1b[0mabc\x7f\n", "abc\x7f\n");
        shows("\x1b[0mc1\u{85}\n", "c1\u{85}\n");
        shows("\x1b[0mpage\x0c\n", "page\x0c\n");
        shows("abcdef\r\x1b[2@\n", "  abcdef\n");
        shows("abcdef\r\x1b[2P\n", "cdef\n");
        shows("abcdef\r\x1b[2X\n", "  cdef\n");
    }

    #[test]
    fn the_final_overwrite_of_a_very_long_line_is_kept() {
        let mut raw = "x".repeat(200_000);
        raw.push_str("\rdone\n");
        let rendered = render(raw.as_bytes(), KEEP);
        assert!(rendered.head.starts_with("donexxx"));
        assert_eq!(rendered.lines, 1);
    }

    #[test]
    fn nested_progress_bars_show_their_final_state() {
        // tqdm's nested bars: the inner bar on the line below, redrawn with \r and
        // cursor up.
        let mut raw = String::from("start\n");
        for epoch in 0..3 {
            for step in 0..=100 {
                raw.push_str(&format!("\repochs {epoch}/3\n\r  step {step:>3}/100\x1b[A"));
            }
        }
        raw.push_str("\repochs 3/3\n\r  step done\x1b[K\ndone\n");
        shows(&raw, "start\nepochs 3/3\n  step done\ndone\n");
    }

    #[test]
    fn docker_pull_redraws_lines_above() {
        let mut raw = String::from("Pulling from library/app\n");
        let layers = ["a1", "b2", "c3"];
        for layer in layers {
            raw.push_str(&format!("{layer}: Pulling fs layer\n"));
        }
        for pct in (0..=100).step_by(10) {
            raw.push_str(&format!("\x1b[{}A", layers.len()));
            for layer in layers {
                raw.push_str(&format!("\x1b[2K\r{layer}: Downloading {pct}%\n"));
            }
        }
        raw.push_str("\x1b[3A");
        for layer in layers {
            raw.push_str(&format!("\x1b[2K\r{layer}: Pull complete\n"));
        }
        raw.push_str("Status: Downloaded newer image\n");
        shows(
            &raw,
            "Pulling from library/app\na1: Pull complete\nb2: Pull complete\nc3: Pull \
             complete\nStatus: Downloaded newer image\n",
        );
    }

    #[test]
    fn a_scroll_region_keeps_a_progress_line_at_the_bottom() {
        // apt: lines scroll in a region above a progress line drawn at the bottom.
        let mut raw = String::from("\x1b7\x1b[0;49r\x1b8\x1b[1A\n");
        for n in 0..80 {
            raw.push_str(&format!("Unpacking pkg{n} ...\n"));
            raw.push_str(&format!(
                "\x1b7\x1b[50;0f\x1b[42mProgress: [{n:>3}%]\x1b[49m\x1b8"
            ));
        }
        // At the end: the region reset, the progress line erased.
        raw.push_str("\x1b7\x1b[r\x1b[50;1H\x1b[2K\x1b8");
        let rendered = render(raw.as_bytes(), KEEP);
        assert!(
            rendered.head.contains("Unpacking pkg79 ..."),
            "{:?}",
            &rendered.head[rendered.head.len().saturating_sub(300)..]
        );
        assert!(!rendered.head.contains("\x1b"));
        assert!(!rendered.head.contains("Progress"), "{}", rendered.head);
    }

    #[test]
    fn lines_after_a_screen_keep_their_raw_numbers() {
        let mut raw = String::new();
        raw.push_str("line 1\nbar\n");
        for n in 0..50 {
            raw.push_str(&format!("\x1b[1A\x1b[2Kbar {n}\n"));
        }
        for n in 3..=300 {
            raw.push_str(&format!("line {n}\n"));
        }
        raw.push_str("error: at the end\n");
        let mut renderer = Renderer::new(KEEP);
        renderer.push(raw.as_bytes());
        let rendered = renderer.finish();
        let text = renderer.take_lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "line 1");
        assert_eq!(lines[1], "bar 49");
        assert_eq!(lines[2], "line 3");
        let error = lines.iter().position(|l| l.starts_with("error")).unwrap() as u64 + 1;
        let raw_lines: Vec<&str> = raw.lines().collect();
        let at = rendered.raw_line(error);
        assert_eq!(raw_lines[at as usize - 1], "error: at the end");
        assert_eq!(rendered.raw_line(1), 1);
        // Memory: back in line mode, no screen.
        assert!(renderer.screen.is_none());
    }
}

#[cfg(test)]
mod memory_tests {
    use super::*;

    #[test]
    fn lines_not_yet_final_stay_within_their_bytes() {
        let mut renderer = Renderer::new(Keep { head: 51_204 });
        let line = format!("\x1b[1m{}\n", "ж".repeat(25_000));
        for _ in 0..60 {
            renderer.push(line.as_bytes());
            assert!(renderer.lines.pending_bytes <= PENDING_BYTES + 50_000);
            assert_eq!(
                renderer.lines.pending_bytes,
                renderer
                    .lines
                    .pending
                    .iter()
                    .map(|(t, _)| t.len())
                    .sum::<usize>()
            );
        }
        let rendered = renderer.finish();
        assert_eq!(rendered.lines, 60);
    }
}
