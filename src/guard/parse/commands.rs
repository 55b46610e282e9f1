//! Command lists: separators, pipelines, subshells and groups, and the compounds
//! whose insides are partly data: `case` (patterns) and `[[ ]]`.

use super::{End, MAX_DEPTH, Parser, Stop, Word};

impl Parser<'_> {
    pub(super) fn commands(&mut self, end: End) -> Stop {
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
    pub(super) fn nested(&mut self, end: End) {
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
}

fn is_for(word: &Word) -> bool {
    word.is_plain() && word.text == "for"
}
