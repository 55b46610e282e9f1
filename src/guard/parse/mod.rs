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
//!
//! [`commands`] reads command lists (separators, pipelines, subshells, `case`,
//! `[[ ]]`), [`word`] words (quotes, escapes, `$'…'`), [`expansion`] what starts with
//! `$` or a backtick, and [`redirect`] redirections and heredocs. [`Parser`] holds
//! the position and the simple command being read.

mod commands;
mod expansion;
mod redirect;
mod word;

#[cfg(test)]
mod tests;

use std::ops::ControlFlow;

use redirect::Heredoc;
pub(super) use word::Word;
#[cfg(test)]
use word::is_assignment;

/// Nesting of substitutions and scripts beyond which a command is refused rather than
/// parsed; no real command comes near it, and it bounds the parser's recursion.
pub(super) const MAX_DEPTH: usize = 64;

/// How many emptied words a parser keeps for reuse.
const SPARE_WORDS: usize = 64;

/// A simple command: its words and, for `<<<`, heredocs and `echo … |`, the text on
/// its stdin.
#[derive(Debug, Default, Clone)]
struct Simple {
    words: Vec<Word>,
    stdin: Option<String>,
    /// Its stdin is what an earlier command waiting for its heredoc passes on
    /// (`cat <<EOF | bash`): that command's index among the waiting.
    stdin_from: Option<usize>,
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
    /// command with a heredoc after the heredoc's body.
    ///
    /// `Break` stops the parse: it skips to the end of the text. Where the command
    /// stood in arithmetic or a subscript, the parse resumes after it, and commands
    /// in backticks or heredoc bodies read then still come here; the visitor may
    /// ignore them.
    fn command(&mut self, command: &Command<'_>) -> ControlFlow<()>;

    /// What a command with these words (after any keyword before it), given
    /// `stdin`, writes to a pipe, when the visitor can tell: the next command of the
    /// pipeline gets it as its stdin.
    fn printed(&mut self, _words: &[Word], _stdin: Option<&str>) -> Option<String> {
        None
    }

    /// A function is defined under this name (`NAME()`, `function NAME`); its body
    /// is the commands that follow.
    fn function(&mut self, _name: &str) {}

    /// The definition of a function (`NAME()`) just ended where it holds for the
    /// rest of the text: not in a subshell or a compound, not after `&&`, `||` or
    /// `|`, and not put in a subshell by a `|` or `&` after its body.
    fn function_in_effect(&mut self, _name: &str) {}

    /// Whether a command with these words writes its stdin to a pipe (`cat`).
    fn passes_stdin(&mut self, _words: &[Word]) -> bool {
        false
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
    parse_within(text, depth, depth, visitor)
}

/// As [`parse`], for text that stands in a shell started at nesting `base_depth`:
/// a definition deeper than that (in a backtick substitution) takes no effect there.
fn parse_within(text: &str, depth: usize, base_depth: usize, visitor: &mut dyn Visitor) -> Parsed {
    parse_chars(
        characters(text),
        depth,
        base_depth,
        visitor,
        &mut Spare::default(),
    )
}

/// The characters of `text`. Commands are mostly ASCII, whose bytes are their
/// characters: told at once, without decoding.
fn characters(text: &str) -> Vec<char> {
    if text.is_ascii() {
        text.bytes().map(char::from).collect()
    } else {
        text.chars().collect()
    }
}

/// As [`parse_within`], for text already in characters (a backtick substitution's);
/// the storage it is done with is taken from `spare`, and left there, the text's
/// too, for the parser that started it.
fn parse_chars(
    s: Vec<char>,
    depth: usize,
    base_depth: usize,
    visitor: &mut dyn Visitor,
    spare: &mut Spare,
) -> Parsed {
    let mut parser = Parser::new(s, depth, visitor);
    parser.base_depth = base_depth;
    if depth > MAX_DEPTH {
        parser.out.too_deep = true;
        return parser.out;
    }
    parser.spare = std::mem::take(spare);
    parser.commands(End::Eof);
    parser.flush();
    parser.list_ends();
    // Heredocs never closed: their commands are visited with what was read.
    parser.heredoc_bodies();
    parser.done();
    *spare = std::mem::take(&mut parser.spare);
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
enum ListEnd {
    Eof,
    Paren,
    CaseSeparator,
    Esac,
}

/// Words that may stand before a command without being one, and after which a
/// command may start a compound (`(( ))`, `[[ ]]`, `case`).
fn is_prefix_keyword(word: &Word) -> bool {
    word.is_plain()
        && matches!(
            word.text.as_str(),
            "!" | "{"
                | "}"
                | "if"
                | "then"
                | "else"
                | "elif"
                | "do"
                | "while"
                | "until"
                | "time"
                | "fi"
                | "done"
        )
}

/// A command's words after the keywords before it: what a compound's commands
/// print is what the command after `{`, `then` or `do` prints.
fn after_keywords(words: &[Word]) -> &[Word] {
    let start = words.iter().take_while(|w| is_prefix_keyword(w)).count();
    &words[start..]
}

/// What the last complete command printed. Most commands' output goes to no pipe:
/// the visitor is asked only when a pipe or a process substitution takes it.
#[derive(Debug)]
enum Printed {
    Nothing,
    Known(String),
    /// The command's words and stdin, the visitor not asked yet.
    Words(Vec<Word>, Option<String>),
}

/// What the commands of an open compound print, in order: a compound piped on
/// (`{ echo …; } | bash`, `(echo …) | bash`) writes what they print.
#[derive(Debug)]
struct Output {
    /// The nesting of the compound's own commands (not those of a substitution in
    /// them, whose output goes elsewhere).
    depth: usize,
    /// A subshell, closed by its `)`; otherwise closed by `}`, `fi` or `done`.
    subshell: bool,
    text: String,
}

/// The simple command being read.
#[derive(Debug, Default)]
struct Current {
    words: Vec<Word>,
    stdin: Option<String>,
    start: Option<usize>,
    end: usize,
    /// A word that is no prefix keyword came, or one that is no assignment either:
    /// the next word is past where a compound, or a command, may start.
    past_keywords: bool,
    past_command_start: bool,
    /// A redirection came first: a reserved word is an ordinary word after it.
    redirected: bool,
    stdin_from: Option<usize>,
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
    printed: Printed,
    /// The `${…}` just read names a positional parameter.
    positional_name: bool,
    /// The last command waits for a heredoc and passes its stdin on (`cat <<EOF |`).
    passing: Option<usize>,
    /// The stdin piped into the subshell being read (`echo … | (bash)`).
    group_stdin: Option<String>,
    /// The compounds open, with what their commands printed so far.
    outputs: Vec<Output>,
    /// What the compound just closed printed: the command its `}`, `fi` or `done`
    /// stands in (or the `)` ends) printed that.
    closed: Option<String>,
    /// Where a definition takes effect: the nesting the parse began at, the
    /// compounds open (`if`, loops, `case`, `{`), and whether the command being read
    /// follows `&&`, `||` or `|` (`operator`: no word read since that operator).
    base_depth: usize,
    compounds: usize,
    conditional: bool,
    operator: bool,
    /// A function being defined where it may take effect, and where it stands: a
    /// `|` or `&` after its body still puts it in a subshell.
    defined: Option<(String, usize, usize)>,
    /// Positions from which no balancing `)` (or `]`) follows, as scans that found
    /// none learnt it: one set of flags a character, empty until such a scan.
    unclosed: Vec<u8>,
    /// Storage done with, for the next words, commands and parsers.
    spare: Spare,
}

/// Storage a parser is done with: the next words, commands and parsers reuse it,
/// as a command of a long text leaves its words for the next one.
#[derive(Default)]
struct Spare {
    /// Emptied words.
    words: Vec<Word>,
    /// Emptied lists of words.
    lists: Vec<Vec<Word>>,
    /// An emptied text (a backtick substitution's).
    chars: Vec<char>,
}

impl<'v> Parser<'v> {
    fn new(s: Vec<char>, depth: usize, visitor: &'v mut dyn Visitor) -> Parser<'v> {
        Parser {
            s,
            i: 0,
            depth,
            visitor,
            out: Parsed::default(),
            cur: Current::default(),
            heredocs: Vec::new(),
            waiting: Vec::new(),
            printed: Printed::Nothing,
            positional_name: false,
            passing: None,
            group_stdin: None,
            outputs: Vec::new(),
            closed: None,
            base_depth: depth,
            compounds: 0,
            conditional: false,
            operator: false,
            defined: None,
            unclosed: Vec::new(),
            spare: Spare::default(),
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
        let closed = self.closed.take();
        self.passing = None;
        if current.words.is_empty() && !current.redirected {
            for doc in &mut self.heredocs {
                doc.reader.get_or_insert(usize::MAX);
            }
            // After a subshell's `)`: what it printed.
            let printed = closed.map_or(Printed::Nothing, Printed::Known);
            self.print_in_compound(printed);
            return;
        }
        let start = current.start.unwrap_or(0);
        let simple = Simple {
            words: current.words,
            stdin: current.stdin.or_else(|| self.group_stdin.clone()),
            stdin_from: current.stdin_from,
            span: (start, current.end.max(start)),
        };
        if pending || simple.stdin_from.is_some() {
            let printed =
                closed.or_else(|| self.visitor.printed(after_keywords(&simple.words), None));
            self.print_in_compound(printed.map_or(Printed::Nothing, Printed::Known));
            let reader = self.waiting.len();
            for doc in &mut self.heredocs {
                doc.reader.get_or_insert(reader);
            }
            if self.visitor.passes_stdin(&simple.words) {
                self.passing = Some(reader);
            }
            self.waiting.push(simple);
        } else {
            self.visit(&simple);
            let printed = match closed {
                Some(text) => Printed::Known(text),
                None => Printed::Words(simple.words, simple.stdin),
            };
            self.print_in_compound(printed);
        }
    }

    /// What the command just ended printed: the next command of a pipeline may
    /// take it, and a compound it stands in prints it too.
    fn print_in_compound(&mut self, printed: Printed) {
        let depth = self.depth;
        if self.outputs.last().is_none_or(|o| o.depth != depth) {
            self.set_printed(printed);
            return;
        }
        let printed = match printed {
            Printed::Words(words, stdin) => {
                let text = self
                    .visitor
                    .printed(after_keywords(&words), stdin.as_deref());
                self.reuse(words);
                text.map_or(Printed::Nothing, Printed::Known)
            }
            printed => printed,
        };
        if let (Printed::Known(text), Some(output)) = (&printed, self.outputs.last_mut()) {
            output.text.push_str(text);
        }
        self.set_printed(printed);
    }

    /// A compound opens (`{`, `if`, a loop, or a subshell): what its commands print
    /// is gathered.
    fn open_compound(&mut self, subshell: bool) {
        let depth = self.depth + usize::from(subshell);
        self.outputs.push(Output {
            depth,
            subshell,
            text: String::new(),
        });
    }

    /// A compound closes: what its commands printed is what it prints. A closing
    /// word that opened nothing at this nesting closes nothing.
    fn close_compound(&mut self, subshell: bool) {
        let depth = self.depth + usize::from(subshell);
        if self
            .outputs
            .last()
            .is_some_and(|o| o.subshell == subshell && o.depth == depth)
        {
            self.closed = self.outputs.pop().map(|output| output.text);
        }
    }

    /// What the last complete command printed, as the visitor sees it.
    fn set_printed(&mut self, printed: Printed) {
        if let Printed::Words(words, _) = std::mem::replace(&mut self.printed, printed) {
            self.reuse(words);
        }
    }

    /// Takes what the last complete command printed, asking the visitor if need be.
    fn take_printed(&mut self) -> Option<String> {
        match std::mem::replace(&mut self.printed, Printed::Nothing) {
            Printed::Nothing => None,
            Printed::Known(text) => Some(text),
            Printed::Words(words, stdin) => {
                let printed = self
                    .visitor
                    .printed(after_keywords(&words), stdin.as_deref());
                self.reuse(words);
                printed
            }
        }
    }

    /// A word done with: its storage goes to the next word read.
    fn recycle(&mut self, mut word: Word) {
        if self.spare.words.len() < SPARE_WORDS {
            word.clear();
            self.spare.words.push(word);
        }
    }

    /// The words of a command done with: their storage, and the list's, go to the
    /// next command.
    fn reuse(&mut self, mut words: Vec<Word>) {
        for word in words.drain(..) {
            self.recycle(word);
        }
        if self.cur.words.capacity() == 0 {
            self.cur.words = words;
        } else if words.capacity() > 0 && self.spare.lists.len() < SPARE_WORDS {
            self.spare.lists.push(words);
        }
    }

    /// The parse is over: its text goes to the next parser's.
    fn done(&mut self) {
        let mut s = std::mem::take(&mut self.s);
        s.clear();
        if s.capacity() > self.spare.chars.capacity() {
            self.spare.chars = s;
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

    /// The visitor has seen enough: the parser skips to the end of the text.
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

    fn push_word(&mut self, start: usize, mut word: Word) {
        if self.cur.words.capacity() == 0
            && let Some(list) = self.spare.lists.pop()
        {
            self.cur.words = list;
        }
        word.assignment = word::is_assignment(&word.text);
        self.operator = false;
        self.cur.start.get_or_insert(start);
        self.cur.end = self.i;
        if !self.cur.past_keywords && !is_prefix_keyword(&word) {
            self.cur.past_keywords = true;
            self.cur.past_command_start = !word.is_assignment();
        } else if !self.cur.past_command_start {
            self.cur.past_command_start = !(word.is_assignment() || is_prefix_keyword(&word));
        }
        self.cur.words.push(word);
    }

    /// True when the next word would be in command position: only assignments and
    /// prefix keywords stand before it.
    fn at_command_start(&self) -> bool {
        !self.cur.past_command_start
    }

    /// True when the next word may open a compound (`case`, `[[`): only prefix
    /// keywords stand before it; after an assignment or a redirection it is an
    /// ordinary command name, as bash runs it (`a=1 [[ x` runs `[[`).
    fn at_compound_start(&self) -> bool {
        !self.cur.redirected && !self.cur.past_keywords
    }

    /// True when the `n` characters ahead end a word.
    fn ends_word(&self, n: usize) -> bool {
        matches!(
            self.peek_at(n),
            None | Some(' ' | '\t' | '\n' | ';' | '&' | '|' | ')' | '<' | '>')
        )
    }
}
