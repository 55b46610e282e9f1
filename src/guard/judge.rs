//! The judge: whether a simple command, as the parser gives it, would run rm.
//!
//! It skips assignments, keywords and wrapper commands (the table in [`wrappers`]),
//! reads the scripts handed to shells and wrappers with the parser again, one level
//! deeper, and matches what runs against `rm` (with [`glob`] for globs and braces).
//! Across the commands of a call it keeps what bash keeps: functions (a function
//! named `rm` is what `rm` calls once defined where it takes effect), aliases, the
//! stdin `exec` gives, coprocesses that read a script.

use std::ops::ControlFlow;

use super::glob;
use super::parse::{self, Command, Visitor, Word};
use super::printf;
use super::special;
use super::wrappers::{self, Shapes, ShellInput, Then, Wrapper, file_in_sight, in_sight};

/// The first simple command of `text` that runs rm, as written; `text` is nested
/// `depth` deep (a script handed to `bash -c` is one deeper than its command).
pub(super) fn find_rm(text: &str, depth: usize) -> Option<String> {
    find_rm_with(text, depth, &[])
}

/// As [`find_rm`], with the names of wrappers (functions that run their arguments)
/// the text that hands this script on has defined.
fn find_rm_with(text: &str, depth: usize, wrappers: &[String]) -> Option<String> {
    judged(text, depth, wrappers).found
}

/// The judge, once it has read `text` (nested `depth` deep, with the wrappers of
/// the text that hands it on): a text nested too deep is taken to run rm.
fn judged(text: &str, depth: usize, wrappers: &[String]) -> Judge {
    let mut judge = Judge {
        wrappers: wrappers.to_vec(),
        ..Judge::default()
    };
    let parsed = parse::parse(text, depth, &mut judge);
    if parsed.too_deep {
        judge.found = Some(format!(
            "(nested more than {} levels deep)",
            parse::MAX_DEPTH
        ));
    }
    judge
}

/// Judges each simple command the parser finds, and stops it at the first that runs
/// rm: nothing after it can change the verdict.
#[derive(Default)]
struct Judge {
    /// The first simple command that runs rm, as written.
    found: Option<String>,
    /// Functions defined in this call.
    functions: Vec<String>,
    /// A command of this call runs positional parameters (`"$@"`, `exec "$1"`).
    runs_args: bool,
    /// One reads them as a script: `eval "$1"`, or unquoted and split (`$1`).
    evals_args: bool,
    /// The first positional parameter of such a command is `$0` (`"$0" "$1"`), or
    /// another (`"$@"`, `$1`): a `-c` script's command starts at its first word,
    /// or at its second.
    runs_from_zeroth: bool,
    runs_from_first: bool,
    /// Names that run their arguments: once some body runs `"$@"`, every function
    /// defined in the call (and those of the text that handed this one on).
    wrappers: Vec<String>,
    /// Aliases defined in this call, with their values.
    aliases: Vec<(String, String)>,
    /// A shell of this call reads a stdin not yet known: a group or subshell it
    /// stands in may be given one (`{ bash; } <<< …`, `(bash) <<< …`), and so may
    /// a function it stands in.
    hungry: bool,
    /// `rm` is a function of this call, defined where it takes effect: calling it
    /// runs its body, which was judged where it stands (where a call of `rm` was
    /// still rm's).
    rm_function: bool,
    /// What `exec <<< …` (or another redirection of `exec` alone) made the stdin of
    /// the commands after it.
    exec_stdin: Option<String>,
    /// The names of coprocesses of this call that read a script on stdin
    /// (`coproc bash`): what is written to them runs.
    coprocs: Vec<String>,
}

impl Visitor for Judge {
    fn command(&mut self, command: &Command<'_>) -> ControlFlow<()> {
        self.learn(command);
        let words = command.words;
        if let [exec] = words
            && exec.is_plain()
            && exec.text == "exec"
            && let Some(stdin) = command.stdin
        {
            self.exec_stdin = Some(stdin.to_owned());
        }
        let cx = Cx {
            depth: command.depth,
            wrappers: &self.wrappers,
        };
        // Most commands start with a name after which nothing runs rm, whatever their
        // stdin: nothing runs rm, and they read no script.
        let inert = words.first().is_some_and(|word| inert(word, &cx));
        // The first command that may read a script there takes it.
        let reader =
            command.stdin.is_none() && (!inert || self.exec_stdin.is_some()) && has_reader(words);
        let exec_stdin = if reader { self.exec_stdin.take() } else { None };
        let stdin = command.stdin.or(exec_stdin.as_deref());
        let group_rm = stdin.is_some_and(|stdin| {
            self.hungry
                && (closes_group(words) || self.calls_function(words))
                && script_runs_rm(stdin, &cx)
        });
        let runs = !inert
            && match self.rm_function.then(|| calls_rm(words)).flatten() {
                // A function of the call that runs its arguments runs them.
                Some(args) => {
                    self.wrappers.iter().any(|w| w == "rm") && function_runs_rm(args, &cx)
                }
                None => runs_rm(words, stdin, &cx),
            };
        if group_rm || runs || self.alias_runs_rm(command) || self.coproc_runs_rm(command, &cx) {
            // The first stays: a parse may give more after a `Break`.
            self.found.get_or_insert_with(|| command.source());
            return ControlFlow::Break(());
        }
        // A reader of a stdin not yet given: a group, a subshell or a function it
        // stands in, or a coprocess, may be given one.
        if stdin.is_none() && reader && reads_stdin(words, &cx) {
            self.hungry = true;
            if words
                .first()
                .is_some_and(|w| w.is_plain() && w.text == "coproc")
            {
                let named = words.get(2).is_some_and(|w| w.is_plain() && w.text == "{");
                let name = if named { &words[1].text } else { "COPROC" };
                self.coprocs.push(name.to_owned());
            }
        }
        ControlFlow::Continue(())
    }

    fn printed(&mut self, words: &[Word], stdin: Option<&str>) -> Option<String> {
        printed(words, stdin)
    }

    fn function(&mut self, name: &str) {
        self.define(name);
    }

    fn function_in_effect(&mut self, name: &str) {
        if name == "rm" {
            self.rm_function = true;
        }
    }

    fn passes_stdin(&mut self, words: &[Word]) -> bool {
        passes_stdin(words)
    }
}

impl Judge {
    fn define(&mut self, name: &str) {
        self.functions.push(name.to_owned());
        if self.runs_args {
            self.wrappers.push(name.to_owned());
        }
    }

    /// What a command defines: `function NAME`, `alias NAME=VALUE`, and whether it
    /// runs positional parameters (then every function of the call is a wrapper).
    fn learn(&mut self, command: &Command<'_>) {
        let words = command.words;
        let first = words
            .first()
            .filter(|w| w.is_plain())
            .map(|w| w.text.as_str());
        let mut words = words;
        match first {
            Some("function") if words.len() > 1 => {
                let name = words[1].text.trim_end_matches("()").to_owned();
                self.define(&name);
                words = &words[2..];
            }
            // `unset rm`, `unset -f rm`: rm is the program again.
            Some("unset") if words.iter().any(|w| w.text == "rm") => self.rm_function = false,
            Some("alias") => {
                let values = words[1..].iter().filter_map(|w| w.text.split_once('='));
                let values = values.map(|(name, value)| (name.to_owned(), value.to_owned()));
                self.aliases.extend(values);
            }
            _ => {}
        }
        if runs_positional(words) {
            let zeroth = zeroth_first(&command.source());
            self.runs_from_zeroth |= zeroth;
            self.runs_from_first |= !zeroth;
            self.evals_args |= evals_positional(words);
            if !self.runs_args {
                self.runs_args = true;
                self.wrappers.extend(self.functions.iter().cloned());
            }
        }
    }

    /// Whether the command calls a function of this call.
    fn calls_function(&self, words: &[Word]) -> bool {
        let mut words = words.iter().skip_while(|w| w.is_assignment());
        words
            .next()
            .is_some_and(|name| name.is_literal() && self.functions.contains(&name.text))
    }

    /// A command that writes a script to a coprocess of this call that reads one:
    /// `echo 'rm x' >&"${COPROC[1]}"`, where what `echo`, `printf` or `cat` (of its
    /// stdin) writes is known, and the command names the coprocess.
    fn coproc_runs_rm(&self, command: &Command<'_>, cx: &Cx) -> bool {
        if self.coprocs.is_empty() {
            return false;
        }
        let source = command.source();
        if !self
            .coprocs
            .iter()
            .any(|name| source.contains(name.as_str()))
        {
            return false;
        }
        let written = match printed(command.words, None) {
            Some(printed) => Some(printed),
            None if passes_stdin(command.words) => command.stdin.map(str::to_owned),
            None => None,
        };
        written.is_some_and(|script| script_runs_rm(&script, cx))
    }

    /// A command whose name is an alias of this call: its value, then the rest of
    /// its words, read as a script (`alias s='sudo '; s rm x`).
    fn alias_runs_rm(&self, command: &Command<'_>) -> bool {
        if self.aliases.is_empty() {
            return false;
        }
        let mut words = command.words.iter().skip_while(|w| w.is_assignment());
        let Some(first) = words.next() else {
            return false;
        };
        let Some((_, value)) = self
            .aliases
            .iter()
            .rev()
            .find(|(name, _)| *name == first.text)
        else {
            return false;
        };
        let rest: Vec<&str> = words.map(|w| w.text.as_str()).collect();
        let script = format!("{value} {}", rest.join(" "));
        find_rm_with(&script, command.depth + 1, &self.wrappers).is_some()
    }
}

/// The arguments of a command that calls `rm` as bash looks it up, where a function
/// of that name comes first: after assignments and keywords only, its name literal
/// (`rm`, `\rm`, `"rm"`; not a path, nor after a wrapper such as `command`).
fn calls_rm(words: &[Word]) -> Option<&[Word]> {
    let start = words
        .iter()
        .position(|w| !(w.is_assignment() || w.is_plain() && is_keyword(&w.text)))?;
    let name = &words[start];
    (name.is_literal() && name.text == "rm").then(|| &words[start + 1..])
}

/// Nothing but the end of a compound, whose redirections give its commands their
/// stdin: `}`, `done`, `fi`, `esac`, or none at all after `)`.
fn closes_group(words: &[Word]) -> bool {
    words
        .iter()
        .all(|w| w.is_plain() && ["}", "done", "fi", "esac"].contains(&&*w.text))
}

/// Whether a command that runs no rm, with a reader among its words, reads stdin
/// for its script: a shell, `source /dev/stdin`, or `make -f -` given a makefile
/// there. Given one that is both a script and a makefile running rm, it runs rm.
fn reads_stdin(words: &[Word], cx: &Cx) -> bool {
    runs_rm(words, Some("all: ; rm"), cx)
}

/// Whether a word of the command may read a script on stdin: a shell, `source`,
/// make given `-` or a stdin file (`-f -`, `--file=/dev/stdin`), tclsh, or a wrapper
/// that starts a shell.
fn has_reader(words: &[Word]) -> bool {
    let stdin_file = || {
        words
            .iter()
            .any(|w| w.text.ends_with('-') || w.text.ends_with("stdin") || w.text.ends_with("/0"))
    };
    words.iter().any(|w| {
        // No option is a reader; asked of nearly every word, this stays cheap.
        if w.text.starts_with('-') {
            return false;
        }
        let name = base_name(&w.text);
        if !READERS.may_hold(name) && !name.starts_with("tclsh") {
            return false;
        }
        matches!(name, "make" | "gmake") && stdin_file()
            || matches!(name, "wish" | "expect")
            || name.starts_with("tclsh")
            || wrappers::find(name).is_some_and(|spec| {
                matches!(spec.then, Then::Shell | Then::Source) || spec.bare_shell
            })
    })
}

/// The shapes of the names [`has_reader`] looks for but `tclsh`'s (which have
/// versions): shells, `source`, wrappers that start a shell, make and Tcl's `wish` and
/// `expect`.
const READERS: Shapes = Shapes::of_table(true).and(&["make", "gmake", "wish", "expect"]);

/// A command name's last path component: what the tables know it by. Asked of
/// nearly every word, mostly short ones: a loop over their bytes costs less than a
/// search set up for long ones.
fn base_name(text: &str) -> &str {
    let slash = if text.len() < 32 {
        text.bytes().rposition(|b| b == b'/')
    } else {
        text.rfind('/')
    };
    match slash {
        Some(slash) => &text[slash + 1..],
        None => text,
    }
}

/// Whether a command runs positional parameters as a command: `"$@"`, `$1 …`,
/// `command "$@"`, `exec "$@"`, `eval "$*"`, or loops over them (`for a in "$@"`).
fn runs_positional(words: &[Word]) -> bool {
    // Most commands expand no positional parameter at all.
    if !words.iter().any(|w| w.positional) {
        return false;
    }
    let mut rest = words
        .iter()
        .skip_while(|w| w.is_assignment() || w.is_plain() && is_keyword(&w.text));
    let Some(first) = rest.next() else {
        return false;
    };
    if first.positional {
        return true;
    }
    let name = base_name(&first.text);
    let loops = first.is_plain() && matches!(name, "for" | "select");
    rest.any(|w| w.positional) && (loops || wrappers::find(name).is_some())
}

/// Whether the first positional parameter a command expands is `$0` (`"$0" "$1"`),
/// not `$1` or `"$@"`.
fn zeroth_first(source: &str) -> bool {
    let zeroth = ["$0", "${0}"].iter().filter_map(|p| source.find(p)).min();
    let others = source.match_indices('$').map(|(at, _)| at).find(|&at| {
        let rest = source[at + 1..].trim_start_matches('{');
        rest.starts_with(|c: char| c.is_ascii_digit() && c != '0' || c == '@' || c == '*')
    });
    match (zeroth, others) {
        (Some(zeroth), Some(others)) => zeroth < others,
        (zeroth, _) => zeroth.is_some(),
    }
}

/// Whether a command that runs positional parameters reads them as a script: `eval
/// "$@"`, or a parameter unquoted, which bash splits (`$1`).
fn evals_positional(words: &[Word]) -> bool {
    let words = skip_prefixes(words);
    words
        .first()
        .is_some_and(|w| w.is_plain() && w.text == "eval")
        || words
            .iter()
            .any(|w| w.positional && w.before_split().is_some())
}

/// What a command is judged in: its nesting, and the functions of the call that run
/// their arguments.
struct Cx<'a> {
    depth: usize,
    wrappers: &'a [String],
}

/// What a command writes, near enough to read it as a script, when it is in sight:
/// `echo` or `printf` with literal arguments (`echo 'rm x' | bash`, `printf 'r\x6d
/// %s' x | bash`), `yes` (one of its lines), and what passes its `stdin` on (`cat`,
/// `tee`, `head`, …: see [`passes_stdin`]).
fn printed(words: &[Word], stdin: Option<&str>) -> Option<String> {
    let words = skip_prefixes(words);
    let words = skip_builtin(words);
    let (name, args) = words.split_first()?;
    // Asked of every command piped on: the others are told apart before anything is
    // built.
    let print: fn(&[&str]) -> String = match base_name(&name.text) {
        "echo" => printf::echo,
        "printf" => printf::printf,
        "yes" => yes,
        _ if passes_stdin(words) => return stdin.map(str::to_owned),
        _ => return None,
    };
    Some(print(&texts(args)))
}

/// A line of what `yes` prints, forever: its arguments, or `y`.
fn yes(args: &[&str]) -> String {
    let args = match args.first() {
        Some(&"--") => &args[1..],
        _ => args,
    };
    if args.is_empty() {
        "y\n".to_owned()
    } else {
        format!("{}\n", args.join(" "))
    }
}

/// A command's words after the keywords and assignments before its name: the
/// commands of a compound start with its keyword (`{ echo …`, `then echo …`).
fn skip_prefixes(words: &[Word]) -> &[Word] {
    let start = words
        .iter()
        .position(|w| !(w.is_assignment() || w.is_plain() && is_keyword(&w.text)))
        .unwrap_or(words.len());
    &words[start..]
}

/// `builtin echo`, `command echo`: the command itself.
fn skip_builtin(words: &[Word]) -> &[Word] {
    match words.split_first() {
        Some((first, rest))
            if first.is_plain() && ["builtin", "command"].contains(&&*first.text) =>
        {
            rest
        }
        _ => words,
    }
}

/// Whether a command writes its stdin on (`cat <<'EOF' | bash`, `echo … | tee log |
/// bash`): `tee`, and `cat`, `head`, `tail`, `sort`, `uniq` and `tac` given no file
/// but `-`. Those that keep some lines, or change their order, are taken to pass
/// all of them.
fn passes_stdin(words: &[Word]) -> bool {
    let Some((name, args)) = skip_builtin(skip_prefixes(words)).split_first() else {
        return false;
    };
    let name = base_name(&name.text);
    if name == "tee" {
        return true;
    }
    let Some((_, short, long)) = PASSERS.iter().find(|(passer, ..)| *passer == name) else {
        return false;
    };
    // A word that is no option, nor an option's value, is a file.
    let mut takes_value = false;
    args.iter().all(|w| {
        let text = w.text.as_str();
        let value = std::mem::take(&mut takes_value);
        if value || text == "-" {
            return true;
        }
        if let Some(name) = text.strip_prefix("--") {
            takes_value = long.contains(&name);
            return true;
        }
        if let Some(letters) = text.strip_prefix('-') {
            // The letter that takes a value takes the rest of the word, or the next.
            takes_value = letters
                .char_indices()
                .find(|&(_, c)| short.contains(c))
                .is_some_and(|(at, c)| at + c.len_utf8() == letters.len());
            return true;
        }
        false
    })
}

/// The commands that write their stdin on when given no file, with their options
/// that take a value (short letters, long names): `head -n 1`, `sort -k 2`.
const PASSERS: &[(&str, &str, &[&str])] = &[
    ("cat", "", &[]),
    ("head", "nc", &["lines", "bytes"]),
    (
        "tail",
        "ncs",
        &[
            "lines",
            "bytes",
            "pid",
            "sleep-interval",
            "max-unchanged-stats",
        ],
    ),
    (
        "sort",
        "ktoST",
        &[
            "key",
            "field-separator",
            "output",
            "buffer-size",
            "temporary-directory",
            "batch-size",
            "compress-program",
            "files0-from",
            "parallel",
            "random-source",
            "sort",
        ],
    ),
    ("uniq", "fsw", &["skip-fields", "skip-chars", "check-chars"]),
    ("tac", "s", &["separator"]),
];

/// A script handed to a shell or wrapper, read one level deeper.
fn script_runs_rm(script: &str, cx: &Cx) -> bool {
    find_rm_with(script, cx.depth + 1, cx.wrappers).is_some()
}

/// Keywords that may stand before a command.
fn is_keyword(text: &str) -> bool {
    matches!(
        text,
        "!" | "{"
            | "}"
            | "if"
            | "then"
            | "else"
            | "elif"
            | "fi"
            | "do"
            | "done"
            | "while"
            | "until"
            | "esac"
    )
}

/// Where the judge goes from a word of a simple command.
enum Step {
    /// On, this many words: what runs starts there.
    Skip(usize),
    /// What runs is rm, or runs it.
    Rm,
    /// Nothing that runs is rm.
    NoRm,
}

/// Variables whose value a program started here runs or expands as code: a shell's
/// `PROMPT_COMMAND` and the prompts of an interactive or `-x` shell; the editors,
/// pagers and helpers that git, man, crontab and others run (`GIT_SSH`, a program,
/// is read as a script too), rsync's remote shell, less's input filters
/// (`LESSOPEN='|rm x %s'` reads as a pipe into rm), and the values of git's settings given in the
/// environment (`GIT_CONFIG_VALUE_<n>`), whatever their key.
fn runs_value(name: &str) -> bool {
    name.starts_with("GIT_CONFIG_VALUE_")
        || matches!(
            name,
            "PROMPT_COMMAND"
                | "PS0"
                | "PS1"
                | "PS2"
                | "PS4"
                | "EDITOR"
                | "VISUAL"
                | "PAGER"
                | "MANPAGER"
                | "GIT_PAGER"
                | "GIT_EDITOR"
                | "GIT_SEQUENCE_EDITOR"
                | "GIT_SSH_COMMAND"
                | "GIT_SSH"
                | "GIT_EXTERNAL_DIFF"
                | "GIT_ASKPASS"
                | "SSH_ASKPASS"
                | "GIT_PROXY_COMMAND"
                | "RSYNC_RSH"
                | "RSYNC_CONNECT_PROG"
                | "LESSOPEN"
                | "LESSCLOSE"
                | "BROWSER"
        )
}

/// Variables whose value a program reads as options given before its own:
/// `TAR_OPTIONS`, `ZIPOPT` and `MANOPT`. The program they belong to.
fn options_of(name: &str) -> Option<&'static str> {
    match name {
        "TAR_OPTIONS" => Some("tar"),
        "ZIPOPT" => Some("zip"),
        "MANOPT" => Some("man"),
        _ => None,
    }
}

impl Step {
    /// `Rm` stays; otherwise on to the next word.
    fn or_skip(self) -> Step {
        match self {
            Step::Rm => Step::Rm,
            _ => Step::Skip(1),
        }
    }

    fn rm_if(rm: bool) -> Step {
        if rm { Step::Rm } else { Step::NoRm }
    }
}

/// True when the simple command `words` would run rm; `stdin` is the text a
/// here-string or heredoc gives it.
fn runs_rm(words: &[Word], stdin: Option<&str>, cx: &Cx) -> bool {
    let mut i = 0;
    while i < words.len() {
        match step(&words[i], &words[i + 1..], stdin, cx) {
            Step::Skip(n) => i += n,
            Step::Rm => return true,
            Step::NoRm => return false,
        }
    }
    false
}

/// One word of a simple command, before the words `rest`: an assignment, a keyword
/// or a wrapper to pass, or what runs.
fn step(word: &Word, rest: &[Word], stdin: Option<&str>, cx: &Cx) -> Step {
    if word.is_assignment() {
        return match word.text.split_once('=') {
            // Hooks, editors and pagers a program started here runs: checked as scripts.
            Some((name, value)) if !rest.is_empty() && runs_value(name) => {
                Step::rm_if(script_runs_rm(value, cx)).or_skip()
            }
            // Options a program started here reads from the environment, as if given
            // first: `TAR_OPTIONS='--to-command=…' tar -xf a.tar`.
            Some((name, value)) if !rest.is_empty() && options_of(name).is_some() => {
                let program = options_of(name).unwrap_or_default();
                Step::rm_if(script_runs_rm(&format!("{program} {value}"), cx)).or_skip()
            }
            // The start-up file of a shell started here, when its text is in sight.
            Some(("BASH_ENV" | "ENV", file)) if !rest.is_empty() => {
                let text = in_sight(file, word.fed.as_deref(), stdin);
                Step::rm_if(text.is_some_and(|text| script_runs_rm(text, cx))).or_skip()
            }
            _ => Step::Skip(1),
        };
    }
    if word.is_plain()
        && let Some(step) = keyword(&word.text, rest)
    {
        return step;
    }
    if names_rm(word) {
        return Step::rm_if(!only_informs(rest));
    }
    if word.is_computed() && computed_shell_runs_rm(rest, cx) {
        return Step::Rm;
    }
    if word.may_vanish() {
        // `$cmd rm x` with `$cmd` empty runs rm; `$cmd x` is out of reach.
        return Step::Skip(1);
    }
    if word.is_plain() && cx.wrappers.contains(&word.text) {
        return Step::rm_if(function_runs_rm(rest, cx));
    }
    let name = base_name(&word.text);
    let script = |text: &str| script_runs_rm(text, cx);
    if let Some(rm) = special::runs_rm(name, rest, stdin, &script) {
        return Step::rm_if(rm);
    }
    let Some(spec) = wrappers::find(name) else {
        return Step::NoRm;
    };
    match wrapped(spec, rest, stdin, cx) {
        Step::Skip(n) => Step::Skip(1 + n),
        verdict => verdict,
    }
}

/// A keyword, followed by `rest`: the words it takes, or the end of what runs.
/// `None` when `word` is no keyword.
fn keyword(word: &str, rest: &[Word]) -> Option<Step> {
    let is = |w: &Word, text: &str| w.is_plain() && w.text == text;
    let step = match word {
        keyword if is_keyword(keyword) => Step::Skip(1),
        // `function NAME`.
        "function" => Step::Skip(2),
        // `coproc NAME { …; }` or `coproc COMMAND`.
        "coproc" => Step::Skip(if rest.get(1).is_some_and(|w| is(w, "{")) {
            2
        } else {
            1
        }),
        // `for NAME [in WORDS]; do` is data up to its `do`.
        "for" | "select" => match rest.iter().position(|w| is(w, "do")) {
            Some(at) => Step::Skip(at + 2),
            None => Step::NoRm,
        },
        "in" | "[[" | "]]" | "case" => Step::NoRm,
        _ => return None,
    };
    Some(step)
}

/// `rm --help`, `rm -f x --version`: GNU rm reads all its options first and, given
/// either, prints and deletes nothing. Only when every word before it is literal
/// and none is `--` (`rm $x --help` may be `rm -- --help`).
fn only_informs(args: &[Word]) -> bool {
    for word in args {
        if !word.is_plain() || word.text == "--" {
            return false;
        }
        if word.text == "--help" || word.text == "--version" {
            return true;
        }
    }
    false
}

/// A command word after which nothing runs rm, whatever follows it and whatever its
/// stdin: a plain name that is no assignment or keyword, does not name rm, and is
/// neither a function of the call that runs its arguments, nor a wrapper, nor a
/// command [`special`] reads. [`step`] answers `NoRm` for it.
fn inert(word: &Word, cx: &Cx) -> bool {
    if !word.is_plain() || word.is_assignment() || names_rm(word) {
        return false;
    }
    if keyword(&word.text, &[]).is_some() || cx.wrappers.contains(&word.text) {
        return false;
    }
    let name = base_name(&word.text);
    !special::knows(name) && wrappers::find(name).is_none()
}

/// For the tests: `None` when [`inert`] does not take the first of `words` for inert;
/// otherwise whether [`step`] answers `NoRm` for it with each of `stdins`.
#[cfg(test)]
pub(super) fn inert_agrees(words: &[Word], stdins: &[Option<&str>]) -> Option<bool> {
    let cx = Cx {
        depth: 0,
        wrappers: &[],
    };
    let (first, rest) = words.split_first()?;
    inert(first, &cx).then(|| {
        stdins
            .iter()
            .all(|&stdin| matches!(step(first, rest, stdin, &cx), Step::NoRm))
    })
}

/// Could this command word run rm?
fn names_rm(word: &Word) -> bool {
    let spells = |text: &str| text == "rm" || text.ends_with("/rm");
    spells(&word.text)
        || word.before_split().is_some_and(spells)
        || (word.glob || word.brace) && glob::could_be_rm(word.pattern())
}

/// `$SHELL -c SCRIPT`: whatever the shell, the script is checked.
fn computed_shell_runs_rm(args: &[Word], cx: &Cx) -> bool {
    let texts = texts(args);
    match wrappers::shell_input(&texts) {
        ShellInput::Script(script, at) => shell_script_runs_rm(script, args.get(at..), cx),
        _ => false,
    }
}

/// A shell's `-c SCRIPT`, given the words after it (`$0`, `$1`, …): the script is
/// checked, and when it runs its positional parameters (`"$@"`, `"$0" "$1"`), so
/// are those words, as a command from `$0` or from `$1`; when it reads them as a
/// script (`eval "$1"`, `$1`), each of them is one (`bash -c 'eval "$1"' _ 'rm x'`).
fn shell_script_runs_rm(script: &str, args: Option<&[Word]>, cx: &Cx) -> bool {
    let judge = judged(script, cx.depth + 1, cx.wrappers);
    if judge.found.is_some() {
        return true;
    }
    let args = args.unwrap_or_default();
    judge.runs_from_zeroth && function_runs_rm(args, cx)
        || judge.runs_from_first && args.get(1..).is_some_and(|rest| function_runs_rm(rest, cx))
        || judge.evals_args && args.iter().any(|arg| script_runs_rm(&arg.text, cx))
}

/// A function of the call that runs its arguments may take counts and options
/// first (`retry 3 rm x`, `retry -n 3 rm x`): its command starts after them.
fn function_runs_rm(args: &[Word], cx: &Cx) -> bool {
    let setting = |w: &Word| w.text.starts_with('-') || w.text.bytes().all(|b| b.is_ascii_digit());
    let start = args.iter().position(|w| !setting(w)).unwrap_or(args.len());
    runs_rm(&args[start..], None, cx)
}

fn texts(words: &[Word]) -> Vec<&str> {
    words.iter().map(|w| w.text.as_str()).collect()
}

/// What a wrapper given the words `rest` runs; `Skip(n)`: the command `n` words on.
/// A wrapper of subcommands (`npm exec`) wraps only in them, after its options.
fn wrapped(spec: &Wrapper, rest: &[Word], stdin: Option<&str>, cx: &Cx) -> Step {
    if spec.sub.is_empty() {
        return wrapped_args(spec, rest, stdin, cx);
    }
    let texts = texts(rest);
    let at = wrappers::options(spec, &texts).len;
    if !texts.get(at).is_some_and(|sub| spec.sub.contains(sub)) {
        return Step::NoRm;
    }
    match wrapped_args(spec, &rest[at + 1..], stdin, cx) {
        Step::Skip(n) => Step::Skip(at + 1 + n),
        verdict => verdict,
    }
}

/// What a wrapper runs, given the words after its name (or subcommand).
fn wrapped_args(spec: &Wrapper, rest: &[Word], stdin: Option<&str>, cx: &Cx) -> Step {
    let texts = texts(rest);
    if let Some(rm) = input_runs_rm(spec.then, rest, &texts, stdin, cx) {
        return Step::rm_if(rm);
    }
    let script = |text: &str| script_runs_rm(text, cx);
    let options = wrappers::options(spec, &texts);
    if options.scripts.iter().any(|text| script(text)) {
        return Step::Rm;
    }
    let given = |flags: &[&str]| options.given.iter().any(|g| flags.contains(&g.as_str()));
    if options.unknown_before_rm && !given(spec.lookup) {
        return Step::Rm;
    }
    let mut k = (options.len + spec.operands).min(texts.len());
    if spec.late_options {
        k += wrappers::options(spec, &texts[k..]).len;
    }
    if texts.get(k).is_some_and(|t| spec.script.contains(t)) {
        return Step::rm_if(texts.get(k + 1).is_some_and(|text| script(text)));
    }
    // Given no command, a shell that reads stdin: `su <<< …`, `chroot / <<< …`.
    let bare = k >= texts.len()
        || spec.then == Then::Nothing
        || spec.then == Then::CommandWithUser && !given(&["-u", "--user"]);
    if spec.bare_shell && options.scripts.is_empty() && bare {
        return Step::rm_if(stdin.is_some_and(script));
    }
    if given(spec.lookup) {
        return Step::NoRm;
    }
    match spec.then {
        Then::Command => Step::Skip(k),
        Then::CommandWithUser if given(&["-u", "--user"]) => Step::Skip(k),
        Then::Script => Step::rm_if(script(&texts[k..].join(" "))),
        Then::FirstScript => Step::rm_if(texts.get(k).is_some_and(|text| script(text))),
        Then::Parallel => Step::rm_if(parallel_runs_rm(&texts[k..], cx)),
        _ => Step::NoRm,
    }
}

/// Whether a wrapper that runs a script or file, not its words (a shell, `source`,
/// `find`, `alias`), runs rm; `None` for the other wrappers.
fn input_runs_rm(
    then: Then,
    args: &[Word],
    texts: &[&str],
    stdin: Option<&str>,
    cx: &Cx,
) -> Option<bool> {
    let script = |text: &str| script_runs_rm(text, cx);
    let rm = match then {
        Then::Shell if rcfile_runs_rm(args, stdin, cx) => true,
        Then::Shell => match wrappers::shell_input(texts) {
            ShellInput::Script(text, at) => shell_script_runs_rm(text, args.get(at..), cx),
            ShellInput::Stdin => stdin.is_some_and(script),
            ShellInput::File(at) => file_in_sight(&args[at], stdin).is_some_and(script),
            ShellInput::NoExec => false,
        },
        Then::Source => args
            .iter()
            .find(|w| !w.text.starts_with('-'))
            .and_then(|file| file_in_sight(file, stdin))
            .is_some_and(script),
        Then::Find => find_exec(args, cx),
        Then::Alias => {
            let values = texts.iter().filter_map(|t| t.split_once('='));
            values.map(|(_, value)| value).any(script)
        }
        _ => return None,
    };
    Some(rm)
}

/// `parallel CMD ::: ARGS` runs CMD; `parallel ::: CMDS` runs each of CMDS.
fn parallel_runs_rm(args: &[&str], cx: &Cx) -> bool {
    let script = |text: &str| script_runs_rm(text, cx);
    let split = args.iter().position(|t| t.starts_with(":::"));
    let command = &args[..split.unwrap_or(args.len())];
    if command.is_empty() {
        let inputs = split.map_or(&[][..], |at| &args[at + 1..]);
        inputs.iter().any(|text| script(text))
    } else {
        script(&command.join(" "))
    }
}

/// `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`, and `+`).
fn find_exec(args: &[Word], cx: &Cx) -> bool {
    let mut i = 0;
    while i < args.len() {
        if !matches!(
            args[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = args[start..]
            .iter()
            .position(|w| w.text == ";" || w.text == "+")
            .map_or(args.len(), |at| start + at);
        if runs_rm(&args[start..end], None, cx) {
            return true;
        }
        i = end + 1;
    }
    false
}

/// `bash --rcfile FILE`, `--init-file FILE`: a start-up file, checked when in sight.
fn rcfile_runs_rm(args: &[Word], stdin: Option<&str>, cx: &Cx) -> bool {
    args.iter().enumerate().any(|(k, arg)| {
        let text = match arg.text.split_once('=') {
            Some((name, file)) if ["--rcfile", "--init-file"].contains(&name) => {
                in_sight(file, arg.fed.as_deref(), stdin)
            }
            None if ["--rcfile", "--init-file"].contains(&arg.text.as_str()) => {
                args.get(k + 1).and_then(|file| file_in_sight(file, stdin))
            }
            _ => return false,
        };
        text.is_some_and(|text| script_runs_rm(text, cx))
    })
}
