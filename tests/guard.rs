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
