//! The records inside long lines: a JSON report printed on one line (RuboCop's
//! `--format json`) is read record by record.
//!
//! A line longer than [`LONG_LINE`] bytes that opens a JSON object or array is cut
//! into pieces, each from one `{"` to the next, as it streams in. The pieces are
//! counted as the lines of a short report would be (see the `odd` module): a record
//! unlike the many like it (one `"severity":"error"` among 400 `"convention"`) is
//! kept, with the file the record of the last piece naming one (`{"path":"a.rb",…`).
//! The view of a long line is its ends; these pieces say what its middle held.

use super::odd::Odd;
use super::{KeyLine, Numbered, cut_middle};

/// A line longer than this is read by pieces when it opens a JSON object or array;
/// a shorter one is read whole (its view holds all of it).
pub const LONG_LINE: usize = super::LINE_VIEW;
/// Bytes of a piece that sign it and are kept of it.
const PIECE_BYTES: usize = 512;
/// Bytes of a piece shown.
const PIECE_SHOWN: usize = 300;
/// Long lines whose pieces are told apart by their line number, at most; the pieces
/// of later ones are numbered with the last.
const MAX_LONG_LINES: usize = 1024;

#[derive(Debug, Default)]
pub(super) struct Long {
    /// The line being read, its bytes so far, and its first bytes until it is known
    /// long (then the current piece's first [`PIECE_BYTES`]).
    line: u64,
    len: usize,
    buf: Vec<u8>,
    /// Read by pieces (it is long and opens JSON); or known not to be.
    pieces: bool,
    skip: bool,
    /// The last byte read was a `{`: a piece starts if the next is `"`.
    open: bool,
    /// Pieces read, and the first piece of each long line with its line number.
    count: u64,
    lines: Vec<(u64, u64)>,
    /// Bytes read by pieces: past [`ODD_BYTES`](super::odd::ODD_BYTES), no more.
    read: u64,
    /// The pieces, as lines of their own (once a long line is read).
    odd: Option<Box<Odd>>,
}

impl Long {
    /// Bytes of line `line`, not ended yet, read next.
    pub(super) fn partial(&mut self, bytes: &[u8], line: u64) {
        if self.line != line {
            self.start(line);
        }
        self.len += bytes.len();
        if self.skip || self.read >= super::odd::ODD_BYTES {
            return;
        }
        if self.pieces {
            self.read(bytes);
            return;
        }
        let room = (LONG_LINE + 1)
            .saturating_sub(self.buf.len())
            .min(bytes.len());
        self.buf.extend_from_slice(&bytes[..room]);
        if self.buf.len() > LONG_LINE {
            let first = std::mem::take(&mut self.buf);
            if opens_json(&first) {
                self.by_pieces();
                self.read(&first);
                self.read(&bytes[room..]);
            } else {
                self.skip = true;
            }
        }
    }

    /// Line `line` ended: whether it was read by pieces (it is done with); else the
    /// caller reads it as a line.
    pub(super) fn ended(&mut self, line: u64) -> bool {
        if self.line != line || !self.pieces {
            if self.line == line {
                self.start(0);
            }
            return false;
        }
        self.end_piece();
        self.start(0);
        true
    }

    /// Line `line` read whole: by pieces when it is long and opens JSON (true).
    pub(super) fn whole(&mut self, bytes: &[u8], line: u64) -> bool {
        if bytes.len() <= LONG_LINE || !opens_json(bytes) {
            return false;
        }
        self.start(line);
        if self.read >= super::odd::ODD_BYTES {
            return true;
        }
        self.by_pieces();
        self.read(bytes);
        self.ended(line)
    }

    fn by_pieces(&mut self) {
        self.pieces = true;
        if self.lines.len() < MAX_LONG_LINES {
            self.lines.push((self.count + 1, self.line));
        }
    }

    fn start(&mut self, line: u64) {
        self.line = line;
        self.len = 0;
        self.buf.clear();
        self.pieces = false;
        self.skip = false;
        self.open = false;
    }

    /// Reads bytes of a long line, a piece ending at each `{"`.
    fn read(&mut self, bytes: &[u8]) {
        self.read += bytes.len() as u64;
        let mut from = 0;
        if self.open && bytes.first() == Some(&b'"') {
            // The `{` that ended the last bytes starts a piece.
            self.buf.pop();
            self.end_piece();
            self.buf.push(b'{');
        }
        for at in memchr::memchr_iter(b'{', bytes) {
            if bytes.get(at + 1) == Some(&b'"') {
                self.keep(&bytes[from..at]);
                self.end_piece();
                from = at;
            }
        }
        self.keep(&bytes[from..]);
        self.open = bytes.last() == Some(&b'{');
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = PIECE_BYTES.saturating_sub(self.buf.len()).min(bytes.len());
        self.buf.extend_from_slice(&bytes[..room]);
    }

    /// The piece read ends: counted among the pieces of its family.
    fn end_piece(&mut self) {
        let piece = std::mem::take(&mut self.buf);
        if piece.len() < 3 {
            return;
        }
        self.count += 1;
        let text = String::from_utf8_lossy(&piece);
        let odd = self.odd.get_or_insert_default();
        if let Some(file) = record_file(&text) {
            odd.set_header(Numbered {
                line: self.count,
                text: file.to_owned(),
            });
        }
        odd.push_piece(text.trim(), self.count);
    }

    /// The pieces unlike the many like them, numbered by their lines, each with the
    /// file its record belongs to.
    pub(super) fn finish(self) -> Vec<KeyLine> {
        let lines = self.lines;
        let line_of = |piece: u64| {
            let at = lines.partition_point(|&(first, _)| first <= piece);
            lines[at.saturating_sub(1)].1
        };
        let Some(odd) = self.odd else {
            return Vec::new();
        };
        let (odd, _, _) = odd.finish();
        odd.into_iter()
            .map(|key| {
                let line = line_of(key.first.line);
                KeyLine {
                    first: Numbered {
                        line,
                        text: cut_middle(&key.first.text, PIECE_SHOWN),
                    },
                    last_line: line,
                    count: 1,
                    locators: key
                        .locators
                        .into_iter()
                        .filter(|l| l.line < key.first.line)
                        .take(1)
                        .map(|l| Numbered { line, text: l.text })
                        .collect(),
                }
            })
            .collect()
    }
}

/// Whether a line opens a JSON object or array.
fn opens_json(bytes: &[u8]) -> bool {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    start.is_some_and(|at| {
        bytes[at] == b'{'
            || (bytes[at] == b'['
                && bytes[at + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|&b| b == b'{'))
    })
}

/// The file a record names in its own field (`"path":"lib/a.rb"`, `"fileName": …`).
fn record_file(text: &str) -> Option<&str> {
    const FIELDS: &[&str] = &[
        "path",
        "file",
        "filename",
        "filepath",
        "file_path",
        "source",
    ];
    let mut rest = text;
    while let Some(at) = rest.find('"') {
        let after = &rest[at + 1..];
        let end = after.find('"')?;
        let name = &after[..end];
        let value = after[end + 1..].trim_start();
        rest = &after[end + 1..];
        let Some(value) = value.strip_prefix(':') else {
            continue;
        };
        let value = value.trim_start();
        if FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name))
            && let Some(value) = value.strip_prefix('"')
            && let Some(close) = value.find('"')
            && super::odd::names_file(&value[..close])
        {
            return Some(&value[..close]);
        }
    }
    None
}
