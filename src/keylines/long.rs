//! The records inside long lines: a JSON report printed on one line (RuboCop's
//! `--format json`) is read record by record.
//!
//! A line longer than [`LONG_LINE`] bytes that opens a JSON object or array is cut
//! into pieces as it streams in: each from an object in an array (`[{"`, `,{"`) to
//! the next, an object in a field (`"location":{…}`) staying with its record. The
//! pieces are counted as the lines of a short report would be (see the `odd`
//! module): a record unlike the many like it (one `"severity":"error"` among 400
//! `"convention"`, or one record of `"dependencies":[…]` among 300 alike of
//! `"exports":[…]`: the field holding a piece's array is part of what it is, and is
//! shown before it) is kept, with the file the record of the last piece naming one
//! (`{"path":"a.rb",…`), the records of `"errors":[…]` first. The view of a long line
//! is its ends; these pieces say what its middle held.

use super::odd::Odd;
use super::{KeyLine, Numbered, cut_middle};

/// A line longer than this is read by pieces when it opens a JSON object or array;
/// a shorter one is read whole (its view holds all of it).
pub const LONG_LINE: usize = super::LINE_VIEW;
/// Bytes of a piece kept: its first [`SIGNED`] sign it.
const PIECE_BYTES: usize = 2048;
const SIGNED: usize = 512;
/// Bytes of a piece shown: its start, and the file it names with what follows.
const SHOWN_START: usize = 200;
const SHOWN_FILE: usize = 160;
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
    /// The last byte read that is not a space; and when the last bytes ended with a
    /// `{`, held back (a piece starts there if the next is `"`), the byte before it.
    last: u8,
    open: Option<u8>,
    /// Pieces read, and the first piece of each long line with its line number.
    count: u64,
    lines: Vec<(u64, u64)>,
    /// Bytes read by pieces: past [`ODD_BYTES`](super::odd::ODD_BYTES), no more.
    read: u64,
    /// Where the bytes read stand in the JSON's nesting; and the field whose array
    /// holds the current piece (`"errors"` of `"errors":[{…}]`).
    path: JsonPath,
    within: Option<String>,
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
        if self.open.take().is_some() {
            self.keep(b"{");
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
        self.last = 0;
        self.open = None;
        self.path = JsonPath::default();
        self.within = None;
    }

    /// Reads bytes of a long line, a piece ending at each object in an array.
    fn read(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.read += bytes.len() as u64;
        let mut from = 0;
        if let Some(before) = self.open.take() {
            // The `{` that ended the last bytes, held back: it may start a piece.
            if bytes[0] == b'"' && (before == b'[' || before == b',') && !self.path.in_string {
                self.next_piece();
            }
            self.keep(b"{");
            self.path.read(b"{");
        }
        // The bytes before `fed` are read by the path: where each `{` stands in the
        // JSON is known (one inside a string starts no piece).
        let mut fed = from;
        for at in memchr::memchr_iter(b'{', bytes) {
            self.path.read(&bytes[fed..at]);
            fed = at;
            let before = bytes[..at]
                .iter()
                .rev()
                .find(|b| !b.is_ascii_whitespace())
                .copied()
                .unwrap_or(self.last);
            if at + 1 == bytes.len() {
                self.keep(&bytes[from..at]);
                self.open = Some(before);
                from = bytes.len();
                fed = from;
            } else if bytes[at + 1] == b'"'
                && (before == b'[' || before == b',')
                && !self.path.in_string
            {
                self.keep(&bytes[from..at]);
                self.next_piece();
                from = at;
            }
        }
        self.keep(&bytes[from..]);
        self.path.read(&bytes[fed..]);
        if let Some(&b) = bytes.iter().rev().find(|b| !b.is_ascii_whitespace()) {
            self.last = b;
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = PIECE_BYTES.saturating_sub(self.buf.len()).min(bytes.len());
        self.buf.extend_from_slice(&bytes[..room]);
    }

    /// The piece read ends at an object in an array, where the next starts: that
    /// array's field is the next piece's.
    fn next_piece(&mut self) {
        self.end_piece();
        self.within = self.path.array_field();
    }

    /// The piece read ends: counted among the pieces of its family, which the field
    /// holding its array is part of (a dependency knip reports unused, among the
    /// hundreds of exports alike).
    fn end_piece(&mut self) {
        let piece = std::mem::take(&mut self.buf);
        if piece.len() < 3 {
            return;
        }
        self.count += 1;
        let text = String::from_utf8_lossy(&piece);
        let text = text.trim();
        let odd = self.odd.get_or_insert_default();
        let file = record_file(text);
        if let Some((file, _)) = file {
            odd.set_header(Numbered {
                line: self.count,
                text: file.to_owned(),
            });
        }
        let signed = &text[..crate::render::floor_char_boundary(text, SIGNED)];
        let prefix = self.within.as_ref().map_or(0, |field| field.len() + 5);
        let shown = shown(text, file.map(|(_, at)| at), prefix);
        match &self.within {
            Some(field) => {
                let shown = format!("\"{field}\":[ {shown}");
                odd.push_piece(signed, Some(field), &shown, self.count);
            }
            None => odd.push_piece(signed, None, &shown, self.count),
        }
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
        odd.finish()
            .odd
            .into_iter()
            .map(|key| {
                let line = line_of(key.first.line);
                KeyLine {
                    first: Numbered {
                        line,
                        text: key.first.text,
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

/// Where the bytes of a JSON text read so far stand: the containers open around them,
/// each array with the field that holds it. Strings are read as strings (a `[` in a
/// message opens nothing); a field's name is kept to [`FIELD_BYTES`], the nesting to
/// [`DEPTH`] (deeper containers are counted).
#[derive(Debug, Default)]
pub(super) struct JsonPath {
    open: Vec<Option<String>>,
    deeper: usize,
    pub(super) in_string: bool,
    escaped: bool,
    string: Vec<u8>,
    /// The string just read, a field's name if `:` follows; the name whose value
    /// comes next.
    closed: Option<Vec<u8>>,
    named: Option<Vec<u8>>,
}

/// Bytes of a field's name kept.
const FIELD_BYTES: usize = 64;
/// Containers open around the bytes read that are told apart.
const DEPTH: usize = 64;

impl JsonPath {
    pub(super) fn read(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                    continue;
                } else if b == b'"' {
                    self.in_string = false;
                    self.closed = Some(std::mem::take(&mut self.string));
                    continue;
                }
                if self.string.len() < FIELD_BYTES {
                    self.string.push(b);
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.string.clear();
                    self.named = None;
                }
                b':' => self.named = self.closed.take(),
                b'[' | b'{' => {
                    // An array is told by its field's name (empty in an array); an
                    // object by none.
                    let named = self.named.take().unwrap_or_default();
                    let field = (b == b'[').then(|| String::from_utf8_lossy(&named).into_owned());
                    if self.open.len() < DEPTH {
                        self.open.push(field);
                    } else {
                        self.deeper += 1;
                    }
                }
                b']' | b'}' => {
                    if self.deeper > 0 {
                        self.deeper -= 1;
                    } else {
                        self.open.pop();
                    }
                    self.named = None;
                }
                _ if b.is_ascii_whitespace() => continue,
                _ => self.named = None,
            }
            self.closed = None;
        }
    }

    /// The field whose array the bytes read stand in, right inside it.
    pub(super) fn array_field(&self) -> Option<String> {
        if self.deeper > 0 {
            return None;
        }
        self.open.last()?.clone().filter(|f| !f.is_empty())
    }
}

/// Whether a piece is a record of an array of errors (`"errors":[ {…}`, as
/// [`Long`] shows the field of a piece's array before it).
pub(super) fn of_errors(shown: &str) -> bool {
    shown
        .strip_prefix('"')
        .and_then(|rest| rest.split_once("\":[ "))
        .is_some_and(|(field, _)| {
            ["errors", "error", "failures"]
                .iter()
                .any(|f| f.eq_ignore_ascii_case(field))
        })
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

/// What is shown of a piece: its start, and from the fields naming its file (at
/// `file_at`) and saying its message on, each [`SHOWN_FILE`] bytes (three quarters of
/// it when both are), within [`SHOWN_START`] and one field's more, with the `prefix`
/// shown before it (the start gives way, down to half of it).
fn shown(text: &str, file_at: Option<usize>, prefix: usize) -> String {
    let floor = |at: usize| crate::render::floor_char_boundary(text, at);
    let at: Vec<usize> = file_at
        .into_iter()
        .chain(record_message(text).map(|(_, at)| at))
        .collect();
    // Two fields share what one would take, and a half more.
    let each = if at.len() > 1 {
        SHOWN_FILE * 3 / 4
    } else {
        SHOWN_FILE
    };
    let mut fields: Vec<(usize, usize)> = at.into_iter().map(|at| (at, floor(at + each))).collect();
    fields.sort_unstable();
    let beyond = |start: usize| fields.iter().any(|&(_, end)| end > start);
    if !beyond(floor(SHOWN_START)) {
        return cut_middle(text, SHOWN_START + SHOWN_FILE);
    }
    // The fields, the marks between the parts and the array's field before them
    // leave the start the rest.
    let others: usize = fields.iter().map(|&(at, end)| end - at + 5).sum::<usize>() + prefix;
    let start = floor(
        (SHOWN_START + SHOWN_FILE)
            .saturating_sub(others)
            .max(SHOWN_START / 2),
    );
    let mut spans = vec![(0, start)];
    for (at, end) in fields {
        match spans.last_mut() {
            Some(last) if at <= last.1 => last.1 = last.1.max(end),
            _ => spans.push((at, end)),
        }
    }
    let parts: Vec<&str> = spans.iter().map(|&(at, end)| &text[at..end]).collect();
    parts.join(" … ")
}

/// The file a record names in its own field (`"path":"lib/a.rb"`, `"fileName": …`),
/// and where that field starts.
pub(super) fn record_file(text: &str) -> Option<(&str, usize)> {
    const FIELDS: &[&str] = &[
        "path",
        "file",
        "filename",
        "filepath",
        "file_path",
        "source",
        "uri",
    ];
    record_field(text, |name, value| {
        FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name)) && super::odd::names_file(value)
    })
}

/// What a record says in its own field (`"message":"Module not found: …"`), and where
/// that field starts.
fn record_message(text: &str) -> Option<(&str, usize)> {
    record_field(text, |name, value| {
        super::odd::is_message_field(name) && !value.trim().is_empty()
    })
}

/// The first field of a record whose name and string value are `wanted`: its value
/// (up to its first quote, escaped or not) and where the field starts.
fn record_field(text: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<(&str, usize)> {
    let mut from = 0;
    while let Some(open) = text[from..].find('"').map(|at| from + at) {
        let close = open + 1 + text[open + 1..].find('"')?;
        from = close + 1;
        let name = &text[open + 1..close];
        let Some(value) = text[from..].trim_start().strip_prefix(':') else {
            continue;
        };
        if let Some(value) = value.trim_start().strip_prefix('"')
            && let Some(end) = value.find('"')
            && wanted(name, &value[..end])
        {
            return Some((&value[..end], open));
        }
    }
    None
}
