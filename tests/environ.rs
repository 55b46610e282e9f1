//! The /proc/1/environ injection and its filters, with a fake PID 1.
//!
//! `unshare -fp --mount-proc` starts a shell as PID 1 of a new PID namespace, with an
//! environment like LibreChat's container; that shell starts forge-bash with a small
//! environment of its own, as LibreChat does, and the test asks it for `env`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::BIN;

/// The container's environment, as PID 1 holds it.
const PID1: &[&str] = &[
    "JWT_SECRET=jwt",
    "JWT_REFRESH_SECRET=refresh",
    "OPENAI_API_KEY=sk-test",
    "MONGO_URI=mongodb://db",
    "KEEP=kept",
    "PATH=/usr/local/bin:/usr/bin:/bin",
];

/// The variables `env` shows inside a command, and the server's stderr; `None` when
/// PID namespaces are refused here.
fn env_seen(args: &[&str], own: &[&str]) -> Option<(Vec<String>, String)> {
    let (text, stderr) = under_fake_pid1(None, args, own, "env")?;
    let names = text
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_owned()))
        .collect();
    Some((names, stderr))
}

/// Runs `command` in a server whose PID 1 has LibreChat's environment; PID 1 and the
/// server run as `user` (uid = gid) when given. The answer's text and the server's
/// stderr; `None` when PID namespaces are refused here.
fn under_fake_pid1(
    user: Option<u32>,
    args: &[&str],
    own: &[&str],
    command_text: &str,
) -> Option<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let (work, state) = (dir.path().join("work"), dir.path().join("state"));
    std::fs::create_dir(&work).unwrap();
    let mut command = Command::new("unshare");
    command.args(["-fp", "--mount-proc"]);
    if let Some(uid) = user {
        for path in [dir.path(), &work] {
            std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
        }
        let id = uid.to_string();
        command.args(["setpriv", "--reuid", &id, "--regid", &id, "--clear-groups"]);
    }
    // `; :` keeps the shell as PID 1 instead of letting it exec the server.
    command
        .args(["env", "-i"])
        .args(PID1)
        .args(["/bin/sh", "-c", "env -i \"$@\"; :", "pid1"])
        .args(["PATH=/usr/bin:/bin", "RUST_LOG=forge_bash=info"])
        .args(own)
        .arg(BIN)
        .arg("--workdir")
        .arg(&work)
        .arg("--state-dir")
        .arg(&state)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("unshare");
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": command_text}}});
    let mut stdin = child.stdin.take().unwrap();
    // Where unshare is refused it has exited already: its stderr says so below.
    let _ = writeln!(stdin, "{request}");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if stderr.contains("unshare:") {
        eprintln!(
            "skipped: PID namespaces are refused here: {}",
            stderr.trim()
        );
        return None;
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    let response: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {stdout:?} {stderr}"));
    let text = response["result"]["content"][0]["text"].as_str().unwrap();
    Some((text.to_owned(), stderr))
}

fn has(names: &[String], name: &str) -> bool {
    names.iter().any(|n| n == name)
}

#[test]
fn by_default_every_missing_variable_is_injected() {
    let Some((names, stderr)) = env_seen(&[], &[]) else {
        return;
    };
    for name in [
        "JWT_SECRET",
        "JWT_REFRESH_SECRET",
        "OPENAI_API_KEY",
        "MONGO_URI",
        "KEEP",
    ] {
        assert!(has(&names, name), "{name} missing: {names:?}");
    }
    // PATH was the server's own: not counted, not replaced.
    assert!(stderr.contains("injected=5 excluded=0"), "{stderr}");
    assert!(
        !stderr.contains("sk-test"),
        "a value reached the log: {stderr}"
    );
}

#[test]
fn exclude_keeps_matching_names_out() {
    let Some((names, stderr)) = env_seen(
        &[
            "--env-exclude",
            "JWT_*,*_API_KEY",
            "--env-exclude",
            "MONGO_URI",
        ],
        &[],
    ) else {
        return;
    };
    for name in [
        "JWT_SECRET",
        "JWT_REFRESH_SECRET",
        "OPENAI_API_KEY",
        "MONGO_URI",
    ] {
        assert!(!has(&names, name), "{name} leaked: {names:?}");
    }
    assert!(has(&names, "KEEP"));
    assert!(stderr.contains("injected=1 excluded=4"), "{stderr}");
}

#[test]
fn include_lets_only_matching_names_in() {
    let Some((names, _)) = env_seen(&[], &["FORGE_BASH_ENV_INCLUDE=KEEP,MONGO_?RI"]) else {
        return;
    };
    assert!(has(&names, "KEEP") && has(&names, "MONGO_URI"), "{names:?}");
    for name in ["JWT_SECRET", "JWT_REFRESH_SECRET", "OPENAI_API_KEY"] {
        assert!(!has(&names, name), "{name} leaked: {names:?}");
    }
}

#[test]
fn exclude_wins_over_include_and_the_servers_own_environment_stays() {
    let Some((names, stderr)) = env_seen(
        &["--env-include", "JWT_*,KEEP"],
        &[
            "FORGE_BASH_ENV_EXCLUDE=JWT_REFRESH_*,*_API_KEY",
            "MY_API_KEY=given-by-the-client",
        ],
    ) else {
        return;
    };
    assert!(
        has(&names, "JWT_SECRET") && has(&names, "KEEP"),
        "{names:?}"
    );
    for name in ["JWT_REFRESH_SECRET", "OPENAI_API_KEY", "MONGO_URI"] {
        assert!(!has(&names, name), "{name} leaked: {names:?}");
    }
    // What the client passed is never filtered.
    assert!(has(&names, "MY_API_KEY"), "{names:?}");
    assert!(stderr.contains("injected=2 excluded=3"), "{stderr}");
}

/// What a command learns of PID 1's secret by reading `/proc/1/environ` itself.
const READ_PID1: &str = "tr '\\0' '\\n' < /proc/1/environ | grep -c '^JWT_SECRET='; \
                         env | grep -c '^JWT_SECRET='";

#[test]
fn the_exclude_list_stops_the_injection_not_a_read_of_pid_1() {
    let Some(uid) = crate::support::unprivileged() else {
        return;
    };
    let exclude = ["--env-exclude", "JWT_*"];
    let Some((text, _)) = under_fake_pid1(Some(uid), &exclude, &[], READ_PID1) else {
        return;
    };
    // Not injected, but readable: PID 1 runs as the server's own user.
    assert!(text.starts_with("1\n0\n"), "{text}");
}

#[test]
fn the_sandbox_stops_a_read_of_pid_1_by_a_non_root_server() {
    let Some(uid) = crate::support::unprivileged() else {
        return;
    };
    if forge_bash::sandbox::kernel_abi().is_err() {
        eprintln!("skipped: no Landlock here");
        return;
    }
    let args = ["--env-exclude", "JWT_*", "--sandbox"];
    let Some((text, stderr)) = under_fake_pid1(Some(uid), &args, &[], READ_PID1) else {
        return;
    };
    assert!(text.starts_with("0\n0\n"), "{text}\n{stderr}");
    assert!(
        text.contains("/proc/1/environ: Permission denied"),
        "{text}"
    );
}
