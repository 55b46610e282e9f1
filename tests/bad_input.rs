use serde_json::json;

use crate::support::{Options, Server, is_error, text};

/// After each bad input, the next request is served.
fn still_serves(server: &mut Server) {
    let answer = server.run("echo still here");
    assert!(answer.starts_with("still here\n"), "{answer}");
}

#[test]
fn each_bad_input_gets_a_clear_error_and_the_server_goes_on() {
    let mut server = Server::start(Options::default());
    server.initialize();

    server.send_raw(b"{not json\n");
    let error = server.wait_for("parse error", |m| m["error"]["code"] == -32700);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("parse error")
    );
    assert_eq!(error["id"], json!(null));
    still_serves(&mut server);

    server.send_raw(b"[1, 2]\n");
    let error = server.wait_for("batch error", |m| m["error"]["code"] == -32600);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch")
    );
    still_serves(&mut server);

    let id = server.request("no/such/method", json!({}));
    let response = server.response(id);
    assert!(response["error"]["code"].is_i64(), "{response}");
    still_serves(&mut server);

    let id = server.request(
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "ls"}}),
    );
    let response = server.response(id);
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool not found: bash")
    );
    still_serves(&mut server);

    let id = server.request("tools/call", json!({"name": "run", "arguments": {}}));
    let response = server.response(id);
    assert!(is_error(&response));
    assert_eq!(
        text(&response),
        "ERROR: Invalid arguments: missing required string `command`"
    );
    still_serves(&mut server);

    let id = server.request("tools/call", json!({"name": "run"}));
    assert!(is_error(&server.response(id)));
    still_serves(&mut server);

    let id = server.request(
        "tools/call",
        json!({"name": "run", "arguments": {"command": 42}}),
    );
    let response = server.response(id);
    assert!(is_error(&response));
    assert_eq!(
        text(&response),
        "ERROR: Invalid arguments: `command` must be a string, got a number"
    );
    still_serves(&mut server);

    let response = server.call("echo a\u{0}b");
    assert!(is_error(&response));
    assert!(
        text(&response).starts_with("ERROR: Execution failed: command contains a NUL byte"),
        "{response}"
    );
    still_serves(&mut server);

    let huge = format!("echo {}", "x".repeat(1024 * 1024));
    let response = server.call(&huge);
    assert!(is_error(&response));
    let answer = text(&response);
    assert!(
        answer.starts_with("ERROR: Execution failed: command is 1048581 bytes;"),
        "{answer}"
    );
    assert!(answer.ends_with("ms]"));
    still_serves(&mut server);

    // A lone surrogate escape, as JavaScript's JSON.stringify writes one, is read as
    // U+FFFD; a surrogate pair stays the character it encodes.
    server.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\",\"params\":{\"name\":\"run\",\"arguments\":{\"command\":\"echo \\ud800 \\ud83d\\ude00 \\udc00\"}}}\n");
    let response = server.response(77);
    assert!(!is_error(&response), "{response}");
    assert!(
        text(&response).starts_with("\u{FFFD} \u{1F600} \u{FFFD}\n\n[exit:0 | "),
        "{response}"
    );
    still_serves(&mut server);

    server.assert_stdout_is_protocol();
}

#[test]
fn blank_lines_are_ignored() {
    let mut server = Server::start(Options::default());
    server.send_raw(b"\n   \n\r\n");
    still_serves(&mut server);
    assert_eq!(server.raw_lines.lock().unwrap().len(), 1);
}
