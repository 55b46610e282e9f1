//! Bash is the judge of the rm guard.
//!
//! In a private mount namespace a recording program is bind-mounted over every `rm`
//! on the machine. Each command of a corpus then runs with bash in a directory of
//! its own (5 s limit) and the recorder notes whether rm ran. Allowed by the guard
//! but rm ran: a bypass, and the test fails. Refused but rm never ran: a false
//! positive, listed, and failing the test for the corpus's must-allow part. The corpus
//! is the guard's own (`src/guard/corpus.rs`), with the README's examples and
//! generated wrappers and positions.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use forge_bash::guard;

/// The guard's corpus, shared with its unit tests: `BLOCK` may or may not run rm,
/// `ALLOW` must not.
#[path = "../src/guard/corpus.rs"]
mod corpus;

#[test]
fn bash_agrees_with_the_guard() {
    if let Some(reason) = cannot_run() {
        eprintln!("skipped: {reason}");
        return;
    }
    let readme = readme_examples();
    let mut corpus: Vec<(String, bool)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add = |command: String, must_allow: bool| {
        if seen.insert(command.clone()) {
            corpus.push((command, must_allow));
        }
    };
    for command in corpus::BLOCK {
        add(command.to_string(), false);
    }
    for command in corpus::ALLOW {
        add(command.to_string(), true);
    }
    for command in &readme.caught {
        add(command.clone(), false);
    }
    for command in readme.allowed.iter().chain(&readme.out_of_reach) {
        add(command.clone(), readme.allowed.contains(command));
    }
    // Named as out of reach: allowed by the guard (checked when the docs are read),
    // and rm may run for them; they are not bypasses, they are the list.
    let named: BTreeSet<&str> = readme.out_of_reach.iter().map(String::as_str).collect();
    for (command, must_allow) in generated() {
        add(command, must_allow);
    }
    assert!(corpus.len() >= 300, "corpus has {} commands", corpus.len());

    let ran = run_in_bash(&corpus);
    let mut bypasses = Vec::new();
    let mut false_positives = Vec::new();
    let mut blocked_count = 0;
    for (k, (command, must_allow)) in corpus.iter().enumerate() {
        let blocked = guard::check(command).is_blocked();
        let rm_ran = ran.contains(&k);
        blocked_count += usize::from(blocked);
        if !blocked && rm_ran && !named.contains(command.as_str()) {
            bypasses.push(command.clone());
        }
        if blocked && !rm_ran {
            false_positives.push((command.clone(), *must_allow));
        }
    }
    eprintln!(
        "oracle: {} commands, {} blocked, {} allowed, rm ran for {}; {} bypasses, {} false positives ({} must-allow)",
        corpus.len(),
        blocked_count,
        corpus.len() - blocked_count,
        ran.len(),
        bypasses.len(),
        false_positives.len(),
        false_positives.iter().filter(|(_, m)| *m).count(),
    );
    // The list of what is out of reach stays true the other way too: its examples
    // do run rm (where their programs are installed).
    let idle: Vec<&str> = corpus
        .iter()
        .enumerate()
        .filter(|(k, (command, _))| named.contains(command.as_str()) && !ran.contains(k))
        .map(|(_, (command, _))| command.as_str())
        .collect();
    eprintln!(
        "oracle: {} named out of reach, {} of them ran rm here; ran none: {idle:?}",
        named.len(),
        named.len() - idle.len(),
    );
    let missing = not_installed();
    if !missing.is_empty() {
        eprintln!(
            "oracle: not installed here, so their commands run nothing: {}",
            missing.join(", ")
        );
    }
    for (command, must_allow) in &false_positives {
        let part = if *must_allow { "must-allow" } else { "listed" };
        eprintln!("  false positive ({part}): {command:?}");
    }
    assert!(
        bypasses.is_empty(),
        "rm ran though the guard allowed: {bypasses:#?}"
    );
    let refused: Vec<_> = false_positives.iter().filter(|(_, m)| *m).collect();
    assert!(
        refused.is_empty(),
        "must-allow commands refused: {refused:#?}"
    );
    let wrong: Vec<_> = corpus
        .iter()
        .filter(|(command, must_allow)| *must_allow && guard::check(command).is_blocked())
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Why the oracle cannot run here, if it cannot.
fn cannot_run() -> Option<String> {
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .output();
    match probe {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "`unshare -m` is refused here ({}); it needs root or user namespaces",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run unshare: {e}")),
    }
}

/// Programs the corpus runs that are no part of every machine: where one is missing,
/// its commands confirm nothing (`.ci/run` installs GNU parallel, tmux, tini, tclsh,
/// ssh and ssh-agent, zip and unzip, and rsync).
const PROGRAMS: &[&str] = &[
    "parallel",
    "tmux",
    "tclsh",
    "ssh-agent",
    "ssh",
    "zip",
    "unzip",
    "rsync",
    "man",
    "gdb",
    "vim",
    "ed",
    "git",
    "script",
    "sudo",
    "doas",
    "busybox",
    "toybox",
    "valgrind",
    "perf",
    "npx",
    "npm",
    "fakeroot",
    "make",
    "strace",
    "ltrace",
    "dbus-run-session",
    "tini",
    "dumb-init",
];

fn not_installed() -> Vec<&'static str> {
    PROGRAMS
        .iter()
        .copied()
        .filter(|name| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect()
}

/// Runs each command with bash under the recorder; returns the indices for which rm ran.
fn run_in_bash(corpus: &[(String, bool)]) -> BTreeSet<usize> {
    let base = tempfile::tempdir().unwrap();
    let base_path = base.path();
    std::fs::set_permissions(base_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = base_path.join("log");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let recorder = base_path.join("recorder");
    // Given `--help` or `--version` before any `--`, the real rm (copied aside before
    // the mounts) runs instead, in the command's directory: it is recorded only if
    // it deleted one of the files there.
    std::fs::write(
        &recorder,
        format!(
            r#"#!/bin/sh
for a in "$@"; do
    case $a in
    --) break ;;
    --help|--version)
        {real} "$@" >/dev/null 2>&1
        [ -e x ] && [ -e y ] && [ -e f ] && [ -e d ] && exit 0
        break ;;
    esac
done
echo "${{ORACLE_ID:--}} $(pwd)" >> {log}
"#,
            real = base_path.join("real-rm").display(),
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let commands = base_path.join("corpus");
    std::fs::create_dir(&commands).unwrap();
    for (k, (command, _)) in corpus.iter().enumerate() {
        std::fs::write(commands.join(k.to_string()), command).unwrap();
    }
    let driver = r#"
set -u
base=$1
cp "$(command -v rm)" "$base/real-rm" || exit 3
mkdir "$base/home" "$base/tmp"
for target in /usr/bin/rm /bin/rm "$(command -v rm)"; do
    [ -e "$target" ] || continue
    mount --bind "$base/recorder" "$target" || exit 3
done
mkdir "$base/probe" && cd "$base/probe" && : > x
ORACLE_ID=probe rm x
[ -e x ] || { echo "the recorder is not in place: rm really ran" >&2; exit 4; }
# A bare environment: no PATH entry of the machine's (pyenv's shims would leave
# their rehash lock behind when rm is the recorder), a HOME of its own.
bare() {
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$base/home" TMPDIR="$base/tmp" \
        SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb "$@"
}
# GNU parallel, on its first run in a HOME, tries whether it can call an exported
# bash function: the function runs rm on a temporary file of parallel's own. It
# keeps the answer in ~/.parallel and asks no more; asked here first, that rm is not
# taken for a command's.
if command -v parallel > /dev/null; then
    bare ORACLE_ID=setup parallel true ::: 1 </dev/null >/dev/null 2>&1
fi
mkdir "$base/w" "$base/tmux"
for file in "$base"/corpus/*; do
    id=${file##*/}
    mkdir "$base/w/$id" && cd "$base/w/$id" && : > x && : > y && : > f && mkdir d
    # Each command has a tmux server of its own, which takes its environment
    # (ORACLE_ID) from it; none is the machine's.
    mkdir "$base/tmux/$id"
    bare ORACLE_ID="$id" TMUX_TMPDIR="$base/tmux/$id" \
        timeout -k 1 5 bash -c "$(cat "$file")" </dev/null >/dev/null 2>&1
done
sleep 0.5
# tmux servers outlive the commands that started them.
for socket in "$base"/tmux/*/tmux-*/*; do
    [ -S "$socket" ] && tmux -S "$socket" kill-server 2>/dev/null
done
true
"#;
    let status = Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "bash",
            "-c",
            driver,
            "oracle",
        ])
        .arg(base_path)
        .status()
        .unwrap();
    assert!(status.success(), "the oracle's driver failed: {status}");
    let log = std::fs::read_to_string(&log).unwrap();
    let workdirs = format!("{}/w/", base_path.display());
    let mut ran = BTreeSet::new();
    let mut probe = false;
    for line in log.lines() {
        let (id, cwd) = line.split_once(' ').unwrap_or((line, ""));
        if id == "probe" {
            probe = true;
            continue;
        }
        if id == "setup" {
            continue;
        }
        let id = match id.parse::<usize>() {
            Ok(id) => id,
            Err(_) => cwd
                .strip_prefix(&workdirs)
                .and_then(|rest| rest.split('/').next())
                .and_then(|id| id.parse().ok())
                .unwrap_or_else(|| panic!("rm ran where it cannot be traced: {line}")),
        };
        ran.insert(id);
    }
    assert!(probe, "the recorder never ran");
    ran
}

/// The examples of the README's guard section, by list.
#[derive(Default)]
struct Examples {
    caught: Vec<String>,
    allowed: Vec<String>,
    out_of_reach: Vec<String>,
}

fn readme_examples() -> Examples {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guard.md"))
            .unwrap();
    let start = readme.find("## The rm guard").expect("guard section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |k| k + 3)];
    let mut examples = Examples::default();
    for paragraph in section.split("\n\n") {
        let list = if paragraph.starts_with("**Caught:**") {
            Some(&mut examples.caught)
        } else if paragraph.starts_with("**Not blocked") {
            Some(&mut examples.allowed)
        } else if paragraph.starts_with("**Out of its reach:**") {
            Some(&mut examples.out_of_reach)
        } else {
            None
        };
        if let Some(list) = list {
            list.extend(
                code_spans(paragraph)
                    .into_iter()
                    .map(|c| c.replace('⏎', "\n")),
            );
        }
    }
    assert!(examples.caught.len() > 20 && examples.allowed.len() > 10);
    for command in &examples.caught {
        assert!(
            guard::check(command).is_blocked(),
            "README says caught: {command:?}"
        );
    }
    for command in examples.allowed.iter().chain(&examples.out_of_reach) {
        assert!(
            !guard::check(command).is_blocked(),
            "README says allowed: {command:?}"
        );
    }
    examples
}

/// Markdown code spans: a run of backticks up to the next run of the same length.
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let ticks = rest[open..].chars().take_while(|&c| c == '`').count();
        let fence = "`".repeat(ticks);
        let body = &rest[open + ticks..];
        let mut search = 0;
        let close = loop {
            let Some(k) = body[search..].find(&fence) else {
                break None;
            };
            let at = search + k;
            let run = body[at..].chars().take_while(|&c| c == '`').count();
            if run == ticks {
                break Some(at);
            }
            search = at + run;
        };
        let Some(close) = close else {
            break;
        };
        let span = &body[..close];
        let span = if ticks > 1 { span.trim() } else { span };
        spans.push(span.replace('\n', " "));
        rest = &body[close + ticks..];
    }
    spans
}

/// Wrappers, positions and names around `rm` and around look-alikes. Wrappers that
/// are not installed are left out: they would only run nothing.
fn generated() -> Vec<(String, bool)> {
    let wrappers = [
        "",
        "env ",
        "env -i ",
        "env -u A ",
        "env --chdir . ",
        "nice ",
        "nice -n 5 ",
        "nohup ",
        "timeout 5 ",
        "timeout -s KILL 5 ",
        "stdbuf -o L ",
        "setsid -w ",
        "flock f ",
        "taskset 1 ",
        "chrt -o 0 ",
        "prlimit ",
        "setpriv ",
        "strace -o /dev/null ",
        "unshare ",
        "command ",
        "time ",
        "ionice -c 3 ",
        "xargs -a /dev/null ",
        "sudo ",
        "exec ",
    ];
    let installed: BTreeMap<&str, bool> = wrappers
        .iter()
        .map(|w| {
            let name = w.split(' ').next().unwrap();
            let ok = name.is_empty()
                || ["command", "time", "exec"].contains(&name)
                || Command::new("sh")
                    .args(["-c", &format!("command -v {name}")])
                    .output()
                    .is_ok_and(|o| o.status.success());
            (*w, ok)
        })
        .collect();
    let names = [
        "rm",
        "\\rm",
        "'rm'",
        "\"rm\"",
        "/usr/bin/rm",
        "/bin/rm",
        "r\"m\"",
        "$'\\x72m'",
        "${v:-rm}",
        "/usr/bin/r[m]",
        "\"$@\"rm",
    ];
    let lookalikes = [
        "echo rm",
        "rmdir d",
        "ls rm",
        "printf %s rm",
        "grep -c rm /dev/null",
        "which rm",
        "true rm",
        "echo rmx",
    ];
    let positions = [
        "{}",
        "true; {}",
        "true && {}",
        "false || {}",
        "echo a | {}",
        "( {} )",
        "{ {}; }",
        "echo $({})",
        "echo \"$({})\"",
        "echo `{}`",
        "if true; then {}; fi",
        "for i in 1; do {}; done",
        "(( n = 1 << 4 ))\n{}",
        "case a in a) {};; esac",
        "f() { {}; }; f",
        "bash -c '{}'",
        "eval '{}'",
        "[[ -n a ]] && {}",
        "x=$(( 2 >> 1 )); {}",
        "cat <<'EOF'\nhello\nEOF\n{}",
        "while true; do {}; break; done",
        "a=$[1<<2] {}",
    ];
    let wrappers: Vec<&str> = wrappers.into_iter().filter(|w| installed[w]).collect();
    let mut out = Vec::new();
    let mut k = 0usize;
    for position in positions {
        for _ in 0..12 {
            // A fixed stride over the wrapper and name lists gives varied pairs.
            k += 1;
            // Every third command has a chain of two wrappers (`exec` only last).
            let first = wrappers[(k * 7) % wrappers.len()];
            let second = wrappers[(k * 11 + 3) % wrappers.len()];
            let chain = if k.is_multiple_of(3) && first != "exec " {
                format!("{first}{second}")
            } else {
                first.to_owned()
            };
            let wrapper = chain.as_str();
            let name = names[(k * 5) % names.len()];
            let name = if position.contains('\'') && name.contains('\'') {
                "rm"
            } else {
                name
            };
            out.push((position.replace("{}", &format!("{wrapper}{name} x")), false));
            if k.is_multiple_of(2) {
                let lookalike = lookalikes[k % lookalikes.len()];
                let wrapper = if wrapper.contains("exec ") {
                    ""
                } else {
                    wrapper
                };
                out.push((
                    position.replace("{}", &format!("{wrapper}{lookalike}")),
                    true,
                ));
            }
        }
    }
    out
}
