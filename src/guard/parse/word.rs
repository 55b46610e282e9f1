//! Words: quotes, escapes and `$'…'`, with what the guard needs to know of each word
//! (its text with expansions taken as empty, its glob pattern, where it may split).

use super::{End, Parser};

/// One word of a simple command as the guard sees it.
#[derive(Debug, Default, Clone)]
pub(in crate::guard) struct Word {
    /// The word after quote removal, with every expansion taken as empty and the text of
    /// `${v:-alt}`, `${v:=alt}` and `${v:+alt}` counted as literal.
    pub text: String,
    /// The same text for glob and brace matching, once a quoted character has made it
    /// differ from `text` (empty until then): quoted characters are escaped with `\`.
    pattern: String,
    /// `pattern` holds the pattern: a quoted character that globs or braces read
    /// made it differ from `text`.
    escaped: bool,
    /// The length of the literal text before the first unquoted expansion, where bash
    /// may split the word (`rm${IFS}x`).
    split_at: Option<usize>,
    /// An unquoted `*`, `?` or `[`.
    pub glob: bool,
    /// An unquoted `{`: brace expansion may apply.
    pub brace: bool,
    /// A positional parameter is expanded in it (`"$@"`, `$1`, `${*}`): a function
    /// whose body runs such a word runs its arguments.
    pub positional: bool,
    /// What the process substitutions `<(…)` in it print, when that is known: a file
    /// a command may read as a script (`bash <(…)`, `BASH_ENV=<(…)`).
    pub fed: Option<String>,
    /// `NAME=value`, `NAME+=value` or `NAME[i]=value` (see [`is_assignment`]), told
    /// once the word joins a command.
    pub(super) assignment: bool,
    /// Any quoting or expansion at all; a word without is a candidate keyword.
    quoted: bool,
    expanded: bool,
    /// Something that cannot expand to no word: literal text, quotes, `"$v"`.
    solid: bool,
}

impl Word {
    /// An assignment, `NAME=value`, `NAME+=value` or `NAME[i]=value`, by its text.
    pub fn is_assignment(&self) -> bool {
        self.assignment
    }

    /// No quotes and no expansions: the word can be a shell keyword.
    pub fn is_plain(&self) -> bool {
        !self.quoted && !self.expanded
    }

    /// Made only of expansions that may leave no word at all (`$cmd`, `"$@"`).
    pub fn may_vanish(&self) -> bool {
        self.expanded && !self.solid
    }

    /// Made only of expansions, quoted or not (`$SHELL`, `"$cmd"`).
    pub fn is_computed(&self) -> bool {
        self.expanded && self.text.is_empty()
    }

    /// Its text is what bash uses, as written: no expansion, glob or brace in it.
    pub fn is_literal(&self) -> bool {
        !self.expanded && !self.glob && !self.brace
    }

    /// The literal text before the first unquoted expansion, where bash may split the
    /// word (`rm${IFS}x`).
    pub fn before_split(&self) -> Option<&str> {
        self.split_at.map(|at| &self.text[..at])
    }

    /// The text for glob and brace matching: quoted characters are escaped with `\`.
    pub fn pattern(&self) -> &str {
        if self.escaped {
            &self.pattern
        } else {
            &self.text
        }
    }

    /// Empties the word, keeping the storage of its text and pattern for reuse.
    pub(super) fn clear(&mut self) {
        let mut text = std::mem::take(&mut self.text);
        let mut pattern = std::mem::take(&mut self.pattern);
        text.clear();
        pattern.clear();
        *self = Word {
            text,
            pattern,
            ..Word::default()
        };
    }

    pub(super) fn literal(&mut self, c: char, quoted: bool) {
        self.solid = true;
        if quoted {
            self.quoted = true;
            if escaped_in_pattern(c) {
                if !self.escaped {
                    // Most words never hold such a character: their pattern is their text.
                    self.escaped = true;
                    self.pattern.clone_from(&self.text);
                }
                self.pattern.push('\\');
            }
        } else {
            self.glob |= matches!(c, '*' | '?' | '[');
            self.brace |= c == '{';
        }
        self.text.push(c);
        if self.escaped {
            self.pattern.push(c);
        }
    }

    /// Characters of the word, each as [`Word::literal`] takes it, at once.
    pub(super) fn literals(&mut self, run: &[char], quoted: bool) {
        let [first, rest @ ..] = run else {
            return;
        };
        if rest.is_empty() {
            return self.literal(*first, quoted);
        }
        self.solid = true;
        if quoted {
            self.quoted = true;
            if !self.escaped && run.iter().any(|&c| escaped_in_pattern(c)) {
                // Most words never hold such a character: their pattern is their text.
                self.escaped = true;
                self.pattern.clone_from(&self.text);
            }
        } else {
            self.glob |= run.iter().any(|c| matches!(c, '*' | '?' | '['));
            self.brace |= run.contains(&'{');
        }
        push_chars(&mut self.text, run);
        if self.escaped {
            for &c in run {
                if quoted && escaped_in_pattern(c) {
                    self.pattern.push('\\');
                }
                self.pattern.push(c);
            }
        }
    }

    /// An expansion: `may_vanish` when it can leave no word at all (unquoted `$v`,
    /// `"$@"`); unquoted, bash may split the word where it stands.
    pub(super) fn expansion(&mut self, quoted: bool, may_vanish: bool) {
        self.expanded = true;
        if !quoted && self.split_at.is_none() {
            self.split_at = Some(self.text.len());
        }
        if !may_vanish {
            self.solid = true;
        }
    }
}

impl Parser<'_> {
    /// Reads one word. Substitutions in it are parsed as commands of their own.
    pub(super) fn word(&mut self) -> Word {
        let mut word = self.spare.words.pop().unwrap_or_default();
        while let Some(c) = self.peek() {
            match c {
                '<' | '>' if self.peek_at(1) == Some('(') => self.process(&mut word, c),
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | ')' => break,
                '(' if is_assignment(&word.text) && word.text.ends_with('=') => {
                    self.array_literal(&mut word);
                }
                '(' if self.extglob_opens(&word) => self.extglob(&mut word),
                '(' => break,
                '[' if self.subscript_assignment(&word) => {}
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') | None => {}
                        Some(next) => word.literal(next, true),
                    }
                    self.bump(2);
                }
                '\'' => {
                    self.bump(1);
                    word.quoted = true;
                    word.solid = true;
                    self.single_quoted(&mut word);
                }
                '"' => {
                    self.bump(1);
                    self.double_quoted(&mut word);
                }
                '$' if self.peek_at(1) == Some('\'') => {
                    self.bump(2);
                    self.ansi_c(&mut word);
                }
                '$' if self.peek_at(1) == Some('"') => {
                    self.bump(2);
                    self.double_quoted(&mut word);
                }
                '$' | '`' => {
                    if !self.substitution(&mut word, false) {
                        word.literal(c, false);
                        self.bump(1);
                    }
                }
                _ => {
                    let end = self.run_end(self.i + 1, plain_in_word);
                    word.literals(&self.s[self.i..end], false);
                    self.i = end;
                }
            }
        }
        word
    }

    /// The end of the run of characters from `from` that `plain` accepts.
    fn run_end(&self, from: usize, plain: impl Fn(char) -> bool) -> usize {
        self.s[from..]
            .iter()
            .position(|&c| !plain(c))
            .map_or(self.s.len(), |n| from + n)
    }

    /// Reads one word that is data: a pattern, an operand, a target.
    pub(super) fn skip_word(&mut self) {
        let word = self.word();
        self.recycle(word);
    }

    /// A process substitution, `<(…)` or `>(…)`, at its `<` or `>`: a file name that
    /// cannot vanish. What a `<(…)` prints is kept, when the visitor can tell.
    fn process(&mut self, word: &mut Word, c: char) {
        self.bump(2);
        let printed = self.nested_printed(End::Paren);
        word.expanded = true;
        word.solid = true;
        if let Some(printed) = printed.filter(|_| c == '<') {
            match &mut word.fed {
                Some(fed) => {
                    fed.push('\n');
                    fed.push_str(&printed);
                }
                None => word.fed = Some(printed),
            }
        }
    }

    /// At `(`: whether it opens an extended glob, `@(…)`, `*(…)`, `+(…)`, `?(…)` or
    /// `!(…)`, when its `(` follows the letter unquoted and is not empty (`!` alone
    /// where a command starts is the keyword, before a subshell). Without `shopt -s extglob`
    /// bash refuses such a word, and runs nothing.
    fn extglob_opens(&self, word: &Word) -> bool {
        let Some(&before) = self.s.get(self.i.wrapping_sub(1)) else {
            return false;
        };
        let escaped = self.s.get(self.i.wrapping_sub(2)) == Some(&'\\');
        let letter = matches!(before, '@' | '*' | '+' | '?')
            || before == '!' && (word.text.len() > 1 || !self.at_command_start());
        letter && !escaped && word.text.ends_with(before) && self.peek_at(1) != Some(')')
    }

    /// An extended glob's group, `(a|b)`, at its `(`: part of the word's pattern; the
    /// substitutions in it run.
    fn extglob(&mut self, word: &mut Word) {
        word.glob = true;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                '\\' => {
                    if let Some(next) = self.peek_at(1) {
                        word.literal(next, true);
                    }
                    self.bump(2);
                }
                '\'' => {
                    self.bump(1);
                    word.quoted = true;
                    self.single_quoted(word);
                }
                '"' => {
                    self.bump(1);
                    self.double_quoted(word);
                }
                '$' | '`' if self.substitution(word, false) => {}
                c => {
                    word.literal(c, false);
                    self.bump(1);
                    depth = match c {
                        '(' => depth + 1,
                        ')' => depth - 1,
                        _ => depth,
                    };
                    if depth == 0 {
                        return;
                    }
                }
            }
        }
    }

    /// An array literal, `name=(a b c)`, at its `(`: its elements are data.
    fn array_literal(&mut self, word: &mut Word) {
        let close = self.matching(self.i + 1, '(', ')');
        let end = close.unwrap_or(self.s.len());
        self.bump(1);
        self.substitutions_until(end);
        self.bump(1);
        word.literal('(', true);
    }

    /// At `[` after a name at the start of a command: `name[subscript]=value` reads
    /// the subscript as arithmetic, so `a[1<<2]=x` has no heredoc in it.
    fn subscript_assignment(&mut self, word: &Word) -> bool {
        if !is_name(&word.text) || !word.is_plain() || !self.at_command_start() {
            return false;
        }
        let Some(close) = self.matching(self.i + 1, '[', ']') else {
            return false;
        };
        let after = self.s.get(close + 1..close + 3).unwrap_or(&[]);
        if !(after.first() == Some(&'=') || after == ['+', '=']) {
            return false;
        }
        self.bump(1);
        self.substitutions_until(close);
        self.i = close + 1;
        true
    }

    /// The rest of a single-quoted string, after its opening `'`.
    pub(super) fn single_quoted(&mut self, word: &mut Word) {
        let end = self.run_end(self.i, |c| c != '\'');
        word.literals(&self.s[self.i..end], true);
        self.i = end;
        self.bump(1);
    }

    /// The rest of a double-quoted string, after its opening `"`.
    pub(super) fn double_quoted(&mut self, word: &mut Word) {
        word.quoted = true;
        let before = (word.text.len(), word.solid, word.expanded);
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.bump(1);
                    break;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') | None => {}
                        Some(next @ ('$' | '`' | '"' | '\\')) => word.literal(next, true),
                        Some(next) => {
                            word.literal('\\', true);
                            word.literal(next, true);
                        }
                    }
                    self.bump(2);
                }
                '$' | '`' => {
                    if !self.substitution(word, true) {
                        word.literal(c, true);
                        self.bump(1);
                    }
                }
                _ => {
                    let end = self.run_end(self.i + 1, |c| !DOUBLE_QUOTED_SPECIAL.has(c));
                    word.literals(&self.s[self.i..end], true);
                    self.i = end;
                }
            }
        }
        // `""` is an empty word, not nothing; `"$@"` may be nothing.
        if (word.text.len(), word.solid, word.expanded) == before {
            word.solid = true;
        }
    }

    /// The rest of a `$'…'` string, with its escapes decoded as bash decodes them.
    fn ansi_c(&mut self, word: &mut Word) {
        word.quoted = true;
        word.solid = true;
        while let Some(c) = self.peek() {
            self.bump(1);
            match c {
                '\'' => return,
                '\\' => {
                    if let Some(decoded) = self.ansi_c_escape() {
                        word.literal(decoded, true);
                    }
                }
                c => word.literal(c, true),
            }
        }
    }

    /// One escape of `$'…'`, after its backslash.
    fn ansi_c_escape(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.bump(1);
        let simple = match c {
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\x0b',
            'c' => {
                let control = self.peek()?;
                self.bump(1);
                return char::from_u32(control as u32 & 0x1f);
            }
            '0'..='7' => {
                let mut value = c.to_digit(8)?;
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            self.bump(1);
                        }
                        None => break,
                    }
                }
                return char::from_u32(value & 0xff);
            }
            'x' => return self.hex_escape(2),
            'u' => return self.hex_escape(4),
            'U' => return self.hex_escape(8),
            other => other,
        };
        Some(simple)
    }

    fn hex_escape(&mut self, max: usize) -> Option<char> {
        let mut value = 0u32;
        let mut digits = 0;
        while digits < max {
            match self.peek().and_then(|d| d.to_digit(16)) {
                Some(d) => {
                    value = value.wrapping_mul(16).wrapping_add(d);
                    self.bump(1);
                    digits += 1;
                }
                None => break,
            }
        }
        if digits == 0 {
            return Some('\\');
        }
        char::from_u32(value)
    }
}

/// Appends characters to a string. Long runs of ASCII, as commands are made of, go
/// in as bytes, a block at a time, without encoding each character.
#[inline]
pub(super) fn push_chars(text: &mut String, run: &[char]) {
    if run.len() < 16 {
        text.extend(run);
    } else {
        push_blocks(text, run);
    }
}

fn push_blocks(text: &mut String, run: &[char]) {
    const BLOCK: usize = 64;
    let mut bytes = [0u8; BLOCK];
    text.reserve(run.len());
    for block in run.chunks(BLOCK) {
        if block.iter().all(char::is_ascii) {
            for (byte, &c) in bytes.iter_mut().zip(block) {
                *byte = c as u8;
            }
            if let Ok(ascii) = std::str::from_utf8(&bytes[..block.len()]) {
                text.push_str(ascii);
                continue;
            }
        }
        text.extend(block);
    }
}

/// A set of ASCII characters, one bit each: asked of every character of a word, a
/// bit test costs less than a jump to each character's case.
struct Chars(u128);

impl Chars {
    const fn of(chars: &str) -> Chars {
        let bytes = chars.as_bytes();
        let mut set = 0u128;
        let mut k = 0;
        while k < bytes.len() {
            set |= 1 << bytes[k];
            k += 1;
        }
        Chars(set)
    }

    fn has(&self, c: char) -> bool {
        (c as u32) < 128 && self.0 >> (c as u32) & 1 != 0
    }
}

/// The characters that globs or braces read: quoted, the pattern escapes them.
const PATTERN_SPECIAL: Chars = Chars::of("*?[]{},\\()|@+!");

/// The characters a word looks at again, as they come: blanks, operators, quotes,
/// escapes and expansions, and `(` and `[`, whose meaning depends on the word so far.
const WORD_SPECIAL: Chars = Chars::of(" \t\n;&|<>()[\\'\"$`");

/// The characters that end a run of a double-quoted string's text.
const DOUBLE_QUOTED_SPECIAL: Chars = Chars::of("\"\\$`");

/// A character that globs or braces read: quoted, the pattern escapes it.
pub(super) fn escaped_in_pattern(c: char) -> bool {
    PATTERN_SPECIAL.has(c)
}

/// Whether `word` reads a character as part of the word without looking at it
/// again.
pub(super) fn plain_in_word(c: char) -> bool {
    !WORD_SPECIAL.has(c)
}

/// `NAME=value`, `NAME+=value` or `NAME[i]=value`.
pub(in crate::guard) fn is_assignment(word: &str) -> bool {
    // Asked of nearly every word: what cannot start a name is told at once, and for a
    // short word a loop over its bytes costs less than a search set up for long ones.
    let bytes = word.as_bytes();
    if !bytes
        .first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
    {
        return false;
    }
    let eq = if word.len() < 32 {
        bytes.iter().position(|&b| b == b'=')
    } else {
        word.find('=')
    };
    let Some(eq) = eq else {
        return false;
    };
    let head = &bytes[..eq];
    let head = head.strip_suffix(b"+").unwrap_or(head);
    let name = head
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
        .unwrap_or(head.len());
    // The name, then nothing or a subscript.
    matches!(&head[name..], [] | [b'[', .., b']'])
}

/// A shell variable's name: a letter or `_`, then letters, digits and `_`.
fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
