//! Programs that run a command given as the value of one of their options, as data:
//! tar's `--to-command`, `-I`, `--checkpoint-action=exec=…` and volume scripts,
//! zip's `-TT`, ssh's `-o ProxyCommand=…` (and a config file in sight), scp's and
//! sftp's `-S`/`-D`, rsync's `-e`/`--rsync-path`, man's `-P`/`-H`, sort's
//! `--compress-program`; git's `grep -O` and `difftool -x` (through [`OPTIONS_OF_GIT`]
//! for the git reader in `special`).
//!
//! Each option is read as the program reads it: short ones in a cluster (`-cvI CMD`,
//! `-ICMD`), long ones with `=` or the next word, and abbreviated as getopt allows
//! (`--to-c`, `--use`). A prefix of several options is refused by the program itself,
//! so taking it for the one that runs a command only refuses what would fail.

use super::parse::Word;
use super::wrappers::{Shapes, in_sight};

/// A program whose options may run a command.
pub(super) struct Runner {
    pub names: &'static [&'static str],
    /// Short options that take a value (as the rest of the word or the next word)
    /// and run none: the letters after them in a cluster are that value.
    short_values: &'static str,
    /// Options that run their value, short (`-I`, zip's two-letter `-TT`) or long
    /// (without `--`).
    short: &'static [Runs],
    long: &'static [Runs],
    /// Long options whose names begin another's that runs (`--checkpoint`): given
    /// whole, they are themselves, not an abbreviation.
    exact: &'static [&'static str],
    /// Its first word may be a cluster of letters without a dash, each that takes a
    /// value taking the next word in turn (tar's old style: `tar cIf CMD a.tar`).
    old_style: bool,
}

/// An option that runs its value, and how it reads it.
struct Runs {
    name: &'static str,
    value: Value,
    /// Its value is optional, so only attached (`-Opager`, `--html=browser`).
    optional: bool,
}

/// How an option's value runs.
#[derive(Clone, Copy)]
enum Value {
    /// A shell command (or a program, which reads the same way).
    Command,
    /// tar's checkpoint actions: `exec=COMMAND` runs it.
    Checkpoint,
    /// An ssh configuration line: `ProxyCommand`, `LocalCommand`,
    /// `KnownHostsCommand` and `Match exec` run a command.
    SshOption,
    /// An ssh configuration file, when its text is in sight (`-F <(…)`).
    SshConfig,
}

const fn runs(name: &'static str, value: Value) -> Runs {
    Runs {
        name,
        value,
        optional: false,
    }
}

const fn runs_optional(name: &'static str) -> Runs {
    Runs {
        name,
        value: Value::Command,
        optional: true,
    }
}

const fn runner(names: &'static [&'static str]) -> Runner {
    Runner {
        names,
        short_values: "",
        short: &[],
        long: &[],
        exact: &[],
        old_style: false,
    }
}

/// The table.
const RUNNERS: &[Runner] = &[
    // GNU tar 1.34. `--rsh-command` names the program of a remote archive.
    Runner {
        short_values: "gCTXfLbHVKN",
        short: &[runs("I", Value::Command), runs("F", Value::Command)],
        long: &[
            runs("to-command", Value::Command),
            runs("use-compress-program", Value::Command),
            runs("checkpoint-action", Value::Checkpoint),
            runs("info-script", Value::Command),
            runs("new-volume-script", Value::Command),
            runs("rsh-command", Value::Command),
        ],
        exact: &["checkpoint"],
        old_style: true,
        ..runner(&["tar", "gtar"])
    },
    // Zip 3.0: `-TT CMD` (also `-TT=CMD`, `-TTCMD`) tests the archive with CMD.
    Runner {
        short_values: "bnitx",
        short: &[runs("TT", Value::Command)],
        long: &[runs("unzip-command", Value::Command)],
        ..runner(&["zip"])
    },
    // OpenSSH 9: `-o` takes a configuration line, `-F` a configuration file.
    Runner {
        short_values: "BbcDEeIiJLlmOpQRSWw",
        short: &[runs("o", Value::SshOption), runs("F", Value::SshConfig)],
        ..runner(&["ssh", "slogin"])
    },
    // scp and sftp run `-S PROGRAM` for the connection and `-D PROGRAM` as a
    // local sftp server.
    Runner {
        short_values: "BbcFiJlPRsX",
        short: &[
            runs("o", Value::SshOption),
            runs("F", Value::SshConfig),
            runs("S", Value::Command),
            runs("D", Value::Command),
        ],
        ..runner(&["scp", "sftp"])
    },
    // rsync 3: the remote shell, and the rsync it starts at the other end (a
    // local command when the remote shell is one).
    Runner {
        short_values: "BfMT@",
        short: &[runs("e", Value::Command)],
        long: &[
            runs("rsh", Value::Command),
            runs("rsync-path", Value::Command),
            runs("connect-program", Value::Command),
        ],
        ..runner(&["rsync"])
    },
    // man-db: the pager, and the browser of `-H`.
    Runner {
        short_values: "CMmSeLprRET",
        short: &[runs("P", Value::Command), runs_optional("H")],
        long: &[runs("pager", Value::Command), runs_optional("html")],
        ..runner(&["man"])
    },
    // GNU sort compresses its temporary files with a program.
    Runner {
        short_values: "kotST",
        long: &[runs("compress-program", Value::Command)],
        ..runner(&["sort"])
    },
];

/// git's subcommands whose options run a command: `grep -O[PAGER]`
/// (`--open-files-in-pager`), `difftool -x CMD` (`--extcmd`), and `filter-branch`'s
/// filters, which it evaluates as scripts.
pub(super) const OPTIONS_OF_GIT: &[(&str, Runner)] = &[
    (
        "grep",
        Runner {
            short_values: "ABCefm",
            short: &[runs_optional("O")],
            long: &[runs_optional("open-files-in-pager")],
            ..runner(&[])
        },
    ),
    (
        "difftool",
        Runner {
            short_values: "t",
            short: &[runs("x", Value::Command)],
            long: &[runs("extcmd", Value::Command)],
            ..runner(&[])
        },
    ),
    (
        "filter-branch",
        Runner {
            long: &[
                runs("setup", Value::Command),
                runs("env-filter", Value::Command),
                runs("tree-filter", Value::Command),
                runs("index-filter", Value::Command),
                runs("parent-filter", Value::Command),
                runs("msg-filter", Value::Command),
                runs("commit-filter", Value::Command),
                runs("tag-name-filter", Value::Command),
            ],
            ..runner(&[])
        },
    ),
];

/// The entry of a program that runs its options' values, by its name. Asked of
/// nearly every command: most names have a shape none of the table's has, told
/// without comparing them.
pub(super) fn find(name: &str) -> Option<&'static Runner> {
    if !NAMES.may_hold(name) {
        return None;
    }
    RUNNERS.iter().find(|runner| runner.names.contains(&name))
}

/// The shapes of the table's names.
const NAMES: Shapes = {
    let mut shapes = Shapes::EMPTY;
    let mut k = 0;
    while k < RUNNERS.len() {
        shapes = shapes.and(RUNNERS[k].names);
        k += 1;
    }
    shapes
};

/// Whether the options of `runner`, in `args` (with the command's `stdin`), run rm,
/// `script` telling whether a script does.
pub(super) fn runs_rm(
    runner: &Runner,
    args: &[Word],
    stdin: Option<&str>,
    script: &dyn Fn(&str) -> bool,
) -> bool {
    let mut values = Vec::new();
    let mut i = 0;
    if runner.old_style
        && let Some(first) = args.first()
        && !first.text.starts_with('-')
    {
        i = old_style(runner, args, &mut values);
    }
    while let Some(word) = args.get(i) {
        i += 1;
        let next = args.get(i);
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        let taken = if let Some(long) = text.strip_prefix("--") {
            long_option(runner, long, word, next, &mut values)
        } else if text.len() > 1 && text.starts_with('-') {
            cluster(runner, &text[1..], word, next, &mut values)
        } else {
            false
        };
        i += usize::from(taken);
    }
    values
        .iter()
        .any(|given| value_runs_rm(given, stdin, script))
}

/// A value an option was given: how it runs, its text, and what a `<(…)` in its
/// word prints.
struct Given {
    value: Value,
    text: String,
    fed: Option<String>,
}

impl Given {
    fn new(runs: &Runs, word: &Word, text: &str) -> Given {
        Given {
            value: runs.value,
            text: text.to_owned(),
            fed: word.fed.clone(),
        }
    }
}

/// tar's old style: the letters of the first word, each that takes a value taking
/// the next word in turn. Returns where the words after them start.
fn old_style(runner: &Runner, args: &[Word], values: &mut Vec<Given>) -> usize {
    let mut next = 1;
    for letter in args[0].text.chars() {
        let runs = runner
            .short
            .iter()
            .find(|r| r.name.len() == 1 && r.name.starts_with(letter));
        if runs.is_none() && !runner.short_values.contains(letter) {
            continue;
        }
        let Some(word) = args.get(next) else {
            break;
        };
        next += 1;
        if let Some(runs) = runs {
            values.push(Given::new(runs, word, &word.text));
        }
    }
    next
}

/// `--NAME`, `--NAME=VALUE` or `--NAME VALUE`, after its `--`. Returns whether it
/// took the next word.
fn long_option(
    runner: &Runner,
    long: &str,
    word: &Word,
    next: Option<&Word>,
    values: &mut Vec<Given>,
) -> bool {
    let (name, attached) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (long, None),
    };
    if name.is_empty() || runner.exact.contains(&name) {
        return false;
    }
    let Some(runs) = runner
        .long
        .iter()
        .find(|r| r.name == name)
        .or_else(|| runner.long.iter().find(|r| r.name.starts_with(name)))
    else {
        return false;
    };
    match (attached, next) {
        (Some(value), _) => values.push(Given::new(runs, word, value)),
        (None, Some(next)) if !runs.optional => {
            values.push(Given::new(runs, next, &next.text));
            return true;
        }
        _ => {}
    }
    false
}

/// Short options after their `-`: flags, up to one that takes a value (the rest of
/// the word, after an `=` for zip's `-TT=CMD`, or the next word). Returns whether it
/// took the next word.
fn cluster(
    runner: &Runner,
    letters: &str,
    word: &Word,
    next: Option<&Word>,
    values: &mut Vec<Given>,
) -> bool {
    for (at, letter) in letters.char_indices() {
        let rest = &letters[at..];
        if let Some(runs) = runner.short.iter().find(|r| rest.starts_with(r.name)) {
            let attached = &rest[runs.name.len()..];
            let attached = attached.strip_prefix('=').unwrap_or(attached);
            return match next {
                Some(next) if attached.is_empty() && !runs.optional => {
                    values.push(Given::new(runs, next, &next.text));
                    true
                }
                _ => {
                    values.push(Given::new(runs, word, attached));
                    false
                }
            };
        }
        if runner.short_values.contains(letter) {
            return rest.len() == letter.len_utf8();
        }
    }
    false
}

/// Whether a value, read as its option reads it, runs rm.
fn value_runs_rm(given: &Given, stdin: Option<&str>, script: &dyn Fn(&str) -> bool) -> bool {
    let text = given.text.as_str();
    match given.value {
        Value::Command => script(text),
        // `exec=CMD` (also `exec='CMD'` as one word); the other actions run nothing.
        Value::Checkpoint => text
            .trim_start()
            .strip_prefix("exec")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
            .is_some_and(script),
        Value::SshOption => ssh_line_runs_rm(text, script),
        Value::SshConfig => in_sight(text, given.fed.as_deref(), stdin)
            .is_some_and(|config| config.lines().any(|line| ssh_line_runs_rm(line, script))),
    }
}

/// An ssh configuration line, `KEY VALUE`, `KEY=VALUE` or `KEY = VALUE` (the key
/// in any case): `ProxyCommand`, `LocalCommand` and `KnownHostsCommand` run their
/// value with the user's shell; `Match … exec CMD …` runs CMD.
fn ssh_line_runs_rm(line: &str, script: &dyn Fn(&str) -> bool) -> bool {
    let line = line.trim_start();
    let end = line
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(line.len());
    let (key, value) = line.split_at(end);
    let value = value.trim_start();
    let value = value.strip_prefix('=').unwrap_or(value).trim_start();
    let is = |name: &str| key.eq_ignore_ascii_case(name);
    if is("ProxyCommand") || is("LocalCommand") || is("KnownHostsCommand") {
        return script(value);
    }
    // `Match exec "CMD"`: the criteria are words, the command one of them, quoted
    // or not; each word after `exec` is checked, and so is the rest of the line.
    is("Match")
        && value
            .split_whitespace()
            .position(|w| w.eq_ignore_ascii_case("exec"))
            .is_some_and(|at| {
                let words: Vec<&str> = value.split_whitespace().skip(at + 1).collect();
                let rest = words.join(" ");
                script(rest.trim_matches('"')) || script(&rest)
            })
}
