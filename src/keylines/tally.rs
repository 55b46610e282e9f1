//! Diagnostics of one shape, `path:line[:col]: severity: message [id]`, tallied by
//! kind (the severity word and the id). When many lines of that shape all carry the
//! same severity word, the word says nothing of which matter: the kinds seen rarely
//! among them (one `[memleak]` among 140 `[unusedFunction]`) are key lines, and the
//! tally by kind is handed on so that an answer can show it whole, in one line.

use super::{KeyLine, Kind, Numbered, Seen};

/// Kinds kept, at most; the diagnostics of other kinds are counted.
const MAX_KINDS: usize = 64;
/// A kind is rare when at most this many lines give it...
const RARE_COUNT: u64 = 3;
/// ... and they are at most one in this many diagnostics of the shape.
const RARE_SHARE: u64 = 20;
/// Rare kinds made key lines, at most (the rarest first).
const MAX_RARE: usize = 20;
/// Distinct severity words kept: past one, the rule of rare kinds does not apply.
const MAX_SEVERITIES: usize = 4;

/// The diagnostics of the shape, by kind.
#[derive(Debug, Default)]
pub(super) struct Tally {
    total: u64,
    kinds: Vec<Entry>,
    severities: Vec<String>,
}

/// One kind: how many lines gave it, and the first [`RARE_COUNT`] of them.
#[derive(Debug)]
struct Entry {
    name: String,
    count: u64,
    lines: Vec<Numbered>,
}

/// A line of the shape: its severity word, its id, and whether [`super::classify`]
/// finds it plain (a warning, a note) for certain.
struct Shape<'a> {
    severity: &'a str,
    id: Option<&'a str>,
    plain: bool,
}

/// `path:line[:col]: severity[code]: message [id]`: the severity, and the id (the
/// code after the severity word, else the bracketed word that ends the line). Read
/// by hand, not by a regular expression: every warning of a long build comes here.
fn shape(line: &str) -> Option<Shape<'_>> {
    let text = line.trim_start();
    let colon = text.find(':').filter(|&at| at > 0)?;
    if text[..colon].contains(char::is_whitespace) {
        return None;
    }
    let mut rest = digits(&text[colon + 1..])?;
    if let Some(after) = rest.strip_prefix(':').and_then(digits) {
        rest = after;
    }
    let rest = rest.strip_prefix(':')?;
    let spaced = rest.starts_with(' ');
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let word = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .filter(|&n| n > 0)?;
    let (severity, mut rest) = rest.split_at(word);
    // gcc's `fatal error:` is one severity
    let fatal_error = rest.starts_with(" error");
    rest = rest.strip_prefix(" error").unwrap_or(rest);
    let (mut code, mut plain_code) = (None, true);
    if let Some(inner) = rest.strip_prefix('[') {
        let close = inner.find(']')?;
        code = Some(&inner[..close]).filter(|c| is_id(c));
        plain_code = inner[..close]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        rest = &inner[close + 1..];
    }
    rest.strip_prefix(": ")?;
    // What classify's rules would make of it: a warning, a note, a help or an info
    // line is plain unless the line is also a locator or a count of warnings.
    let plain = matches!(severity, "warning" | "note" | "help" | "info")
        && !fatal_error
        && plain_code
        && spaced
        && text.len() == line.len()
        && !text[..colon].ends_with(".py")
        && !text.contains("generated")
        && !text.trim_end().ends_with("':");
    let end = text.trim_end();
    let id = end
        .strip_suffix(']')
        .and_then(|e| e.rfind('[').map(|at| &e[at + 1..]))
        .filter(|id| is_id(id));
    Some(Shape {
        severity,
        id: code.or(id),
        plain,
    })
}

/// `text` past the digits it starts with (one at least).
fn digits(text: &str) -> Option<&str> {
    let n = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    (n > 0).then(|| &text[n..])
}

/// A kind's id: a word of letters, digits and `_.:/=+-`.
fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:/=+-".contains(c))
}

impl Tally {
    /// Counts a line (one holding a trigger word) when it has the shape. True when
    /// it is plain for certain (see [`Shape`]): a long build's warnings need not be
    /// classified one by one.
    pub(super) fn add(&mut self, seen: &Seen<'_>) -> bool {
        let Some(Shape {
            severity,
            id,
            plain,
        }) = shape(seen.text)
        else {
            return false;
        };
        debug_assert!(!plain || super::classify(seen.text) == super::Class::Plain);
        self.total += 1;
        if self.severities.len() < MAX_SEVERITIES && !self.severities.iter().any(|s| s == severity)
        {
            self.severities.push(severity.to_owned());
        }
        let Some(id) = id else {
            return plain;
        };
        // Few kinds: looked for one by one, with no string made for the line.
        let found = self.kinds.iter().position(|k| {
            k.name.len() == severity.len() + id.len() + 3
                && k.name.starts_with(severity)
                && k.name[severity.len()..].starts_with(" [")
                && k.name.ends_with(']')
                && &k.name[severity.len() + 2..k.name.len() - 1] == id
        });
        let at = match found {
            Some(at) => at,
            None if self.kinds.len() < MAX_KINDS => {
                self.kinds.push(Entry {
                    name: format!("{severity} [{id}]"),
                    count: 0,
                    lines: Vec::new(),
                });
                self.kinds.len() - 1
            }
            None => return plain,
        };
        let entry = &mut self.kinds[at];
        entry.count += 1;
        if entry.count <= RARE_COUNT {
            entry.lines.push(seen.numbered(seen.text.trim_end()));
        }
        plain
    }

    /// Ends the tally: the lines of the rare kinds join `keys` (in line order) when
    /// every diagnostic of the shape had the same severity word. Returns the kinds
    /// (when two or more), the count of diagnostics, and how many key lines joined.
    pub(super) fn finish(self, keys: &mut Vec<KeyLine>) -> (Vec<Kind>, u64, u64) {
        if self.kinds.len() < 2 {
            return (Vec::new(), self.total, 0);
        }
        let mut added = 0;
        if self.severities.len() == 1 {
            let mut rare: Vec<&Entry> = self
                .kinds
                .iter()
                .filter(|k| k.count <= RARE_COUNT && k.count * RARE_SHARE <= self.total)
                .collect();
            rare.sort_by_key(|k| (k.count, k.lines[0].line));
            for line in rare.iter().take(MAX_RARE).flat_map(|k| &k.lines) {
                if keys.iter().any(|k| k.first.line == line.line) {
                    continue;
                }
                let at = keys.partition_point(|k| k.first.line < line.line);
                keys.insert(
                    at,
                    KeyLine {
                        first: line.clone(),
                        count: 1,
                        last_line: line.line,
                        locators: Vec::new(),
                    },
                );
                added += 1;
            }
        }
        let mut kinds: Vec<Kind> = self
            .kinds
            .into_iter()
            .map(|k| Kind {
                name: k.name,
                count: k.count,
                first: k.lines[0].line,
            })
            .collect();
        kinds.sort_by_key(|k| (std::cmp::Reverse(k.count), k.first));
        (kinds, self.total, added)
    }
}
