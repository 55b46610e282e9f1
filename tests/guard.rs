use crate::support::{Options, Server, is_error, text};

const BLOCKED: &str = "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]";

#[test]
fn a_blocked_chain_runs_nothing() {
    let mut server = Server::start(Options::default());
    std::fs::write(server.workdir.join("x"), "precious").unwrap();
    for command in [
        "touch marker; rm x",
        "touch marker && rm x",
        "touch marker\nrm x",
        "touch marker; echo \"$(rm x)\"",
        "touch marker; sudo -u nobody rm x",
        "touch marker; find . -name x | xargs rm",
        "touch marker; (rm x)",
        "touch marker; \\rm x",
    ] {
        let response = server.call(command);
        assert_eq!(text(&response), BLOCKED, "{command}");
        assert!(is_error(&response));
        assert!(
            !server.workdir.join("marker").exists(),
            "{command} ran part of its chain"
        );
        assert!(server.workdir.join("x").exists());
    }
    let rows = server.audit_rows();
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|row| row[2] == "-1" && row[3] == "0"));
}

#[test]
fn lookalikes_run() {
    let mut server = Server::start(Options::default());
    assert!(server.run("echo rm").starts_with("rm\n"));
    assert!(server.run("echo \"a;rm b\"").starts_with("a;rm b\n"));
    assert!(
        server
            .run("mkdir d && rmdir d && echo ok")
            .starts_with("ok\n")
    );
    let heredoc = server.run("cat > s.sh <<'EOF'\nrm -rf build\nEOF\ncat s.sh");
    assert!(heredoc.starts_with("rm -rf build\n"), "{heredoc}");
    assert!(server.run("which rm").contains("/rm\n"));
}

#[test]
fn a_function_named_rm_runs_its_body() {
    let mut server = Server::start(Options::default());
    std::fs::write(server.workdir.join("x"), "precious").unwrap();
    let answer = server.run("rm() { mkdir -p .trash && mv -- \"$@\" .trash/; }; rm x && ls .trash");
    assert!(answer.starts_with("x\n"), "{answer}");
    assert!(!server.workdir.join("x").exists());
    assert!(server.workdir.join(".trash/x").exists());
    // Where the definition does not take effect, rm is rm, and is refused.
    std::fs::write(server.workdir.join("y"), "precious").unwrap();
    let response = server.call("false && rm() { :; }; rm y");
    assert_eq!(text(&response), BLOCKED);
    assert!(server.workdir.join("y").exists());
}

#[test]
fn check_subcommand_prints_the_verdict() {
    let check = |args: &[&str]| {
        let out = crate::support::binary()
            .arg("check")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(check(&["echo hi"]), (Some(0), "allowed\n".to_owned()));
    assert_eq!(
        check(&["cd build && sudo rm -rf out; ls"]),
        (Some(1), "blocked: sudo rm -rf out\n".to_owned())
    );
    assert_eq!(
        check(&["(( n = 1 << 4 ))\nrm x"]),
        (Some(1), "blocked: rm x\n".to_owned())
    );
    // Several words are one command; `--` lets it start with a dash.
    assert_eq!(check(&["rm", "-rf", "x"]).0, Some(1));
    assert_eq!(check(&["--", "-rf"]), (Some(0), "allowed\n".to_owned()));
    let (code, stdout) = check(&[]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    // Without a subcommand the binary is still the server.
    let mut server = Server::start(crate::support::Options::default());
    assert!(server.run("echo served").starts_with("served\n"));
}
