//! The rules' regular expressions, with ASCII classes: `\w`, `\d`, `\s` and `\b` (and
//! their negations) mean `[0-9A-Za-z_]`, `[0-9]`, `[\t\n\v\f\r ]` and the boundary of
//! those words, whatever else the line holds, as the rules were written for.
//!
//! The `regex` crate gives those classes their Unicode meaning; [`ascii`] spells them
//! as its ASCII classes instead. Its engine runs a lazy DFA over a line: a flood of
//! error lines, each of which the rules read, costs microseconds a line.

use regex::Regex;

/// Compiles `pattern` with ASCII classes.
pub(super) fn regex(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&ascii(pattern))
}

/// `pattern` with each Perl class spelled as an ASCII class: `\w` as `[[:word:]]`
/// (`[:word:]` within a class), `\W` as `[^[:word:]]`, `\b` as `(?-u:\b)`. For the
/// rules' own patterns, which use neither `(?x)` comments nor `\b{…}`, `\<` or `\>`,
/// and put no `[` at the end of a range.
pub(super) fn ascii(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + pattern.len() / 2);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(escaped) = chars.next() else {
                    out.push(c);
                    break;
                };
                push_escape(&mut out, escaped, in_class);
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.next_if_eq(&'^').is_some() {
                    out.push('^');
                }
                // A `]` first in a class is itself.
                if chars.next_if_eq(&']').is_some() {
                    out.push(']');
                }
            }
            // A named class within a class (`[[:alpha:]_]`) is copied whole.
            '[' if chars.peek() == Some(&':') => {
                out.push('[');
                while let Some(c) = chars.next() {
                    out.push(c);
                    if c == ':' && chars.next_if_eq(&']').is_some() {
                        out.push(']');
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            _ => out.push(c),
        }
    }
    out
}

/// `\escaped`, spelled with ASCII classes where it names a Perl class or a boundary.
fn push_escape(out: &mut String, escaped: char, in_class: bool) {
    let name = match escaped.to_ascii_lowercase() {
        'w' => "word",
        'd' => "digit",
        's' => "space",
        'b' if !in_class => {
            out.push_str(if escaped == 'b' {
                r"(?-u:\b)"
            } else {
                r"(?-u:\B)"
            });
            return;
        }
        _ => {
            out.push('\\');
            out.push(escaped);
            return;
        }
    };
    let negated = escaped.is_ascii_uppercase();
    match (in_class, negated) {
        (true, false) => out.push_str(&format!("[:{name}:]")),
        (true, true) => out.push_str(&format!("[:^{name}:]")),
        (false, false) => out.push_str(&format!("[[:{name}:]]")),
        (false, true) => out.push_str(&format!("[^[:{name}:]]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_spelled_as_ascii_classes() {
        assert_eq!(ascii(r"\w+\d\s"), "[[:word:]]+[[:digit:]][[:space:]]");
        assert_eq!(ascii(r"\W\D\S"), "[^[:word:]][^[:digit:]][^[:space:]]");
        assert_eq!(ascii(r"[\w./-]"), "[[:word:]./-]");
        assert_eq!(ascii(r"[^\s\d]"), "[^[:space:][:digit:]]");
        assert_eq!(ascii(r"[\W]"), "[[:^word:]]");
        assert_eq!(ascii(r"\bx\B"), r"(?-u:\b)x(?-u:\B)");
    }

    #[test]
    fn other_escapes_and_classes_are_kept() {
        for kept in [
            r"\.\(\)\[\]\\\x22\t\n",
            r"[]a]",
            r"[^]a]",
            r"[[:alpha:]_]",
            r"a[\]\\]b",
            r"(a|b)*?",
            "é.ö",
        ] {
            assert_eq!(ascii(kept), kept);
        }
        // `\\w` is a backslash, then `w`.
        assert_eq!(ascii(r"\\w"), r"\\w");
    }

    /// The classes hold ASCII alone, as the rules were written for: letters of other
    /// scripts, other digits and other spaces are none of theirs.
    #[test]
    fn the_classes_are_ascii_whatever_the_line_holds() {
        let word = regex(r"^\w+$").unwrap();
        assert!(word.is_match("snake_Case_09"));
        assert!(!word.is_match("été"));
        assert!(regex(r"^\W+$").unwrap().is_match("é—δ"));
        assert!(!regex(r"\d").unwrap().is_match("٣ ᠕"));
        assert!(!regex(r"\s").unwrap().is_match("\u{2000}\u{a0}"));
        assert!(regex(r"\S").unwrap().is_match("\u{a0}"));
        // An ASCII boundary: `é` is not a word's letter, so `x` stands alone.
        assert!(regex(r"\bx\b").unwrap().is_match("éxé"));
        assert!(
            regex(r"[\w.]+:\d+")
                .unwrap()
                .is_match("src/α.rs main.rs:12")
        );
        // `.` still takes one whole character.
        assert_eq!(regex(r"^.$").unwrap().find("é").map(|m| m.len()), Some(2));
    }
}
