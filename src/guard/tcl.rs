//! Tcl scripts in sight: `tclsh` (and `wish`, `expect`) reading a script from stdin,
//! a `<(…)`, or `expect -c`. Tcl's commands that start a program are read as shell
//! commands: `exec`, expect's `spawn` and `system`, and `open "|…"`. Tcl's own
//! evaluation of computed text (`eval`, `uplevel`, `subst`) is out of reach.

use super::parse::Word;
use super::wrappers::file_in_sight;

/// Whether `tclsh`, `wish` or `expect` given the words `args` and `stdin` runs rm,
/// with `script` telling whether a shell script does.
pub(super) fn runs_rm(
    name: &str,
    args: &[Word],
    stdin: Option<&str>,
    script: &dyn Fn(&str) -> bool,
) -> bool {
    let runs = |tcl: &str| tcl_runs_rm(tcl, script);
    let expect = name == "expect";
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        let text = arg.text.as_str();
        if !text.starts_with('-') || text == "-" {
            break;
        }
        k += 1;
        match text {
            "--" => break,
            // `expect -c CMDS`, `-f FILE`; `tclsh -encoding NAME`; `wish -name NAME` …
            "-c" if expect => {
                if args.get(k).is_some_and(|c| runs(&c.text)) {
                    return true;
                }
                k += 1;
            }
            "-f" | "-b" if expect => break,
            _ if !expect => k += 1,
            _ => {}
        }
    }
    match args.get(k) {
        Some(file) if file.text != "-" => file_in_sight(file, stdin).is_some_and(runs),
        _ => stdin.is_some_and(runs),
    }
}

/// Whether the Tcl text starts a program that runs rm. Each Tcl command (split at
/// newlines, `;` and brackets) whose name is `exec`, `spawn` or `system` has its
/// words, after `exec`'s switches, read as a shell command; so has what follows
/// the `|` of `open "|…"`. Braces quote as single quotes do in a shell.
pub(super) fn tcl_runs_rm(tcl: &str, script: &dyn Fn(&str) -> bool) -> bool {
    tcl.split(['\n', ';', '[', ']']).any(|command| {
        let command = command.trim_start();
        let (name, rest) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        let shell = match name.trim_start_matches("::") {
            "exec" => skip_switches(rest),
            "spawn" | "system" => rest,
            "open" => match rest
                .trim_start_matches(['"', '{', ' ', '\t'])
                .strip_prefix('|')
            {
                Some(pipeline) => pipeline.trim_end_matches(['"', '}', ' ', '\t']),
                None => return false,
            },
            _ => return false,
        };
        script(&shell.replace(['{', '}'], "'"))
    })
}

/// The words of `exec` after its switches (`-ignorestderr`, `-keepnewline`, `--`).
fn skip_switches(mut rest: &str) -> &str {
    loop {
        rest = rest.trim_start();
        let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if !word.starts_with('-') {
            return rest;
        }
        rest = after;
        if word == "--" {
            return rest.trim_start();
        }
    }
}
