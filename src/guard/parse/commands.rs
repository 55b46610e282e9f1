//! Command lists: separators, pipelines, subshells and groups, and the compounds
//! whose insides are partly data: `case` (patterns) and `[[ ]]`.

use super::{End, ListEnd, MAX_DEPTH, Parser, Printed, Word, is_prefix_keyword};

impl Parser<'_> {
    /// A command list, up to what ends it (`end`) or the end of the text; says which.
    pub(super) fn commands(&mut self, end: End) -> ListEnd {
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                return ListEnd::Eof;
            };
            if let Some(stop) = self.step(c, end) {
                return stop;
            }
        }
    }

    /// One step of a command list, at `c`: an operator, a redirection, a nested list
    /// or a word. Returns why the list ends, when it ends here.
    fn step(&mut self, c: char, end: End) -> Option<ListEnd> {
        match c {
            '\n' => self.newline(),
            '#' => self.comment(),
            ';' => return self.semicolon(end),
            '&' if self.peek_at(1) == Some('>') => self.redirection(),
            '&' | '|' => self.and_or_pipe(c),
            '(' => self.open_paren(),
            ')' => return self.close_paren(end),
            // A process substitution is a word, or part of one.
            '<' | '>' if self.peek_at(1) != Some('(') => self.redirection(),
            _ => return self.word_or_compound(end),
        }
        None
    }

    /// A newline ends the command; the bodies of the heredocs opened on its line follow.
    fn newline(&mut self) {
        self.flush();
        if !self.operator {
            self.list_ends();
        }
        self.bump(1);
        self.heredoc_bodies();
    }

    /// A `;`, `&` or newline ends an and-or list: what follows is no condition's.
    pub(super) fn list_ends(&mut self) {
        self.conditional = false;
        self.definition_ends(true);
    }

    /// An operator after a definition at its own level ends it; the definition is
    /// in effect unless the operator puts it in a subshell (`|`, `&`).
    fn definition_ends(&mut self, in_effect: bool) {
        let Some((_, depth, compounds)) = self.defined else {
            return;
        };
        if (depth, compounds) != (self.depth, self.compounds) {
            return;
        }
        if let Some((name, ..)) = self.defined.take()
            && in_effect
        {
            self.visitor.function_in_effect(&name);
        }
    }

    /// `;`, or the `;;`, `;&` or `;;&` that ends an item of a `case`.
    fn semicolon(&mut self, end: End) -> Option<ListEnd> {
        self.flush();
        self.list_ends();
        let width = if self.starts_with(";;&") {
            3
        } else if self.starts_with(";;") || self.starts_with(";&") {
            2
        } else {
            1
        };
        self.bump(width);
        (width > 1 && end == End::CaseItem).then_some(ListEnd::CaseSeparator)
    }

    /// `&`, `&&`, `|`, `||` or `|&`. Across a pipe, the next command gets what this
    /// one printed.
    fn and_or_pipe(&mut self, c: char) {
        let pipe = c == '|' && self.peek_at(1) != Some('|');
        let background = c == '&' && self.peek_at(1) != Some('&');
        self.flush();
        self.definition_ends(!pipe && !background);
        if background {
            self.list_ends();
        } else {
            self.conditional = true;
            self.operator = true;
        }
        self.bump(1);
        if matches!(self.peek(), Some('&' | '|')) {
            self.bump(1);
        }
        if pipe {
            self.cur.stdin = self.take_printed();
            self.cur.stdin_from = self.passing.take();
        }
    }

    /// `((`: arithmetic where a command may start (or after `for`) and when it closes
    /// with `))`; else a subshell.
    fn open_paren(&mut self) {
        let arithmetic_start = self.at_command_start() || self.cur.words.last().is_some_and(is_for);
        if self.peek_at(1) == Some('(') && arithmetic_start && self.arithmetic(2) {
            return;
        }
        if self.function_name() {
            // A definition, not a command: its body runs when the function is called.
            self.cur = Default::default();
            self.bump(1);
            self.skip_blanks();
            self.bump(1);
            return;
        }
        // A subshell piped into reads what was piped: `echo … | (bash)`.
        let piped = self
            .cur
            .words
            .is_empty()
            .then(|| self.cur.stdin.take())
            .flatten();
        self.flush();
        self.bump(1);
        let outer = match piped {
            Some(piped) => self.group_stdin.replace(piped),
            None => self.group_stdin.clone(),
        };
        self.open_compound(true);
        self.nested(End::Paren);
        self.close_compound(true);
        self.group_stdin = outer;
    }

    /// At the `(` of `NAME ()` or `function NAME ()`: tells the visitor, and says so.
    fn function_name(&mut self) -> bool {
        let name = match self.cur.words.as_slice() {
            [name] | [_, name] if name.is_plain() => name.text.clone(),
            _ => return false,
        };
        let keyword = self.cur.words.len() == 1 || self.cur.words[0].text == "function";
        let mut k = 1;
        while matches!(self.peek_at(k), Some(' ' | '\t')) {
            k += 1;
        }
        if keyword && self.peek_at(k) == Some(')') {
            if self.depth == self.base_depth && self.compounds == 0 && !self.conditional {
                self.defined = Some((name.clone(), self.depth, self.compounds));
            }
            self.visitor.function(&name);
            return true;
        }
        false
    }

    /// `)`: it ends the list of a subshell or substitution; elsewhere it is skipped.
    fn close_paren(&mut self, end: End) -> Option<ListEnd> {
        self.flush();
        self.bump(1);
        (end == End::Paren).then_some(ListEnd::Paren)
    }

    /// A word: the file descriptor of a redirection (`2>`, `{fd}>`), a keyword that
    /// opens or closes a compound in command position, or a word of the command.
    fn word_or_compound(&mut self, end: End) -> Option<ListEnd> {
        let start = self.i;
        let command_start = self.at_compound_start();
        let word = self.word();
        if self.i == start {
            self.recycle(word);
            self.bump(1);
            return None;
        }
        if matches!(self.peek(), Some('<' | '>')) && is_fd(&word) {
            self.recycle(word);
            return None;
        }
        // The body of `function NAME { …; }` and `coproc NAME { …; }` is a compound too.
        if word.is_plain() && word.text == "{" && self.named_body() {
            self.compounds += 1;
            self.open_compound(false);
        }
        if command_start && word.is_plain() {
            match word.text.as_str() {
                "case" => {
                    self.flush();
                    self.compounds += 1;
                    let stop = self.case_clause();
                    self.compounds -= 1;
                    return (stop == ListEnd::Eof).then_some(ListEnd::Eof);
                }
                "if" | "while" | "until" | "for" | "select" | "{" => {
                    self.compounds += 1;
                    self.open_compound(false);
                }
                "fi" | "done" | "}" => {
                    self.compounds = self.compounds.saturating_sub(1);
                    self.close_compound(false);
                }
                "[[" => {
                    self.flush();
                    self.double_bracket();
                    return None;
                }
                "esac" if end == End::CaseItem => {
                    self.flush();
                    return Some(ListEnd::Esac);
                }
                _ => {}
            }
        }
        self.push_word(start, word);
        None
    }

    /// Whether the words so far are `function NAME` or `coproc NAME`, before a body.
    fn named_body(&self) -> bool {
        let words = &self.cur.words;
        let keywords = words.iter().take_while(|w| is_prefix_keyword(w)).count();
        matches!(&words[keywords..], [keyword, _]
            if keyword.is_plain() && ["function", "coproc"].contains(&keyword.text.as_str()))
    }

    /// A nested command list, bounded in depth. The current simple command is set
    /// aside while it is parsed.
    pub(super) fn nested(&mut self, end: End) {
        self.nested_list(end, false);
    }

    /// As [`Parser::nested`], for a list whose output is read (`<(…)`): what its last
    /// command printed.
    pub(super) fn nested_printed(&mut self, end: End) -> Option<String> {
        self.nested_list(end, true)
    }

    fn nested_list(&mut self, end: End, printing: bool) -> Option<String> {
        if self.depth >= MAX_DEPTH {
            self.out.too_deep = true;
            self.i = self.s.len();
            return None;
        }
        let saved = std::mem::take(&mut self.cur);
        self.depth += 1;
        self.commands(end);
        self.depth -= 1;
        // The last command may be flushed already, by its `)`.
        let flushed = self.cur.words.is_empty() && !self.cur.redirected;
        let before = if printing && flushed {
            self.take_printed()
        } else {
            None
        };
        self.flush();
        let printed = if printing && !flushed {
            self.take_printed()
        } else {
            before
        };
        self.set_printed(Printed::Nothing);
        let inner = std::mem::replace(&mut self.cur, saved);
        self.reuse(inner.words);
        printed
    }

    /// `case WORD in [(]PATTERN[|PATTERN]…) COMMANDS ;; … esac`, after `case`.
    fn case_clause(&mut self) -> ListEnd {
        self.skip_space();
        self.skip_word();
        self.skip_space();
        self.skip_word(); // `in`
        loop {
            if let Some(stop) = self.case_item_start() {
                return stop;
            }
            if !self.case_patterns() {
                return ListEnd::Eof;
            }
            match self.commands(End::CaseItem) {
                ListEnd::CaseSeparator => {}
                stop => return stop,
            }
        }
    }

    /// Before an item of a `case`: skips blanks and stray `;`, and the `(` that may
    /// open the patterns. Returns why the clause ends, when it ends here (`esac`).
    fn case_item_start(&mut self) -> Option<ListEnd> {
        self.skip_space();
        while self.peek() == Some(';') {
            self.bump(1);
            self.skip_space();
        }
        let Some(c) = self.peek() else {
            return Some(ListEnd::Eof);
        };
        if self.starts_with("esac") && self.ends_word(4) {
            self.bump(4);
            return Some(ListEnd::Esac);
        }
        if c == ')' {
            // No pattern starts with `)`: leave it to the enclosing list.
            return Some(ListEnd::Paren);
        }
        if c == '(' {
            self.bump(1);
        }
        None
    }

    /// The patterns of an item, data up to its `)`; false at the end of the text.
    fn case_patterns(&mut self) -> bool {
        loop {
            self.skip_space();
            match self.peek() {
                None => return false,
                Some(')') => {
                    self.bump(1);
                    return true;
                }
                Some('|') => self.bump(1),
                Some(_) => {
                    let start = self.i;
                    self.skip_word();
                    if self.i == start {
                        self.bump(1);
                    }
                }
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
                    self.skip_word();
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

/// A word that names a file descriptor when a redirection follows it: `2`, `{fd}`.
fn is_fd(word: &Word) -> bool {
    word.is_plain()
        && (word.text.chars().all(|c| c.is_ascii_digit())
            || word.text.starts_with('{') && word.text.ends_with('}'))
}
