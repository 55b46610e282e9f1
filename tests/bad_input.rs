//! Bad input through the real binary: the process answers and survives, its stdout
//! stays pure protocol, and a huge line is read whole. What each bad input is answered
//! is checked in process (tests/in_process.rs).

use crate::support::{Options, Server, is_error, text};

/// After each bad input, the next request is served.
fn still_serves(server: &mut Server) {
    let answer = server.run("echo still here");
    assert!(answer.starts_with("still here\n"), "{answer}");
}

#[test]
fn each_bad_input_is_answered_and_the_process_goes_on() {
    let mut server = Server::start(Options::default());
    server.initialize();

    let lines: &[&[u8]] = &[
        b"{not json\n",
        b"[1, 2]\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":\"no/such/method\"}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"run\",\"arguments\":{\"command\":42}}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"n\",\"method\":\"tools/call\",\"params\":{\"name\":\"run\",\"arguments\":{\"command\":\"echo a\\u0000b\"}}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"tools/call\",\"params\":{\"name\":\"run\",\"arguments\":{\"command\":\"echo \\ud800 \\ud83d\\ude00 \\udc00\"}}}\n",
    ];
    for line in lines {
        server.send_raw(line);
        let what = String::from_utf8_lossy(line);
        server.wait_for(&format!("an answer to {what}"), |m| {
            m.get("result").is_some() || m.get("error").is_some()
        });
        still_serves(&mut server);
    }

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

    server.assert_stdout_is_protocol();
}

#[test]
fn blank_lines_are_ignored() {
    let mut server = Server::start(Options::default());
    server.send_raw(b"\n   \n\r\n");
    still_serves(&mut server);
    assert_eq!(server.raw_lines.lock().unwrap().len(), 1);
}
