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
