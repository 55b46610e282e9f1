//! Diagnostics of one shape, `path:line[:col]: severity: message [id]`, tallied by
//! kind (the severity word and the id). When many lines of that shape all carry the
//! same severity word, the word says nothing of which matter: the kinds seen rarely
//! among them (one `[memleak]` among 140 `[unusedFunction]`) are key lines, and the
//! tally by kind is handed on so that an answer can show it whole, in one line.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex_lite::Regex;

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
    index: HashMap<String, usize>,
    severities: Vec<String>,
}

/// One kind: how many lines gave it, and the first [`RARE_COUNT`] of them.
#[derive(Debug)]
struct Entry {
    name: String,
    count: u64,
    lines: Vec<Numbered>,
}

/// `path:line[:col]: severity[code]: message [id]`: the severity, and the id (the
/// code after the severity word, else the bracketed word that ends the line).
fn shape() -> &'static Regex {
    static SHAPE: OnceLock<Regex> = OnceLock::new();
    SHAPE.get_or_init(|| {
        Regex::new(concat!(
            r"^\s*[^\s:]+:\d+(:\d+)?: ?(?<sev>[A-Za-z]+( error)?)(\[(?<code>[^\]\s]+)\])?: ",
            r".*?(\[(?<id>[\w.:/=+-]+)\])?\s*$",
        ))
        .expect("a valid rule")
    })
}

impl Tally {
    /// Counts a line (one holding a trigger word) when it has the shape.
    pub(super) fn add(&mut self, seen: &Seen<'_>) {
        let Some(found) = shape().captures(seen.text) else {
            return;
        };
        self.total += 1;
        let severity = &found["sev"];
        if self.severities.len() < MAX_SEVERITIES && !self.severities.iter().any(|s| s == severity)
        {
            self.severities.push(severity.to_owned());
        }
        let Some(id) = found.name("code").or_else(|| found.name("id")) else {
            return;
        };
        let name = format!("{severity} [{}]", id.as_str());
        let at = match self.index.get(&name) {
            Some(&at) => at,
            None if self.kinds.len() < MAX_KINDS => {
                self.index.insert(name.clone(), self.kinds.len());
                self.kinds.push(Entry {
                    name,
                    count: 0,
                    lines: Vec::new(),
                });
                self.kinds.len() - 1
            }
            None => return,
        };
        let entry = &mut self.kinds[at];
        entry.count += 1;
        if entry.count <= RARE_COUNT {
            entry.lines.push(seen.numbered(seen.text.trim_end()));
        }
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
