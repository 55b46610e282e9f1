//! Commands that run a script or a program named in their own syntax, not as a
//! command of their words: `git -c alias.X='!…'`, `make -f -` reading its makefile
//! from stdin, `start-stop-daemon --exec PATH`.

use super::wrappers::{STDIN_FILES, spells_rm};

/// Whether the command `name` (its last path component) given `args` and `stdin`
/// runs rm, with `script` telling whether a script does; `None` when it is none of
/// these commands.
pub(super) fn runs_rm(
    name: &str,
    args: &[&str],
    stdin: Option<&str>,
    script: &dyn Fn(&str) -> bool,
) -> Option<bool> {
    let rm = match name {
        "git" => git_alias_runs_rm(args, script),
        "make" | "gmake" => {
            make_reads_stdin(args) && stdin.is_some_and(|s| recipes_run_rm(s, script))
        }
        "start-stop-daemon" => values(args, &["-x", "-a"], &["--exec", "--startas"]).any(spells_rm),
        _ => return None,
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
