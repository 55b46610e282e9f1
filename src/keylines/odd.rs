//! Lines unlike the many like them: what a tool no rule names printed differently.
//!
//! A long output is mostly lines of a few shapes printed again and again: a
//! `Severity: Low` for each finding, a row for each warning. What matters in it is
//! often the line of the same shape that says something else: one `Severity: High`
//! among 800 `Severity: Low`, one `(id-unique)` among 90 `(alt-require)`, one `RF02`
//! among 120 `LT01`. No word marks it, so no rule that looks for words finds it.
//!
//! Lines are grouped in families by how they start: their indent and their first word,
//! with numbers and a file's place made alike (a record's first field is left out:
//! `{"code":…` is of the family `{`). In a family, a line's signature is the codes it
//! holds (`E1101`, `RF02`, a closing `(rule-id)` or `[rule.id]`) with the severities
//! beside them, else its text with numbers and quoted words made alike. In a family of many lines that are
//! mostly of a few signatures, the lines of a signature seen rarely are odd lines:
//! kept with the file they belong to (the last line before them that is only a path)
//! and the places named right after them.
//!
//! Only the first [`ODD_BYTES`] or [`ODD_LINES`] of a stream are read for them, in
//! bounded memory.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::long::{LONG_LINE, Long};
use super::places::{Place, Places};
use super::{KeyLine, Numbered, cut_middle, rules};

/// Bytes of a stream read for odd lines: past them (or past [`ODD_LINES`]), a line
/// costs nothing more.
pub const ODD_BYTES: u64 = 8 * 1024 * 1024;
/// Lines of a stream read for odd lines, at most.
pub const ODD_LINES: u64 = 20_000;
/// Families followed, at most; the lines of others are not looked at.
const MAX_FAMILIES: usize = 64;
/// Signatures followed in all, at most; the lines of others are counted.
const MAX_SIGNATURES: usize = 8192;
/// A family of fewer lines says nothing of what is usual.
const MIN_FAMILY: u64 = 20;
/// A signature is rare when at most this many lines give it...
const RARE_COUNT: u64 = 3;
/// ... and they are at most one in this many of its family;
const RARE_SHARE: u64 = 20;
/// or when at most this many give it...
const FEW_COUNT: u64 = 8;
/// ... and they are at most one in this many (four `✘` among 300 `✔`).
const FEW_SHARE: u64 = 40;
/// An odd line's rank: how many lines give its signature, then how many rare
/// signatures its family has (below this).
const RANK: u64 = 1 << 16;
/// A family with more rare signatures than this is a catalog (a report's rules, each
/// said once): its odd lines rank after all the others.
const CATALOG: u64 = 12;
/// A signature is common from this many lines on...
const COMMON_COUNT: u64 = 5;
/// ... and a family is regular when this share of it (in tenths) is of common ones.
const COMMON_TENTHS: u64 = 8;
/// Bytes of the failing tests' names kept from a heading of failures' entries.
const NAMED_BYTES: usize = 16 * 1024;
/// Files of a diff kept (their headers), at most, and their bytes.
const DIFF_FILES: usize = 256;
const DIFF_BYTES: usize = 16 * 1024;

/// Lines that start with a place (`pkg/a.go:33:17: …`) that are odd each, when they
/// are this few in a stream.
const FEW_PLACED: u64 = 12;
/// Odd lines kept of one family, at most (their first ones).
const KEPT_PER_FAMILY: usize = 48;
/// Bytes of the odd lines kept, at most, and of the lines kept with them.
const KEPT_BYTES: usize = 256 * 1024;
/// Odd lines handed on, at most: the rarest first.
pub const MAX_ODD: usize = 24;
/// Lines after an odd line within which the places it names are kept...
const PLACE_AFTER: u64 = 4;
/// ... and how many of them; after a record's field, within this many lines.
const PLACES: usize = 2;
const PLACE_AFTER_FIELD: u64 = 12;
/// Lines before an odd line within which the file it belongs to is kept.
const HEADER_WITHIN: u64 = 200;
/// Lines after the opening of a block within which an odd line of it comes with it,
/// and the opening's length at most.
const OPENING_WITHIN: u64 = 12;
const OPENING_BYTES: usize = 200;
/// Pairs of families (one after the other) counted, at most, and the bytes of the lines
/// out of place kept, with the lines after them.
const MAX_TRANSITIONS: usize = 1024;
const TRANSITION_BYTES: usize = 64 * 1024;
/// Bytes of a line that make its family and signature.
const SIGNED_BYTES: usize = 512;
/// A record's message travels with its odd severity from this many lines above it.
const MESSAGE_BEFORE: u64 = 4;

#[derive(Debug, Default)]
pub(super) struct Odd {
    /// Reads the pieces of long lines (each a record of its own), not lines.
    by_pieces: bool,
    read: u64,
    lines: u64,
    signatures: usize,
    families: HashMap<u64, Family, Hashed>,
    kept_bytes: usize,
    /// The last line that is only a file's path.
    header: Option<Numbered>,
    /// The line that opened the current block (the lines since a blank one), when it
    /// ends with `:` (gitlint's `Commit ed297bf781:`); `None` past a blank line or
    /// another opening.
    opening: Option<Numbered>,
    /// The last line read was blank (the first line opens a block too).
    after_blank: bool,
    /// For each indent less than or equal to the last line's, nearest last: the lines
    /// a line belongs to (see [`Level`]).
    outline: Vec<Level>,
    /// The odd lines still open to the places named after them: family, signature,
    /// and index among its kept lines; until line `open_until`.
    open: Vec<(u64, u64, usize)>,
    open_until: u64,
    /// Past a heading of failures (`Failures:`): its numbered entries name failing
    /// tests (`1) cart rounds the price`), kept up to [`NAMED_BYTES`].
    failures: bool,
    named: Vec<Numbered>,
    named_bytes: usize,
    /// The records inside long lines.
    long: Long,
    /// The headers of the files a diff changes (`diff a/x b/x`, `+++ b/x`, `Diff in
    /// x:3:`), each file once; the line of the last `diff` header.
    diff_files: Vec<Numbered>,
    diff_seen: std::collections::HashSet<String>,
    diff_bytes: usize,
    diff_line: u64,
    /// A `--- ` line, the first header of a unified diff if `+++ ` follows it.
    diff_pending: Option<Numbered>,
    /// The places lines name.
    places: Places,
    /// What follows what: the lines of each family after those of another.
    transitions: Transitions,
    /// The last record's field that says what a finding is (`"description": …`).
    message: Option<Numbered>,
}

/// Lines out of place: a line of a family seldom seen after the family of the line
/// before it, where that family is almost always followed by one other (gitlint's
/// `Commit ed297bf781:` after its `-----` rule, where 147 of 150 are followed by a
/// `DEBUG:` record), and of a family of a few lines in all. What a run shows when no
/// line is a key line (of a run that succeeded, only those that warn).
#[derive(Debug, Default)]
struct Transitions {
    /// The family of the last line read.
    last: Option<u64>,
    /// For each family, the families after it, and the lines of each while few.
    after: HashMap<u64, HashMap<u64, Outs, Hashed>, Hashed>,
    entries: usize,
    kept_bytes: usize,
    /// The line kept last, whose next line may travel with it.
    pending: Option<(u64, u64, usize)>,
}

#[derive(Debug, Default)]
struct Outs {
    count: u64,
    lines: Vec<Out>,
}

/// A line that may be out of place, and the line after it, with its family.
#[derive(Debug)]
struct Out {
    line: Numbered,
    next: Option<(Numbered, u64)>,
}

impl Out {
    fn bytes(&self) -> usize {
        self.line.text.len() + self.next.as_ref().map_or(0, |(n, _)| n.text.len())
    }
}

impl Transitions {
    /// Line `line` (`bytes`), of `family`, was read.
    fn read(&mut self, family: u64, bytes: &[u8], line: u64) {
        if let Some((before, now, index)) = self.pending.take()
            && let Some(out) = self
                .after
                .get_mut(&before)
                .and_then(|next| next.get_mut(&now))
                .and_then(|outs| outs.lines.get_mut(index))
            && line <= out.line.line + 2
        {
            let next = numbered(bytes, line);
            if self.kept_bytes + next.text.len() <= TRANSITION_BYTES {
                self.kept_bytes += next.text.len();
                out.next = Some((next, family));
            }
        }
        let Some(before) = self.last.replace(family) else {
            return;
        };
        let known = self
            .after
            .get(&before)
            .is_some_and(|next| next.contains_key(&family));
        if !known {
            if self.entries >= MAX_TRANSITIONS {
                return;
            }
            self.entries += 1;
        }
        let outs = self
            .after
            .entry(before)
            .or_default()
            .entry(family)
            .or_default();
        outs.count += 1;
        if outs.count > FEW_COUNT {
            if !outs.lines.is_empty() {
                self.kept_bytes -= outs.lines.iter().map(Out::bytes).sum::<usize>();
                outs.lines = Vec::new();
            }
            return;
        }
        let kept = numbered(bytes, line);
        if self.kept_bytes + kept.text.len() > TRANSITION_BYTES {
            return;
        }
        self.kept_bytes += kept.text.len();
        outs.lines.push(Out {
            line: kept,
            next: None,
        });
        self.pending = Some((before, family, outs.lines.len() - 1));
    }

    /// A line of no family counted was read: the next follows none.
    fn forget(&mut self) {
        self.last = None;
        self.pending = None;
    }

    /// The lines out of place, the rarest first, [`MAX_ODD`] at most, each with the
    /// line after it when that one is of a family of a few lines too (gitlint's
    /// violation under its `Commit …:`). A family of many lines (`families`' totals)
    /// is a new part of the output (the tests after the build), not out of place.
    fn finish(self, families: &HashMap<u64, Family, Hashed>) -> Vec<KeyLine> {
        let few = |family: &u64| families.get(family).is_some_and(|f| f.total <= FEW_COUNT);
        let mut found = Vec::new();
        for next in self.after.into_values() {
            let total: u64 = next.values().map(|outs| outs.count).sum();
            let most = next.values().map(|outs| outs.count).max().unwrap_or(0);
            if total < MIN_FAMILY || most * 10 < total * COMMON_TENTHS {
                continue;
            }
            for (family, outs) in next {
                if rare(outs.count, total) && few(&family) {
                    found.extend(outs.lines.into_iter().map(|out| (outs.count, out)));
                }
            }
        }
        found.sort_by_key(|(count, out)| (*count, out.line.line));
        found.truncate(MAX_ODD);
        found
            .into_iter()
            .map(|(_, out)| KeyLine {
                last_line: out.line.line,
                locators: out
                    .next
                    .filter(|(_, family)| few(family))
                    .map(|(next, _)| next)
                    .into_iter()
                    .collect(),
                first: out.line,
                count: 1,
            })
            .collect()
    }
}

/// What the pass found: the odd lines, the failing tests a heading of failures'
/// entries name, the odd records inside long lines, the headers of the files a diff
/// changes, and the places lines name.
pub(super) struct Found {
    pub odd: Vec<KeyLine>,
    pub named: Vec<Numbered>,
    pub pieces: Vec<KeyLine>,
    pub diff_files: Vec<Numbered>,
    pub places: Vec<Place>,
    /// Lines out of place (see [`Transitions`]).
    pub out_of_place: Vec<KeyLine>,
}

/// The lines of one indent, since a line less indented.
#[derive(Debug)]
struct Level {
    indent: usize,
    /// The last line of this indent, when it names a file.
    last: Option<Numbered>,
    /// The last line of this indent that named a file.
    file: Option<Numbered>,
    /// The first quoted field of this indent that named a file, since a line less
    /// indented: a JSON record's own file (`"from": "src/a.js"`, before its `"to"`).
    field_file: Option<Numbered>,
}

#[derive(Debug, Default)]
struct Family {
    /// Its lines start with a place (`src/a.go:3:7: …`): diagnostics.
    placed: bool,
    total: u64,
    signatures: HashMap<u64, Signature, Hashed>,
    kept: usize,
}

impl Family {
    /// The lines of its rare signatures, each with its rank (see [`RANK`]): none
    /// unless the family is regular; all of a few diagnostics.
    fn odd_lines(self) -> Vec<(u64, Candidate)> {
        let mut found = Vec::new();
        // A few diagnostics in a long output, whatever their words: each is odd.
        if self.placed && self.total <= FEW_PLACED {
            for signature in self.signatures.into_values() {
                let rank = signature.count * RANK;
                found.extend(signature.lines.into_iter().map(|c| (rank, c)));
            }
            return found;
        }
        let common: u64 = self
            .signatures
            .values()
            .filter(|s| s.count >= COMMON_COUNT)
            .map(|s| s.count)
            .sum();
        if self.total < MIN_FAMILY || common * 10 < self.total * COMMON_TENTHS {
            return found;
        }
        // Of the odd lines of a family with many rare signatures (a report's catalog
        // of its rules, each said once), the others come first.
        let total = self.total;
        let rares = self
            .signatures
            .values()
            .filter(|s| rare(s.count, total))
            .count() as u64;
        let catalog = if rares > CATALOG {
            (FEW_COUNT + 1) * RANK
        } else {
            0
        };
        for signature in self.signatures.into_values() {
            if rare(signature.count, total) {
                let rank = catalog + signature.count * RANK + rares.min(RANK - 1);
                found.extend(signature.lines.into_iter().map(|c| (rank, c)));
            }
        }
        found
    }
}

#[derive(Debug, Default)]
struct Signature {
    count: u64,
    lines: Vec<Candidate>,
}

#[derive(Debug)]
struct Candidate {
    line: Numbered,
    header: Option<Numbered>,
    after: Vec<Numbered>,
}

impl Candidate {
    fn bytes(&self) -> usize {
        self.line.text.len()
            + self.header.as_ref().map_or(0, |h| h.text.len())
            + self.after.iter().map(|a| a.text.len()).sum::<usize>()
    }
}

impl Odd {
    /// Whether lines are still read.
    pub(super) fn reading(&self) -> bool {
        self.read < ODD_BYTES && self.lines < ODD_LINES
    }

    /// Reads the whole lines of `whole`, the first numbered `first`.
    pub(super) fn push_lines(&mut self, whole: &[u8], first: u64) {
        let mut start = 0;
        for (n, end) in memchr::memchr_iter(b'\n', whole).enumerate() {
            if !self.reading() {
                return;
            }
            self.push_line(&whole[start..end], first + n as u64);
            start = end + 1;
        }
    }

    /// Bytes of line `line`, not ended yet, read next (a long line's records are
    /// read as they come).
    pub(super) fn partial(&mut self, bytes: &[u8], line: u64) {
        self.long.partial(bytes, line);
    }

    /// Line `line` ended: its [`view`](super::view) is `bytes`, and all of it went
    /// through [`partial`](Self::partial).
    pub(super) fn ended_line(&mut self, bytes: &[u8], line: u64) {
        if !self.long.ended(line) {
            self.push_line(bytes, line);
        }
    }

    /// Reads one line (without its `\n`), numbered `line`: all of it (a long line
    /// that opens JSON is read by its records).
    pub(super) fn push_line(&mut self, bytes: &[u8], line: u64) {
        if bytes.len() > LONG_LINE && self.long.whole(bytes, line) {
            self.read += LONG_LINE as u64;
            self.lines += 1;
            return;
        }
        self.read += bytes.len() as u64 + 1;
        self.lines += 1;
        let signed = &bytes[..bytes.len().min(SIGNED_BYTES)];
        let clean = plain_text(signed);
        let clean = clean.trim_end();
        self.places.read(clean, line, bytes.len() > SIGNED_BYTES);
        if line <= self.open_until && !self.open.is_empty() {
            self.place_after(clean, bytes, line);
        }
        let trimmed = clean.trim_start();
        if trimmed.is_empty() {
            self.opening = None;
            self.after_blank = true;
            return;
        }
        if std::mem::take(&mut self.after_blank) || line == 1 {
            self.opening = (trimmed.ends_with(':') && trimmed.len() <= OPENING_BYTES)
                .then(|| numbered(bytes, line));
        }
        if trimmed.starts_with(['{', '}', '[', ']']) {
            // Another record: its message is not the next one's.
            self.message = None;
        }
        self.failing_entry(trimmed, line);
        if trimmed.len() == clean.len() {
            self.diff_header(clean, bytes, line);
        }
        self.outline_line(clean.len() - trimmed.len(), trimmed, bytes, line);
        if trimmed.len() < 3 {
            return;
        }
        if trimmed.len() < 300 && super::is_bare_path(trimmed) {
            self.header = Some(numbered(bytes, line));
            return;
        }
        self.sign_and_count(clean, bytes, line);
        if field_name(trimmed).is_some_and(is_message_field) {
            self.message = Some(numbered(bytes, line));
        }
    }

    /// Places line `line` (`trimmed`, at `indent`) in the outline of indents: the
    /// file each level names.
    fn outline_line(&mut self, indent: usize, trimmed: &str, bytes: &[u8], line: u64) {
        while self.outline.last().is_some_and(|l| l.indent > indent) {
            self.outline.pop();
        }
        let file = names_file(trimmed).then(|| numbered(bytes, line));
        let field_file = file
            .clone()
            .filter(|_| trimmed.starts_with('"') && field_name(trimmed).is_some());
        match self.outline.last_mut() {
            Some(level) if level.indent == indent => {
                if file.is_some() {
                    level.file.clone_from(&file);
                }
                if level.field_file.is_none() {
                    level.field_file = field_file;
                }
                level.last = file;
            }
            _ => self.outline.push(Level {
                indent,
                last: file.clone(),
                file,
                field_file,
            }),
        }
    }

    /// Counts line `line` (`clean`) in its family, by its signature, and by what
    /// follows what.
    fn sign_and_count(&mut self, clean: &str, bytes: &[u8], line: u64) {
        let (family, mut signature, placed) = sign(clean);
        // A long line's record that says error signs it too, wherever it stands (past
        // what signs the line, or across its end: a file's fifth problem on CSSLint's
        // checkstyle line).
        if bytes.len() > SIGNED_BYTES && super::says_error_within(&String::from_utf8_lossy(bytes)) {
            let mut hash = Fnv::new();
            hash.bytes(&signature.to_le_bytes());
            hash.bytes(b"error");
            signature = hash.0;
        }
        self.count(family, signature, bytes, line);
        // Only the families counted: what follows what stays within their number.
        if self.families.contains_key(&family) {
            self.transitions.read(family, bytes, line);
        } else {
            self.transitions.forget();
        }
        if placed && let Some(family) = self.families.get_mut(&family) {
            family.placed = true;
        }
        // A line led by a symbol (`✔`, `✘`, `*`) counts too among the lines led by a
        // symbol at its indent, by the symbol alone: one `✘` among many `✔`.
        if let Some((status, symbol)) = status(clean).or_else(|| level(clean)) {
            self.count(status, symbol, bytes, line);
        }
    }

    /// The file the next pieces of a long line belong to.
    pub(super) fn set_header(&mut self, file: Numbered) {
        self.header = Some(file);
    }

    /// Reads one piece of a long line (see the `long` module), numbered `piece`: its
    /// start `signed`, and what of it is `shown`.
    pub(super) fn push_piece(
        &mut self,
        signed: &str,
        within: Option<&str>,
        shown: &str,
        piece: u64,
    ) {
        self.by_pieces = true;
        let (family, mut signature, _) = sign(signed);
        if let Some(field) = within {
            let mut hash = Fnv::new();
            hash.bytes(&signature.to_le_bytes());
            hash.bytes(field.as_bytes());
            signature = hash.0;
        }
        self.count(family, signature, shown.as_bytes(), piece);
    }

    /// Counts a line of `family` and `signature`, and keeps it while its signature is
    /// rare.
    fn count(&mut self, family: u64, signature: u64, bytes: &[u8], line: u64) {
        if !self.counted(family, signature) {
            return;
        }
        let text = numbered(bytes, line);
        let kept = self.families.get(&family).map_or(0, |f| f.kept);
        if kept >= KEPT_PER_FAMILY || self.kept_bytes + text.text.len() > KEPT_BYTES {
            return;
        }
        // A record's field may belong to a file its sibling names (`"fileName"`).
        let siblings = field_name(&text.text).is_some();
        let json = siblings && text.text.trim_start().starts_with('"');
        let parent = belongs_to(&self.outline, indent_of(&text.text), line, siblings);
        // Else the line that opened its block names what it is of.
        let header = parent
            .or_else(|| self.header.clone())
            .filter(|h| h.line + HEADER_WITHIN >= line)
            .or_else(|| {
                self.opening
                    .clone()
                    .filter(|o| o.line < line && o.line + OPENING_WITHIN >= line)
            });
        // A record's odd severity comes with what its record says, said just above it
        // (`"description": …` over `"severity": "major"`).
        let said = self
            .message
            .as_ref()
            .filter(|m| {
                is_severity_field(&text.text)
                    && m.line + MESSAGE_BEFORE >= line
                    && indent_of(&m.text) == indent_of(&text.text)
            })
            .cloned();
        let candidate = Candidate {
            line: text,
            header,
            after: said.into_iter().collect(),
        };
        self.kept_bytes += candidate.bytes();
        let Some(entry) = self.families.get_mut(&family) else {
            return;
        };
        let Some(kind) = entry.signatures.get_mut(&signature) else {
            return;
        };
        entry.kept += 1;
        kind.lines.push(candidate);
        let index = kind.lines.len() - 1;
        if line > self.open_until {
            self.open.clear();
        }
        self.open.push((family, signature, index));
        // A record's place may come further down, in its own fields (a SARIF
        // result's `"uri"` under its `"ruleId"`).
        let after = if json { PLACE_AFTER_FIELD } else { PLACE_AFTER };
        self.open_until = line + after;
    }

    /// Counts a line of `family` and `signature`: whether its signature is still rare
    /// enough for its lines to be kept (a signature common now lets its lines go).
    fn counted(&mut self, family: u64, signature: u64) -> bool {
        if !self.families.contains_key(&family) && self.families.len() >= MAX_FAMILIES {
            return false;
        }
        let entry = self.families.entry(family).or_default();
        entry.total += 1;
        if !entry.signatures.contains_key(&signature) {
            if self.signatures >= MAX_SIGNATURES {
                return false;
            }
            self.signatures += 1;
        }
        let kind = entry.signatures.entry(signature).or_default();
        kind.count += 1;
        if kind.count <= FEW_COUNT {
            return true;
        }
        if !kind.lines.is_empty() {
            let freed: usize = kind.lines.iter().map(Candidate::bytes).sum();
            entry.kept -= kind.lines.len();
            self.kept_bytes -= freed;
            kind.lines = Vec::new();
        }
        false
    }

    /// The file the line `text` (numbered `line`, not read yet) belongs to: the nearest
    /// line above it, less indented, that names a file, within [`HEADER_WITHIN`] lines.
    pub(super) fn file_above(&self, text: &str, line: u64) -> Option<Numbered> {
        belongs_to(&self.outline, indent_of(text), line, false)
    }

    /// A heading of failures, or one of its numbered entries.
    fn failing_entry(&mut self, trimmed: &str, line: u64) {
        if is_failures_heading(trimmed) {
            self.failures = true;
            return;
        }
        if !self.failures {
            return;
        }
        let Some(name) = super::numbered_entry(trimmed) else {
            return;
        };
        if self.named_bytes + name.len() <= NAMED_BYTES {
            self.named_bytes += name.len();
            self.named.push(Numbered {
                line,
                text: cut_middle(name, super::KEY_LINE_BYTES),
            });
        }
    }

    /// A line that heads a file's part of a diff: kept, once for each file.
    fn diff_header(&mut self, clean: &str, bytes: &[u8], line: u64) {
        let (file, header) = if clean.starts_with("diff ") {
            self.diff_line = line;
            (clean, numbered(bytes, line))
        } else if clean.starts_with("--- ") {
            // The first of a unified diff's pair of headers, if `+++ ` follows.
            self.diff_pending = Some(numbered(bytes, line));
            return;
        } else if let Some(rest) = clean.strip_prefix("+++ ") {
            let first = self.diff_pending.take().filter(|p| p.line + 1 == line);
            // After its `diff` header, the same file.
            if self.diff_line > 0 && line <= self.diff_line + 3 {
                return;
            }
            // Shown by the first of its headers.
            let file = rest.split('\t').next().unwrap_or(rest);
            (file, first.unwrap_or_else(|| numbered(bytes, line)))
        } else if let Some(rest) = clean.strip_prefix("Diff in ") {
            // rustfmt's `Diff in src/a.rs:12:`, a header for each hunk.
            let file = rest
                .trim_end_matches(':')
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .trim_end_matches(':');
            (file, numbered(bytes, line))
        } else {
            return;
        };
        if file.len() < 6
            || self.diff_files.len() >= DIFF_FILES
            || self.diff_bytes + header.text.len() > DIFF_BYTES
            || !self.diff_seen.insert(file.to_owned())
        {
            return;
        }
        self.diff_bytes += header.text.len();
        self.diff_files.push(header);
    }

    /// A line right after odd lines: kept with them when it names a place, a record's
    /// file (`"uri": "templates/a.html"`) or a record's severity of error, until their
    /// record closes.
    fn place_after(&mut self, clean: &str, bytes: &[u8], line: u64) {
        let field_file =
            || field_name(clean).is_some() && super::long::record_file(clean).is_some();
        // A record closed (`}` less indented than an odd field of it): what follows is
        // another record's.
        let trimmed = clean.trim_start();
        if trimmed.starts_with(['}', ']']) {
            let indent = clean.len() - trimmed.len();
            let families = &self.families;
            self.open.retain(|&(family, signature, index)| {
                families
                    .get(&family)
                    .and_then(|f| f.signatures.get(&signature))
                    .and_then(|s| s.lines.get(index))
                    .is_some_and(|c| indent_of(&c.line.text) <= indent)
            });
            return;
        }
        // A record's severity of error travels with its odd fields too: what makes the
        // finding of a report that exits 0 worth showing.
        let severity = record_says_error(clean);
        if !rules().location.is_match(clean) && !field_file() && !severity {
            return;
        }
        let place = numbered(bytes, line);
        for &(family, signature, index) in &self.open {
            let Some(candidate) = self
                .families
                .get_mut(&family)
                .and_then(|f| f.signatures.get_mut(&signature))
                .and_then(|s| s.lines.get_mut(index))
            else {
                continue;
            };
            if severity && field_name(&candidate.line.text).is_none() {
                continue;
            }
            if candidate.after.len() < PLACES && self.kept_bytes + place.text.len() <= KEPT_BYTES {
                self.kept_bytes += place.text.len();
                candidate.after.push(place.clone());
            }
        }
    }

    /// The odd lines, the rarest first: of the regular families, the lines of rare
    /// signatures, up to [`MAX_ODD`]; and the failing tests the
    /// numbered entries of a heading of failures name.
    pub(super) fn finish(self) -> Found {
        let named = self.named;
        let by_pieces = self.by_pieces;
        let pieces = self.long.finish();
        let diff_files = self.diff_files;
        let out_of_place = self.transitions.finish(&self.families);
        let mut found: Vec<(u64, Candidate)> = Vec::new();
        for family in self.families.into_values() {
            found.extend(family.odd_lines());
        }
        // A line odd in two families (by its text and by its symbol) once.
        found.sort_by_key(|(count, c)| (c.line.line, *count));
        found.dedup_by_key(|(_, c)| c.line.line);
        // A piece is a record of its own, told by what it holds.
        let mut found = if by_pieces { found } else { records(found) };
        // A record's severity of error first, or a record of its errors (a piece of
        // `"errors":[…]`): what the report itself calls an error.
        found.sort_by_key(|(count, c)| {
            let error = record_says_error(&c.line.text) || super::long::of_errors(&c.line.text);
            (!error, *count, c.line.line)
        });
        found.truncate(MAX_ODD);
        let odd = found
            .into_iter()
            .map(|(_, c)| {
                let mut locators: Vec<Numbered> = c.header.into_iter().collect();
                locators.extend(c.after);
                KeyLine {
                    last_line: c.line.line,
                    first: c.line,
                    count: 1,
                    locators,
                }
            })
            .collect();
        Found {
            odd,
            named,
            pieces,
            diff_files,
            places: self.places.finish(),
            out_of_place,
        }
    }
}

/// Lines of a record each field of which is odd (a finding of a JSON report unlike
/// the others: its rule, its message, its `null`s): within a run of three odd lines or
/// more, one line apart at most, only the lines that tell (a code, a severity, a file)
/// are kept (its first, if none tells). `found` is in line order.
fn records(found: Vec<(u64, Candidate)>) -> Vec<(u64, Candidate)> {
    let mut out = Vec::with_capacity(found.len());
    let mut run: Vec<(u64, Candidate)> = Vec::new();
    let flush = |run: &mut Vec<(u64, Candidate)>, out: &mut Vec<(u64, Candidate)>| {
        if run.len() < 3 {
            out.append(run);
            return;
        }
        let telling: Vec<usize> = (0..run.len())
            .filter(|&i| tells(&run[i].1.line.text))
            .collect();
        let keep = if telling.is_empty() { vec![0] } else { telling };
        for (i, item) in std::mem::take(run).into_iter().enumerate() {
            if keep.contains(&i) {
                out.push(item);
            }
        }
    };
    for item in found {
        if run
            .last()
            .is_some_and(|(_, c)| c.line.line + 2 < item.1.line.line)
        {
            flush(&mut run, &mut out);
        }
        run.push(item);
    }
    flush(&mut run, &mut out);
    out
}

/// Whether a record's field of this name says what its finding is.
pub(super) fn is_message_field(name: &str) -> bool {
    [
        "message",
        "msg",
        "description",
        "text",
        "title",
        "reason",
        "summary",
    ]
    .iter()
    .any(|f| f.eq_ignore_ascii_case(name))
}

/// Whether a line tells what or where: a code, a severity word, a file, a record's
/// severity or message.
fn tells(text: &str) -> bool {
    names_file(text)
        || is_severity_field(text)
        || field_name(text).is_some_and(|name| {
            ["message", "msg", "reason", "text"]
                .iter()
                .any(|f| f.eq_ignore_ascii_case(name))
        })
        || text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| is_code(w) || is_severity(w))
}

/// Whether a signature `count` lines give is rare in a family of `total`.
fn rare(count: u64, total: u64) -> bool {
    (count <= RARE_COUNT && count * RARE_SHARE <= total)
        || (count <= FEW_COUNT && count * FEW_SHARE <= total)
}

/// A line kept: its text, cut in its middle when long.
fn numbered(bytes: &[u8], line: u64) -> Numbered {
    let (view, _) = super::view(bytes);
    let text = String::from_utf8_lossy(&view);
    Numbered {
        line,
        text: super::cut_line(text.trim_end(), super::KEY_LINE_BYTES),
    }
}

/// The line naming a file that a line of `indent` (numbered `line`) belongs to: the
/// last line of a lesser indent, the nearest first, if it names one (htmlhint's
/// path over its rows); else the last line naming one at a lesser indent (or at
/// its own, with `siblings`: a JSON record's `"fileName"` field, the first of its
/// record's fields naming one) since a line less indented (phpcs's `FILE:` over its
/// table). Within [`HEADER_WITHIN`] lines.
fn belongs_to(outline: &[Level], indent: usize, line: u64, siblings: bool) -> Option<Numbered> {
    let above = |l: &&Level| l.indent < indent || (siblings && l.indent == indent);
    let levels = || outline.iter().rev().filter(above);
    levels()
        .filter(|l| l.indent < indent)
        .find_map(|l| l.last.as_ref())
        .or_else(|| {
            levels()
                .filter_map(|l| {
                    if siblings {
                        let near = |f: &&Numbered| f.line + HEADER_WITHIN >= line;
                        l.field_file.as_ref().filter(near).or(l.file.as_ref())
                    } else {
                        l.file.as_ref()
                    }
                })
                .find(|f| f.line != line)
        })
        .filter(|f| f.line + HEADER_WITHIN >= line && f.line != line)
        .cloned()
}

/// The indent of `text`: its leading whitespace, in bytes.
fn indent_of(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

/// Whether `text` names a file: a word with a `/` inside (`src/a`, not `</p>`), or
/// one with an extension (`Main.java`, `a.rb:3`; not a call, `subprocess.call(`).
pub(super) fn names_file(text: &str) -> bool {
    let bytes = text.as_bytes();
    let word = |b: &u8| b.is_ascii_alphanumeric() || b"._-".contains(b);
    memchr::memchr_iter(b'/', bytes)
        .any(|at| at > 0 && word(&bytes[at - 1]) && bytes.get(at + 1).is_some_and(word))
        || memchr::memchr_iter(b'.', bytes).any(|at| {
            let letters = bytes[at + 1..]
                .iter()
                .take_while(|b| b.is_ascii_alphabetic())
                .count();
            at > 0
                && bytes[at - 1].is_ascii_alphanumeric()
                && (1..=6).contains(&letters)
                && bytes
                    .get(at + 1 + letters)
                    .is_none_or(|b| b" \t:,;\"')]>`".contains(b))
        })
}

/// `bytes` as text, without a terminal's escape sequences and carriage returns.
fn plain_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if !bytes.iter().any(|&b| b == 0x1b || b == b'\r') {
        return String::from_utf8_lossy(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b if bytes.get(i + 1) == Some(&b'[') => {
                i += 2;
                while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                    i += 1;
                }
                i += 1;
            }
            // An operating system command (a hyperlink's `ESC ]8;;url ESC \`): up to
            // its BEL or its `ESC \`.
            0x1b if bytes.get(i + 1) == Some(&b']') => {
                i += 2;
                while i < bytes.len() && bytes[i] != 0x07 && bytes[i] != 0x1b {
                    i += 1;
                }
                i += usize::from(bytes.get(i) == Some(&0x07))
                    + 2 * usize::from(
                        bytes.get(i) == Some(&0x1b) && bytes.get(i + 1) == Some(&b'\\'),
                    );
            }
            0x1b | b'\r' => i += 1,
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Maps keyed by hashes already made ([`Fnv`]): their hash is the key.
type Hashed = BuildHasherDefault<Given>;

#[derive(Default)]
struct Given(u64);

impl Hasher for Given {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// FNV-1a, a byte at a time.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn byte(&mut self, b: u8) {
        self.0 ^= u64::from(b);
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }
}

/// A line's family and signature (see the module docs).
fn sign(line: &str) -> (u64, u64, bool) {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let (first, rest) = trimmed
        .split_once(char::is_whitespace)
        .unwrap_or((trimmed, ""));
    let mut family = Fnv::new();
    family.byte(depth(trimmed, indent));
    if is_place(first) {
        return sign_place(family, first, rest);
    }
    if let Some(signed) = sign_by_lead(family, trimmed, first, rest) {
        return signed;
    }
    // A record's first field is not its family: `{"code":"E1"` is `{`, `"MD004",` is
    // `"`, `Severity:` is `Severity`.
    let word = if first.starts_with(['"', '\'', '{', '[', '(', '<']) {
        &first[..1]
    } else {
        first
            .char_indices()
            .skip(1)
            .find(|&(_, c)| "\"':=,(".contains(c))
            .map_or(first, |(at, _)| &first[..at])
    };
    let word = &word[..crate::render::floor_char_boundary(word, 32)];
    alike(word, &mut family);
    let rest = &trimmed[word.len()..];
    (
        family.0,
        field_signature(trimmed).unwrap_or_else(|| signature(rest)),
        false,
    )
}

/// The signature of a record's quoted field, `"fingerprint": "ca8c92ab",`: its name
/// made alike, and its value, a word as it is, else its signature (the value alone:
/// the name's quotes do not pair with the value's). A severity is signed as
/// [`signature`] signs it, even a number.
fn field_signature(trimmed: &str) -> Option<u64> {
    if !trimmed.starts_with(['"', '\'']) || is_severity_field(trimmed) {
        return None;
    }
    let name = field_name(trimmed)?;
    let (_, value) = trimmed.split_once(':')?;
    let mut hash = Fnv::new();
    alike(name, &mut hash);
    hash.byte(b':');
    // A word alone is said as it is (a state: `"crashed"` among `"done"`); an id or a
    // text is made alike.
    let word = value.trim().trim_end_matches(',').trim_matches(['"', '\'']);
    if (1..=24).contains(&word.len())
        && word
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-')
    {
        hash.bytes(word.as_bytes());
    } else {
        hash.bytes(&signature(value).to_le_bytes());
    }
    Some(hash.0)
}

/// A line's depth in its family: a record's fields by their exact depth (a SARIF
/// report's rules and its results are fields of different depths); other lines by
/// their indent's size.
fn depth(trimmed: &str, indent: usize) -> u8 {
    if field_name(trimmed).is_some() {
        return u8::try_from(indent.min(120)).unwrap_or(120) + 4;
    }
    match indent {
        0 => 0,
        1..=3 => 1,
        4..=7 => 2,
        _ => 3,
    }
}

/// The family and signature of a line led by a place (`first`).
fn sign_place(mut family: Fnv, first: &str, rest: &str) -> (u64, u64, bool) {
    family.byte(b'@');
    // A test's id (`tests/a.py::test_x`), a place with its line (`a.go:3:7:`), a
    // file alone (a coverage table's `shop/a.py  12  3  75%`): three families.
    family.byte(if first.contains("::") {
        b'T'
    } else if first.contains(':') {
        b'L'
    } else {
        b'F'
    });
    // What follows the place in its word says what it is too: the code of
    // `a.yaml:4:3:4:7:W2001:Parameter …`.
    let after = first.split_once(':').map_or("", |(_, after)| after);
    if after.bytes().any(|b| b.is_ascii_alphabetic()) {
        return (family.0, signature(&format!("{after} {rest}")), true);
    }
    (family.0, signature(rest), true)
}

/// The family and signature of a line its lead sorts, whatever it says: a
/// record's place, a bracketed status, a rule's id, a code.
fn sign_by_lead(
    mut family: Fnv,
    trimmed: &str,
    first: &str,
    rest: &str,
) -> Option<(u64, u64, bool)> {
    let by = |mut family: Fnv, kind: &[u8], id: &str| {
        family.bytes(kind);
        let mut signature = Fnv::new();
        alike(id, &mut signature);
        (family.0, signature.0, false)
    };
    // A record's field whose value is a place (`"posn": "pkg/a.go:33:17",`): a
    // diagnostic too.
    if field_name(trimmed).is_some() && record_place(rest) {
        family.bytes(b"@field");
        return Some((family.0, signature(rest), true));
    }
    // A line led by a bracketed status (`[       OK ] Suite.Test (0 ms)`, `[INFO]`): of
    // one family, signed by the status alone (the tests' names vary).
    if let Some(tag) = bracket_status(trimmed) {
        return Some(by(family, b"[]", tag));
    }
    // A line led by a rule's id (`no-changed-when:`, `name[casing]:`): of one family
    // whatever the id, which signs it.
    if let Some(id) = rule_label(first) {
        return Some(by(family, b"rule", id));
    }
    // A line led by a code (`W2001 Parameter …`, `E3012 …`): of one family whatever
    // the code, which signs it.
    if is_code(first.trim_end_matches(':')) {
        family.bytes(b"code");
        return Some((family.0, signature(trimmed), false));
    }
    None
}

/// A line led by a symbol (a word of one to four characters, none a letter or a
/// digit): its family among such lines at its indent, and the symbol's signature.
fn status(line: &str) -> Option<(u64, u64)> {
    let trimmed = line.trim_start();
    let first = trimmed.split(char::is_whitespace).next()?;
    // One letter alone is a symbol too (miette's `x` for an error, beside `!`).
    let letter = first.len() == 1 && first.as_bytes()[0].is_ascii_alphabetic();
    if first.is_empty()
        || first.chars().count() > 4
        || (first.chars().any(char::is_alphanumeric) && !letter)
    {
        return None;
    }
    Some(by_word(b"status", indent_of(line), first))
}

/// The family `kind` at `indent`, and the signature of `word` in it.
fn by_word(kind: &[u8], indent: usize, word: &str) -> (u64, u64) {
    let mut family = Fnv::new();
    family.bytes(kind);
    family.bytes(&indent.to_le_bytes());
    let mut signature = Fnv::new();
    signature.bytes(word.as_bytes());
    (family.0, signature.0)
}

/// A heading over the failures of a test run, in a line of its own: `Failures:`
/// (RSpec, Jasmine), `FAILURES` (pytest), `3 failing` (Mocha), `Failed tests:`.
fn is_failures_heading(trimmed: &str) -> bool {
    if trimmed.len() > 60 {
        return false;
    }
    let deco = |c: char| "=-_*#:[] ".contains(c);
    let text = trimmed.trim_matches(deco);
    let text = text
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    [
        "Failures",
        "FAILURES",
        "failures",
        "Failed tests",
        "Failing tests",
        "FAILED TESTS",
        "Failed Tests",
        "failing",
        "Errors",
        "ERRORS",
    ]
    .contains(&text)
}

/// A line led by a log record's level (`WARNING -  …`, `2026-01-02 10:00:01 ERROR …`,
/// `[warn] …`: among its first three words): its family among such lines at its
/// indent, and the level's signature. One `WARNING` among 400 `DEBUG`.
fn level(line: &str) -> Option<(u64, u64)> {
    const LEVELS: &[&str] = &[
        "TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "SEVERE", "FATAL",
        "CRITICAL",
    ];
    let trimmed = line.trim_start();
    let found = trimmed.split_whitespace().take(3).find_map(|word| {
        let word = word.trim_matches(|c: char| !c.is_ascii_alphabetic());
        LEVELS.iter().find(|l| l.eq_ignore_ascii_case(word))
    })?;
    Some(by_word(b"level", indent_of(line), found))
}

/// A word that names a file or a place in one: `src/a.py:3:1:`, `Dockerfile:12` (not
/// a record that holds one: `{"file":"a/b.go"`).
fn is_place(word: &str) -> bool {
    word.starts_with(|c: char| c.is_alphanumeric() || "./~_\\".contains(c))
        && (word.contains('/')
            || word.contains('\\')
            || word
                .split_once(':')
                .is_some_and(|(_, after)| after.starts_with(|c: char| c.is_ascii_digit())))
}

/// The rule id a line opens with, as a label: `no-changed-when:`,
/// `syntax-check[unknown-module]:` (a word of two parts or more, joined by `-`, `_` or
/// a bracket; not `Severity:`).
fn rule_label(first: &str) -> Option<&str> {
    let id = first.strip_suffix(':')?;
    let ok = (3..=64).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_alphabetic())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_[]".contains(&b))
        && id.bytes().any(|b| b"-_[".contains(&b));
    ok.then_some(id)
}

/// The status a line opens with in brackets: `OK` of `[       OK ] …`, `INFO` of
/// `[INFO] …`, `45%` of `[ 45%] …` (a word of a test's outcome or a severity, or a
/// share; not a task's name, ant's `[junit]`, whose lines differ by their text).
pub(super) fn bracket_status(trimmed: &str) -> Option<&str> {
    let head = trimmed.get(..trimmed.len().min(18))?;
    let inner = head.strip_prefix('[')?.split(']').next()?;
    let tag = inner.trim();
    let status = is_severity(tag)
        || ["run", "debug", "trace", "done", "skip"]
            .iter()
            .any(|w| w.eq_ignore_ascii_case(tag));
    let share = !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_digit() || b == b'%');
    (head.len() > inner.len() + 1 && (status || share)).then_some(tag)
}

/// Whether a record's value is a place in a file, with its line: `"pkg/a.go:33:17",`.
fn record_place(value: &str) -> bool {
    let value = value.trim().trim_end_matches(',').trim_matches(['"', '\'']);
    !value.contains(char::is_whitespace)
        && value.split_once(':').is_some_and(|(file, after)| {
            names_file(file) && after.starts_with(|c: char| c.is_ascii_digit())
        })
}

/// The codes a line holds, else its text made alike.
fn signature(rest: &str) -> u64 {
    let mut codes = Fnv::new();
    let mut any = false;
    let mut severities = Fnv::new();
    // A record's severity inside it, even a number (`{"code":"E1","severity":2,…`).
    let inner = inner_severity(rest);
    for word in rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if is_code(word) {
            codes.bytes(word.as_bytes());
            codes.byte(b' ');
            any = true;
        } else if is_severity(word) {
            severities.bytes(word.as_bytes());
            severities.byte(b' ');
        }
    }
    // With a code, the severities said beside it (`"severity":"error"`), a record's
    // inside it too.
    if let Some(value) = inner {
        severities.bytes(value.as_bytes());
    }
    codes.bytes(&severities.0.to_le_bytes());
    if let Some(id) = closing_id(rest) {
        codes.byte(b'#');
        alike(id, &mut codes);
        any = true;
    }
    if any {
        return codes.0;
    }
    let mut text = Fnv::new();
    let cut = &rest[..crate::render::floor_char_boundary(rest, 160)];
    // A record's severity is not made alike, even a number: `"severity": 0` among
    // many `"severity": 1`.
    if is_severity_field(cut) {
        let field = cut.split(',').next().unwrap_or(cut);
        text.bytes(field.as_bytes());
        return text.0;
    }
    alike(&unquoted(cut, cut.len() < rest.len()), &mut text);
    // The severities it says past the cut too (a one-line record's `"severity":"ERROR"`
    // after its fields).
    for word in rest[cut.len()..].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if is_severity(word) {
            text.bytes(word.as_bytes());
            text.byte(b' ');
        }
    }
    if let Some(value) = inner {
        text.bytes(value.as_bytes());
    }
    text.0
}

/// The value of the first severity field inside a record's text: a `"severity"`,
/// even a number (`{"ruleId":"x","severity":2,` gives `2`), or a `"level"` or a
/// `"priority"` that is a word (not a number, which may count anything).
fn inner_severity(text: &str) -> Option<&str> {
    ["\"severity\":", "\"level\":", "\"priority\":"]
        .iter()
        .filter_map(|field| {
            let at = text.find(field)? + field.len();
            let value = &text[at..];
            let end = value.find([',', '}']).unwrap_or(value.len()).min(24);
            let value = value[..crate::render::floor_char_boundary(value, end)].trim();
            let word = value.trim_matches('"');
            let said = field.starts_with("\"severity")
                || (!word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic()));
            said.then_some((at, value))
        })
        .min()
        .map(|(_, value)| value)
}

/// The name of the field a record's line opens with (`"severity": 0,` and
/// `severity: 0` give `severity`).
fn field_name(text: &str) -> Option<&str> {
    let text = text.trim_start().trim_start_matches(['"', '\'']);
    let name = &text[..text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len())];
    let after = text[name.len()..].trim_start_matches(['"', '\'']);
    (!name.is_empty() && after.starts_with(':')).then_some(name)
}

/// Whether a record's line gives its severity as error or worse: `"severity": "error",`.
pub fn record_says_error(text: &str) -> bool {
    let text = text.trim();
    is_severity_field(text)
        && text
            .split_once(':')
            .map(|(_, value)| value.trim().trim_end_matches(',').trim_matches(['"', '\'']))
            .is_some_and(|value| {
                ["error", "fatal", "critical", "blocker"]
                    .iter()
                    .any(|w| w.eq_ignore_ascii_case(value))
            })
}

/// Whether a record's line gives its severity.
fn is_severity_field(text: &str) -> bool {
    field_name(text).is_some_and(|name| {
        ["severity", "level", "priority"]
            .iter()
            .any(|f| f.eq_ignore_ascii_case(name))
    })
}

/// An error code: one to five capitals and two to five digits (`E1101`, `RF02`,
/// `SC2086`, `DL3008`, `B602`, `TS2322`).
pub(super) fn is_code(word: &str) -> bool {
    let letters = word.bytes().take_while(u8::is_ascii_uppercase).count();
    let digits = word.len() - letters;
    (1..=5).contains(&letters)
        && (2..=5).contains(&digits)
        && word[letters..].bytes().all(|b| b.is_ascii_digit())
}

/// The id a line ends with, in parentheses or brackets: `(id-unique)`,
/// `[layout.spacing]`.
fn closing_id(rest: &str) -> Option<&str> {
    let end = rest.trim_end();
    let (open, close) = match end.as_bytes().last()? {
        b')' => ('(', ')'),
        b']' => ('[', ']'),
        _ => return None,
    };
    let inner = &end[end.rfind(open)? + 1..end.len() - close.len_utf8()];
    let ok = (2..=64).contains(&inner.len())
        && inner.bytes().any(|b| b.is_ascii_lowercase())
        && inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:-".contains(&b));
    ok.then_some(inner)
}

/// Hashes `text` with whitespace runs as one space and numbers alike: a run of digits
/// not right after a capital is `0` (`line 12`, `product_042`, `chapter14`; not `E1101`,
/// not a share, `75%`).
fn alike(text: &str, hash: &mut Fnv) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut last = 0u8;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if last != b' ' {
                hash.byte(b' ');
                last = b' ';
            }
            continue;
        }
        if b.is_ascii_digit() && !last.is_ascii_uppercase() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            // A share is said as it is: `0%` among `75%` (coverage), `100%
            // confidence` among `60%`.
            if bytes.get(i) == Some(&b'%') {
                hash.bytes(&bytes[start..i]);
                last = b'%';
                continue;
            }
            hash.byte(b'0');
            last = b'0';
            continue;
        }
        hash.byte(b);
        last = b;
        i += 1;
    }
}

/// `text` with each quoted word (`'x'`, `"x"`, `` `x` ``, closed on the line, up to
/// 80 bytes) as `Q`, but a severity or an outcome (`"error"`, `'High'`): what a
/// record's field says of it. Of a text `cut` short, a value whose double quote the cut
/// left open is `Q` too.
fn unquoted(text: &str, cut: bool) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\'', '"', '`']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['\'', '"', '`']) {
        let quote = rest[at..].chars().next().unwrap_or('"');
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.find(quote).filter(|&n| n <= 80) {
            Some(n) if is_severity(&after[..n]) => {
                out.push_str(&rest[at..at + n + 2]);
                rest = &after[n + 1..];
            }
            Some(n) => {
                out.push('Q');
                rest = &after[n + 1..];
            }
            // A double quote that opens a value (`"message":"eval() on…`), not an
            // apostrophe (`the customer's`).
            None if cut
                && quote == '"'
                && after.len() <= 80
                && (at == 0 || rest[..at].ends_with([':', '=', '[', '(', ',', ' '])) =>
            {
                out.push('Q');
                rest = "";
            }
            None => {
                out.push(quote);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// A word that says how bad a finding is, or how a test went.
fn is_severity(word: &str) -> bool {
    const WORDS: &[&str] = &[
        "error",
        "errors",
        "warning",
        "warn",
        "info",
        "information",
        "note",
        "hint",
        "fatal",
        "critical",
        "high",
        "medium",
        "low",
        "major",
        "minor",
        "blocker",
        "severe",
        "convention",
        "refactor",
        "style",
        "failure",
        "failed",
        "fail",
        "passed",
        "pass",
        "ok",
        "skipped",
        "undefined",
        "pending",
    ];
    word.len() <= 12 && WORDS.iter().any(|w| w.eq_ignore_ascii_case(word))
}
