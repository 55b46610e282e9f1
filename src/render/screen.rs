//! Screen mode: a VT screen (the `vt100` crate) for output that moves the cursor between lines.

use vte::{Params, Parser, Perform};

use super::lines::Lines;
use super::{COLS, Out, ROWS};

/// Screen mode: a VT screen, and what it needs to hand lines over.
pub(super) struct Screen {
    parser: vt100::Parser<Rows>,
    /// Watches the bytes for cursor movement, to know when the screen may go.
    watch: Parser,
    watcher: Watcher,
    raw: u64,
}

impl Screen {
    pub(super) fn new(raw: u64) -> Screen {
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
    pub(super) fn seed(&mut self, lines: &mut Lines, out: &mut Out) {
        lines.pending_bytes = 0;
        for (text, raw) in std::mem::take(&mut lines.pending) {
            out.saw(&text, raw);
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
    pub(super) fn feed(&mut self, bytes: &[u8], out: &mut Out) -> usize {
        let end = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
        self.feed_raw(&bytes[..end], out);
        end
    }

    pub(super) fn feed_raw(&mut self, bytes: &[u8], out: &mut Out) {
        self.watch.advance(&mut self.watcher, bytes);
        match bytes.split_last() {
            Some((b'\n', line)) => {
                self.parser.process(line);
                self.raw += 1;
                if out.watch.is_some() {
                    // The line as it stands when it ends, before anything redraws it.
                    let screen = self.parser.screen();
                    let row = screen.cursor_position().0;
                    let text = screen.contents_between(row, 0, row, COLS);
                    out.saw(&text, self.raw);
                }
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
    pub(super) fn calm(&self) -> bool {
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
    pub(super) fn into_lines(mut self, out: &mut Out, width: usize) -> Lines {
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
    pub(super) fn finish(mut self, out: &mut Out, lines: &mut Lines) {
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
