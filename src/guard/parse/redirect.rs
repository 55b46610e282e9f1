//! Redirections, here-strings and heredocs. A heredoc's body is read after the line
//! that opens it, and is data; an unquoted one's substitutions run.

use super::{End, Parser};

/// A heredoc whose body starts after the next newline.
#[derive(Debug)]
pub(super) struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    /// A quoted delimiter makes the body plain data; otherwise substitutions in it run.
    quoted: bool,
    /// The simple command that reads it, once that command is complete.
    pub(super) reader: Option<usize>,
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
            let mut body = String::new();
            while self.i < self.s.len() {
                let line = self.heredoc_line(!doc.quoted);
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

    /// One line of a heredoc body, its newline consumed. In an unquoted heredoc a
    /// backslash-newline joins the next line to it, as bash reads it: `EO\⏎F` is
    /// `EOF`.
    fn heredoc_line(&mut self, join: bool) -> String {
        let mut line = String::new();
        loop {
            let end = self.s[self.i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(self.s.len(), |n| self.i + n);
            line.extend(&self.s[self.i..end]);
            self.i = (end + 1).min(self.s.len());
            let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
            if !join || trailing % 2 == 0 || end >= self.s.len() {
                return line;
            }
            line.pop();
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
