//! Could a command word with brace expansion or glob characters name `rm`?
//!
//! Patterns come from the parser with quoted characters escaped by `\`. Brace
//! expansion runs first, as in bash; each result is then matched as a glob against
//! `rm`, its last path component against `rm` when it holds a `/`. Matching is
//! linear in the pattern: the only target is the two characters `rm`.

/// Results of brace expansion past which a word is refused rather than expanded.
const MAX_EXPANSIONS: usize = 256;

/// Bytes of a command name with globs or braces past which it is refused unread
/// (brace expansion is quadratic in the worst case); no real command name is near.
const MAX_PATTERN: usize = 4096;

/// Characters a bracket expression may span; no real command name comes near it.
const MAX_BRACKET: usize = 64;

/// True when some expansion of `pattern` is `rm` or a path ending in `/rm`.
pub(super) fn could_be_rm(pattern: &str) -> bool {
    if pattern.len() > MAX_PATTERN {
        return true;
    }
    let mut words = Vec::new();
    if !expand_braces(pattern, &mut words) {
        return true;
    }
    words.iter().any(|word| {
        let last = last_component(word);
        matches_rm(last)
    })
}

/// The text after the last unescaped `/`.
fn last_component(pattern: &str) -> &str {
    let mut start = 0;
    let mut chars = pattern.char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '/' => start = k + 1,
            _ => {}
        }
    }
    &pattern[start..]
}

/// Appends every brace expansion of `pattern` to `out`; false when there are too many.
fn expand_braces(pattern: &str, out: &mut Vec<String>) -> bool {
    let Some((open, close, alternatives)) = first_brace(pattern) else {
        out.push(pattern.to_owned());
        return out.len() <= MAX_EXPANSIONS;
    };
    let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
    alternatives
        .iter()
        .all(|alt| expand_braces(&format!("{head}{alt}{tail}"), out))
}

/// The first `{…}` that brace expansion applies to: its bounds and alternatives
/// (`{a,b}` lists, `{a..e}` character sequences).
fn first_brace(pattern: &str) -> Option<(usize, usize, Vec<String>)> {
    let bytes = pattern.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b'\\' => k += 2,
            b'{' => {
                if let Some(found) = brace_at(pattern, k) {
                    return Some(found);
                }
                k += 1;
            }
            _ => k += 1,
        }
    }
    None
}

fn brace_at(pattern: &str, open: usize) -> Option<(usize, usize, Vec<String>)> {
    let bytes = pattern.as_bytes();
    let mut depth = 0;
    let mut commas = vec![];
    let mut k = open + 1;
    while k < bytes.len() {
        match bytes[k] {
            b'\\' => k += 1,
            b'{' => depth += 1,
            b'}' if depth == 0 => {
                let inner = &pattern[open + 1..k];
                if commas.is_empty() {
                    return sequence(inner).map(|alts| (open, k, alts));
                }
                let mut alts = Vec::new();
                let mut from = open + 1;
                for &comma in &commas {
                    alts.push(pattern[from..comma].to_owned());
                    from = comma + 1;
                }
                alts.push(pattern[from..k].to_owned());
                return Some((open, k, alts));
            }
            b'}' => depth -= 1,
            b',' if depth == 0 => commas.push(k),
            _ => {}
        }
        k += 1;
    }
    None
}

/// `a..e` or `e..a` (letters): the characters between, both included.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let (from, to) = inner.split_once("..")?;
    let (mut from, mut to) = (single(from)?, single(to.split("..").next()?)?);
    if from > to {
        std::mem::swap(&mut from, &mut to);
    }
    Some((from..=to).map(String::from).collect())
}

fn single(text: &str) -> Option<char> {
    let mut chars = text.chars();
    let c = chars.next()?;
    (chars.next().is_none() && c.is_ascii_alphanumeric()).then_some(c)
}

/// One element of a glob.
enum Token {
    Char(char),
    Any,
    Star,
    /// `[…]`: its text between the brackets.
    Class(Vec<char>),
}

fn tokens(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        match chars[k] {
            '\\' => {
                if let Some(&c) = chars.get(k + 1) {
                    out.push(Token::Char(c));
                }
                k += 2;
                continue;
            }
            '*' => out.push(Token::Star),
            '?' => out.push(Token::Any),
            '[' => {
                // `]` right after `[`, `[!` or `[^` is a member, not the end. The scan
                // is bounded; a longer bracket is taken as any one character.
                let limit = (k + MAX_BRACKET).min(chars.len());
                let mut end = k + 1;
                if matches!(chars.get(end), Some('!' | '^')) {
                    end += 1;
                }
                if chars.get(end) == Some(&']') {
                    end += 1;
                }
                while end < limit && chars[end] != ']' {
                    if chars[end] == '[' && chars.get(end + 1) == Some(&':') {
                        let close = (end + 2..limit.saturating_sub(1))
                            .find(|&j| chars[j..].starts_with(&[':', ']']));
                        if let Some(close) = close {
                            end = close + 2;
                            continue;
                        }
                    }
                    end += 1;
                }
                if end < limit {
                    out.push(Token::Class(chars[k + 1..end].to_vec()));
                    k = end + 1;
                    continue;
                }
                if limit < chars.len() {
                    out.push(Token::Any);
                    k += 1;
                    continue;
                }
                out.push(Token::Char('['));
            }
            c => out.push(Token::Char(c)),
        }
        k += 1;
    }
    out
}

fn class_matches(class: &[char], c: char) -> bool {
    let (negated, members) = match class.first() {
        Some('!' | '^') => (true, &class[1..]),
        _ => (false, class),
    };
    let mut found = false;
    let mut k = 0;
    while k < members.len() {
        if members[k] == '[' && members.get(k + 1) == Some(&':') {
            // A character class such as `[:alpha:]`: unknown ones match (fail closed).
            let rest: String = members[k + 2..].iter().collect();
            if let Some(end) = rest.find(":]") {
                found |= match &rest[..end] {
                    "alpha" | "alnum" | "lower" | "graph" | "print" | "word" => true,
                    "upper" | "digit" | "space" | "blank" | "punct" | "cntrl" | "xdigit" => false,
                    _ => true,
                };
                k += 2 + rest[..end].chars().count() + 2;
                continue;
            }
        }
        if members.get(k + 1) == Some(&'-') && k + 2 < members.len() {
            found |= (members[k]..=members[k + 2]).contains(&c);
            k += 3;
            continue;
        }
        found |= members[k] == c;
        k += 1;
    }
    found != negated
}

/// Does the glob `pattern` match `rm`? Tracks which prefixes of `rm` (0, 1 or 2
/// characters) the pattern read so far can have matched.
fn matches_rm(pattern: &str) -> bool {
    const TARGET: [char; 2] = ['r', 'm'];
    let mut reach = [true, false, false];
    for token in tokens(pattern) {
        let mut next = [false; 3];
        for at in 0..3 {
            if !reach[at] {
                continue;
            }
            match &token {
                Token::Star => next[at..].iter_mut().for_each(|r| *r = true),
                _ if at == 2 => {}
                Token::Any => next[at + 1] = true,
                Token::Char(c) => next[at + 1] |= *c == TARGET[at],
                Token::Class(class) => next[at + 1] |= class_matches(class, TARGET[at]),
            }
        }
        reach = next;
        if reach == [false; 3] {
            return false;
        }
    }
    reach[2]
}

#[cfg(test)]
mod tests {
    use super::could_be_rm;

    #[test]
    fn globs_and_braces() {
        for yes in [
            "rm",
            "r?",
            "r*",
            "*",
            "/usr/bin/r[m]",
            "/bin/r[l-n]",
            "{rm,x}",
            "{x,rm}",
            "{,rm}",
            "r{m,x}",
            "{q..s}m",
            "/usr/*/rm",
            "[[:alpha:]]m",
            "r[!x]",
            "??",
        ] {
            assert!(could_be_rm(yes), "{yes}");
        }
        for no in [
            "rmdir",
            "r\\*",
            "\\*",
            "[",
            "[ab]m",
            "r[!m]",
            "{rm}x",
            "???",
            "/usr/bin/rm?",
            "x*",
            "{a,b}",
        ] {
            assert!(!could_be_rm(no), "{no}");
        }
    }
}
