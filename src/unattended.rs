//! Nothing waits for a person who is not there: the variables every command gets so
//! that an editor, a pager or a prompt fails or passes at once instead of holding the
//! call until its timeout.
//!
//! Commands run with stdin at `/dev/null` and both output streams piped to the server;
//! no terminal is anywhere. `git commit` without `-m` starts `vi`, which then waits for
//! keys until the call is killed. Why vim waits here when it gives up after ~2 s with
//! `/dev/null` as stdin elsewhere: at end of input on stdin, vim takes stderr as its
//! input (`close(0); dup(2)`, its fallback for `foo | xargs vim`). Elsewhere stderr is a
//! terminal, a file or `/dev/null`: reading it answers at once (keys, or an error that
//! ends vim). Here it is the write end of a pipe, which is never readable, and vim
//! polls it for ever; neither `TERM` nor any other variable changes that. So editors
//! are set to one that fails with a message naming the way out, and `VIMINIT` makes a
//! full-screen vim that is in that state leave at once ([`VIMINIT`]).
//!
//! Each variable is set only when the server's own environment (after the injection
//! from `/proc/1/environ`) sets neither it nor one it would take precedence over: an
//! operator's `EDITOR` is not hidden behind a `VISUAL` or `GIT_EDITOR` of ours.

use std::sync::LazyLock;

/// An editor for files in general: fails, naming the way out.
pub const EDITOR: &str = "sh -c 'echo \"forge-bash: no editor for $1 (no terminal): write the file with a command instead (cat > FILE <<EOF, sed -i, tee)\" >&2; exit 1' editor";

/// Git's editor (commit, merge, tag, revert messages): fails, naming the options that
/// give the text without one.
pub const GIT_EDITOR: &str = "sh -c 'echo \"forge-bash: no editor for $1 (no terminal): give the text in the command (-m MSG, -F FILE, --no-edit), or GIT_EDITOR=true to keep what git proposes\" >&2; exit 1' editor";

/// Git's editor of a `rebase -i` todo list: fails, naming how to edit the list with a
/// command.
pub const GIT_SEQUENCE_EDITOR: &str = "sh -c 'echo \"forge-bash: no editor for the todo list $1 (no terminal): GIT_SEQUENCE_EDITOR=true takes it as it is, a sed -i command as GIT_SEQUENCE_EDITOR edits it\" >&2; exit 1' editor";

/// Vim's start-up commands: once vim has started (after any `-c` commands, which may
/// have ended it), a full-screen vim with no terminal on stdin or stdout whose input is
/// `/dev/null` or its own stderr (see the module's documentation) says why on stderr
/// and exits with status 1. Vim reading keys from a pipe (`printf 'ihi\e:wq\n' | vim
/// f`), Ex mode (`ex`, `vim -e`) and vim in a terminal (tmux, `script`) go on as before.
/// The user's vimrc is read as without `VIMINIT` (`~/.vimrc`, else `~/.vim/vimrc`, else
/// `defaults.vim`).
pub const VIMINIT: &str = "if filereadable(expand('~/.vimrc')) | source ~/.vimrc | elseif filereadable(expand('~/.vim/vimrc')) | source ~/.vim/vimrc | else | source $VIMRUNTIME/defaults.vim | endif | autocmd VimEnter * if mode() ==# 'n' && !has('ttyin') && !has('ttyout') && index(['/dev/null', resolve('/proc/self/fd/2')], resolve('/proc/self/fd/0')) >= 0 && resolve('/proc/self/fd/2') !~# '^/dev/\\(pts\\|tty\\)' | call writefile(['forge-bash: vim needs a terminal and there is none: write the file with a command (cat > FILE <<EOF, sed -i), or script vim (vim -es -c CMD -c wq FILE)'], '/dev/stderr', 'a') | cquit | endif";

/// The variables, in chains of rising precedence: a variable is set when the server's
/// environment sets none of its chain up to it.
const CHAINS: &[&[(&str, &str)]] = &[
    &[
        ("EDITOR", EDITOR),
        ("VISUAL", EDITOR),
        ("GIT_EDITOR", GIT_EDITOR),
        ("GIT_SEQUENCE_EDITOR", GIT_SEQUENCE_EDITOR),
    ],
    // Without a terminal git and man do not page anyway; a pager started in one that a
    // command made (`script`, tmux) would wait for keys.
    &[("PAGER", "cat"), ("GIT_PAGER", "cat")],
    // A credential prompt fails at once instead of waiting for a password.
    &[("GIT_TERMINAL_PROMPT", "0")],
    &[("VIMINIT", VIMINIT)],
];

/// The variables every command gets, from the server's environment as it is at the
/// first call.
pub fn env() -> &'static [(&'static str, &'static str)] {
    static ENV: LazyLock<Vec<(&str, &str)>> =
        LazyLock::new(|| chosen(|name| std::env::var_os(name).is_some()));
    &ENV
}

/// The variables to set when `present` tells which the server's environment sets.
pub fn chosen(present: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    CHAINS
        .iter()
        .flat_map(|chain| {
            chain
                .iter()
                .scan(false, |chosen_before, &(name, value)| {
                    *chosen_before |= present(name);
                    Some((!*chosen_before).then_some((name, value)))
                })
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(present: &[&str]) -> Vec<&'static str> {
        chosen(|name| present.contains(&name))
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    #[test]
    fn a_variable_the_server_sets_hides_those_after_it_in_its_chain() {
        let all = [
            "EDITOR",
            "VISUAL",
            "GIT_EDITOR",
            "GIT_SEQUENCE_EDITOR",
            "PAGER",
            "GIT_PAGER",
            "GIT_TERMINAL_PROMPT",
            "VIMINIT",
        ];
        assert_eq!(names(&[]), all);
        assert_eq!(names(&["EDITOR"]), all[4..]);
        assert_eq!(
            names(&["VISUAL", "GIT_PAGER", "VIMINIT"]),
            ["EDITOR", "PAGER", "GIT_TERMINAL_PROMPT"]
        );
        assert_eq!(
            names(&["GIT_SEQUENCE_EDITOR", "PAGER", "GIT_TERMINAL_PROMPT"]),
            ["EDITOR", "VISUAL", "GIT_EDITOR", "VIMINIT"]
        );
    }
}
