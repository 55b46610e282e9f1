//! Bash is the judge of the rm guard.
//!
//! In a private mount namespace a recording program is bind-mounted over every `rm`
//! on the machine. Each command of a corpus then runs with bash in a directory of
//! its own (5 s limit) and the recorder notes whether rm ran. Allowed by the guard
//! but rm ran: a bypass, and the test fails. Refused but rm never ran: a false
//! positive, listed, and failing the test for the corpus's must-allow part.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use forge_bash::guard;

/// Commands from the issue and the unit tables that may or may not run rm.
const CORPUS: &[&str] = &[
    "(( n = 1 << 4 ))\nrm x",
    "function g { rm x; }; g",
    "coproc X { rm x; }; wait",
    "$'\\x72m' x",
    "$'\\162m' x",
    "$'\\u0072m' x",
    "rm${IFS}x",
    "\"$@\"rm x",
    "/usr/bin/r[m] x",
    "/usr/bin/r? x",
    "{rm,x} y",
    "find . -name x -exec rm {} \\;",
    "find . -name x -execdir rm {} +",
    "setsid rm x",
    "setsid -w rm x",
    "flock f rm x",
    "flock f -c 'rm x'",
    "strace -o /dev/null rm x",
    "su -c 'rm x'",
    "su root -c 'rm x'",
    "bash -o pipefail -c 'rm x'",
    "bash -ec 'rm x'",
    "bash -c -- 'rm x'",
    "bash --norc -c 'rm x'",
    "bash <<< 'rm x'",
    "sh -s <<'EOF'\nrm x\nEOF",
    "trap 'rm x' EXIT",
    "nohup -- rm x",
    "env --chdir . rm x",
    "env -C . rm x",
    "env -u A rm x",
    "env -S 'rm x'",
    "env --split-string='rm x'",
    "ionice --class 3 rm x",
    "stdbuf --output L rm x",
    "stdbuf --output=L rm x",
    "/usr/bin/time -f %e rm x",
    "echo \"$(case x in x) rm x;; esac)\"",
    "taskset 1 rm x",
    "chrt -o 0 rm x",
    "prlimit --nofile=64 rm x",
    "setpriv --reuid=0 rm x",
    "runuser -u root rm x",
    "runuser -u root -- rm x",
    "script -qc 'rm x' /dev/null",
    "unshare -m rm x",
    "nsenter -t $$ -m rm x",
    "chroot / rm x",
    "timeout --kill-after=1 5 rm x",
    "nice --adjustment=5 rm x",
    "xargs -a /dev/null rm x",
    "echo x | xargs --max-args=1 rm",
    "sudo rm x",
    "doas rm x",
    "busybox rm x",
    "watch rm x",
    "parallel rm ::: x",
    "eval 'rm x'",
    "alias del='rm -f'\ndel x",
    "echo $((rm x) )",
    "echo `echo \\`rm x\\``",
    "case x in (x) echo a;; (*) rm x;; esac",
    "case y in (x) echo a;; (*) rm x;; esac",
    "[[ -n $(rm x) ]]",
    "for x do rm x; done",
    "select x in a; do rm x; break; done </dev/null",
    "a[1<<2]=x\nrm x",
    "echo ${v:-$(rm x)}",
    "${v:-rm} x",
    "x=; $x rm y",
    "$(true) rm x",
    "`true` rm x",
    "$SHELL -c 'rm x'",
    "source /dev/stdin <<< 'rm x'",
    "echo rm x | bash -s",
    "coproc rm x; wait",
    "a=1 b=2 rm x",
    "r\\\nm x",
    "''rm x",
    "\"\"rm x",
    "r''m x",
    "~/../../usr/bin/rm x",
    "/usr/bin//rm x",
    "/usr/bin/./rm x",
    "{ rm x;}",
    "if rm x; then :; fi",
    "while rm x; do break; done",
    "until rm x; do break; done",
    "true | rm x",
    "true |& rm x",
    "echo $(echo; rm x)",
    "echo \"${x:-$(rm x)}\"",
    "echo \"${x/a/$(rm x)}\"",
    "x=$(rm x)",
    "export y=$(rm x)",
    "local_fn() { local y=$(rm x); }; local_fn",
    "cat <<EOF; rm x\nbody\nEOF",
    "cat <<A <<B\na\nA\nb\nB\nrm x",
    "cat <<-EOF\n\tbody\n\tEOF\nrm x",
    "echo $'\\''; rm x",
    "echo \"a\\\"b\"; rm x",
    "echo 'a\\'; rm x",
    "case x in x) echo a;; esac; rm x",
    "case x in x) echo a;& y) rm x;; esac",
    "case x in x) echo a;;& *) rm x;; esac",
    "[[ a == a ]] && rm x",
    "[[ a < b ]] && rm x",
    "(( 1 )) && rm x",
    "(( x = 2 > 1 )) && rm x",
    "let 'x = 1 << 2'; rm x",
    "echo $(( $(echo 1) + 1 )); rm x",
    "echo ${#x}; rm x",
    "echo ${x##*/}; rm x",
    "arr=(a b); rm ${arr[0]}",
    "exec 3>&1; rm x",
    "2>&1 rm x",
    "{ echo; } 2>/dev/null; rm x",
    "rm x &",
    "rm x & wait",
    "echo a #; rm x\nrm y",
    "echo a\\#b; rm x",
    "command -- rm x",
    "command -p rm x",
    "builtin command rm x",
    "env -- rm x",
    "env A=1 B=2 -- rm x",
    "env -i PATH=/usr/bin rm x",
    "nice -n -5 rm x",
    "nice -5 rm x",
    "timeout -v 5 rm x",
    "timeout --preserve-status 5 rm x",
    "xargs -0 rm < /dev/null",
    "xargs -r rm < /dev/null",
    "echo x | xargs -n1 rm",
    "echo x | xargs -L 1 rm",
    "echo x | xargs -I{} rm {}",
    "echo x | xargs -i rm {}",
    "echo x | xargs -t rm",
    "echo x | xargs sh -c 'rm \"$@\"' _",
    "find . -name x -exec sh -c 'rm x' \\;",
    "find . -maxdepth 1 -name x -exec /usr/bin/rm -f {} +",
    "find . -name x -ok rm {} \\; < /dev/null",
    "bash -c 'bash -c \"rm x\"'",
    "bash -c \"eval 'rm x'\"",
    "sh -c 'rm x'",
    "dash -c 'rm x'",
    "bash -x -c 'rm x'",
    "bash -e -o pipefail -c 'rm x'",
    "bash +e -c 'rm x'",
    "bash --noprofile --norc -c 'rm x'",
    "bash -s <<< 'rm x'",
    "bash <<'EOF'\nrm x\nEOF",
    "bash -s -- a <<< 'rm x'",
    "sh <<< 'rm x'",
    "echo 'rm x' | sh",
    "printf 'rm x\\n' | bash",
    "printf '%s\\n' 'rm x' | bash",
    "eval \"rm x\"",
    "eval rm x",
    "eval -- 'rm x'",
    "trap 'rm x' EXIT; true",
    "trap -- 'rm x' EXIT",
    "setsid -f rm x; sleep 0.2",
    "stdbuf -oL rm x",
    "stdbuf -i0 -o0 -e0 rm x",
    "ionice -c3 rm x",
    "ionice -n 7 rm x",
    "time -p rm x",
    "/usr/bin/time rm x",
    "/usr/bin/time --format=%e rm x",
    "exec -a foo rm x",
    "exec -c rm x",
    "flock -n f rm x",
    "flock -x f -c 'rm x'",
    "flock --command 'rm x' f",
    "prlimit --nproc=100 -- rm x",
    "setpriv --no-new-privs rm x",
    "unshare --fork rm x",
    "unshare -U -r rm x",
    "script -q -c 'rm x' /dev/null",
    "script -qec 'rm x' /dev/null",
    "su root -s /bin/sh -c 'rm x'",
    "runuser -u root -- sh -c 'rm x'",
    "chroot / /usr/bin/rm x",
    "taskset -c 0 rm x",
    "chrt -f 1 rm x",
    "chrt --other 0 rm x",
    "strace -f -o /dev/null rm x",
    "strace -qq -e trace=none rm x",
    "nsenter --target $$ --mount rm x",
    "$'rm' x",
    "$\"rm\" x",
    "$'\\x72\\x6d' x",
    "$'\\u72m' x",
    "$'\\U00000072m' x",
    "$'\\162\\155' x",
    "r$'m' x",
    "\\r\\m x",
    "/usr/bin/r\\m x",
    "/usr/bin/[r]m x",
    "/usr/bin/r[l-n] x",
    "/usr/b?n/rm x",
    "/usr/bin/rm* x",
    "/u*/bin/rm x",
    "{/usr/bin/rm,x} y",
    "/usr/bin/{rm,true} x",
    "rm\"\" x",
    "rm'' x",
    "\"rm\"'' x",
    "v=; rm$v x",
    "v=; $v/usr/bin/rm x",
    "set --; \"$@\"rm x",
    "set --; \"${@}\" rm x",
    "rm${v:-} x",
    "${v:-/usr/bin/rm} x",
    "${v:=rm} x",
    "${v-rm} x",
    "${v=rm} x",
    "r${v:-m} x",
    "r${v-}m x",
    "r$(true)m x",
    "r`true`m x",
    "$(echo) rm x",
    "$(true)rm x",
    "`true`rm x",
    "$SHELL -c 'rm x'",
    "\"$BASH\" -c 'rm x'",
    "${SHELL} -ec 'rm x'",
    "function f { rm x; }\nf",
    "function f() { rm x; }; f",
    "f() ( rm x ); f",
    "f() { rm \"$@\"; }; f x",
    "coproc rm x",
    "coproc { rm x; }; wait",
    "coproc C ( rm x ); wait",
    "alias r='rm'; r x",
    "shopt -s expand_aliases\nalias r='rm'\nr x",
    "echo $( (rm x) )",
    "echo $( ( (rm x) ) )",
    "echo \"$( (rm x) )\"",
    "echo \"`echo \\`rm x\\``\"",
    "echo `echo \\`echo \\\\\\`rm x\\\\\\`\\``",
    "x=`rm x`",
    "echo <(rm x)",
    "cat < <(rm x)",
    "tee >(rm x) < /dev/null",
    "echo $[ $(rm x) ]",
    "echo $(( `rm x` ))",
    "a[$(rm x)]=1",
    "a[`rm x`]=1",
    "declare -a a=($(rm x))",
    "[[ $(rm x) ]]",
    "[[ -n `rm x` ]]",
    "case $(rm x) in *) ;; esac",
    "case x in $(rm x)) ;; esac",
    "for i in $(rm x); do :; done",
    "for ((i=$(rm x); i<1; i++)); do :; done",
    "select i in $(rm x); do break; done < /dev/null",
    "while read -r l; do :; done < <(rm x)",
    "echo a > $(rm x)",
    "echo a 2> >(rm x)",
    "cat <<< $(rm x)",
    "cat <<EOF\n$(rm x)\nEOF",
    "cat <<EOF\n`rm x`\nEOF",
    "cat <<EOF\n${x:-$(rm x)}\nEOF",
    "echo \"$(echo \"$(rm x)\")\"",
    "timeout 5s bash <<< 'rm x'",
    "time { rm x; }",
    "for ((;;)); do rm x; break; done",
    "x=$(cat <<EOF\nhello\nEOF\n); rm y",
    "[[ $(case x in x) echo;; esac) ]] && rm x",
    "script -q /dev/null -c 'rm x'",
    "${PATH:0:0}rm x",
    "${x:-r}${y:-m} x",
    "\\exec rm x",
    "env -iS 'rm x'",
    "find . -name x -exec sh -c 'rm \"$@\"' sh {} +",
    "! { rm x; }",
    "( cd . && rm x )",
    "{ rm x; } > log",
    "((x++)) || rm x",
    "sudo -u#0 rm x",
    "nice -n 10 -- rm x",
    "exec -l rm x",
    "strace -o/dev/null rm x",
    "flock -s lockfile -c 'rm x'",
    "stdbuf -oL -eL rm x",
    "taskset --cpu-list 0 rm x",
    "setpriv --reuid 0 rm x",
];

/// Commands that run no rm: the guard must allow every one.
const MUST_ALLOW: &[&str] = &[
    "case $v in start|rm) echo a;; esac",
    "case rm in (rm) echo a;; esac",
    "[[ $f =~ ^(rm|mv)$ ]]",
    "[[ $x == rm ]] && echo yes",
    "xargs --process-slot-var rm echo ok",
    "env -u rm pwd",
    "env --chdir rm pwd || true",
    "(( rm = 1 ))",
    "(( rm << 2 ))",
    "echo $(( rm + 1 ))",
    "git rm f",
    "npm rm pkg",
    "docker rm c",
    "which rm",
    "type rm",
    "command -v rm",
    "cat <<'EOF'\nrm x\nEOF",
    "cat <<EOF\nrm x\nEOF",
    "echo rm # rm x",
    "# rm x",
    "echo rm",
    "echo \"a;rm b\"",
    "rmdir d",
    "for rm in a b; do echo $rm; done",
    "bash <<< 'echo rm'",
    "trap 'echo rm' EXIT",
    "find . -name rm",
    "find . -exec echo rm {} \\;",
    "su -c 'echo rm'",
    "echo '$(rm x)'",
    "cat <<< 'rm x'",
    "arr=(rm x); echo ${arr[0]}",
    "timeout 5 echo rm",
    "flock f echo rm",
    "echo \"rm x\"",
    "echo 'rm' x",
    "printf 'rm x\\n'",
    "echo rm x | cat",
    "echo 'rm x' > cmd.txt",
    "cat <<'EOF' | cat\nrm x\nEOF",
    "cat <<EOF | wc -l\nrm a\nrm b\nEOF",
    "grep -r rm . || true",
    "ls -l | grep rm",
    "echo a#rm",
    "x=rm; echo $x",
    "rm=1; echo $rm",
    "arr=(rm x); echo ${#arr[@]}",
    "declare rm=1",
    "echo ${rm:-x}",
    "echo $'rm x'",
    "echo $((rm))",
    "let rm=1",
    "[[ rm == rm ]]",
    "test rm = rm",
    "[ rm = rm ]",
    "case x in rm|rmdir) echo a;; *) echo b;; esac",
    "case x in\n  rm) echo a ;;\n  *) echo b ;;\nesac",
    "for f in rm x; do echo $f; done",
    "echo $(echo rm)",
    "echo `echo rm`",
    "bash -c 'echo rm x'",
    "sh -c 'rmdir d'",
    "eval 'echo rm'",
    "env rmdir d",
    "sudo -l rm",
    "xargs -a /dev/null echo rm",
    "find . -name '*.rm' -print",
    "find . -exec echo {} rm \\;",
    "man -w rm || true",
    "whereis rm",
    "type -a rm",
    "hash rm",
    "help type",
    "command -V rm",
    "declare -f rm || true",
    "alias ll='ls -l'",
    "trap 'echo rm' INT",
    "watch -h || true",
    "echo rm > rm.txt",
    "cat rm.txt 2>/dev/null || true",
    "rmx() { echo; }; rmx",
    "firmware=1",
    "/usr/bin/rmdir d",
    "./rm.sh 2>/dev/null || true",
];

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
    for command in CORPUS {
        add(command.to_string(), false);
    }
    for command in MUST_ALLOW {
        add(command.to_string(), true);
    }
    for command in &readme.caught {
        add(command.clone(), false);
    }
    for command in readme.allowed.iter().chain(&readme.out_of_reach) {
        add(command.clone(), readme.allowed.contains(command));
    }
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
        if !blocked && rm_ran {
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

/// Runs each command with bash under the recorder; returns the indices for which rm ran.
fn run_in_bash(corpus: &[(String, bool)]) -> BTreeSet<usize> {
    let base = tempfile::tempdir().unwrap();
    let base_path = base.path();
    std::fs::set_permissions(base_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = base_path.join("log");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let recorder = base_path.join("recorder");
    std::fs::write(
        &recorder,
        format!(
            "#!/bin/sh\necho \"${{ORACLE_ID:--}} $(pwd)\" >> {}\n",
            log.display()
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
for target in /usr/bin/rm /bin/rm "$(command -v rm)"; do
    [ -e "$target" ] || continue
    mount --bind "$base/recorder" "$target" || exit 3
done
mkdir "$base/probe" && cd "$base/probe" && : > x
ORACLE_ID=probe rm x
[ -e x ] || { echo "the recorder is not in place: rm really ran" >&2; exit 4; }
mkdir "$base/w"
for file in "$base"/corpus/*; do
    id=${file##*/}
    mkdir "$base/w/$id" && cd "$base/w/$id" && : > x && : > y && : > f && mkdir d
    ORACLE_ID=$id timeout -k 1 5 bash -c "$(cat "$file")" </dev/null >/dev/null 2>&1
done
sleep 0.5
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
