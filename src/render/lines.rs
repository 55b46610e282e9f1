//! Line mode: the line being written and the last lines, with a `vte` parser's callbacks.

use std::collections::VecDeque;

use unicode_width::UnicodeWidthChar;
use vte::{Params, Perform};

use super::{Out, PENDING_BYTES, ROWS};

/// One column of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cell {
    Char(char),
    /// The second column of the wide character before it.
    WideTail,
    /// A column a tab moved over.
    TabFill,
}

/// Line mode: the line being written, and the last lines, not final yet.
#[derive(Debug, Default)]
pub(super) struct Lines {
    pub(super) cells: Vec<Cell>,
    /// Characters that take no column, after the character of their column.
    pub(super) marks: Vec<(usize, char)>,
    pub(super) cursor: usize,
    /// Columns kept of a line.
    pub(super) width: usize,
    /// Something was written to the current line, even if it was all past the bound.
    pub(super) written_past: bool,
    /// Finished lines a cursor may still move up to, with their raw line numbers,
    /// and their bytes.
    pub(super) pending: VecDeque<(String, u64)>,
    pub(super) pending_bytes: usize,
    /// Raw `\n`s so far.
    pub(super) raw: u64,
    /// The sequence that moved the cursor to another line: the screen takes over.
    pub(super) moved: Option<String>,
}

impl Lines {
    pub(super) fn text(&self) -> String {
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

    pub(super) fn write(&mut self, c: char) {
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
    pub(super) fn settle(&mut self, out: &mut Out) {
        while self.pending.len() >= usize::from(ROWS) || self.pending_bytes > PENDING_BYTES {
            let Some((text, raw)) = self.pending.pop_front() else {
                break;
            };
            self.pending_bytes -= text.len();
            out.emit(&text, raw, true);
        }
    }

    pub(super) fn flush_pending(&mut self, out: &mut Out) {
        for (text, raw) in self.pending.drain(..) {
            out.emit(&text, raw, true);
        }
        self.pending_bytes = 0;
    }

    /// Every line is final: the end of the stream.
    pub(super) fn flush(&mut self, out: &mut Out) {
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
