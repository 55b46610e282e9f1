use std::path::Path;
use std::time::Duration;

use crate::support::{Options, eventually, is_error, mask_ms, pipe_through, text};

#[test]
fn help_and_version() {
    let out = crate::support::binary().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("forge-bash {}", env!("CARGO_PKG_VERSION"))
    );
    let out = crate::support::binary().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--workdir",
        "FORGE_BASH_WORKDIR",
        "--timeout-secs",
        "FORGE_BASH_TIMEOUT_SECS",
        "--max-output-bytes",
        "FORGE_BASH_MAX_OUTPUT_BYTES",
        "--state-dir",
        "FORGE_BASH_STATE_DIR",
        "/workspace",
        "/tmp/forge-bash",
        "--env-exclude",
        "FORGE_BASH_ENV_EXCLUDE",
        "--env-include",
        "FORGE_BASH_ENV_INCLUDE",
        "check",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
    let out = crate::support::binary()
        .arg("--timeout-secs")
        .arg("soon")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--timeout-secs"));
    assert!(out.stdout.is_empty());
}

#[test]
fn environment_variables_configure_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let env_work = dir.path().join("env-work");
    std::fs::create_dir(&env_work).unwrap();
    // Workdir and state dir from the environment only (no flags for them).
    let state = dir.path().join("env-state");
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"command":"pwd; sleep 5"}}}"#;
    let env = [
        ("FORGE_BASH_WORKDIR", env_work.as_path()),
        ("FORGE_BASH_STATE_DIR", state.as_path()),
        ("FORGE_BASH_TIMEOUT_SECS", Path::new("1")),
    ];
    let (stdout, _, _) = pipe_through(&[], &env, format!("{call}\n").as_bytes());
    let response: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let answer = crate::support::text(&response);
    assert_eq!(
        mask_ms(&answer),
        format!(
            "ERROR: Command timed out after 1 s.\n{}\n\n[exit:124 | Xms]",
            env_work.display()
        )
    );
    assert!(forge_bash::audit::path(&state, chrono::Utc::now()).exists());

    // The flag wins over the environment variable.
    let mut server = Options::default()
        .env("FORGE_BASH_TIMEOUT_SECS", "1")
        .arg("--timeout-secs")
        .arg("30")
        .start();
    assert!(server.run("sleep 2; echo slept").starts_with("slept\n"));

    let mut capped = Options::default()
        .env("FORGE_BASH_MAX_OUTPUT_BYTES", "1024")
        .start();
    assert!(capped.run("yes").contains("Output limit of 1 KB reached"));
}

#[test]
fn missing_workdir_warns_and_fails_each_call() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-there");
    let mut server = Options::default().workdir(&missing).start();
    let warned = eventually(Duration::from_secs(10), || {
        server.stderr().contains("working directory does not exist")
    });
    assert!(warned, "stderr: {}", server.stderr());
    let response = server.call("echo hi");
    assert!(is_error(&response));
    assert_eq!(
        mask_ms(&text(&response)),
        format!(
            "ERROR: Execution failed: working directory {} does not exist\n[exit:1 | Xms]",
            missing.display()
        )
    );
    // Once it exists, calls work.
    std::fs::create_dir(&missing).unwrap();
    assert!(server.run("echo hi").starts_with("hi\n"));
}

/// The binary, run as `uid` through `setpriv` when given.
#[cfg(feature = "http")]
fn as_user(uid: Option<u32>) -> std::process::Command {
    let Some(uid) = uid else {
        return crate::support::binary();
    };
    let id = uid.to_string();
    let mut setpriv = std::process::Command::new("setpriv");
    setpriv.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"]);
    setpriv
        .arg(crate::support::BIN)
        .stdin(std::process::Stdio::null());
    setpriv
}

#[cfg(feature = "http")]
/// Starts the binary with `args` (and `FORGE_BASH_HTTP_TOKEN` set, so that only what
/// is tested is wrong), as `uid` through `setpriv` when given; asserts that it refused
/// to start with nothing on stdout, and returns its stderr.
fn refused_start(args: &[&str], uid: Option<u32>) -> String {
    let mut command = as_user(uid);
    command
        .args(args)
        .env("FORGE_BASH_HTTP_TOKEN", "a-token-of-thirty-two-bytes-long")
        .stdin(std::process::Stdio::null());
    let out = command.output().unwrap();
    assert!(!out.status.success(), "{args:?} started");
    assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[cfg(feature = "http")]
#[test]
fn unsafe_configurations_refuse_start_up_naming_the_flags_and_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let (ws, st) = (format!("{root}/ws/{{user}}"), format!("{root}/st/{{user}}"));
    let (shared_ws, shared_st) = (format!("{root}/ws/all"), format!("{root}/st/all"));
    let http = ["--http", "127.0.0.1:0"];
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        // {user} in one path only: users would share the other.
        (
            [&http[..], &["--workdir", &ws, "--state-dir", &shared_st]].concat(),
            &[
                "--workdir",
                "--state-dir",
                "only one of them",
                "put {user} in both",
            ],
        ),
        (
            [&http[..], &["--workdir", &shared_ws, "--state-dir", &st]].concat(),
            &["only one of them", "put {user} in both"],
        ),
        (
            vec![
                "--user",
                "alice",
                "--workdir",
                &ws,
                "--state-dir",
                &shared_st,
            ],
            &["only one of them"],
        ),
        // No token with users: any command could connect as any user.
        (
            [
                &http[..],
                &[
                    "--http-insecure-no-token",
                    "--workdir",
                    &ws,
                    "--state-dir",
                    &st,
                ],
            ]
            .concat(),
            &["--http-insecure-no-token with {user} paths", "give a token"],
        ),
        // No token with the sandbox.
        (
            [
                &http[..],
                &[
                    "--http-insecure-no-token",
                    "--sandbox",
                    "--workdir",
                    &shared_ws,
                    "--state-dir",
                    &shared_st,
                ],
            ]
            .concat(),
            &["--http-insecure-no-token with --sandbox", "give a token"],
        ),
        // --user: a valid name, over stdio only.
        (
            vec![
                "--user",
                "{{LIBRECHAT_USER_ID}}",
                "--workdir",
                &ws,
                "--state-dir",
                &st,
            ],
            &["--user {{LIBRECHAT_USER_ID}}", "placeholder"],
        ),
        (
            vec![
                "--user",
                "../bob",
                "--workdir",
                &shared_ws,
                "--state-dir",
                &shared_st,
            ],
            &["--user \"../bob\"", "A-Z a-z 0-9"],
        ),
        (
            [
                &http[..],
                &["--user", "alice", "--workdir", &ws, "--state-dir", &st],
            ]
            .concat(),
            &["--user is for stdio", "X-User-ID"],
        ),
        // --run-as is for a server without users.
        (
            [
                &http[..],
                &["--run-as", "70000", "--workdir", &ws, "--state-dir", &st],
            ]
            .concat(),
            &["--run-as is for a server without users"],
        ),
        (vec!["--run-as", "0"], &["--run-as", "0 is root"]),
    ];
    // Templates under which one user's workdir is another's state dir, holds it or
    // lies in it: `bob.st`'s workdir would be bob's state dir.
    let overlapping = [
        (
            format!("{root}/d/{{user}}"),
            format!("{root}/d/{{user}}.st"),
        ),
        (
            format!("{root}/d/{{user}}"),
            format!("{root}/d/st-{{user}}"),
        ),
        (
            format!("{root}/d/{{user}}"),
            format!("{root}/d/{{user}}/state"),
        ),
        (format!("{root}/d/{{user}}"), format!("{root}/d/{{user}}")),
    ];
    let mut cases = cases;
    for (workdir, state) in &overlapping {
        cases.push((
            [&http[..], &["--workdir", workdir, "--state-dir", state]].concat(),
            &[
                "one user's workdir could be another's (or their own) state dir",
                "give each its own fixed parent",
            ],
        ));
        cases.push((
            vec!["--user", "bob", "--workdir", workdir, "--state-dir", state],
            &["one user's workdir could be another's"],
        ));
    }
    for (args, needles) in cases {
        // The token is not what these are about: none of them is refused for it.
        let stderr = refused_start(&args, None);
        for needle in needles {
            assert!(
                stderr.contains(needle),
                "{args:?}: {needle:?} not in {stderr}"
            );
        }
    }
    // Nothing was made for any of them.
    assert!(!dir.path().join("ws").exists() && !dir.path().join("st").exists());
    assert!(!dir.path().join("d").exists());
}

/// A fixed parent of a `{user}` path that the users' commands could write refuses
/// start-up, naming it: alice would make `ws-bob` (with a planted Makefile) or
/// `st-bob` before bob. As root, a parent the users' uids could write (mode 1777 or
/// 0777); as an unprivileged user with the sandbox, a parent under `--writable`.
#[cfg(feature = "http")]
#[test]
fn a_parent_of_user_paths_that_users_could_write_refuses_start_up() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (ws, st) = (
        format!("{}/ws-{{user}}", open.display()),
        format!("{}/st-{{user}}", open.display()),
    );
    let uids = std::env::temp_dir().join(format!("forge-bash-uids-{}", std::process::id()));
    let range = crate::support::uid_range();
    let mut args = vec![
        "--http",
        "127.0.0.1:0",
        "--workdir",
        &ws,
        "--state-dir",
        &st,
    ];
    let uids_shown = uids.display().to_string();
    args.extend(["--user-uids-file", &uids_shown, "--user-uids", &range]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        for mode in [0o1777, 0o777] {
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode)).unwrap();
            let stderr = refused_start(&args, None);
            let named = format!(
                "--workdir {ws}: the users' uids (--user-uids {range}) could write {}",
                open.display()
            );
            assert!(
                stderr.contains(&named) && stderr.contains("chmod go-w"),
                "{stderr}"
            );
        }
        let _ = std::fs::remove_dir_all(&uids);
    }
    let Some(nobody) = crate::support::unprivileged() else {
        return;
    };
    if !crate::support::landlock_here(3) {
        return;
    }
    std::os::unix::fs::chown(&open, Some(nobody), Some(nobody)).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let writable = open.display().to_string();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--sandbox",
        "--workdir",
        &ws,
        "--state-dir",
        &st,
        "--writable",
        &writable,
    ];
    let stderr = refused_start(&args, Some(nobody));
    assert!(
        stderr.contains(&format!(
            "is under --writable {writable}, where sandboxed commands may write"
        )),
        "{stderr}"
    );
}

/// `{user}` paths on a server that is not root, without the sandbox: users would share
/// a uid, so start-up refuses, unless `--allow-shared-uid` accepts it with a warning.
/// Run as root, CI's user, through `setpriv` to an unprivileged user.
#[cfg(feature = "http")]
#[test]
fn a_non_root_server_with_user_paths_needs_the_sandbox_or_says_it_knows() {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let uid = match me {
        0 => match crate::support::unprivileged() {
            Some(uid) => Some(uid),
            None => return,
        },
        _ => None,
    };
    let dir = tempfile::tempdir().unwrap();
    if let Some(uid) = uid {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(uid)).unwrap();
    }
    let root = dir.path().display().to_string();
    let (ws, st) = (format!("{root}/ws/{{user}}"), format!("{root}/st/{{user}}"));
    let args = [
        "--http",
        "127.0.0.1:0",
        "--workdir",
        &ws,
        "--state-dir",
        &st,
    ];
    let stderr = refused_start(&args, uid);
    for needle in [
        "{user} paths on a server that is not root",
        "without --sandbox",
        "add --sandbox",
        "run the server as root",
        "--allow-shared-uid",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    // --run-as needs root.
    let stderr = refused_start(&["--run-as", "70000", "--workdir", &root], uid);
    assert!(
        stderr.contains("--run-as needs a server running as root"),
        "{stderr}"
    );
    // Accepted knowingly: it serves, and says what it gives up.
    let mut command = as_user(uid);
    command
        .args(args)
        .arg("--allow-shared-uid")
        .env("FORGE_BASH_HTTP_TOKEN", crate::support::http::TOKEN)
        .env("RUST_LOG", "forge_bash=info,warn");
    let server = crate::support::http::HttpServer::spawn(command, tempfile::tempdir().unwrap());
    assert!(
        server
            .stderr()
            .contains("--allow-shared-uid: every user's commands run as this server's uid"),
        "{}",
        server.stderr()
    );
}
