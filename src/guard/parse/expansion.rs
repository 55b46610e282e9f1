//! Expansions: `$(..)`, backticks, `$((..))`, `$[..]`, `${..}`, `$NAME`, and the
//! data (arithmetic, subscripts) scanned only for the substitutions in it.

use super::{End, MAX_DEPTH, Parser, Word, parse_chars};

/// The marks of [`Parser::matching`]'s scans for `)` and for `]`.
const PARENS: u8 = 1;
const BRACKETS: u8 = 2;

impl Parser<'_> {
    /// At `$` or a backtick: parses `$(..)`, backticks, `$((..))`, `$[..]`, `${..}`
    /// and `$NAME`, recording an expansion in `word`. Returns false, consuming
    /// nothing, when the `$` is a plain character.
    pub(super) fn substitution(&mut self, word: &mut Word, quoted: bool) -> bool {
        if self.depth >= MAX_DEPTH {
            self.out.too_deep = true;
            self.i = self.s.len();
            return true;
        }
        self.depth += 1;
        let parsed = self.expansion(word, quoted);
        self.depth -= 1;
        parsed
    }

    pub(super) fn expansion(&mut self, word: &mut Word, quoted: bool) -> bool {
        if self.peek() == Some('`') {
            self.backticks(quoted);
            word.expansion(quoted, !quoted);
            return true;
        }
        match self.peek_at(1) {
            Some('(') => {
                // Arithmetic always expands to a number; a substitution may be empty.
                let arithmetic = self.peek_at(2) == Some('(') && self.arithmetic(3);
                if !arithmetic {
                    self.bump(2);
                    self.nested(End::Paren);
                }
                word.expansion(quoted, !quoted && !arithmetic);
            }
            Some('[') => {
                let close = self.matching(self.i + 2, '[', ']');
                self.bump(2);
                self.substitutions_until(close.unwrap_or(self.s.len()));
                self.bump(1);
                word.expansion(quoted, false);
            }
            Some('{') => {
                self.bump(2);
                self.parameter(word, quoted);
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.bump(1);
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.bump(1);
                }
                word.expansion(quoted, !quoted);
            }
            Some(c @ ('0'..='9' | '@' | '*' | '#' | '?' | '$' | '!' | '-')) => {
                self.bump(2);
                word.positional |= c.is_ascii_digit() || matches!(c, '@' | '*');
                word.expansion(quoted, !quoted || c == '@');
            }
            _ => return false,
        }
        true
    }

    /// The rest of a `${…}` after `${`. The text of `${v:-alt}`, `${v-alt}`,
    /// `${v:=alt}`, `${v=alt}`, `${v:+alt}` and `${v+alt}` is read as part of the word
    /// and counts as literal; whatever else is inside is data, but its substitutions
    /// run.
    fn parameter(&mut self, word: &mut Word, quoted: bool) {
        let all = self.parameter_name();
        word.positional |= std::mem::take(&mut self.positional_name);
        word.expansion(quoted, !quoted || all);
        let colon = usize::from(self.peek() == Some(':'));
        let alternative = matches!(self.peek_at(colon), Some('-' | '=' | '+'));
        if alternative {
            self.bump(colon + 1);
        }
        let mut data = Word::default();
        self.parameter_rest(if alternative { word } else { &mut data }, quoted);
    }

    /// The name of a `${…}` and its subscript, which is data. True for `@` and
    /// `[@]`, which may expand to no word at all.
    fn parameter_name(&mut self) -> bool {
        let start = self.i;
        while self.peek().is_some_and(|c| {
            c.is_ascii_alphanumeric() || c == '_' || (self.i == start && "@*#?$!-".contains(c))
        }) {
            self.bump(1);
        }
        let name = &self.s[start..self.i];
        let mut all = name == ['@'];
        let positional = name == ['*'] || !name.is_empty() && name.iter().all(char::is_ascii_digit);
        self.positional_name = all || positional;
        if self.peek() == Some('[') {
            all |= self.starts_with("[@]");
            let close = self.matching(self.i + 1, '[', ']');
            self.bump(1);
            self.substitutions_until(close.unwrap_or(self.s.len()));
            self.bump(1);
        }
        all
    }

    /// The rest of a `${…}` up to its `}`, its text read into `text` as quoted; the
    /// substitutions in it run.
    fn parameter_rest(&mut self, text: &mut Word, quoted: bool) {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                '}' if depth == 0 => {
                    self.bump(1);
                    return;
                }
                '}' => depth -= 1,
                '{' => depth += 1,
                '\\' => {
                    if let Some(next) = self.peek_at(1) {
                        text.literal(next, true);
                    }
                    self.bump(2);
                    continue;
                }
                '\'' if !quoted => {
                    self.bump(1);
                    self.single_quoted(text);
                    continue;
                }
                '"' => {
                    self.bump(1);
                    self.double_quoted(text);
                    continue;
                }
                // A `$` that starts nothing is text.
                '$' | '`' if self.substitution(text, quoted) => continue,
                _ => {}
            }
            text.literal(c, true);
            self.bump(1);
        }
    }

    /// A backtick substitution: its text is unescaped as bash does (`\\`, `` \` ``,
    /// `\$`, and `\"` inside double quotes), then parsed as a script of its own.
    fn backticks(&mut self, quoted: bool) {
        self.bump(1);
        let mut script = std::mem::take(&mut self.spare.chars);
        while let Some(c) = self.peek() {
            self.bump(1);
            match c {
                '`' => break,
                '\\' => match self.peek() {
                    Some(next @ ('\\' | '`' | '$')) => {
                        script.push(next);
                        self.bump(1);
                    }
                    Some('"') if quoted => {
                        script.push('"');
                        self.bump(1);
                    }
                    _ => script.push('\\'),
                },
                c => script.push(c),
            }
        }
        let inner = parse_chars(
            script,
            self.depth + 1,
            self.base_depth,
            &mut *self.visitor,
            &mut self.spare,
        );
        self.merge(inner);
    }

    /// At `((` (`open` = 2) or `$((` (`open` = 3): when the first `(`'s body closes
    /// with `))`, it is arithmetic and the parser moves past it; otherwise bash reads
    /// a subshell, and so does the caller. Returns whether it was arithmetic.
    pub(super) fn arithmetic(&mut self, open: usize) -> bool {
        let body = self.i + open;
        let Some(close) = self.matching(body, '(', ')') else {
            return false;
        };
        if self.s.get(close + 1) != Some(&')') {
            return false;
        }
        self.i = body;
        self.substitutions_until(close);
        self.i = close + 2;
        true
    }

    /// The index of the `close` that balances one `open` already passed, starting at
    /// `from`; quotes and escapes are skipped. `open` is `(` or `[`.
    ///
    /// A scan that finds none reads to the end of the text, and the parser may ask
    /// again from each construct it opens on the way (`$(($((…`, `a[;a[;…`): what
    /// such a scan learnt is kept in `unclosed`, so the text is read once, not once
    /// a question.
    pub(super) fn matching(&mut self, from: usize, open: char, close: char) -> Option<usize> {
        let pair = if open == '(' { PARENS } else { BRACKETS };
        let found = self.balance(from, open, close, pair, |_, _| {}).ok();
        if found.is_none() {
            self.mark_unclosed(from, open, close, pair);
        }
        found
    }

    /// The scan of [`Parser::matching`]: the index of the balancing `close`, or the
    /// depth where the scan ended without one, at the end of the text or at a position
    /// where none is known to follow. `visit` gets each position the scan reads a
    /// character at, outside quotes and escapes, with the depth there.
    fn balance(
        &self,
        from: usize,
        open: char,
        close: char,
        pair: u8,
        mut visit: impl FnMut(usize, usize),
    ) -> Result<usize, usize> {
        let mut depth = 1usize;
        let mut k = from;
        while let Some(&c) = self.s.get(k) {
            if self.unclosed.get(k).is_some_and(|marks| marks & pair != 0) {
                return Err(depth);
            }
            visit(k, depth);
            match c {
                '\\' => k += 1,
                '\'' => {
                    k += 1;
                    while self.s.get(k).is_some_and(|&q| q != '\'') {
                        k += 1;
                    }
                }
                '"' => {
                    k += 1;
                    while let Some(&q) = self.s.get(k) {
                        match q {
                            '\\' => k += 1,
                            '"' => break,
                            _ => {}
                        }
                        k += 1;
                    }
                }
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(k);
                    }
                }
                _ => {}
            }
            k += 1;
        }
        Err(depth)
    }

    /// After a scan from `from` found no balancing `close`: marks the positions it
    /// read where a scan of its own would find none either, those after which the
    /// depth never falls below its depth there.
    fn mark_unclosed(&mut self, from: usize, open: char, close: char, pair: u8) {
        let mut read = Vec::new();
        let Err(mut floor) =
            self.balance(from, open, close, pair, |k, depth| read.push((k, depth)))
        else {
            return;
        };
        if self.unclosed.is_empty() {
            self.unclosed = vec![0; self.s.len()];
        }
        for &(k, depth) in read.iter().rev() {
            if floor >= depth {
                self.unclosed[k] |= pair;
            }
            floor = floor.min(depth);
        }
    }

    /// Scans data up to `end` (exclusive) for the substitutions in it, which run.
    pub(super) fn substitutions_until(&mut self, end: usize) {
        let mut sink = Word::default();
        while self.i < end {
            match self.peek() {
                Some('\\') => self.bump(2),
                Some('\'') => {
                    self.bump(1);
                    while self.i < end && self.peek() != Some('\'') {
                        self.bump(1);
                    }
                    self.bump(1);
                }
                Some('$' | '`') => {
                    if !self.substitution(&mut sink, true) {
                        self.bump(1);
                    }
                }
                _ => self.bump(1),
            }
        }
        self.i = self.i.max(end);
    }
}
