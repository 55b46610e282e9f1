//! The guard's tables: what it blocks, what it lets through, and that nothing panics.
//! What it must allow is in the corpus the oracle shares ([`super::corpus`]).

use std::ops::ControlFlow;

use proptest::prelude::*;

use super::parse::{self, Command, Visitor, Word};
use super::{Verdict, check, corpus, judge};

#[track_caller]
fn blocked(command: &str) {
    assert_eq!(check(command), Verdict::Block, "should block: {command:?}");
}

#[track_caller]
fn allowed(command: &str) {
    assert_eq!(check(command), Verdict::Allow, "should allow: {command:?}");
}

#[test]
fn seed_rule() {
    // The seeds' own examples, and each of the seed's chain operators; the seed's
    // look-alikes are in the corpus.
    for command in [
        "rm -rf /",
        "rm file.txt",
        "/bin/rm file.txt",
        "rm test.txt",
        "rm x",
        "FOO=1 rm x",
        "A=1 B=2 /usr/bin/rm -f x",
        "ls | rm x",
        "false || rm x",
        "true && rm x",
        "echo a; rm x",
        "echo a;rm x",
        "echo 'a' && echo \"b\" | rm x",
    ] {
        blocked(command);
    }
}

#[test]
fn the_corpus_is_allowed_or_blocked() {
    for command in corpus::ALLOW {
        allowed(command);
    }
    for command in corpus::BLOCK {
        blocked(command);
    }
}

/// A first word the judge settles a command by, without reading the rest, runs no rm
/// whatever follows it and whatever its stdin: for every simple command of the
/// corpus, the judge's step through the words says so too.
#[test]
fn inert_first_words_run_no_rm() {
    struct Commands(Vec<Vec<Word>>);
    impl Visitor for Commands {
        fn command(&mut self, command: &Command<'_>) -> ControlFlow<()> {
            self.0.push(command.words.to_vec());
            ControlFlow::Continue(())
        }
    }
    let stdins = [None, Some("rm x"), Some("all: ; rm x"), Some("exec rm x")];
    let mut inert = 0;
    for text in corpus::ALLOW.iter().chain(corpus::BLOCK) {
        let mut commands = Commands(Vec::new());
        parse::parse(text, 0, &mut commands);
        for words in &commands.0 {
            if let Some(agrees) = judge::inert_agrees(words, &stdins) {
                assert!(agrees, "{text:?}: {words:?}");
                inert += 1;
            }
        }
    }
    assert!(inert > 200, "only {inert} inert first words");
}

/// Past the seed rule: newlines, `&`, `|&`, subshells, groups, substitutions, quoting,
/// wrappers, compounds, redirections before the name, scripts and bodies.
const WIDER_BOUNDARIES_AND_WRAPPERS: &[&str] = &[
    "echo hi\nrm x",
    "cd build\nrm -rf out",
    "true & rm x",
    "a |& rm x",
    "(rm x)",
    "{ rm x; }",
    "echo $(rm x)",
    "echo \"$(rm x)\"",
    "echo `rm x`",
    "echo \"`rm x`\"",
    "diff <(rm x) y",
    "tee >(rm x) < f",
    "\\rm x",
    "\"rm\" x",
    "'rm' x",
    "r\"m\" x",
    "r\\\nm x",
    "FOO=\"a b\" rm x",
    "sudo rm x",
    "sudo -u bob rm x",
    "sudo -- rm x",
    "doas rm x",
    "env -i A=1 rm x",
    "env rm x",
    "env -S 'rm x'",
    "command rm x",
    "builtin rm x",
    "exec rm x",
    "nohup rm x",
    "time rm x",
    "time -p rm x",
    "nice -n 5 rm x",
    "nice rm x",
    "ionice -c 3 rm x",
    "timeout 5 rm x",
    "timeout -s KILL 5 rm x",
    "timeout --signal KILL 5 rm x",
    "nice --adjustment 5 rm x",
    "sudo --user bob rm x",
    "find . | xargs --max-args 2 rm",
    "stdbuf -o0 rm x",
    "xargs rm < list",
    "find . | xargs -0 rm",
    "find . -print0 | xargs -0 -n 10 rm -f",
    "if true; then rm x; fi",
    "if rm x; then :; fi",
    "for f in *; do rm $f; done",
    "while false; do :; done; rm x",
    "until true; do rm x; done",
    "! rm x",
    "/usr/bin/rm x",
    "./rm x",
    "sudo nice -n 5 timeout 3 env A=1 rm x",
    "2>/dev/null rm x",
    ">log rm x",
    "echo ${x:-$(rm y)}",
    "echo $((1 + $(rm x)))",
    "echo $(echo $(rm x))",
    "bash -c 'rm x'",
    "sh -ec \"rm x\"",
    "eval rm x",
    "eval 'rm x'",
    "cat <<EOF\n$(rm x)\nEOF",
    "cat <<EOF\nhello\nEOF\nrm x",
    "case a in a) rm x;; esac",
    "f() { rm x; }",
    "echo ok &>/dev/null; rm x",
    "echo ok 2>&1 | rm x",
    "rm",
];

#[test]
fn wider_boundaries_and_wrappers() {
    for command in WIDER_BOUNDARIES_AND_WRAPPERS {
        blocked(command);
    }
}

#[test]
fn unterminated_input_never_lets_rm_through() {
    // Where bash would run the rm, it is blocked. Where the rm is swallowed by the
    // unterminated construct, bash fails with a syntax error and runs nothing: those
    // are allowed, in the corpus.
    for command in [
        "echo $(rm x",
        "echo `rm x",
        "echo \"$(rm x",
        "rm x; echo \"unterminated",
        "rm x; echo 'unterminated",
        "cat <<EOF\nbody\nrm x\n$(rm y)",
        "echo ${x:-$(rm y)",
        "diff <(rm x",
    ] {
        blocked(command);
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = "$(".repeat(10_000);
    blocked(&format!("echo {deep}"));
    let deep_backticks = "echo $(echo $(echo $(echo hi)))";
    allowed(deep_backticks);
}

/// Commands that run no rm and leave the parser at command level when they end.
fn safe_command() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        "[a-z][a-z0-9_.-]{0,8}",
        "'[a-z ;&|()rm]{0,10}'",
        "\"[a-z ;&|()rm]{0,10}\"",
        Just("rm".to_owned()),
        Just("-rf".to_owned()),
        Just("$HOME".to_owned()),
        Just("$(date)".to_owned()),
        Just("${x:-y}".to_owned()),
        Just("$((1+2))".to_owned()),
        Just("2>/dev/null".to_owned()),
    ];
    let command = prop_oneof![
        Just("echo"),
        Just("ls"),
        Just("grep"),
        Just("git"),
        Just("cat"),
        Just("printf"),
        Just("FOO=1 echo"),
        Just("sudo ls"),
        Just("(echo"),
        Just("{ echo"),
    ];
    (command, prop::collection::vec(word, 0..5)).prop_map(|(command, words)| {
        let line = format!("{command} {}", words.join(" "));
        // Close what the chosen command opened.
        if command.starts_with('(') {
            format!("{line})")
        } else if command.starts_with('{') {
            format!("{line}; }}")
        } else {
            line
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics(input in "\\PC{0,200}") {
        let _ = check(&input);
    }

    #[test]
    fn never_panics_on_shell_soup(input in "[ \\t\\n;&|()<>{}$`'\"\\\\#=a-z-]{0,120}") {
        let _ = check(&input);
    }

    #[test]
    fn rm_after_any_safe_command_is_blocked(s in safe_command()) {
        prop_assert_eq!(check(&s), Verdict::Allow, "{:?}", s);
        for joined in [format!("{s} ; rm x"), format!("{s} && rm x"), format!("{s}\nrm x"),
                       format!("{s} || rm x"), format!("{s} | rm x"), format!("{s} & rm x")] {
            prop_assert_eq!(check(&joined), Verdict::Block, "{:?}", joined);
        }
    }

    #[test]
    fn safe_chains_are_allowed(a in safe_command(), b in safe_command()) {
        let chained = format!("{a} && {b}");
        prop_assert_eq!(check(&chained), Verdict::Allow, "{:?}", chained);
    }
}

#[test]
fn constructs_never_desync() {
    // After each construct, the next line is read as commands again.
    for construct in [
        "(( n = 1 << 4 ))",
        "echo $(( 1 << 4 ))",
        "echo $[ 1 << 4 ]",
        "for (( i = 0; i << 2; i++ )); do :; done",
        "a[1<<2]=x",
        "a[1<<2]+=x",
        "case $v in start|rm) echo a;; (stop) echo b;; esac",
        "case rm in (rm) echo a;; esac",
        "case x in\nrm) echo a;;\nesac",
        "[[ $f =~ ^(rm|mv)$ ]]",
        "[[ a < b && ( c > d || e ) ]]",
        "echo `echo \\`echo hi\\``",
        "echo $( (echo a) )",
        "x=$( (echo a) ; echo b )",
        "cat <<EOF\nbody\nEOF",
        "cat <<'EOF'\n$(rm x)\nEOF",
        "f() { echo a; }",
        "function g { echo a; }",
        "function g() { echo a; }",
        "coproc cat",
        "echo '(('",
        "echo \"$(case x in x) echo a;; esac)\"",
    ] {
        allowed(construct);
        blocked(&format!("{construct}\nrm x"));
        if !construct.contains("<<'EOF'") && !construct.contains("<<EOF") {
            // After a heredoc's delimiter line only; `EOF; rm x` is part of the body.
            blocked(&format!("{construct}; rm x"));
        }
    }
}

#[test]
fn bodies_and_substitutions_are_checked() {
    for command in [
        "function g { rm x; }; g",
        "function g() { rm x; }",
        "g() { rm x; }",
        "coproc X { rm x; }",
        "coproc rm x",
        "coproc { rm x; }",
        "echo \"$(case x in x) rm x;; esac)\"",
        "case x in x) rm x;; esac",
        "case x in (x) echo a;; (*) rm x;; esac",
        "[[ -n $(rm x) ]]",
        "(( $(rm x) ))",
        "echo $((rm x) )",
        "echo `echo \\`rm x\\``",
        "echo \"`rm x`\"",
        "for x do rm x; done",
        "for x in a; do rm $x; done",
        "select x in a; do rm x; done",
        "echo ${v:-$(rm x)}",
        "a[$(rm x)]=1",
        "arr=($(rm x))",
    ] {
        blocked(command);
    }
}

#[test]
fn computed_names_fail_closed() {
    for command in [
        "$'\\x72m' x",
        "$'\\162m' x",
        "$'\\u0072m' x",
        "$'r\\x6d' x",
        "rm${IFS}x",
        "rm$IFS-rf x",
        "/usr/bin/rm${x} y",
        "\"$@\"rm x",
        "$@rm x",
        "${v:-rm} x",
        "${v:=rm} x",
        "r${v}m x",
        "$x rm y",
        "\"$@\" rm y",
        "$(true) rm y",
        "`true` rm y",
        "$SHELL -c 'rm x'",
        "\"$SHELL\" -ec 'rm x'",
        "source /dev/stdin <<< 'rm x'",
        "echo 'rm x' | bash",
        "printf '%s\\n' 'rm x' | sh",
        "/usr/bin/r[m] x",
        "/bin/r? x",
        "/usr/bin/r* x",
        "{rm,x} y",
        "r{m,x} y",
        "/usr/bin/{q..s}m x",
    ] {
        blocked(command);
    }
}

/// Every wrapper of the table, with its options in each form they take.
const WRAPPERS_IN_EVERY_FORM: &[&str] = &[
    "setsid rm x",
    "setsid -f rm x",
    "flock f rm x",
    "flock -w 3 f rm x",
    "flock f -c 'rm x'",
    "flock --timeout=3 f rm x",
    "taskset 1 rm x",
    "taskset -c 0 rm x",
    "chrt 0 rm x",
    "chrt -o 0 rm x",
    "prlimit --nofile=10 rm x",
    "prlimit -p 1 rm x",
    "setpriv --reuid nobody rm x",
    "setpriv --reuid=0 rm x",
    "runuser -u root rm x",
    "runuser -u root -- rm x",
    "runuser root -c 'rm x'",
    "su -c 'rm x'",
    "su root -c 'rm x'",
    "su --command='rm x'",
    "sg root 'rm x'",
    "sg root -c 'rm x'",
    "script -qc 'rm x' /dev/null",
    "script -q -c 'rm x' /dev/null",
    "script --command 'rm x' /dev/null",
    "strace -o /dev/null rm x",
    "strace -f -e trace=all rm x",
    "ltrace -o log rm x",
    "unshare -m rm x",
    "unshare --propagation private rm x",
    "nsenter -t 1 -m rm x",
    "chroot / rm x",
    "chroot --userspec=0:0 / rm x",
    "busybox rm x",
    "toybox rm x",
    "watch rm x",
    "watch -n 1 'rm x'",
    "parallel rm ::: x",
    "parallel ::: 'rm x'",
    "doas -u root rm x",
    "env --chdir . rm x",
    "env -C . rm x",
    "env --unset=A rm x",
    "env -u A rm x",
    "env -uA rm x",
    "env --split-string='rm x'",
    "env -S'rm x'",
    "env -vS 'rm x'",
    "nice --adjustment=5 rm x",
    "nice -10 rm x",
    "timeout --kill-after=1 5 rm x",
    "timeout -k1 5 rm x",
    "ionice --class 3 rm x",
    "ionice -c3 rm x",
    "stdbuf --output L rm x",
    "stdbuf --output=L rm x",
    "/usr/bin/time -f %e rm x",
    "time -o log rm x",
    "xargs -I{} rm {}",
    "xargs --max-args=2 rm",
    "xargs --process-slot-var V rm",
    "sudo --user=bob rm x",
    "sudo -ubob rm x",
    "nohup -- rm x",
    "command -p rm x",
    "exec -a name rm x",
    "bash -o pipefail -c 'rm x'",
    "bash +o pipefail -c 'rm x'",
    "bash -O extglob -c 'rm x'",
    "bash --norc -c 'rm x'",
    "bash --rcfile f -c 'rm x'",
    "bash -l -c 'rm x'",
    "bash -ec 'rm x'",
    "bash -c -- 'rm x'",
    "bash -x -e -c 'rm x'",
    "rbash -c 'rm x'",
    "bash <<< 'rm x'",
    "sh -s <<'EOF'\nrm x\nEOF",
    "bash <<EOF\nrm x\nEOF",
    "eval 'rm x'",
    "trap 'rm x' EXIT",
    "trap -- 'rm x' EXIT",
    "alias del='rm -rf'",
    "alias del=rm",
    "find . -name x -exec rm {} \\;",
    "find . -exec rm {} +",
    "find . -execdir rm {} \\;",
    "find . -ok rm {} \\;",
    "find . -exec sh -c 'rm \"$1\"' _ {} \\;",
    "sudo env nice -n 5 setsid flock f timeout 3 rm x",
];

#[test]
fn wrappers_in_every_form() {
    for command in WRAPPERS_IN_EVERY_FORM {
        blocked(command);
    }
}

/// tmux's commands that run a shell command, each read by its own option letters
/// (`split-window -f` takes no value, `new-session -f` does), in lists split at `;`.
#[test]
fn tmux_commands_are_read_by_their_own_letters() {
    for command in [
        "tmux split-window -f rm x",
        "tmux splitw -bdfhIvPZ rm x",
        "tmux split-window -l 5 -t 1 rm x",
        "tmux new-session -d -f active-pane rm x",
        "tmux new -ds n -c /tmp rm x",
        "tmux neww -adkPS rm x",
        "tmux respawn-pane -k rm x",
        "tmux respawnw -k -t 1 rm x",
        "tmux run -b -d 1 'rm x'",
        "tmux pipe-pane -o 'rm x'",
        "tmux display-popup -E -w 10 'rm x'",
        "tmux if -b true \"run 'rm x'\"",
        "tmux detach -E 'rm x'",
        "tmux -c 'rm x'",
        "tmux -L s -f /dev/null new -d 'rm x'",
        "tmux new -d ls \\; splitw rm x",
        "tmux new -d 'ls;' splitw rm x",
    ] {
        blocked(command);
    }
    for command in [
        "tmux split-window -f ls",
        "tmux new -d -s rm ls",
        "tmux new -d -n rm -t rm",
        "tmux -L rm new -d ls",
        "tmux kill-session -t rm",
        "tmux new -d 'ls\\;' rm",
        "tmux run -d rm ls",
    ] {
        allowed(command);
    }
}

/// Options whose value a program runs, read as getopt reads them: clusters up to the
/// letter that takes a value, exact names before abbreviations, optional values only
/// attached; ssh's configuration lines in any spelling; git's `ext::` URLs wherever
/// they stand; the loader by any of its names.
#[test]
fn options_that_run_a_command_are_read_as_their_programs_read_them() {
    for command in [
        "tar -xvf a.tar --to-command rm",
        "tar -C d -I rm -cf a.tar y",
        "tar -cf a.tar --checkpoint-action=exec=rm y",
        "tar -cf a.tar --checkpoint-action 'exec = rm x' y",
        "TAR_OPTIONS=-Irm tar -cf a.tar y",
        "ZIPOPT='-TT rm' zip -T z.zip y",
        "ssh -o ' LocalCommand = rm x' h",
        "ssh -F <(printf 'Host *\n  ProxyCommand=rm x\n') h",
        "ssh -o 'match host h exec \"rm x\"' h",
        "sftp -S rm h",
        "scp -qS /usr/bin/rm y h:z",
        "rsync -avze 'rm x' y h:z",
        "rsync --rsh='rm x' y h:z",
        "man -Prm ls",
        "MANOPT='-P rm' man ls",
        "git -c 'url.ext::sh -c rm% x.insteadOf=o:' fetch o:r",
        "git ls-remote 'ext::rm x'",
        "git grep --open='rm x' a",
        "git filter-branch --msg-filter 'rm x'",
        "ld-2.31.so /bin/rm x",
        "ld64.so.2 --inhibit-cache /bin/rm x",
    ] {
        blocked(command);
    }
    for command in [
        "tar -cf a.tar --checkpoint 1 y",
        "tar -xfI a.tar",
        "tar -f -I x",
        "tar -cf a.tar --checkpoint-action=echo='rm x' y",
        "zip -b /tmp z.zip rm",
        "ssh -o 'SendEnv rm' h",
        "ssh -o RemoteCommand=rm h",
        "ssh -i rm h",
        "scp -i rm y h:z",
        "man -H ls",
        "git grep -O rm",
        "git grep -e -Orm",
        "git difftool -t rm",
        "git clone https://h/ext::rm",
        "ld.so --list /usr/bin/rm",
        "ldd /usr/bin/rm",
        "sort -o rm f",
    ] {
        allowed(command);
    }
}

/// Git's settings, variables and options that name a command, and the editors and
/// pagers of other programs; forms the oracle cannot run here (no terminal, no
/// remote, no attributes) are checked only for the verdict.
#[test]
fn git_and_variables_name_commands() {
    for command in [
        "git -c core.pager='rm x' log",
        "git -c pager.log='rm x' log",
        "git -c Core.Editor='rm x' commit",
        "git -c sequence.editor='rm x' rebase -i main",
        "git -c interactive.diffFilter='rm x' add -p",
        "git -c core.askPass='rm x' fetch",
        "git -c diff.d.textconv='rm x' log -p",
        "git -c diff.d.command='rm x' diff",
        "git -c filter.f.clean='rm x' add .",
        "git -c merge.m.driver='rm x %A' merge b",
        "git -c difftool.t.cmd='rm x' difftool -t t",
        "git -c remote.o.receivepack='rm x' push o",
        "git -c credential.https://h.helper='!rm x' fetch",
        "git -c credential.helper=/usr/bin/rm fetch",
        "git -c submodule.s.update='!rm x' submodule update",
        "git -C . -c core.editor=rm commit",
        "git push --receive-pack='rm x' o",
        "git rebase --exec 'rm x' main",
        "git rebase -i -x 'rm x' main",
        "git submodule foreach 'rm x'",
        "git submodule --quiet foreach --recursive rm x",
        "git bisect run rm x",
        "GIT_EDITOR='rm x' git commit",
        "GIT_PAGER=rm git log",
        "VISUAL='rm x' git commit",
        "MANPAGER='rm x' man ls",
        "GIT_ASKPASS='rm x' git fetch",
        "SSH_ASKPASS=rm ssh h",
        "sudo EDITOR='rm x' crontab -e",
    ] {
        blocked(command);
    }
    for command in [
        "git -c core.pager=less log",
        "git -c pager.log=false log",
        "git -c user.name=rm commit -m x",
        "git -c core.hooksPath=hooks commit",
        "git -c credential.helper=rm fetch",
        "git -c core.fsmonitor=true status",
        "git add -u",
        "git commit -c HEAD",
        "git cherry-pick -x rm",
        "git rebase -i main",
        "git rebase --exec 'cargo test' main",
        "git bisect run cargo test",
        "git submodule foreach git pull",
        "EDITOR=vim git commit",
        "PAGER=less man ls",
    ] {
        allowed(command);
    }
}

#[test]
fn every_wrapper_is_found_by_its_names() {
    for wrapper in super::wrappers::WRAPPERS {
        for name in wrapper.names {
            assert!(name.len() <= super::wrappers::LONGEST_NAME, "{name}");
            assert!(super::wrappers::find(name).is_some(), "{name}");
        }
    }
}

#[test]
fn the_offending_simple_command_is_named() {
    assert_eq!(
        super::find_rm("echo a; sudo rm -rf x && ls").as_deref(),
        Some("sudo rm -rf x")
    );
    assert_eq!(super::find_rm("echo $(rm y)").as_deref(), Some("rm y"));
    assert_eq!(super::find_rm("ls"), None);
}

#[test]
fn scripts_in_sight_are_read_as_their_readers_read_them() {
    for command in [
        // A `<(…)` in the same word as its option, or one of several files.
        "bash --rcfile=<(echo rm x) -i <<< ''",
        "make -f Makefile -f <(echo 'all: ; rm x')",
        "make -sf - <<< 'all: ; rm x'",
        "gmake -f/dev/stdin <<< 'all: ; rm x'",
        "make --eval 'X = $(shell a $(shell b) ; rm x)'",
        "make -f - <<< 'all: ; ${shell rm x}'",
        // Only the first reader after `exec` takes its stdin: the next one.
        "exec <<< 'rm x'; cat notes; bash",
        // Keys, as tmux types them.
        "tmux send-keys -t s 'rmz' BSpace ' x' Enter",
        "tmux send-keys -t s r m Space x Enter",
        "tmux send-keys -t s -N 2 'rm x' C-m",
        "tmux send-keys 'cd /; ' 'rm x' KPEnter",
        "tmux send-keys -t s é-x Enter ü C-m 'rm x' Enter",
        // Tcl.
        "expect -c 'spawn rm x; expect eof'",
        "tclsh8.6 <<< 'exec -ignorestderr -- rm x'",
        "wish <<< 'exec /bin/rm x'",
        "echo 'puts [exec rm x]' | tclsh",
        // env -S's escapes: `\_` splits, `\c` ends, quotes stay quotes.
        "env -S 'rm\\_x\\cignored'",
        "env -S 'bash -c \"echo a\\nrm x\"'",
        // A number after an option the table does not know may be its value.
        "nice --bogus 10 rm x",
        // Extended globs, nested and negated.
        "/usr/bin/@(q|@(r))m x",
        "/usr/bin/r!(x|y) x",
        "/usr/bin/*(r)*(m) x",
    ] {
        blocked(command);
    }
    for command in [
        "bash <(curl -s https://example.com/setup.sh)",
        "make -f Makefile",
        "make --eval='all: ; @echo rm x'",
        "exec <<< 'rm x'; cat",
        "exec 2> log; bash -c 'echo hi'",
        // Copy mode's commands, and keys that type no text.
        "tmux send-keys -X -t s cancel",
        "tmux send-keys -t s 'rm' BSpace BSpace 'ls' Enter",
        "tmux send-keys -t s -l 'Enter'",
        "tclsh <<< 'puts rm'",
        "tclsh script.tcl",
        "expect -c 'spawn ssh host; interact'",
        "env -S 'rm\\tx'",
        "xargs -0 echo rm",
        "/usr/bin/@(x)m x",
        "/usr/bin/!(rm) x",
        "echo !(rm) @(a|rm)",
    ] {
        allowed(command);
    }
}

#[test]
fn a_function_named_rm_runs_its_body_where_it_takes_effect() {
    for command in [
        "rm() { trash \"$@\"; }",
        "rm() { trash \"$@\"; }; rm -rf build",
        "rm() { trash \"$@\"; }\nrm x && ls",
        "rm() { trash \"$@\"; } && rm x",
        "rm() { mv -t ~/.trash \"$@\"; }; for f in *.o; do rm \"$f\"; done",
        "rm() { trash \"$@\"; }; FORCE=1 rm x; \\rm y",
        "rm() { echo \"$@\"; }; a | rm x",
        "function rm() { trash \"$@\"; }; rm x",
    ] {
        allowed(command);
    }
    for command in [
        // The body runs rm (or itself, by name).
        "rm() { /bin/rm -i \"$@\"; }; rm x",
        "rm() { rm -i \"$@\"; }",
        // It runs its arguments.
        "rm() { \"$@\"; }; rm rm x",
        // Where bash does not look the function up, or it is not defined.
        "rm() { :; }; /usr/bin/rm x",
        "rm() { :; }; env rm x",
        "rm() { :; }; exec rm x",
        "rm x; rm() { :; }",
        "rm() { :; }; unset rm; rm x",
        "a || rm() { :; }; rm x",
        "a | rm() { :; }; rm x",
        "rm() { :; } >/dev/null & rm x",
        "case a in a) rm() { :; };; esac; rm x",
        "while false; do\nrm() { :; }; done; rm x",
        "echo $(rm() { :; }; echo); rm x",
        "echo `rm() { :; }`; rm x",
        "cat <<EOF\n`rm() { :; }`\nEOF\nrm x",
        "eval 'rm() { :; }'; rm x",
        // `function NAME {` without parentheses is not followed.
        "function rm { :; }; rm x",
    ] {
        blocked(command);
    }
}
