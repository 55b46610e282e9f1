//! The rm guard: refuses a command that would run `rm` anywhere in its chain.
//!
//! Two parts, in one direction: a hand-written parser (`parse`), which knows bash
//! and nothing of rm, reads the command as bash would and gives the judge (`judge`)
//! every simple command it could start: in chains, pipelines, subshells, groups,
//! function bodies, `case` items, command and process substitutions (also inside
//! double quotes and unquoted heredoc bodies). The judge parses again the scripts
//! handed to wrappers (`bash -c`, `eval`, `su -c`, `trap`, a shell fed by `<<<`, a
//! heredoc or a pipe from a producer in sight, `find -exec`) and to programs' options
//! (`tar --to-command`).
//! Arithmetic, `[[ ]]`, `case` patterns, comments and heredoc bodies are data.
//!
//! For each simple command the judge skips assignments, keywords and wrapper commands
//! (a table in `wrappers`, with each wrapper's options) and refuses it when what
//! runs is `rm` or a path ending in `/rm`. Where the name is computed it fails closed:
//! `$'\x72m'` is decoded; expansions are taken as empty (`"$@"rm`), and the text
//! before an unquoted expansion counts on its own (`rm${IFS}x`); globs and braces are
//! matched against `rm` (`/usr/bin/r[m]`, `{rm,x}`).
//!
//! It is a guard against the common case, not a sandbox: a name that is only an
//! expansion (`$cmd x`), `find -delete`, `unlink`, and scripts or programs that delete
//! files themselves are out of its reach. It is pure and synchronous, linear in the
//! length of the command, and no input makes it panic.
//!
//! Files: `guard/parse/` the parser (with its own tests), `guard/judge.rs` the judge,
//! `guard/wrappers.rs` the wrapper table, `guard/special.rs` git's settings, options
//! and subcommands that run a command, tmux's commands (and the keys `send-keys`
//! types), the makefiles make reads in sight and `start-stop-daemon`,
//! `guard/runners.rs` the options of tar, zip, ssh, rsync, man, sort and git's
//! subcommands that run a command (`tar --to-command`, `ssh -o ProxyCommand=…`),
//! `guard/tcl.rs` Tcl scripts in sight (`tclsh <<< 'exec …'`), `guard/glob.rs`
//! globs, extended globs and braces against `rm`,
//! `guard/corpus.rs` the commands the unit tests (`guard/tests.rs`) and the oracle
//! (`tests/guard_oracle.rs`) share.

mod glob;
mod judge;
mod parse;
mod printf;
mod runners;
mod special;
mod tcl;
mod wrappers;

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

/// Checks a whole command string.
pub fn check(command: &str) -> Verdict {
    match find_rm(command) {
        Some(_) => Verdict::Block,
        None => Verdict::Allow,
    }
}

/// The simple command, as written, that would run rm; `None` when nothing does.
pub fn find_rm(command: &str) -> Option<String> {
    judge::find_rm(command, 0)
}

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod tests;
