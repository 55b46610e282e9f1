//! The rm guard: refuses a command that would run `rm` anywhere in its chain.
//!
//! A small hand-written tokenizer (no shell-parser dependency) splits the command
//! into simple commands the way bash would start them: at `;`, `&`, `|`, `&&`, `||`,
//! `|&`, newlines, parentheses, and inside `$(..)`, backticks, `<(..)` and `>(..)`
//! (also within double quotes and unquoted heredoc bodies). For each simple command
//! it removes quotes, drops leading assignments and redirections, skips shell
//! keywords and wrapper commands (`sudo`, `env`, `xargs`, `timeout`, ...) and blocks
//! when what is left to run is `rm` or a path ending in `/rm`. Literal scripts given
//! to `sh -c`, `bash -c` and `eval` are checked the same way.
//!
//! It is a guard against the common case, not a sandbox: aliases, functions, `find
//! -delete`, `sh -c "$VAR"`, and scripts or programs that call rm are out of its
//! reach. It is pure and synchronous, and no input makes it panic.

/// What the guard decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Block,
}

impl Verdict {
    pub fn is_blocked(self) -> bool {
        self == Verdict::Block
    }
}

/// Nesting of substitutions beyond which a command is refused rather than parsed;
/// no real command comes near it, and it bounds the parser's recursion.
const MAX_DEPTH: usize = 64;

/// Checks a whole command string.
pub fn check(command: &str) -> Verdict {
    check_at(command, 0)
}

fn check_at(command: &str, depth: usize) -> Verdict {
    if depth > MAX_DEPTH {
        return Verdict::Block;
    }
    let mut parser = Parser::new(command, depth);
    parser.commands(End::Eof);
    if parser.too_deep {
        return Verdict::Block;
    }
    let blocked = parser.segments.iter().any(|words| runs_rm(words, depth));
    if blocked {
        Verdict::Block
    } else {
        Verdict::Allow
    }
}

/// Shell keywords that may stand before a command without being one.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac",
    "coproc",
];

/// Keywords after which the rest of the simple command is names or data.
const DATA_KEYWORDS: &[&str] = &["for", "select", "case", "function", "in"];

/// True when the simple command `words` (quotes removed) would run rm.
fn runs_rm(words: &[String], depth: usize) -> bool {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let word = word.as_str();
        if is_assignment(word) || KEYWORDS.contains(&word) {
            i += 1;
            continue;
        }
        if DATA_KEYWORDS.contains(&word) {
            return false;
        }
        let rest = &words[i + 1..];
        let name = word.rsplit('/').next().unwrap_or(word);
        let skip = match name {
            "rm" => return true,
            "time" => options(rest, &[]),
            "nohup" | "builtin" => 0,
            "sudo" => options(
                rest,
                &[
                    "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user",
                    "--group",
                ],
            ),
            "doas" => options(rest, &["-u", "-C"]),
            "exec" => options(rest, &["-a"]),
            "nice" => options(rest, &["-n", "--adjustment"]),
            "ionice" => options(rest, &["-c", "-n", "-p", "-P", "-u"]),
            "stdbuf" => options(rest, &["-i", "-o", "-e"]),
            "xargs" => options(
                rest,
                &[
                    "-a",
                    "-d",
                    "-E",
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-lines",
                    "--max-procs",
                    "--max-chars",
                ],
            ),
            "timeout" => {
                let opts = options(rest, &["-s", "-k", "--signal", "--kill-after"]);
                (opts + 1).min(rest.len())
            }
            "command" => {
                let opts = options(rest, &[]);
                if rest[..opts].iter().any(|o| o.contains(['v', 'V'])) {
                    return false; // `command -v rm` only looks rm up.
                }
                opts
            }
            "env" => {
                let opts = options(rest, &["-u", "-C", "-S"]);
                if let Some(script) = option_value(&rest[..opts], "-S") {
                    return check_at(&script, depth + 1).is_blocked();
                }
                opts
            }
            "eval" => return check_at(&rest.join(" "), depth + 1).is_blocked(),
            "sh" | "bash" | "dash" | "zsh" | "ksh" => {
                return shell_script(rest).is_some_and(|s| check_at(s, depth + 1).is_blocked());
            }
            _ => return false,
        };
        i += 1 + skip;
    }
    false
}

/// Counts the leading options of `words`, where the options in `with_arg` take the
/// next word as their value. `--` ends the options and is counted.
fn options(words: &[String], with_arg: &[&str]) -> usize {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if word == "--" {
            return i + 1;
        }
        if !word.starts_with('-') || word.len() == 1 {
            break;
        }
        i += if with_arg.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    i.min(words.len())
}

/// The value of `flag` among `options` (`-S value` or `-Svalue`).
fn option_value(options: &[String], flag: &str) -> Option<String> {
    let at = options.iter().position(|o| o.starts_with(flag))?;
    match options[at].strip_prefix(flag) {
        Some("") => options.get(at + 1).cloned(),
        Some(attached) => Some(attached.to_owned()),
        None => None,
    }
}

/// The script of `sh -c SCRIPT` (also `-ec`, `-lc`, ...).
fn shell_script(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if !arg.starts_with('-') || arg == "--" {
            return None;
        }
        if arg.len() > 1 && !arg.starts_with("--") && arg.contains('c') {
            return args.get(i + 1).map(String::as_str);
        }
        i += 1;
    }
    None
}

/// `NAME=value`, `NAME+=value` or `NAME[i]=value`.
fn is_assignment(word: &str) -> bool {
    let Some(eq) = word.find('=') else {
        return false;
    };
    let name = word[..eq].strip_suffix('+').unwrap_or(&word[..eq]);
    let name = match name.find('[') {
        Some(bracket) if name.ends_with(']') => &name[..bracket],
        _ => name,
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What ends the command list being parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    /// `)` of `$(..)`, `<(..)` or `>(..)`.
    Paren,
    Backtick,
}

/// A heredoc whose body starts after the next newline.
#[derive(Debug)]
struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    /// A quoted delimiter makes the body plain data; otherwise `$(..)` and backticks
    /// in it run.
    quoted: bool,
}

struct Parser {
    s: Vec<char>,
    i: usize,
    depth: usize,
    too_deep: bool,
    /// Every simple command found, as its words with quotes removed.
    segments: Vec<Vec<String>>,
    heredocs: Vec<Heredoc>,
}

impl Parser {
    fn new(text: &str, depth: usize) -> Parser {
        Parser {
            s: text.chars().collect(),
            i: 0,
            depth,
            too_deep: false,
            segments: Vec::new(),
            heredocs: Vec::new(),
        }
    }

    /// Moves `n` characters on, never past the end.
    fn bump(&mut self, n: usize) {
        self.i = (self.i + n).min(self.s.len());
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.s.get(self.i + ahead).copied()
    }

    fn starts_with(&self, text: &str) -> bool {
        text.chars()
            .enumerate()
            .all(|(k, c)| self.peek_at(k) == Some(c))
    }

    /// Parses simple commands until `end` (consumed) or the end of input.
    fn commands(&mut self, end: End) {
        let mut words: Vec<String> = Vec::new();
        loop {
            while matches!(self.peek(), Some(' ' | '\t')) {
                self.bump(1);
            }
            if self.starts_with("\\\n") {
                self.bump(2);
                continue;
            }
            let Some(c) = self.peek() else {
                self.flush(&mut words);
                return;
            };
            match c {
                '\n' => {
                    self.flush(&mut words);
                    self.bump(1);
                    self.heredoc_bodies();
                }
                '&' if self.peek_at(1) == Some('>') => {
                    self.bump(1);
                    self.redirection();
                }
                ';' | '&' | '|' | '(' => {
                    self.flush(&mut words);
                    self.bump(1);
                }
                ')' => {
                    self.flush(&mut words);
                    self.bump(1);
                    if end == End::Paren {
                        return;
                    }
                }
                '`' if end == End::Backtick => {
                    self.flush(&mut words);
                    self.bump(1);
                    return;
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump(1);
                    }
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.bump(2);
                    self.nested(End::Paren);
                }
                '<' | '>' => self.redirection(),
                _ => {
                    let word = self.word(end);
                    let fd = matches!(self.peek(), Some('<' | '>'))
                        && (word.chars().all(|c| c.is_ascii_digit())
                            || (word.starts_with('{') && word.ends_with('}')));
                    if !fd {
                        words.push(word);
                    }
                }
            }
        }
    }

    fn flush(&mut self, words: &mut Vec<String>) {
        if !words.is_empty() {
            self.segments.push(std::mem::take(words));
        }
    }

    /// Parses a nested command list (`$(..)`, backticks, `<(..)`), bounded in depth.
    fn nested(&mut self, end: End) {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            self.i = self.s.len();
            return;
        }
        self.depth += 1;
        self.commands(end);
        self.depth -= 1;
    }

    /// A redirection operator and its target word, which is not a command.
    fn redirection(&mut self) {
        if self.starts_with("<<<") {
            self.bump(3);
        } else if self.starts_with("<<") {
            self.bump(2);
            let strip_tabs = self.peek() == Some('-');
            if strip_tabs {
                self.bump(1);
            }
            self.skip_blanks();
            let start = self.i;
            let delimiter = self.word(End::Eof);
            let quoted = self.s[start..self.i]
                .iter()
                .any(|c| matches!(c, '\'' | '"' | '\\'));
            self.heredocs.push(Heredoc {
                delimiter,
                strip_tabs,
                quoted,
            });
            return;
        } else {
            self.bump(1);
            if matches!(self.peek(), Some('>' | '&' | '|')) {
                self.bump(1);
            }
        }
        self.skip_blanks();
        if !matches!(self.peek(), None | Some('\n' | ';' | '&' | '|' | '(' | ')')) {
            self.word(End::Eof);
        }
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.bump(1);
        }
    }

    /// Reads the bodies of the heredocs opened on the line that just ended.
    fn heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            while self.i < self.s.len() {
                let end = self.s[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.s.len(), |n| self.i + n);
                let line: String = self.s[self.i..end].iter().collect();
                self.i = (end + 1).min(self.s.len());
                let compared = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if compared == doc.delimiter {
                    break;
                }
                if !doc.quoted {
                    let mut body = Parser::new(&line, self.depth + 1);
                    body.expansions();
                    self.too_deep |= body.too_deep;
                    self.segments.append(&mut body.segments);
                }
            }
        }
    }

    /// Scans text where only expansions run (an unquoted heredoc body).
    fn expansions(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.bump(2),
                '$' | '`' if self.dollar_or_backtick(End::Eof) => {}
                _ => self.bump(1),
            }
        }
    }

    /// Reads one word and returns it with quotes removed. Substitutions inside it are
    /// parsed as commands of their own.
    fn word(&mut self, end: End) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | ')' => break,
                '(' if is_array_start(&word) => self.balanced('(', ')', 0),
                '(' => break,
                '`' if end == End::Backtick => break,
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(next) => word.push(next),
                        None => {}
                    }
                    self.bump(2);
                }
                '\'' => {
                    self.bump(1);
                    while let Some(q) = self.peek() {
                        self.bump(1);
                        if q == '\'' {
                            break;
                        }
                        word.push(q);
                    }
                }
                '"' => {
                    self.bump(1);
                    self.double_quoted(&mut word);
                }
                '$' if self.peek_at(1) == Some('\'') => {
                    self.bump(2);
                    while let Some(q) = self.peek() {
                        self.bump(1);
                        match q {
                            '\'' => break,
                            '\\' => {
                                if let Some(next) = self.peek() {
                                    word.push(next);
                                    self.bump(1);
                                }
                            }
                            q => word.push(q),
                        }
                    }
                }
                '$' if self.peek_at(1) == Some('"') => {
                    self.bump(2);
                    self.double_quoted(&mut word);
                }
                '$' | '`' if self.dollar_or_backtick(end) => {}
                c => {
                    word.push(c);
                    self.bump(1);
                }
            }
        }
        word
    }

    /// Reads the rest of a double-quoted string (after its opening `"`).
    fn double_quoted(&mut self, word: &mut String) {
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.bump(1);
                    return;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(next @ ('$' | '`' | '"' | '\\')) => word.push(next),
                        Some(next) => {
                            word.push('\\');
                            word.push(next);
                        }
                        None => {}
                    }
                    self.bump(2);
                }
                '$' | '`' if self.dollar_or_backtick(End::Eof) => {}
                c => {
                    word.push(c);
                    self.bump(1);
                }
            }
        }
    }

    /// At `$` or a backtick: parses `$(..)`, backticks, `$((..))` and `${..}`.
    /// Returns false (consuming nothing) when the `$` is a plain character or
    /// starts a simple `$NAME`.
    fn dollar_or_backtick(&mut self, end: End) -> bool {
        if self.peek() == Some('`') {
            if end == End::Backtick {
                return false;
            }
            self.bump(1);
            self.nested(End::Backtick);
            return true;
        }
        if self.starts_with("$((") {
            self.bump(3);
            self.balanced('(', ')', 2);
            return true;
        }
        if self.starts_with("$(") {
            self.bump(2);
            self.nested(End::Paren);
            return true;
        }
        if self.starts_with("${") {
            self.bump(2);
            self.balanced('{', '}', 1);
            return true;
        }
        false
    }

    /// Skips to the `close` that balances `depth` already open ones: the rest of a
    /// `$((..))`, a `${..}` or an array literal `name=(..)`. Quoted text and escapes
    /// are data; substitutions inside run.
    fn balanced(&mut self, open: char, close: char, mut depth: usize) {
        while let Some(c) = self.peek() {
            match c {
                c if c == open => depth += 1,
                c if c == close => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump(1);
                        return;
                    }
                }
                '\\' => self.bump(1),
                '\'' => {
                    self.bump(1);
                    while self.peek().is_some_and(|q| q != '\'') {
                        self.bump(1);
                    }
                }
                '"' => {
                    self.bump(1);
                    self.double_quoted(&mut String::new());
                    continue;
                }
                '$' | '`' if self.dollar_or_backtick(End::Eof) => continue,
                _ => {}
            }
            self.bump(1);
        }
    }
}

/// `name=` or `name+=` just before `(`: an array assignment.
fn is_array_start(word: &str) -> bool {
    word.ends_with('=') && is_assignment(word)
}

#[cfg(test)]
mod tests;
