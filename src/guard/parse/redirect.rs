//! Redirections, here-strings and heredocs. A heredoc's body is read after the line
//! that opens it, and is data; an unquoted one's substitutions run.

use super::word::push_chars;
use super::{End, Parser};

/// A heredoc whose body starts after the next newline.
#[derive(Debug, Clone)]
pub(super) struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    /// A quoted delimiter makes the body plain data; otherwise substitutions in it run.
    quoted: bool,
    /// The simple command that reads it, once that command is complete.
    pub(super) reader: Option<usize>,
}

#[cfg(test)]
impl Heredoc {
    pub(super) fn new(delimiter: &str, strip_tabs: bool, quoted: bool) -> Heredoc {
        Heredoc {
            delimiter: delimiter.to_owned(),
            strip_tabs,
            quoted,
            reader: None,
        }
    }
}

impl Parser<'_> {
    /// A redirection operator and its target, which is data (a here-string's text is
    /// kept as the command's stdin). It belongs to the command's source text.
    pub(super) fn redirection(&mut self) {
        self.cur.start.get_or_insert(self.i);
        self.cur.redirected = true;
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
            self.skip_word();
            let raw = &self.s[start..self.i];
            let quoted = raw.iter().any(|c| matches!(c, '\'' | '"' | '\\'));
            let delimiter = delimiter(raw);
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
        let input = self.s.get(self.i.wrapping_sub(1)) == Some(&'<');
        self.skip_blanks();
        if input && self.starts_with("<(") {
            // What it prints is stdin: `bash < <(echo …)`.
            self.bump(2);
            self.cur.stdin = self.nested_printed(End::Paren);
            return;
        }
        let substitution = self.starts_with("<(") || self.starts_with(">(");
        if substitution
            || !matches!(
                self.peek(),
                None | Some('\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
            )
        {
            self.skip_word();
        }
    }

    /// Reads the bodies of the heredocs opened on the line that just ended. The body
    /// of an unquoted one is scanned for substitutions once it is whole, as bash does.
    pub(super) fn heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            let body = self.heredoc_body(&doc);
            let reader = doc.reader.filter(|&reader| reader < self.waiting.len());
            if let Some(reader) = reader {
                let mut text = String::new();
                push_chars(&mut text, &body);
                self.waiting[reader].stdin = Some(text);
            }
            if !doc.quoted {
                let mut scan = Parser::new(body, self.depth, &mut *self.visitor);
                scan.spare = std::mem::take(&mut self.spare);
                scan.substitutions_until(scan.s.len());
                self.spare = std::mem::take(&mut scan.spare);
                let inner = scan.out;
                self.merge(inner);
            }
        }
        let mut waiting = std::mem::take(&mut self.waiting);
        for k in 0..waiting.len() {
            if let Some(from) = waiting[k].stdin_from.filter(|&from| from < k) {
                let passed = waiting[from].stdin.clone();
                waiting[k].stdin = waiting[k].stdin.take().or(passed);
            }
            self.visit(&waiting[k]);
        }
        self.passing = None;
    }

    /// The body of a heredoc, up to the line that closes it (or the end of the text),
    /// with each line's newline; `<<-` strips the tabs that start its lines.
    fn heredoc_body(&mut self, doc: &Heredoc) -> Vec<char> {
        match self.plain_heredoc_body(doc) {
            Some(body) => body,
            None => self.heredoc_lines(doc),
        }
    }

    /// [`Parser::heredoc_body`], a line at a time.
    pub(super) fn heredoc_lines(&mut self, doc: &Heredoc) -> Vec<char> {
        let mut body = Vec::new();
        while self.i < self.s.len() {
            let start = body.len();
            self.heredoc_line(!doc.quoted, &mut body);
            if doc.strip_tabs {
                let tabs = body[start..].iter().take_while(|&&c| c == '\t').count();
                body.drain(start..start + tabs);
            }
            if body[start..].iter().copied().eq(doc.delimiter.chars()) {
                body.truncate(start);
                break;
            }
            body.push('\n');
        }
        body
    }

    /// The body of a heredoc none of whose lines is joined to the next or has its tabs
    /// stripped, as [`Parser::heredoc_body`] reads it: the text up to the closing line,
    /// copied once. `None`, nothing read, when a line needs more.
    pub(super) fn plain_heredoc_body(&mut self, doc: &Heredoc) -> Option<Vec<char>> {
        if doc.strip_tabs {
            return None;
        }
        let (start, len) = (self.i, self.s.len());
        let mut at = start;
        while at < len {
            let end = self.s[at..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(len, |n| at + n);
            let line = &self.s[at..end];
            if line.iter().copied().eq(doc.delimiter.chars()) {
                self.i = (end + 1).min(len);
                return Some(self.s[start..at].to_vec());
            }
            let trailing = line.iter().rev().take_while(|&&c| c == '\\').count();
            if !doc.quoted && trailing % 2 == 1 && end < len {
                return None;
            }
            at = end + 1;
        }
        self.i = len;
        let mut body = self.s[start..].to_vec();
        // The last line, unclosed, gets its newline.
        if body.last().is_some_and(|&c| c != '\n') {
            body.push('\n');
        }
        Some(body)
    }

    /// Appends one line of a heredoc body to `body`, its newline consumed but not
    /// appended. In an unquoted heredoc a backslash-newline joins the next line to
    /// it, as bash reads it: `EO\⏎F` is `EOF`.
    fn heredoc_line(&mut self, join: bool, body: &mut Vec<char>) {
        let start = body.len();
        loop {
            let end = self.s[self.i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(self.s.len(), |n| self.i + n);
            body.extend_from_slice(&self.s[self.i..end]);
            self.i = (end + 1).min(self.s.len());
            let trailing = body[start..]
                .iter()
                .rev()
                .take_while(|&&c| c == '\\')
                .count();
            if !join || trailing % 2 == 0 || end >= self.s.len() {
                return;
            }
            body.pop();
        }
    }
}

/// A heredoc's delimiter: the word as written, after quote removal, never expanded
/// (`<<$v` ends at a line `$v`, `<<"$v"` too).
fn delimiter(raw: &[char]) -> String {
    let mut out = String::new();
    let mut quote = None;
    let mut k = 0;
    while let Some(&c) = raw.get(k) {
        let next = raw.get(k + 1).copied();
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (None, '$') if matches!(next, Some('\'' | '"')) => {}
            (Some(q), _) if c == q => quote = None,
            (None, '\\') | (Some('"'), '\\')
                if quote.is_none() || matches!(next, Some('$' | '`' | '"' | '\\' | '\n')) =>
            {
                k += 1;
                if let Some(next) = next.filter(|&n| n != '\n') {
                    out.push(next);
                }
            }
            _ => out.push(c),
        }
        k += 1;
    }
    out
}
