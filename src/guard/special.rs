//! Commands that run a script or a program named in their own syntax, not as a
//! command of their words: git's settings whose value is a command (`git -c
//! core.pager=…`, `alias.X='!…'`) and its options and subcommands that run one,
//! make given a makefile in sight (`-f -`, `-f <(…)`, `--eval`), `start-stop-daemon
//! --exec PATH`, tmux's commands (`new-session`, `split-window`, `run-shell`, … and
//! `-c`) and the keys `send-keys` types, Tcl's interpreters (in [`tcl`]), and the
//! programs whose options run a command (in [`runners`]: `tar --to-command`, `ssh -o
//! ProxyCommand=…`, git's `grep -O` and `difftool -x`).

use std::borrow::Cow;

use super::parse::Word;
use super::runners;
use super::tcl;
use super::wrappers::{STDIN_FILES, in_sight, spells_rm};

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
    if !knows(name) {
        return None;
    }
    if matches!(name, "wish" | "expect") || name.starts_with("tclsh") {
        return Some(tcl::runs_rm(name, rest, stdin, script));
    }
    if let Some(runner) = runners::find(name) {
        return Some(runners::runs_rm(runner, rest, stdin, script));
    }
    let args: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let args = &args[..];
    let rm = match name {
        "git" => git_runs_rm(rest, args, stdin, script),
        "make" | "gmake" => make_runs_rm(rest, args, stdin, script),
        "start-stop-daemon" => values(args, &["-x", "-a"], &["--exec", "--startas"]).any(spells_rm),
        _ => tmux_runs_rm(args, script),
    };
    Some(rm)
}

/// Whether [`runs_rm`] reads the command `name`: it answers `None` for every other.
pub(super) fn knows(name: &str) -> bool {
    matches!(
        name,
        "git" | "make" | "gmake" | "start-stop-daemon" | "tmux" | "wish" | "expect"
    ) || name.starts_with("tclsh")
        || runners::find(name).is_some()
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

/// Git's settings whose value git runs as a command, through a shell or as a
/// program, by the variable's name (the key's last part, in any case): `core.pager`,
/// `core.editor`, `sequence.editor`, `core.sshCommand`, `diff.external`,
/// `core.fsmonitor`, `core.gitProxy`, `core.askPass`, `core.alternateRefsCommand`,
/// `interactive.diffFilter`, `gpg.program`, `gpg.ssh.defaultKeyCommand`,
/// `uploadpack.packObjectsHook`, `sendemail.toCmd`/`ccCmd`/`headerCmd`/`sendmailCmd`,
/// `diff.<driver>.command`/`textconv`, `filter.<driver>.clean`/`smudge`/`process`,
/// `merge.<driver>.driver`, `difftool.<tool>.cmd` (and `mergetool`, `man`, `browser`,
/// `guitool`), `remote.<name>.uploadpack`/`receivepack`. A boolean value
/// (`core.fsmonitor=true`) reads as a script that runs no rm.
const GIT_COMMANDS: &[&str] = &[
    "pager",
    "editor",
    "sshcommand",
    "external",
    "fsmonitor",
    "gitproxy",
    "askpass",
    "alternaterefscommand",
    "difffilter",
    "program",
    "defaultkeycommand",
    "packobjectshook",
    "tocmd",
    "cccmd",
    "headercmd",
    "sendmailcmd",
    "command",
    "textconv",
    "clean",
    "smudge",
    "process",
    "driver",
    "cmd",
    "uploadpack",
    "receivepack",
];

/// `git`: the settings given with `-c KEY=VALUE` that git runs (whichever subcommand
/// follows, any such value is checked), the options that name a program to run
/// (`--upload-pack`, `--receive-pack`, `--exec`, `clone -u`, `rebase -x`, and those
/// of [`runners::OPTIONS_OF_GIT`]: `grep -O`, `difftool -x`, `filter-branch`'s
/// filters), the commands of `ext::` URLs, `bisect run CMD` and `submodule foreach
/// CMD`.
fn git_runs_rm(
    words: &[Word],
    args: &[&str],
    stdin: Option<&str>,
    script: &dyn Fn(&str) -> bool,
) -> bool {
    let mut settings = values(args, &["-c"], &[]).filter_map(git_setting_command);
    if settings.any(|command| script(&command))
        || values(args, &[], &["--upload-pack", "--receive-pack", "--exec"]).any(script)
        || args.iter().any(|arg| ext_url_runs_rm(arg, script))
    {
        return true;
    }
    let Some(at) = git_subcommand(args) else {
        return false;
    };
    let rest = &args[at + 1..];
    if let Some((_, runner)) = runners::OPTIONS_OF_GIT
        .iter()
        .find(|(sub, _)| *sub == args[at])
    {
        return runners::runs_rm(runner, &words[at + 1..], stdin, script);
    }
    match args[at] {
        "clone" => values(rest, &["-u"], &[]).any(script),
        "rebase" => values(rest, &["-x"], &[]).any(script),
        "bisect" if rest.first() == Some(&"run") => script(&rest[1..].join(" ")),
        "submodule" => match rest.iter().position(|&a| a == "foreach") {
            Some(k) => {
                let command = &rest[k + 1..];
                let options = command.iter().take_while(|a| a.starts_with('-')).count();
                script(&command[options..].join(" "))
            }
            None => false,
        },
        _ => false,
    }
}

/// git's `ext::` transport runs the command its URL names, wherever the URL
/// stands (an argument, `-c remote.NAME.url=…`, an `url.<base>.insteadOf` key):
/// its words split at spaces, `% ` a space and `%%` a `%` (`ext::sh -c rm% x`).
/// It runs once `protocol.ext.allow` lets it, which a config file may do: it is
/// checked whether or not `-c` allows it here.
fn ext_url_runs_rm(arg: &str, script: &dyn Fn(&str) -> bool) -> bool {
    // The transport is what a URL starts with: the word, or a value after `=`, or
    // the base of an `url.` key.
    let Some(at) = arg
        .match_indices("ext::")
        .map(|(at, _)| at)
        .find(|&at| at == 0 || arg[..at].ends_with(['=', '.']))
    else {
        return false;
    };
    let command = &arg[at + "ext::".len()..];
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => match chars.next() {
                Some(' ') => word.push(' '),
                Some('%') | None => word.push('%'),
                // `%s`, `%S`, `%G`: the service and the repository, placeholders.
                Some(other) => word.extend(['%', other]),
            },
            ' ' => words.push(std::mem::take(&mut word)),
            _ => word.push(c),
        }
    }
    words.push(word);
    // As a command of quoted words: what git runs, without a shell.
    let quoted: Vec<String> = words
        .iter()
        .map(|word| format!("'{}'", word.replace('\'', r"'\''")))
        .collect();
    script(&quoted.join(" "))
}

/// Where git's subcommand stands, after its own options: `-c`, `-C`, `--git-dir`,
/// `--work-tree`, `--namespace`, `--config-env` and `--attr-source` take the next
/// word (or one after `=`).
fn git_subcommand(args: &[&str]) -> Option<usize> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += match *arg {
            "-c" | "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
            | "--super-prefix" | "--attr-source" => 2,
            _ if arg.starts_with('-') => 1,
            _ => return Some(i),
        };
    }
    None
}

/// What git runs of a setting `KEY=VALUE`, when it runs one: an alias's `!SCRIPT`
/// (and a submodule's `update = !SCRIPT`), the shell command a credential helper
/// makes (`!SCRIPT`, an absolute path, or `git credential-NAME`), the value of a
/// `pager.<cmd>` or of a variable of [`GIT_COMMANDS`].
fn git_setting_command(setting: &str) -> Option<Cow<'_, str>> {
    let (key, value) = setting.split_once('=')?;
    let (section, rest) = key.split_once('.')?;
    let name = rest.rsplit('.').next().unwrap_or(rest);
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    if is(section, "alias") || is(section, "submodule") && is(name, "update") {
        return value.trim_start().strip_prefix('!').map(Cow::Borrowed);
    }
    if is(section, "credential") && is(name, "helper") {
        return Some(match value.strip_prefix('!') {
            Some(script) => Cow::Borrowed(script),
            None if value.starts_with('/') => Cow::Borrowed(value),
            None => Cow::Owned(format!("git credential-{value}")),
        });
    }
    let runs = is(section, "pager") || GIT_COMMANDS.iter().any(|command| is(name, command));
    runs.then_some(Cow::Borrowed(value))
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
    /// Keys typed into a pane, whose shell runs them: `send-keys 'rm x' Enter`.
    Keys,
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
    Tmux {
        names: &["send-keys", "send"],
        values: "cNt",
        runs: TmuxRuns::Keys,
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
        TmuxRuns::Keys => {
            // Flags stand before the first letter that takes a value in each word.
            let flags: String = words[1..at + 1]
                .iter()
                .filter_map(|w| w.strip_prefix('-'))
                .flat_map(|letters| letters.chars().take_while(|&c| !tmux.values.contains(c)))
                .collect();
            // `-X`: commands of copy mode, typed into no shell.
            !flags.contains('X') && script(&typed(args, flags.contains('l'), flags.contains('H')))
        }
    }
}

/// The text keys type: `Enter` (`C-m`, `C-j`, `KPEnter`) a newline, `Space` a
/// space, `Tab` a tab, `BSpace` (`C-h`) deletes the character before; other keys
/// with a name or a modifier (`Escape`, `Up`, `C-c`) type nothing; any other word is
/// typed as it stands. With `-l` every word is typed as it stands; with `-H` each
/// is a character's code in hexadecimal.
fn typed(keys: &[&str], literal: bool, hex: bool) -> String {
    let mut text = String::new();
    for &key in keys {
        if hex {
            if let Some(c) = u32::from_str_radix(key, 16).ok().and_then(char::from_u32) {
                text.push(c);
            }
            continue;
        }
        let lower = key.to_ascii_lowercase();
        match lower.as_str() {
            _ if literal => text.push_str(key),
            "enter" | "c-m" | "^m" | "c-j" | "^j" | "kpenter" => text.push('\n'),
            "space" => text.push(' '),
            "tab" | "c-i" | "^i" => text.push('\t'),
            "bspace" | "c-h" | "^h" => {
                text.pop();
            }
            _ if key.len() > 2 && (key.as_bytes()[1] == b'-' || key.starts_with('^')) => {}
            "escape" | "up" | "down" | "left" | "right" | "home" | "end" | "ic" | "dc"
            | "insert" | "delete" | "npage" | "ppage" | "pageup" | "pagedown" | "pgup" | "pgdn"
            | "btab" => {}
            _ if lower.starts_with('f') && lower[1..].parse::<u8>().is_ok() => {}
            _ => text.push_str(key),
        }
    }
    text
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

/// `make`: the makefiles in sight (`-f -`, `--file=/dev/stdin` read stdin, `-f
/// <(…)` what the substitution prints) and the text of `--eval` (`-E`), read as
/// makefiles. A makefile read from a file is out of reach.
fn make_runs_rm(
    words: &[Word],
    args: &[&str],
    stdin: Option<&str>,
    script: &dyn Fn(&str) -> bool,
) -> bool {
    let runs = |makefile: &str| makefile_runs_rm(makefile, script);
    if values(args, &["-E"], &["--eval"]).any(runs) {
        return true;
    }
    words.iter().enumerate().any(|(k, word)| {
        let arg = word.text.as_str();
        let next = words.get(k + 1);
        // `-f FILE`, `-sf FILE`, `--file FILE`; `-fFILE`, `--file=FILE`.
        let short = arg.starts_with('-') && !arg.starts_with("--");
        let text = if (short && arg.ends_with('f')) || ["--file", "--makefile"].contains(&arg) {
            next.and_then(|file| makefile(file, &file.text, stdin))
        } else if let Some((_, name)) = arg
            .split_once('=')
            .filter(|(option, _)| ["--file", "--makefile"].contains(option))
        {
            makefile(word, name, stdin)
        } else if let Some(name) = arg.strip_prefix("-f").filter(|n| short && !n.is_empty()) {
            makefile(word, name, stdin)
        } else {
            None
        };
        text.is_some_and(runs)
    })
}

/// The text of the makefile `name` that the word `file` gives make, when in sight
/// (`-` is stdin).
fn makefile<'a>(file: &'a Word, name: &str, stdin: Option<&'a str>) -> Option<&'a str> {
    let name = if name == "-" { STDIN_FILES[0] } else { name };
    in_sight(name, file.fed.as_deref(), stdin)
}

/// A makefile's text: its recipes (lines that start with a tab, and what follows
/// `;` on a rule's line: `all: ; rm x`), each a shell script, and what make runs as
/// it reads the file: `$(shell …)` and `VAR != …`.
fn makefile_runs_rm(makefile: &str, script: &dyn Fn(&str) -> bool) -> bool {
    recipes_run_rm(makefile, script) || make_shell_runs_rm(makefile, script)
}

/// `$(shell CMD)`, `${shell CMD}` and `VAR != CMD` in a makefile's text. Each
/// call is read once, up to its closing bracket; those nested in it are part of its
/// script.
fn make_shell_runs_rm(makefile: &str, script: &dyn Fn(&str) -> bool) -> bool {
    let assigned = makefile
        .lines()
        .filter_map(|line| line.split_once("!=").map(|(_, command)| command))
        .any(script);
    if assigned {
        return true;
    }
    let mut rest = makefile;
    while let Some(at) = rest.find("shell") {
        let opening = rest[..at]
            .strip_suffix(['(', '{'])
            .filter(|b| b.ends_with('$'));
        let body = &rest[at + "shell".len()..];
        let Some(before) = opening else {
            rest = body;
            continue;
        };
        let (open, close) = match rest.as_bytes()[before.len()] {
            b'(' => ('(', ')'),
            _ => ('{', '}'),
        };
        let mut depth = 1usize;
        let end = body.char_indices().find_map(|(k, c)| {
            depth = match c {
                _ if c == open => depth + 1,
                _ if c == close => depth - 1,
                _ => depth,
            };
            (depth == 0).then_some(k)
        });
        let end = end.unwrap_or(body.len());
        if script(&body[..end]) {
            return true;
        }
        rest = &body[end..];
    }
    false
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
