//! The guard's parser: a command string to the simple commands bash would start.
//!
//! It knows bash and nothing of `rm`: each simple command, once complete, goes to a
//! [`Visitor`], which may stop the parse.
//!
//! It follows bash's lexing where it decides what runs: quotes and escapes, `$'…'`,
//! parameter, command and arithmetic expansion (`$(( ))` that does not close with `))`
//! is a command substitution of a subshell, as in bash), backticks (unescaped, then
//! parsed again), process substitution, redirections, here-strings and heredocs,
//! `(( ))` arithmetic commands, `[[ … ]]`, and `case` clauses whose patterns are data.
//! Every construct is closed where bash closes it, so the lines after it are read as
//! commands again. Text that is data (heredoc bodies, patterns, `[[ ]]` operands,
//! arithmetic) is still scanned for the substitutions in it, which do run.

use std::ops::ControlFlow;

/// Nesting of substitutions and scripts beyond which a command is refused rather than
/// parsed; no real command comes near it, and it bounds the parser's recursion.
pub(super) const MAX_DEPTH: usize = 64;

/// One word of a simple command as the guard sees it.
#[derive(Debug, Default, Clone)]
pub(super) struct Word {
    /// The word after quote removal, with every expansion taken as empty and the text of
    /// `${v:-alt}`, `${v:=alt}` and `${v:+alt}` counted as literal.
    pub text: String,
    /// The same text for glob and brace matching: quoted characters are escaped with `\`.
    pub pattern: String,
    /// The literal text before the first unquoted expansion, where bash may split the
    /// word (`rm${IFS}x`).
    pub before_split: Option<String>,
    /// An unquoted `*`, `?` or `[`.
    pub glob: bool,
    /// An unquoted `{`: brace expansion may apply.
    pub brace: bool,
    /// Any quoting or expansion at all; a word without is a candidate keyword.
    quoted: bool,
    expanded: bool,
    /// Something that cannot expand to no word: literal text, quotes, `"$v"`.
    solid: bool,
}

impl Word {
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

    fn literal(&mut self, c: char, quoted: bool) {
        self.text.push(c);
        self.solid = true;
        if quoted {
            self.quoted = true;
            if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\') {
                self.pattern.push('\\');
            }
        } else {
            self.glob |= matches!(c, '*' | '?' | '[');
            self.brace |= c == '{';
        }
        self.pattern.push(c);
    }

    /// An expansion: `may_vanish` when it can leave no word at all (unquoted `$v`,
    /// `"$@"`); unquoted, bash may split the word where it stands.
    fn expansion(&mut self, quoted: bool, may_vanish: bool) {
        self.expanded = true;
        if !quoted && self.before_split.is_none() {
            self.before_split = Some(self.text.clone());
        }
        if !may_vanish {
            self.solid = true;
        }
    }
}

/// A simple command: its words and, for `<<<`, heredocs and `echo … |`, the text on
/// its stdin.
#[derive(Debug, Default, Clone)]
struct Simple {
    words: Vec<Word>,
    stdin: Option<String>,
    /// Where it stands in the text, for messages.
    span: (usize, usize),
}

/// A complete simple command, as the parser hands it to its [`Visitor`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Command<'a> {
    pub words: &'a [Word],
    /// The text a here-string, a heredoc or `echo … |` gives it.
    pub stdin: Option<&'a str>,
    /// Its nesting: substitutions and scripts it runs are one deeper.
    pub depth: usize,
    /// Where it stands in the text.
    source: &'a [char],
}

impl Command<'_> {
    /// The command as written, redirections included.
    pub fn source(&self) -> String {
        self.source.iter().collect()
    }
}

/// What the parser gives each simple command to.
pub(super) trait Visitor {
    /// A simple command, once complete (its heredocs read). Commands come as bash
    /// completes them: a substitution's before the command it stands in, and a
    /// command with a heredoc after the heredoc's body. `Break` ends the parse of the
    /// text at hand; a parse it is nested in may still go on a little (past the
    /// arithmetic it stood in) and give more commands, which the visitor may ignore.
    fn command(&mut self, command: &Command<'_>) -> ControlFlow<()>;

    /// What a command with these words writes to a pipe, when the visitor can tell:
    /// the next command of the pipeline gets it as its stdin.
    fn printed(&mut self, _words: &[Word]) -> Option<String> {
        None
    }
}

/// How a parse ended.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    /// The visitor stopped it.
    pub stopped: bool,
    /// Nesting passed [`MAX_DEPTH`]: the rest of the text was not read.
    pub too_deep: bool,
}

/// Parses `text` at nesting `depth`, giving each simple command to `visitor` as soon
/// as it is complete: nothing is kept, and parsing ends when the visitor says so.
pub(super) fn parse(text: &str, depth: usize, visitor: &mut dyn Visitor) -> Parsed {
    let mut parser = Parser::new(text, depth, visitor);
    if depth > MAX_DEPTH {
        parser.out.too_deep = true;
        return parser.out;
    }
    parser.commands(End::Eof);
    parser.flush();
    // Heredocs never closed: their commands are judged with what was read.
    parser.heredoc_bodies();
    parser.out
}

/// What ends the command list being parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    /// The `)` of `$(..)`, `<(..)`, `>(..)` or a subshell.
    Paren,
    /// `;;`, `;&`, `;;&` or `esac`: one item of a `case`.
    CaseItem,
}

/// Why a command list stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Eof,
    Paren,
    CaseSeparator,
    Esac,
}

/// Words that may stand before a command without being one, and after which a
/// command may start a compound (`(( ))`, `[[ ]]`, `case`).
const PREFIX_KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time", "fi", "done",
];

/// The simple command being read.
#[derive(Debug, Default)]
struct Current {
    words: Vec<Word>,
    stdin: Option<String>,
    start: Option<usize>,
    end: usize,
}

/// A heredoc whose body starts after the next newline.
#[derive(Debug)]
struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    /// A quoted delimiter makes the body plain data; otherwise substitutions in it run.
    quoted: bool,
    /// The simple command that reads it, once that command is complete.
    reader: Option<usize>,
}

struct Parser<'v> {
    s: Vec<char>,
    i: usize,
    depth: usize,
    visitor: &'v mut dyn Visitor,
    out: Parsed,
    cur: Current,
    heredocs: Vec<Heredoc>,
    /// Complete commands waiting for their heredoc bodies.
    waiting: Vec<Simple>,
    /// What the last complete command printed, as the visitor sees it.
    printed: Option<String>,
}

impl<'v> Parser<'v> {
    fn new(text: &str, depth: usize, visitor: &'v mut dyn Visitor) -> Parser<'v> {
        Parser {
            s: text.chars().collect(),
            i: 0,
            depth,
            visitor,
            out: Parsed::default(),
            cur: Current::default(),
            heredocs: Vec::new(),
            waiting: Vec::new(),
            printed: None,
        }
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.s.get(self.i + ahead).copied()
    }

    fn bump(&mut self, n: usize) {
        self.i = (self.i + n).min(self.s.len());
    }

    fn starts_with(&self, text: &str) -> bool {
        text.chars()
            .enumerate()
            .all(|(k, c)| self.peek_at(k) == Some(c))
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.bump(1),
                Some('\\') if self.peek_at(1) == Some('\n') => self.bump(2),
                _ => return,
            }
        }
    }

    /// Blanks, newlines (reading any heredoc bodies due) and comments.
    fn skip_space(&mut self) {
        loop {
            self.skip_blanks();
            match self.peek() {
                Some('\n') => {
                    self.bump(1);
                    self.heredoc_bodies();
                }
                Some('#') => self.comment(),
                _ => return,
            }
        }
    }

    fn comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.bump(1);
        }
    }

    /// Ends the current simple command: visits it, or sets it aside until the bodies
    /// of its heredocs are read.
    fn flush(&mut self) {
        let current = std::mem::take(&mut self.cur);
        let pending = self.heredocs.iter().any(|doc| doc.reader.is_none());
        if current.words.is_empty() {
            for doc in &mut self.heredocs {
                doc.reader.get_or_insert(usize::MAX);
            }
            self.printed = None;
            return;
        }
        let start = current.start.unwrap_or(0);
        let simple = Simple {
            words: current.words,
            stdin: current.stdin,
            span: (start, current.end.max(start)),
        };
        self.printed = self.visitor.printed(&simple.words);
        if pending {
            let reader = self.waiting.len();
            for doc in &mut self.heredocs {
                doc.reader.get_or_insert(reader);
            }
            self.waiting.push(simple);
        } else {
            self.visit(&simple);
        }
    }

    fn visit(&mut self, simple: &Simple) {
        if self.out.stopped {
            return;
        }
        let (start, end) = simple.span;
        let command = Command {
            words: &simple.words,
            stdin: simple.stdin.as_deref(),
            depth: self.depth,
            source: &self.s[start..end],
        };
        if self.visitor.command(&command).is_break() {
            self.stop();
        }
    }

    /// The visitor has seen enough: nothing after this is read.
    fn stop(&mut self) {
        self.out.stopped = true;
        self.i = self.s.len();
    }

    /// Takes how a parse of other text ended (a backtick body, a heredoc body).
    fn merge(&mut self, inner: Parsed) {
        self.out.too_deep |= inner.too_deep;
        if inner.stopped {
            self.stop();
        }
    }

    fn push_word(&mut self, start: usize, word: Word) {
        self.cur.start.get_or_insert(start);
        self.cur.end = self.i;
        self.cur.words.push(word);
    }

    /// True when the next word would be in command position: only assignments and
    /// prefix keywords stand before it.
    fn at_command_start(&self) -> bool {
        self.cur
            .words
            .iter()
            .all(|w| is_assignment(&w.text) || w.is_plain() && PREFIX_KEYWORDS.contains(&&*w.text))
    }

    fn commands(&mut self, end: End) -> Stop {
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                return Stop::Eof;
            };
            match c {
                '\n' => {
                    self.flush();
                    self.bump(1);
                    self.heredoc_bodies();
                }
                '#' => self.comment(),
                ';' => {
                    self.flush();
                    if self.starts_with(";;&") {
                        self.bump(3);
                    } else if self.starts_with(";;") || self.starts_with(";&") {
                        self.bump(2);
                    } else {
                        self.bump(1);
                        continue;
                    }
                    if end == End::CaseItem {
                        return Stop::CaseSeparator;
                    }
                }
                '&' if self.peek_at(1) == Some('>') => self.redirection(),
                '&' | '|' => {
                    // `&`, `&&`, `|`, `||`, `|&`.
                    let pipe = c == '|' && self.peek_at(1) != Some('|');
                    self.flush();
                    self.bump(1);
                    if matches!(self.peek(), Some('&' | '|')) {
                        self.bump(1);
                    }
                    if pipe {
                        self.cur.stdin = self.printed.take();
                    }
                }
                '(' => {
                    let arithmetic_start =
                        self.at_command_start() || self.cur.words.last().is_some_and(is_for);
                    if self.peek_at(1) == Some('(') && arithmetic_start && self.arithmetic(2) {
                        continue;
                    }
                    self.flush();
                    self.bump(1);
                    self.nested(End::Paren);
                }
                ')' => {
                    self.flush();
                    self.bump(1);
                    if end == End::Paren {
                        return Stop::Paren;
                    }
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.bump(2);
                    self.nested(End::Paren);
                }
                '<' | '>' => self.redirection(),
                _ => {
                    let start = self.i;
                    let command_start = self.at_command_start();
                    let word = self.word();
                    if self.i == start {
                        self.bump(1);
                        continue;
                    }
                    let is_fd = matches!(self.peek(), Some('<' | '>'))
                        && word.is_plain()
                        && (word.text.chars().all(|c| c.is_ascii_digit())
                            || word.text.starts_with('{') && word.text.ends_with('}'));
                    if is_fd {
                        continue;
                    }
                    if command_start && word.is_plain() {
                        match word.text.as_str() {
                            "case" => {
                                self.flush();
                                if self.case_clause() == Stop::Eof {
                                    return Stop::Eof;
                                }
                                continue;
                            }
                            "[[" => {
                                self.flush();
                                self.double_bracket();
                                continue;
                            }
                            "esac" if end == End::CaseItem => {
                                self.flush();
                                return Stop::Esac;
                            }
                            _ => {}
                        }
                    }
                    self.push_word(start, word);
                }
            }
        }
    }

    /// A nested command list, bounded in depth. The current simple command is set
    /// aside while it is parsed.
    fn nested(&mut self, end: End) {
        if self.depth >= MAX_DEPTH {
            self.out.too_deep = true;
            self.i = self.s.len();
            return;
        }
        let saved = std::mem::take(&mut self.cur);
        self.depth += 1;
        self.commands(end);
        self.depth -= 1;
        self.flush();
        self.cur = saved;
    }

    /// At `((` (`open` = 2) or `$((` (`open` = 3): when the first `(`'s body closes
    /// with `))`, it is arithmetic and the parser moves past it; otherwise bash reads
    /// a subshell, and so does the caller. Returns whether it was arithmetic.
    fn arithmetic(&mut self, open: usize) -> bool {
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
    /// `from`; quotes and escapes are skipped.
    fn matching(&self, from: usize, open: char, close: char) -> Option<usize> {
        let mut depth = 1usize;
        let mut k = from;
        while let Some(&c) = self.s.get(k) {
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
                        return Some(k);
                    }
                }
                _ => {}
            }
            k += 1;
        }
        None
    }

    /// Scans data up to `end` (exclusive) for the substitutions in it, which run.
    fn substitutions_until(&mut self, end: usize) {
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

    /// A redirection operator and its target, which is data (a here-string's text is
    /// kept as the command's stdin). It belongs to the command's source text.
    fn redirection(&mut self) {
        self.cur.start.get_or_insert(self.i);
        self.redirection_operator();
        self.cur.end = self.i;
    }

    fn redirection_operator(&mut self) {
        if self.starts_with("<<<") {
            self.bump(3);
            self.skip_blanks();
            let word = self.word();
            self.cur.stdin = Some(word.text);
            return;
        }
        if self.starts_with("<<") {
            self.bump(2);
            let strip_tabs = self.peek() == Some('-');
            if strip_tabs {
                self.bump(1);
            }
            self.skip_blanks();
            let start = self.i;
            let delimiter = self.word().text;
            let quoted = self.s[start..self.i]
                .iter()
                .any(|c| matches!(c, '\'' | '"' | '\\'));
            self.heredocs.push(Heredoc {
                delimiter,
                strip_tabs,
                quoted,
                reader: None,
            });
            return;
        }
        // `<`, `>`, `>>`, `>|`, `<>`, `<&`, `>&`, `&>`, `&>>`.
        if self.peek() == Some('&') {
            self.bump(1);
        }
        self.bump(1);
        if matches!(self.peek(), Some('>' | '&' | '|')) {
            self.bump(1);
        }
        self.skip_blanks();
        if !matches!(
            self.peek(),
            None | Some('\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
        ) {
            self.word();
        }
    }

    /// Reads the bodies of the heredocs opened on the line that just ended. The body
    /// of an unquoted one is scanned for substitutions once it is whole, as bash does.
    fn heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while self.i < self.s.len() {
                let end = self.s[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.s.len(), |n| self.i + n);
                let line: String = self.s[self.i..end].iter().collect();
                self.i = (end + 1).min(self.s.len());
                let line = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == doc.delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if !doc.quoted {
                let mut scan = Parser::new(&body, self.depth, &mut *self.visitor);
                scan.substitutions_until(scan.s.len());
                let inner = scan.out;
                self.merge(inner);
            }
            if let Some(command) = doc.reader.and_then(|reader| self.waiting.get_mut(reader)) {
                command.stdin = Some(body);
            }
        }
        for simple in std::mem::take(&mut self.waiting) {
            self.visit(&simple);
        }
    }

    /// `case WORD in [(]PATTERN[|PATTERN]…) COMMANDS ;; … esac`, after `case`.
    fn case_clause(&mut self) -> Stop {
        self.skip_space();
        self.word();
        self.skip_space();
        self.word(); // `in`
        loop {
            self.skip_space();
            while self.peek() == Some(';') {
                self.bump(1);
                self.skip_space();
            }
            let Some(c) = self.peek() else {
                return Stop::Eof;
            };
            if self.starts_with("esac") && self.ends_word(4) {
                self.bump(4);
                return Stop::Esac;
            }
            if c == ')' {
                // No pattern starts with `)`: leave it to the enclosing list.
                return Stop::Paren;
            }
            if c == '(' {
                self.bump(1);
            }
            // The pattern list, up to its `)`.
            loop {
                self.skip_space();
                match self.peek() {
                    None => return Stop::Eof,
                    Some(')') => {
                        self.bump(1);
                        break;
                    }
                    Some('|') => self.bump(1),
                    Some(_) => {
                        let start = self.i;
                        self.word();
                        if self.i == start {
                            self.bump(1);
                        }
                    }
                }
            }
            match self.commands(End::CaseItem) {
                Stop::CaseSeparator => {}
                Stop::Esac => return Stop::Esac,
                stop => return stop,
            }
        }
    }

    /// True when the `n` characters ahead end a word.
    fn ends_word(&self, n: usize) -> bool {
        matches!(
            self.peek_at(n),
            None | Some(' ' | '\t' | '\n' | ';' | '&' | '|' | ')' | '<' | '>')
        )
    }

    /// `[[ … ]]` after `[[`: operators, parentheses and patterns are data; only the
    /// substitutions in it run.
    fn double_bracket(&mut self) {
        loop {
            self.skip_space();
            let Some(c) = self.peek() else {
                return;
            };
            if self.starts_with("]]") && self.ends_word(2) {
                self.bump(2);
                return;
            }
            match c {
                '(' | ')' | '|' | '&' | '<' | '>' | ';' => self.bump(1),
                _ => {
                    let start = self.i;
                    self.word();
                    if self.i == start {
                        self.bump(1);
                    }
                }
            }
        }
    }

    /// Reads one word. Substitutions in it are parsed as commands of their own.
    fn word(&mut self) -> Word {
        let mut word = Word::default();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | ')' => break,
                '(' if is_assignment(&word.text) && word.text.ends_with('=') => {
                    // An array literal: `name=(a b c)`; its elements are data.
                    let close = self.matching(self.i + 1, '(', ')');
                    let end = close.unwrap_or(self.s.len());
                    self.bump(1);
                    self.substitutions_until(end);
                    self.bump(1);
                    word.literal('(', true);
                }
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
                    while let Some(q) = self.peek() {
                        self.bump(1);
                        if q == '\'' {
                            break;
                        }
                        word.literal(q, true);
                    }
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
                c => {
                    word.literal(c, false);
                    self.bump(1);
                }
            }
        }
        word
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

    /// The rest of a double-quoted string, after its opening `"`.
    fn double_quoted(&mut self, word: &mut Word) {
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
                c => {
                    word.literal(c, true);
                    self.bump(1);
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

    /// At `$` or a backtick: parses `$(..)`, backticks, `$((..))`, `$[..]`, `${..}`
    /// and `$NAME`, recording an expansion in `word`. Returns false, consuming
    /// nothing, when the `$` is a plain character.
    fn substitution(&mut self, word: &mut Word, quoted: bool) -> bool {
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

    fn expansion(&mut self, word: &mut Word, quoted: bool) -> bool {
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
        let start = self.i;
        while self.peek().is_some_and(|c| {
            c.is_ascii_alphanumeric() || c == '_' || (self.i == start && "@*#?$!-".contains(c))
        }) {
            self.bump(1);
        }
        let name: String = self.s[start..self.i].iter().collect();
        let mut all = name == "@";
        if self.peek() == Some('[') {
            all |= self.starts_with("[@]");
            let close = self.matching(self.i + 1, '[', ']');
            self.bump(1);
            self.substitutions_until(close.unwrap_or(self.s.len()));
            self.bump(1);
        }
        word.expansion(quoted, !quoted || all);
        let colon = usize::from(self.peek() == Some(':'));
        let alternative = matches!(self.peek_at(colon), Some('-' | '=' | '+'));
        if alternative {
            self.bump(colon + 1);
        }
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
                    if let Some(next) = self.peek_at(1).filter(|_| alternative) {
                        word.literal(next, true);
                    }
                    self.bump(2);
                    continue;
                }
                '\'' if !quoted => {
                    self.bump(1);
                    while let Some(q) = self.peek() {
                        self.bump(1);
                        if q == '\'' {
                            break;
                        }
                        if alternative {
                            word.literal(q, true);
                        }
                    }
                    continue;
                }
                '"' => {
                    self.bump(1);
                    let mut sink = Word::default();
                    self.double_quoted(if alternative { word } else { &mut sink });
                    continue;
                }
                '$' | '`' => {
                    let mut sink = Word::default();
                    if self.substitution(if alternative { word } else { &mut sink }, quoted) {
                        continue;
                    }
                }
                _ => {}
            }
            if alternative {
                word.literal(c, true);
            }
            self.bump(1);
        }
    }

    /// A backtick substitution: its text is unescaped as bash does (`\\`, `` \` ``,
    /// `\$`, and `\"` inside double quotes), then parsed as a script of its own.
    fn backticks(&mut self, quoted: bool) {
        self.bump(1);
        let mut script = String::new();
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
        let inner = parse(&script, self.depth + 1, &mut *self.visitor);
        self.merge(inner);
    }
}

fn is_for(word: &Word) -> bool {
    word.is_plain() && word.text == "for"
}

/// `NAME=value`, `NAME+=value` or `NAME[i]=value`.
pub(super) fn is_assignment(word: &str) -> bool {
    let Some(eq) = word.find('=') else {
        return false;
    };
    let name = word[..eq].strip_suffix('+').unwrap_or(&word[..eq]);
    let name = match name.find('[') {
        Some(bracket) if name.ends_with(']') => &name[..bracket],
        _ => name,
    };
    is_name(name)
}

/// A shell variable's name: a letter or `_`, then letters, digits and `_`.
fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
