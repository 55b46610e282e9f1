//! Nothing waits for a person who is not there: editors, vim and git prompts end at
//! once with a line saying why, against the real binary and the real programs.

use std::time::{Duration, Instant};

use crate::support::{Options, Server, mask_ms};

/// The variables the server sets when its environment does not: unset for the server
/// (whatever the test runner's environment holds), so that it sets them.
const OURS: &[&str] = &[
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "PAGER",
    "GIT_PAGER",
    "GIT_TERMINAL_PROMPT",
    "VIMINIT",
];

/// Far longer than any of these calls may take: before the fix they waited for it.
const TIMEOUT_SECS: u64 = 30;

/// A server started without any of [`OURS`] in its environment, and `extra` added.
fn server(extra: &[&str]) -> Server {
    let mut through = vec!["env".to_owned()];
    for name in OURS {
        through.extend(["-u".to_owned(), (*name).to_owned()]);
    }
    through.extend(extra.iter().map(|s| (*s).to_owned()));
    let through: Vec<&str> = through.iter().map(String::as_str).collect();
    Options::default()
        .timeout(TIMEOUT_SECS)
        .through(&through)
        .start()
}

/// A git repository with one commit in the workdir, its config in a HOME of its own.
const REPO: &str = "export HOME=$PWD; git config --global user.name t && \
    git config --global user.email t@example.com && git init -q r && cd r && \
    git commit -q --allow-empty -m one && git commit -q --allow-empty -m two && ";

/// Runs `command`, asserting that it answered within 10 s; the answer.
fn quick(server: &mut Server, command: &str) -> String {
    let started = Instant::now();
    let answer = server.run(command);
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(10),
        "answered after {elapsed:?}: {answer}"
    );
    answer
}

fn have_vim() -> bool {
    let found = std::process::Command::new("vim")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        eprintln!("skipped: vim is not installed");
    }
    found
}

#[test]
fn git_commit_without_a_message_fails_at_once_saying_why() {
    let mut server = server(&[]);
    let answer = quick(
        &mut server,
        &format!("{REPO} git commit --allow-empty; echo \"commit: $?\""),
    );
    assert!(answer.contains("commit: 1\n"), "{answer}");
    assert!(
        answer.contains("forge-bash: no editor for ")
            && answer.contains("COMMIT_EDITMSG (no terminal): give the text in the command (-m MSG, -F FILE, --no-edit)"),
        "{answer}"
    );
}

#[test]
fn git_rebase_i_does_not_wait() {
    let mut server = server(&[]);
    let answer = quick(
        &mut server,
        &format!(
            "{REPO} git rebase -i HEAD~1; echo \"rebase: $?\"; git status --short --branch; \
             GIT_SEQUENCE_EDITOR=true git rebase -i HEAD~1 && echo rebased"
        ),
    );
    assert!(answer.contains("rebase: 1\n## master\n"), "{answer}");
    assert!(
        answer.contains("no editor for the todo list ")
            && answer.contains("GIT_SEQUENCE_EDITOR=true takes it as it is"),
        "{answer}"
    );
    assert!(answer.contains("rebased\n"), "{answer}");
}

#[test]
fn vi_fails_at_once_saying_why() {
    if !have_vim() {
        return;
    }
    let mut server = server(&[]);
    let answer = quick(&mut server, "echo text > f.txt; vi f.txt; echo \"vi: $?\"");
    assert!(answer.contains("vi: 1"), "{answer}");
    assert!(
        answer.contains("forge-bash: vim needs a terminal and there is none"),
        "{answer}"
    );
}

#[test]
fn vim_driven_by_a_script_still_edits() {
    if !have_vim() {
        return;
    }
    let mut server = server(&[]);
    let answer = quick(
        &mut server,
        "echo one > f.txt; vim -c '%s/one/two/' -c wq f.txt > /dev/null 2>&1; echo \"c: $?\"; \
         printf 'ithree \\033:wq\\n' | vim f.txt > /dev/null 2>&1; echo \"keys: $?\"; \
         vim -es -c '%s/two/four/' -c wq f.txt; echo \"es: $?\"; cat f.txt",
    );
    assert_eq!(
        mask_ms(&answer),
        "c: 0\nkeys: 0\nes: 0\nthree four\n\n[exit:0 | Xms]"
    );
}

#[test]
fn the_server_s_own_choices_win() {
    let mut server = server(&[]);
    let shown = "echo \"$EDITOR|$GIT_TERMINAL_PROMPT|$PAGER|$GIT_PAGER\"";
    let answer = server.run(shown);
    assert!(
        answer.starts_with("sh -c 'echo \"forge-bash: no editor for $1 (no terminal): write the file with a command instead")
            && answer.contains("|0|cat|cat\n"),
        "{answer}"
    );
    // An editor the operator chose is theirs for git too; the other chains stay.
    let mut server = self::server(&["EDITOR=ed", "PAGER=less"]);
    let answer = server.run("echo \"$EDITOR|${VISUAL-unset}|${GIT_EDITOR-unset}|${GIT_SEQUENCE_EDITOR-unset}|$PAGER|${GIT_PAGER-unset}|$GIT_TERMINAL_PROMPT\"");
    assert_eq!(
        mask_ms(&answer),
        "ed|unset|unset|unset|less|unset|0\n\n[exit:0 | Xms]"
    );
}
