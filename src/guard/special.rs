//! Commands that run a script or a program named in their own syntax, not as a
//! command of their words: `git -c alias.X='!…'`, `make -f -` reading its makefile
//! from stdin, `start-stop-daemon --exec PATH`, and tmux's commands (`new-session`,
//! `split-window`, `run-shell`, … and `-c`).

use super::parse::Word;
use super::wrappers::{STDIN_FILES, spells_rm};

/// Whether the command `name` (its last path component) given the words `rest` and
/// `stdin` runs rm, with `script` telling whether a script does; `None` when it is
/// none of these commands.
pub(super) fn runs_rm(
    name: &str,
    rest: &[Word],
    stdin: Option<&str>,
    script: &dyn Fn(&str) -> bool,
) -> Option<bool> {
    // Most commands are none of these: they are told apart before any allocation.
    if !matches!(
        name,
        "git" | "make" | "gmake" | "start-stop-daemon" | "tmux"
    ) {
        return None;
    }
    let args: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let args = &args[..];
    let rm = match name {
        "git" => git_alias_runs_rm(args, script),
        "make" | "gmake" => {
            make_reads_stdin(args) && stdin.is_some_and(|s| recipes_run_rm(s, script))
        }
        "start-stop-daemon" => values(args, &["-x", "-a"], &["--exec", "--startas"]).any(spells_rm),
        _ => tmux_runs_rm(args, script),
    };
    Some(rm)
}

/// The values of the options `short` (as the next word or attached) and `long` (as
/// the next word or after `=`) anywhere in `args`.
fn values<'a>(
    args: &'a [&'a str],
    short: &'a [&'a str],
    long: &'a [&'a str],
) -> impl Iterator<Item = &'a str> + 'a {
    args.iter().enumerate().filter_map(move |(k, &arg)| {
        let next = args.get(k + 1).copied();
        if short.contains(&arg) || long.contains(&arg) {
            return next;
        }
        if let Some((name, value)) = arg.split_once('=')
            && long.contains(&name)
        {
            return Some(value);
        }
        short.iter().find_map(|s| {
            arg.strip_prefix(s)
                .filter(|v| !v.is_empty() && !arg.starts_with("--"))
        })
    })
}

/// `git -c alias.NAME='!SCRIPT'`: a `!` alias runs its value as a shell script.
/// Whichever alias then runs, any such value is checked.
fn git_alias_runs_rm(args: &[&str], script: &dyn Fn(&str) -> bool) -> bool {
    values(args, &["-c"], &[]).any(|setting| {
        let Some((key, value)) = setting.split_once('=') else {
            return false;
        };
        let alias = key.len() > 6 && key[..6].eq_ignore_ascii_case("alias.");
        alias && value.trim_start().strip_prefix('!').is_some_and(script)
    })
}

/// A tmux command that runs a shell command: its names, the option letters that take
/// a value (tmux 3.3a to 3.7c, and the next one's), and what runs.
struct Tmux {
    names: &'static [&'static str],
    values: &'static str,
    runs: TmuxRuns,
}

#[derive(PartialEq, Eq)]
enum TmuxRuns {
    /// Its words after the options, as one shell command (given as several words,
    /// tmux runs them without a shell).
    Words,
    /// The first word is a shell command, the others tmux commands: `if-shell`.
    FirstThenCommands,
    /// The value of `-E`: `detach-client -E CMD`.
    OptionE,
}

/// tmux's commands that run a shell command, by the letters of their options.
const TMUX: &[Tmux] = &[
    Tmux {
        names: &["new-session", "new"],
        values: "cefFnstxy",
        runs: TmuxRuns::Words,
    },
    Tmux {
        names: &["new-window", "neww"],
        values: "ceFnt",
        runs: TmuxRuns::Words,
    },
    Tmux {
        names: &["split-window", "splitw"],
        values: "BceFlmpRsStT",
        runs: TmuxRuns::Words,
    },
    Tmux {
        names: &["new-pane", "newp"],
        values: "BceFlmpRsStTxXyY",
        runs: TmuxRuns::Words,
    },
    Tmux {
        names: &["respawn-pane", "respawnp", "respawn-window", "respawnw"],
        values: "cet",
        runs: TmuxRuns::Words,
    },
    // `-C`: a tmux command, not a shell one; checked all the same.
    Tmux {
        names: &["run-shell", "run"],
        values: "cdst",
        runs: TmuxRuns::Words,
    },
    Tmux {
        names: &["pipe-pane", "pipep"],
        values: "t",
        runs: TmuxRuns::Words,
    },
    Tmux {
        names: &["display-popup", "popup"],
        values: "bcdehsStTwxy",
        runs: TmuxRuns::Words,
    },
    // `-F`: the first word is a format, not run; checked all the same.
    Tmux {
        names: &["if-shell", "if"],
        values: "t",
        runs: TmuxRuns::FirstThenCommands,
    },
    Tmux {
        names: &["detach-client", "detach"],
        values: "Est",
        runs: TmuxRuns::OptionE,
    },
];

/// `tmux [-c SCRIPT] [-f FILE] [-L NAME] [-S PATH] [-T FEATURES] COMMAND… [; COMMAND…]`:
/// `-c` runs a shell command; each command of the list is read by the letters of
/// its options (`split-window -f` takes no value, `new-session -f` does). A word
/// that ends in `;` (not `\;`) ends a command.
fn tmux_runs_rm(args: &[&str], script: &dyn Fn(&str) -> bool) -> bool {
    let (options, at) = tmux_options(args, "cfLST");
    if options
        .iter()
        .any(|&(letter, value)| letter == 'c' && script(value))
    {
        return true;
    }
    let mut command: Vec<&str> = Vec::new();
    for (k, &word) in args[at..].iter().enumerate() {
        let (word, ends) = match word.strip_suffix(';') {
            Some(rest) if !rest.ends_with('\\') => (rest, true),
            _ => (word, false),
        };
        if !ends || !word.is_empty() {
            command.push(word);
        }
        if (ends || at + k + 1 == args.len()) && tmux_command_runs_rm(&command, script) {
            return true;
        }
        if ends {
            command.clear();
        }
    }
    false
}

/// One tmux command, its name first.
fn tmux_command_runs_rm(words: &[&str], script: &dyn Fn(&str) -> bool) -> bool {
    let Some((name, args)) = words.split_first() else {
        return false;
    };
    let Some(tmux) = TMUX.iter().find(|t| t.names.contains(name)) else {
        return false;
    };
    let (options, at) = tmux_options(args, tmux.values);
    let args = &args[at..];
    match tmux.runs {
        TmuxRuns::Words => script(&args.join(" ")),
        TmuxRuns::FirstThenCommands => {
            args.first().is_some_and(|first| script(first))
                || args
                    .iter()
                    .skip(1)
                    .any(|command| script(&format!("tmux {command}")))
        }
        TmuxRuns::OptionE => options
            .iter()
            .any(|&(letter, value)| letter == 'E' && script(value)),
    }
}

/// tmux's options (as getopt reads them) at the start of `args`, the letters of
/// `values` taking a value: the options that took one, and where the operands start.
fn tmux_options<'a>(args: &[&'a str], values: &str) -> (Vec<(char, &'a str)>, usize) {
    let mut taken = Vec::new();
    let mut i = 0;
    while let Some(&arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            break;
        }
        let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) else {
            i -= 1;
            break;
        };
        for (at, letter) in letters.char_indices() {
            if values.contains(letter) {
                let attached = &letters[at + letter.len_utf8()..];
                if attached.is_empty() {
                    taken.push((letter, args.get(i).copied().unwrap_or("")));
                    i += 1;
                } else {
                    taken.push((letter, attached));
                }
                break;
            }
        }
    }
    (taken, i.min(args.len()))
}

/// `make -f -`, `make --file=/dev/stdin`: the makefile is stdin.
fn make_reads_stdin(args: &[&str]) -> bool {
    let from_stdin = |file: &str| file == "-" || STDIN_FILES.contains(&file);
    values(args, &["-f"], &["--file", "--makefile"]).any(from_stdin)
        || args
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                a.len() > 2 && a.starts_with('-') && !a.starts_with("--") && a.ends_with('f')
            })
            .any(|(k, _)| args.get(k + 1).is_some_and(|f| from_stdin(f)))
}

/// The recipes of a makefile: lines that start with a tab, and what follows `;` on a
/// rule's line (`all: ; rm x`), each a shell script.
fn recipes_run_rm(makefile: &str, script: &dyn Fn(&str) -> bool) -> bool {
    makefile.lines().any(|line| {
        let recipe = match line.strip_prefix('\t') {
            Some(recipe) => Some(recipe),
            None => line
                .split_once(':')
                .and_then(|(_, rule)| rule.split_once(';'))
                .map(|(_, recipe)| recipe),
        };
        recipe.is_some_and(|recipe| script(recipe.trim_start_matches(['@', '-', '+', ' ', '\t'])))
    })
}
