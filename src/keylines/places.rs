//! The places lines name (`src/parse.c:12:5`, `test/x.test.js:37`): each distinct one,
//! how many times it was named and the line that named it first.
//!
//! A tool no rule knows may print its errors in lines no rule picks, among many alike:
//! what it still does, whatever it is, is name the file and line of each. The overflow
//! view lists the places named only in lines it leaves out, the rarest first, so that
//! a run's few errors among its many warnings are named even when their lines are not
//! shown.
//!
//! Read in the start of the lines the odd pass reads (its first lines), in bounded
//! memory.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use super::pattern;

/// Distinct places kept, at most; past them, only those kept are counted.
const MAX_PLACES: usize = 4096;
/// Bytes of one place, at most (a longer one is not a place).
const PLACE_BYTES: usize = 200;

/// A place, how many times lines named it, and the line that named it first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub text: String,
    pub count: u64,
    pub first: u64,
}

#[derive(Debug, Default)]
pub(super) struct Places {
    index: HashMap<String, usize>,
    places: Vec<Place>,
}

impl Places {
    /// Counts the places `text` (line `line`) names. `text` is the start of a line
    /// that goes on (`cut`): a place at its very end may be cut short, and is left out
    /// (`a.js:1234` is not `a.js:12`).
    pub(super) fn read(&mut self, text: &str, line: u64, cut: bool) {
        if !names_a_line(text.as_bytes()) {
            return;
        }
        for found in place().find_iter(text) {
            if found.len() > PLACE_BYTES || (cut && found.end() == text.len()) {
                continue;
            }
            let found = found.as_str();
            match self.index.get(found) {
                Some(&at) => self.places[at].count += 1,
                None if self.places.len() < MAX_PLACES => {
                    self.index.insert(found.to_owned(), self.places.len());
                    self.places.push(Place {
                        text: found.to_owned(),
                        count: 1,
                        first: line,
                    });
                }
                None => {}
            }
        }
    }

    /// The places, the rarest first, then in the order they were first named.
    pub(super) fn finish(self) -> Vec<Place> {
        let mut places = self.places;
        places.sort_by_key(|p| (p.count, p.first));
        places
    }
}

/// A `:` then a digit somewhere: the places' mark, looked for before the rule runs.
fn names_a_line(text: &[u8]) -> bool {
    memchr::memchr_iter(b':', text).any(|at| text.get(at + 1).is_some_and(u8::is_ascii_digit))
}

/// A file with an extension, then its line, and maybe its column.
fn place() -> &'static Regex {
    static PLACE: OnceLock<Regex> = OnceLock::new();
    PLACE.get_or_init(|| {
        pattern::regex(r"[\w./-]*\w\.[A-Za-z]\w*:\d+(:\d+)?").expect("a valid rule")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Vec<Place> {
        let mut places = Places::default();
        for (n, line) in lines.iter().enumerate() {
            places.read(line, n as u64 + 1, false);
        }
        places.finish()
    }

    /// tape's failures name their place in `at:` lines among the many places of the
    /// stack frames every failure repeats.
    #[test]
    fn each_place_once_the_rarest_first() {
        let places = read(&[
            "    at: Test.<anonymous> (/work/test/invoices.test.js:37:5)",
            "      at Test.run (node_modules/tape/lib/test.js:126:28)",
            "      at Test.run (node_modules/tape/lib/test.js:126:28)",
            "    at: Test.<anonymous> (/work/test/prices.test.js:37:5)",
            "ok 12 prices round to the cent",
        ]);
        let texts: Vec<(&str, u64, u64)> = places
            .iter()
            .map(|p| (p.text.as_str(), p.count, p.first))
            .collect();
        assert_eq!(
            texts,
            [
                ("/work/test/invoices.test.js:37:5", 1, 1),
                ("/work/test/prices.test.js:37:5", 1, 4),
                ("node_modules/tape/lib/test.js:126:28", 2, 2),
            ]
        );
    }

    #[test]
    fn times_versions_and_plain_text_name_no_place() {
        let places = read(&[
            "ok 1 - parses in 12.5s at 10:42:07",
            "node v20.11.1: 40 passed",
            "see https://example.org/docs for more",
            "src/a.c:12: error: unknown type name 'foo'",
        ]);
        assert_eq!(places.len(), 1, "{places:?}");
        assert_eq!(places[0].text, "src/a.c:12");
    }

    #[test]
    fn memory_is_bounded() {
        let mut places = Places::default();
        for n in 0..(MAX_PLACES as u64 + 100) {
            places.read(&format!("src/m{n}.c:{n}: warning: unused"), n + 1, false);
        }
        places.read("src/m1.c:1: warning: unused", 9999, false);
        let places = places.finish();
        assert_eq!(places.len(), MAX_PLACES);
        assert!(
            places
                .iter()
                .any(|p| p.text == "src/m1.c:1" && p.count == 2)
        );
    }

    /// The start of a long line may end inside a place: that place is not taken for
    /// a shorter one.
    #[test]
    fn a_place_cut_by_the_end_of_what_is_read_is_left_out() {
        let mut places = Places::default();
        places.read("at (test/cart.test.js:12", 1, true);
        places.read("at (test/cart.test.js:12", 2, false);
        places.read("see src/a.c:3 then (test/tax.test.js:4", 3, true);
        let texts: Vec<String> = places.finish().into_iter().map(|p| p.text).collect();
        assert_eq!(texts, ["test/cart.test.js:12", "src/a.c:3"]);
    }
}
