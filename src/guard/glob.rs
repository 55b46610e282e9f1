//! Could a command word with brace expansion or glob characters name `rm`?
//!
//! Patterns come from the parser with quoted characters escaped by `\`. Brace
//! expansion runs first, as in bash; each result is then matched as a glob (extended
//! globs too: `@(r)m`, `+(r)m`) against `rm`, its last path component against `rm`
//! when it holds a `/`. Matching is linear in the pattern: the only target is the
//! two characters `rm`, and each token is a relation on the three places in it.

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
    /// An extended glob, `@(a|b)`: its letter and its alternatives.
    Group(char, Vec<Vec<Token>>),
}

/// Extended globs nested deeper than this are taken to match anything.
const MAX_GROUPS: usize = 32;

/// The tokens of `chars` from `k`, up to a `|` or `)` that ends an alternative of
/// the group `depth` deep (none at depth 0); `None` when nesting is too deep.
/// `open` turns false once a group is found never to close: no later one can, and
/// none is read again (which keeps this linear).
fn tokens(chars: &[char], k: &mut usize, depth: usize, open: &mut bool) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    while let Some(&c) = chars.get(*k) {
        match c {
            '|' | ')' if depth > 0 => return Some(out),
            '\\' => {
                if let Some(&c) = chars.get(*k + 1) {
                    out.push(Token::Char(c));
                }
                *k += 2;
                continue;
            }
            '@' | '*' | '+' | '?' | '!' if *open && chars.get(*k + 1) == Some(&'(') => {
                if depth >= MAX_GROUPS {
                    return None;
                }
                let at = *k;
                *k += 2;
                match group(chars, k, depth + 1, open)? {
                    Some(alternatives) => {
                        out.push(Token::Group(c, alternatives));
                        continue;
                    }
                    // Never closed: its characters are themselves.
                    None => {
                        *open = false;
                        *k = at;
                    }
                }
                out.push(if c == '*' {
                    Token::Star
                } else {
                    Token::Char(c)
                });
            }
            '*' => out.push(Token::Star),
            '?' => out.push(Token::Any),
            '[' => {
                *k = bracket(chars, *k, &mut out);
                continue;
            }
            c => out.push(Token::Char(c)),
        }
        *k += 1;
    }
    Some(out)
}

/// The alternatives of a group after its `(`, and `k` past its `)`; `Some(None)` when
/// it never closes.
fn group(
    chars: &[char],
    k: &mut usize,
    depth: usize,
    open: &mut bool,
) -> Option<Option<Vec<Vec<Token>>>> {
    let mut alternatives = Vec::new();
    loop {
        alternatives.push(tokens(chars, k, depth, open)?);
        match chars.get(*k) {
            Some('|') => *k += 1,
            Some(')') => {
                *k += 1;
                return Some(Some(alternatives));
            }
            _ => return Some(None),
        }
    }
}

/// A bracket expression at `chars[k]` (a `[`): pushes its token, returns where the
/// pattern goes on.
fn bracket(chars: &[char], k: usize, out: &mut Vec<Token>) -> usize {
    // `]` right after `[`, `[!` or `[^` is a member, not the end. The scan is
    // bounded; a longer bracket is taken as any one character.
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
            let close =
                (end + 2..limit.saturating_sub(1)).find(|&j| chars[j..].starts_with(&[':', ']']));
            if let Some(close) = close {
                end = close + 2;
                continue;
            }
        }
        end += 1;
    }
    if end < limit {
        out.push(Token::Class(chars[k + 1..end].to_vec()));
        return end + 1;
    }
    if limit < chars.len() {
        out.push(Token::Any);
        return k + 1;
    }
    out.push(Token::Char('['));
    k + 1
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

/// The only target: `rm`.
const TARGET: [char; 2] = ['r', 'm'];

/// Which parts of `rm` a pattern matches, as a relation on the positions 0, 1 and
/// 2 between its characters: bit `j` of `relation[i]` is set when the pattern
/// matches the characters from `i` to `j`.
type Relation = [u8; 3];

const EMPTY: Relation = [0b001, 0b010, 0b100];
const ANYTHING: Relation = [0b111, 0b110, 0b100];

/// The relation of one token.
fn relation(token: &Token) -> Relation {
    let one = |matches: &dyn Fn(char) -> bool| {
        let mut out = [0; 3];
        for (at, &c) in TARGET.iter().enumerate() {
            if matches(c) {
                out[at] = 1 << (at + 1);
            }
        }
        out
    };
    match token {
        Token::Char(c) => one(&|t| t == *c),
        Token::Any => one(&|_| true),
        Token::Star => ANYTHING,
        Token::Class(class) => one(&|t| class_matches(class, t)),
        Token::Group(letter, alternatives) => {
            let mut any = [0; 3];
            for alternative in alternatives {
                union(&mut any, in_turn(alternative));
            }
            match letter {
                '@' => any,
                '?' => {
                    union(&mut any, EMPTY);
                    any
                }
                '+' => closure(any),
                '*' => {
                    let mut out = closure(any);
                    union(&mut out, EMPTY);
                    out
                }
                // `!(…)`: any text the alternatives do not match.
                _ => [0, 1, 2].map(|at| ANYTHING[at] & !any[at]),
            }
        }
    }
}

fn union(into: &mut Relation, other: Relation) {
    for (a, b) in into.iter_mut().zip(other) {
        *a |= b;
    }
}

/// `a` then `b`.
fn compose(a: Relation, b: Relation) -> Relation {
    a.map(|ends| {
        (0..3)
            .filter(|j| ends & (1 << j) != 0)
            .fold(0, |out, j| out | b[j])
    })
}

/// One or more times.
fn closure(once: Relation) -> Relation {
    let mut out = once;
    for _ in 0..2 {
        let more = compose(out, once);
        union(&mut out, more);
    }
    out
}

/// The tokens one after the other.
fn in_turn(tokens: &[Token]) -> Relation {
    tokens
        .iter()
        .fold(EMPTY, |so_far, token| compose(so_far, relation(token)))
}

/// Does the glob `pattern` (with extended globs) match `rm`?
fn matches_rm(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut k = 0;
    match tokens(&chars, &mut k, 0, &mut true) {
        Some(tokens) => in_turn(&tokens)[0] & 0b100 != 0,
        None => true,
    }
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
            "@(r)m",
            "/usr/bin/+(r)m",
            "?(r)m",
            "r*(x)m",
            "@(x|rm)",
            "!(x)",
            "r!(rm)",
            "@(r|@(q|m))@(m|)",
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
            "@(x)m",
            "!(rm)",
            "+(r)",
            "r\\@(m)",
            "@(rm",
        ] {
            assert!(!could_be_rm(no), "{no}");
        }
    }
}
