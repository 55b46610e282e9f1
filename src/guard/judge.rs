//! The judge: whether a simple command, as the parser gives it, would run rm.
//!
//! It skips assignments, keywords and wrapper commands (the table in [`wrappers`]),
//! reads the scripts handed to shells and wrappers with the parser again, one level
//! deeper, and matches what runs against `rm` (with [`glob`] for globs and braces).

use std::ops::ControlFlow;

use super::glob;
use super::parse::{self, Command, Visitor, Word, is_assignment};
use super::wrappers::{self, ShellInput, Then};

/// The first simple command of `text` that runs rm, as written; `text` is nested
/// `depth` deep (a script handed to `bash -c` is one deeper than its command).
pub(super) fn find_rm(text: &str, depth: usize) -> Option<String> {
    let mut judge = Judge::default();
    let parsed = parse::parse(text, depth, &mut judge);
    if parsed.too_deep {
        return Some(format!(
            "(nested more than {} levels deep)",
            parse::MAX_DEPTH
        ));
    }
    judge.found
}

/// Judges each simple command the parser finds, and stops it at the first that runs
/// rm: nothing after it can change the verdict.
#[derive(Default)]
struct Judge {
    /// The first simple command that runs rm, as written.
    found: Option<String>,
}

impl Visitor for Judge {
    fn command(&mut self, command: &Command<'_>) -> ControlFlow<()> {
        if runs_rm(command.words, command.stdin, command.depth) {
            self.found.get_or_insert_with(|| command.source());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn printed(&mut self, words: &[Word]) -> Option<String> {
        printed(words)
    }
}

/// What `echo` or `printf` with literal arguments writes, near enough to read it
/// as a script: `echo 'rm x' | bash`.
fn printed(words: &[Word]) -> Option<String> {
    let (name, args) = words.split_first()?;
    let args = args.iter().map(|w| w.text.as_str());
    match name.text.as_str() {
        "echo" => Some(
            args.skip_while(|a| matches!(*a, "-n" | "-e" | "-E" | "-ne" | "-en"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        // Each argument on a line of its own, so `printf '%s\n' 'rm x'` shows its rm.
        "printf" => Some(args.collect::<Vec<_>>().join("\n")),
        _ => None,
    }
}

fn script_runs_rm(script: &str, depth: usize) -> bool {
    find_rm(script, depth + 1).is_some()
}

/// Keywords that may stand before a command.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac",
];

/// True when the simple command `words` would run rm; `stdin` is the text a
/// here-string or heredoc gives it.
fn runs_rm(words: &[Word], stdin: Option<&str>, depth: usize) -> bool {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if is_assignment(&word.text) {
            i += 1;
            continue;
        }
        if word.is_plain() {
            match word.text.as_str() {
                keyword if KEYWORDS.contains(&keyword) => {
                    i += 1;
                    continue;
                }
                "function" => {
                    i += 2;
                    continue;
                }
                "coproc" => {
                    let named = words
                        .get(i + 2)
                        .is_some_and(|w| w.is_plain() && w.text == "{");
                    i += if named { 2 } else { 1 };
                    continue;
                }
                "for" | "select" => {
                    // `for NAME [in WORDS]; do` is data up to its `do`.
                    let body = words[i + 1..]
                        .iter()
                        .position(|w| w.is_plain() && w.text == "do");
                    match body {
                        Some(at) => {
                            i += at + 2;
                            continue;
                        }
                        None => return false,
                    }
                }
                "in" | "[[" | "]]" | "case" => return false,
                _ => {}
            }
        }
        if names_rm(word) {
            return true;
        }
        if word.is_computed() {
            // `$SHELL -c SCRIPT`: whatever the shell, the script is checked.
            let texts: Vec<&str> = words[i + 1..].iter().map(|w| w.text.as_str()).collect();
            if let ShellInput::Script(script) = wrappers::shell_input(&texts)
                && script_runs_rm(script, depth)
            {
                return true;
            }
        }
        if word.may_vanish() {
            // `$cmd rm x` with `$cmd` empty runs rm; `$cmd x` is out of reach.
            i += 1;
            continue;
        }
        let name = word.text.rsplit('/').next().unwrap_or(&word.text);
        let Some(spec) = wrappers::find(name) else {
            return false;
        };
        let rest = &words[i + 1..];
        match wrapped(spec, rest, stdin, depth) {
            Wrapped::Command(skip) => i += 1 + skip,
            Wrapped::Rm => return true,
            Wrapped::NoRm => return false,
        }
    }
    false
}

/// Could this command word run rm?
fn names_rm(word: &Word) -> bool {
    let spells = |text: &str| text == "rm" || text.ends_with("/rm");
    spells(&word.text)
        || word.before_split.as_deref().is_some_and(spells)
        || (word.glob || word.brace) && glob::could_be_rm(&word.pattern)
}

/// What a wrapper runs.
enum Wrapped {
    /// The command that starts this many words on.
    Command(usize),
    Rm,
    NoRm,
}

fn wrapped(spec: &wrappers::Wrapper, rest: &[Word], stdin: Option<&str>, depth: usize) -> Wrapped {
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let verdict = |rm: bool| if rm { Wrapped::Rm } else { Wrapped::NoRm };
    let script = |text: &str| script_runs_rm(text, depth);
    match spec.then {
        Then::Shell => {
            return verdict(match wrappers::shell_input(&texts) {
                ShellInput::Script(text) => script(text),
                ShellInput::Stdin => stdin.is_some_and(script),
                ShellInput::File => false,
            });
        }
        Then::Source => {
            let from_stdin = texts
                .iter()
                .find(|t| !t.starts_with('-'))
                .is_some_and(|file| ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"].contains(file));
            return verdict(from_stdin && stdin.is_some_and(script));
        }
        Then::Find => return verdict(find_exec(rest, depth)),
        Then::Alias => {
            let values = texts.iter().filter_map(|t| t.split_once('='));
            return verdict(values.map(|(_, value)| value).any(script));
        }
        _ => {}
    }
    let options = wrappers::options(spec, &texts);
    if options.scripts.iter().any(|text| script(text)) {
        return Wrapped::Rm;
    }
    let k = (options.len + spec.operands).min(texts.len());
    if texts.get(k).is_some_and(|t| spec.script.contains(t)) {
        return verdict(texts.get(k + 1).is_some_and(|text| script(text)));
    }
    let given = |flags: &[&str]| options.given.iter().any(|g| flags.contains(&g.as_str()));
    if given(spec.lookup) {
        return Wrapped::NoRm;
    }
    match spec.then {
        Then::Command => Wrapped::Command(k),
        Then::CommandWithUser if given(&["-u", "--user"]) => Wrapped::Command(k),
        Then::Script => verdict(script(&texts[k..].join(" "))),
        Then::FirstScript => verdict(texts.get(k).is_some_and(|text| script(text))),
        Then::Parallel => {
            let args = &texts[k..];
            let split = args.iter().position(|t| t.starts_with(":::"));
            let command = &args[..split.unwrap_or(args.len())];
            if command.is_empty() {
                let inputs = split.map_or(&[][..], |at| &args[at + 1..]);
                verdict(inputs.iter().any(|text| script(text)))
            } else {
                verdict(script(&command.join(" ")))
            }
        }
        _ => Wrapped::NoRm,
    }
}

/// `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`, and `+`).
fn find_exec(args: &[Word], depth: usize) -> bool {
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
        if runs_rm(&args[start..end], None, depth) {
            return true;
        }
        i = end + 1;
    }
    false
}
