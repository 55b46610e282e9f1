//! The guard's tables: what it blocks, what it lets through, and that nothing panics.

use proptest::prelude::*;

use super::{Verdict, check};

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
    // The seeds' own examples, and each of the seed's chain operators.
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
    for command in [
        "echo rm",
        "echo \"a;rm b\"",
        "echo 'x && rm y'",
        "grep rm file",
        "rmdir d",
        "git rm f",
        "man rm",
        "which rm",
        "ls -la",
        "alias del=rm",
        "find . -delete",
        "",
        "   ",
    ] {
        allowed(command);
    }
}

#[test]
fn wider_boundaries_and_wrappers() {
    for command in [
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
    ] {
        blocked(command);
    }
}

#[test]
fn no_false_positives() {
    for command in [
        "echo rm",
        "echo \"a;rm b\"",
        "echo 'x && rm y'",
        "grep -r rm .",
        "rmdir d",
        "git rm f",
        "man rm",
        "which rm",
        "type rm",
        "command -v rm",
        "printf '%s\\n' rm",
        "echo hi # ; rm x",
        "# rm x",
        "cat > s.sh <<'EOF'\nrm -rf build\nEOF",
        "cat > s.sh <<\"EOF\"\nrm -rf build\nEOF",
        "cat > s.sh <<EOF\nrm -rf build\nEOF",
        "cat > s.sh <<-EOF\n\trm -rf build\n\tEOF",
        "cat > s.sh <<-'EOF'\n\trm -rf build\n\tEOF\necho done",
        "cat <<EOF | wc -l\nrm a\nrm b\nEOF",
        "echo $((1+2))",
        "arr=(rm x); echo ${arr[0]}",
        "x=rm",
        "cp -r a b",
        "echo a#rm",
        "ls -l | grep rm",
        "echo '$(rm x)'",
        "echo \\$\\(rm x\\)",
        "echo \"\\$(rm x)\"",
        "cat <<< 'rm x'",
        "xargs echo rm",
        "echo rm > rm",
        "ls rm",
        "npm run rm",
        "firmware --update",
        "rm.sh",
        "./rm.sh",
        "echo done; echo rm",
        "sudo -l",
        "timeout 5 sleep 1",
        "bash -c \"$SCRIPT\"",
        "bash script.sh",
        "for rm in a b; do echo $rm; done",
    ] {
        allowed(command);
    }
}

#[test]
fn unterminated_input_never_lets_rm_through() {
    // Where bash would run the rm, it is blocked; where the rm is swallowed by the
    // unterminated construct, bash fails with a syntax error and runs nothing.
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
    for command in [
        "echo \"unterminated; rm x",
        "echo 'unterminated; rm x",
        "cat <<'EOF'\nrm x",
        "cat <<EOF\nrm x",
        "echo \\",
        "echo $",
        "echo ${",
        "echo $((",
        "x=(",
        "<<",
        "<<<",
        "2>",
        "&",
        ";;",
        "))",
    ] {
        allowed(command);
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
