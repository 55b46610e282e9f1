//! The protocol in process: the library's server on an in-memory duplex, with paused
//! time where a test would otherwise wait on the clock.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use forge_bash::stdio::Exit;

use crate::support::in_process::{Harness, call};
use crate::support::text;

#[tokio::test]
async fn piped_requests_are_all_answered_long_after_end_of_input() {
    let mut harness = Harness::start(&[]);
    let fifo = harness.fifo("release");
    let started = harness.workdir().join("started");
    harness
        .send(&call(1, "touch started; cat release; echo done"))
        .await;
    harness.send(&call(2, "echo quick")).await;
    // The last line has no newline, and is still a request.
    harness
        .to_server
        .write_all(call(3, "echo last").as_bytes())
        .await
        .unwrap();
    harness.to_server.shutdown().await.unwrap();
    let mut answers = vec![harness.next().await, harness.next().await];
    for _ in 0..600 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(started.exists(), "call 1 never started: {answers:?}");
    // Long past rmcp's own 5 s at end of input, with no real wait. The clock is
    // paused only while no command is starting or ending: paused, it jumps whenever
    // the runtime waits for another process, and timeouts would fire.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(30)).await;
    tokio::time::resume();
    let release = tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n"));
    while let Some(line) = harness.from_server.next_line().await.unwrap() {
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    release.await.unwrap().unwrap();
    assert_eq!(harness.served.await.unwrap().unwrap(), Exit::Eof);
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap();
    assert!(text(by_id(1)).starts_with("go\ndone\n"), "{answers:?}");
    assert!(text(by_id(2)).starts_with("quick\n"), "{answers:?}");
    assert!(text(by_id(3)).starts_with("last\n"), "{answers:?}");
    assert_eq!(answers.len(), 3, "{answers:?}");
}

#[tokio::test]
async fn a_duplicate_id_in_flight_is_refused_and_the_first_is_answered() {
    let mut harness = Harness::start(&[]);
    let fifo = harness.fifo("release");
    harness.send(&call("a", "cat release; echo first")).await;
    harness.send(&call("a", "touch second-ran")).await;
    let refused = harness.next().await;
    assert_eq!(refused["id"], "a");
    assert_eq!(refused["error"]["code"], -32600);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"a\" is already in flight"),
        "{refused}"
    );
    tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n"))
        .await
        .unwrap()
        .unwrap();
    let first = harness.next().await;
    assert_eq!(first["id"], "a");
    assert!(text(&first).starts_with("go\nfirst\n"));
    // Once answered, the id may be used again.
    harness.send(&call("a", "echo again")).await;
    assert!(text(&harness.next().await).starts_with("again\n"));
    let workdir = harness.workdir();
    let rest = harness.finish().await;
    assert!(rest.is_empty());
    assert!(!workdir.join("second-ran").exists());
    let rows = harness.audit();
    assert_eq!(rows.lines().count(), 2, "{rows}");
    assert!(!rows.contains("second-ran"));
}

#[tokio::test]
async fn malformed_lines_get_exact_errors() {
    let mut harness = Harness::start(&[]);
    let cases: &[(&str, Value, i64, &str)] = &[
        ("not json", Value::Null, -32700, "parse error"),
        ("{not json", Value::Null, -32700, "parse error"),
        (
            "[1, 2]",
            Value::Null,
            -32600,
            "batch requests are not supported",
        ),
        ("42", Value::Null, -32600, "must be a JSON object"),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            Value::Null,
            -32600,
            "id must be a string or an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            Value::Null,
            -32600,
            "id must be a string or an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            Value::Null,
            -32600,
            "id must be a string or an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
            -32600,
            "id must be a string or an integer",
        ),
        (
            r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
            json!(7),
            -32600,
            "jsonrpc must be \"2.0\"",
        ),
        (r#"{"jsonrpc":"2.0","id":8}"#, json!(8), -32600, "no method"),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"foo/bar"}"#,
            json!(9),
            -32601,
            "Method not found: foo/bar",
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call"}"#,
            json!(10),
            -32602,
            "tools/call needs params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":[]}"#,
            json!(11),
            -32602,
            "params must be an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":5}}"#,
            json!(12),
            -32602,
            "params.name must be a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"run","arguments":[]}}"#,
            json!(13),
            -32602,
            "params.arguments must be an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"nope","arguments":{}}}"#,
            json!("x"),
            -32602,
            "tool not found: nope",
        ),
        (
            r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"bash","arguments":{"command":"ls"}}}"#,
            json!(14),
            -32602,
            "tool not found: bash",
        ),
        (
            r#"{"jsonrpc":"2.0","id":-3,"method":"initialize","params":{"protocolVersion":5}}"#,
            json!(-3),
            -32602,
            "invalid params: initialize",
        ),
    ];
    for (line, id, code, message) in cases {
        harness.send(line).await;
        let answer = harness.next().await;
        // The id member is always there: as sent, or null.
        assert!(answer.as_object().unwrap().contains_key("id"), "{answer}");
        assert_eq!(&answer["id"], id, "{line} → {answer}");
        assert_eq!(answer["error"]["code"], *code, "{line} → {answer}");
        let got = answer["error"]["message"].as_str().unwrap();
        assert!(got.contains(message), "{line} → {got}");
    }
    // Ids are echoed exactly as sent, and the server still serves.
    harness
        .send(r#"{"jsonrpc":"2.0","id":-5,"method":"ping"}"#)
        .await;
    assert_eq!(harness.next().await["id"], -5);
    harness
        .send(r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#)
        .await;
    assert_eq!(harness.next().await["id"], "abc");
    assert!(harness.finish().await.is_empty());
}

/// What a call answers: all of its text, or how the text starts.
enum Says {
    Exactly(&'static str),
    StartsWith(&'static str),
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_and_the_server_goes_on() {
    let cases: &[(&str, bool, Says)] = &[
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{}}}"#,
            true,
            Says::Exactly("ERROR: Invalid arguments: missing required string `command`"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run"}}"#,
            true,
            Says::StartsWith(""),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run","arguments":{"command":42}}}"#,
            true,
            Says::Exactly("ERROR: Invalid arguments: `command` must be a string, got a number"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run","arguments":{"command":"echo a\u0000b"}}}"#,
            true,
            Says::StartsWith("ERROR: Execution failed: command contains a NUL byte"),
        ),
        // A lone surrogate escape, as JavaScript's JSON.stringify writes one, is read
        // as U+FFFD; a surrogate pair stays the character it encodes.
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run","arguments":{"command":"echo \ud800 \ud83d\ude00 \udc00"}}}"#,
            false,
            Says::StartsWith("\u{FFFD} \u{1F600} \u{FFFD}\n\n[exit:0 | "),
        ),
    ];
    let mut harness = Harness::start(&[]);
    for (line, is_error, says) in cases {
        harness.send(line).await;
        let answer = harness.next().await;
        assert_eq!(answer["result"]["isError"], *is_error, "{line} → {answer}");
        let got = text(&answer);
        match says {
            Says::Exactly(expected) => assert_eq!(got, *expected, "{line}"),
            Says::StartsWith(start) => assert!(got.starts_with(start), "{line} → {got}"),
        }
    }
    harness.send(&call("after", "echo still here")).await;
    assert!(text(&harness.next().await).starts_with("still here\n"));
    assert!(harness.finish().await.is_empty());
}

#[tokio::test]
async fn a_byte_order_mark_before_the_first_line_is_ignored() {
    let mut harness = Harness::start(&[]);
    harness
        .send(&format!("\u{FEFF}{}", call(1, "echo first")))
        .await;
    let answer = harness.next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(text(&answer).starts_with("first\n"), "{answer}");
    assert!(harness.finish().await.is_empty());
}

#[tokio::test]
async fn a_readable_id_is_echoed_whatever_else_is_wrong() {
    let mut harness = Harness::start(&[]);
    let touch = r#""name":"run","arguments":{"command":"touch ran"}"#;
    let cases: Vec<(String, Value, i64, &str)> = vec![
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{touch},"_meta":5}}}}"#),
            json!(1),
            -32602,
            "invalid params: params._meta must be an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":"ping","params":{"_meta":[]}}"#.to_owned(),
            json!("s"),
            -32602,
            "params._meta must be an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":"x"}}"#.to_owned(),
            json!(3),
            -32602,
            "params._meta must be an object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"0"},"_meta":5}}"#.to_owned(),
            json!(4),
            -32602,
            "params._meta must be an object",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{{touch},"_meta":{{"progressToken":true}}}}}}"#),
            json!(5),
            -32602,
            "params._meta.progressToken must be a string or an integer",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{{touch},"_meta":{{"progressToken":1.5}}}}}}"#),
            json!(6),
            -32602,
            "params._meta.progressToken must be a string or an integer",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{{touch},"_meta":{{"progressToken":{{}}}}}}}}"#),
            json!(7),
            -32602,
            "params._meta.progressToken must be a string or an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run","name":"run","arguments":{"command":"touch ran"}}}"#.to_owned(),
            json!(8),
            -32602,
            "invalid params: duplicate key \"name\" in params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run","arguments":{"command":"echo","command":"touch ran"}}}"#.to_owned(),
            json!(9),
            -32602,
            "invalid params: duplicate key \"command\" in params",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":10,"id":10,"method":"tools/call","params":{{{touch}}}}}"#),
            json!(10),
            -32600,
            "invalid request: duplicate key \"id\"",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":11,"method":"ping","method":"tools/call","params":{{{touch}}}}}"#),
            json!(11),
            -32600,
            "invalid request: duplicate key \"method\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"ping","result":{}}"#.to_owned(),
            json!(12),
            -32600,
            "a message with a method has no result or error",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{{{touch}}},"error":{{"code":1,"message":"m"}}}}"#),
            json!(13),
            -32600,
            "a message with a method has no result or error",
        ),
        (
            r#"{"id":14,"method":"ping"}"#.to_owned(),
            json!(14),
            -32600,
            "jsonrpc must be \"2.0\"",
        ),
        (
            r#"{"jsonrpc":2.0,"id":15,"method":"ping"}"#.to_owned(),
            json!(15),
            -32600,
            "jsonrpc must be \"2.0\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/list","params":"all"}"#.to_owned(),
            json!(16),
            -32602,
            "params must be an object",
        ),
        (
            r#"{"jsonrpc":"2.0","\u0069d":"\u0061","method":"ping","result":1}"#.to_owned(),
            json!("a"),
            -32600,
            "a message with a method has no result or error",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{{{touch},"_meta":{{"progressToken":"a","progressToken":"b"}}}}}}"#),
            json!(18),
            -32602,
            "invalid params: duplicate key \"progressToken\" in params",
        ),
        // Well-formed JSON that serde_json will not read into a value.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{{{touch},"deep":{}{}}}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
            json!(21),
            -32600,
            "recursion limit exceeded",
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{{{touch},"n":1e400}}}}"#),
            json!("n"),
            -32600,
            "number out of range",
        ),
        // Two different ids: the id cannot be read.
        (
            format!(r#"{{"jsonrpc":"2.0","id":19,"id":20,"method":"tools/call","params":{{{touch}}}}}"#),
            Value::Null,
            -32600,
            "the message has two different ids",
        ),
    ];
    for (line, id, code, message) in &cases {
        harness.send(line).await;
        let answer = tokio::time::timeout(Duration::from_secs(30), harness.next())
            .await
            .unwrap_or_else(|_| panic!("no answer to {line}"));
        assert_eq!(&answer["id"], id, "{line} → {answer}");
        assert_eq!(answer["error"]["code"], *code, "{line} → {answer}");
        let got = answer["error"]["message"].as_str().unwrap();
        assert!(got.contains(message), "{line} → {got}");
    }
    harness
        .send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#)
        .await;
    assert_eq!(harness.next().await["id"], "after");
    let workdir = harness.workdir();
    assert!(harness.finish().await.is_empty());
    assert!(!workdir.join("ran").exists(), "a refused call ran");
}

/// The `id` of a message exactly as written (a `Value` would round big integers).
fn written_id(line: &str) -> String {
    let members: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_str(line).unwrap();
    members["id"].get().to_owned()
}

fn raw_call(id: &str, command: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"run","arguments":{{"command":{}}}}}}}"#,
        Value::from(command)
    )
}

#[tokio::test]
async fn integer_ids_beyond_64_bits_are_echoed_exactly() {
    let mut harness = Harness::start(&[]);
    harness.fifo("release");
    // Two ids that are the same number once rounded to a float.
    let (a, b) = ("18446744073709551616", "18446744073709551617");
    harness.send(&raw_call(a, "cat release; echo a")).await;
    harness.send(&raw_call(b, "echo b")).await;
    let answer = harness.next_raw().await;
    assert_eq!(written_id(&answer), b, "{answer}");
    assert!(answer.contains(r#""text":"b\n\n[exit:0 | "#), "{answer}");
    // The first is still in flight: its id, exactly, is refused.
    harness.send(&raw_call(a, "touch second-ran")).await;
    let refused = harness.next_raw().await;
    assert_eq!(written_id(&refused), a, "{refused}");
    assert!(
        refused.contains(&format!("request id {a} is already in flight")),
        "{refused}"
    );
    for (line, id) in [
        (
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}"#.to_owned(),
            "99999999999999999999",
        ),
        (
            r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"no/such"}"#.to_owned(),
            "-9223372036854775809",
        ),
        (raw_call("9223372036854775808", "echo u64"), "9223372036854775808"),
        (
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"run"}}"#.to_owned(),
            "123456789012345678901234567890",
        ),
    ] {
        harness.send(&line).await;
        let answer = harness.next_raw().await;
        assert_eq!(written_id(&answer), id, "{line} → {answer}");
    }
    // A cancellation names the id as written.
    harness
        .send(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{a}}}}}"#
        ))
        .await;
    let started = std::time::Instant::now();
    while !harness.audit().contains("cat release; echo a\t130\t") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            harness.audit()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let workdir = harness.workdir();
    let audit = harness.audit();
    // The cancelled call is not answered.
    assert!(harness.finish().await.is_empty());
    assert!(!workdir.join("second-ran").exists());
    assert!(audit.contains("echo b\t0\t"), "{audit}");
    assert!(audit.contains("echo u64\t0\t"), "{audit}");
}

#[tokio::test]
async fn the_longest_command_is_the_one_the_error_states() {
    let mut harness = Harness::start(&[]);
    // A command of exactly `len` bytes that prints how many x it echoed, plus one.
    let command = |len: usize| format!("echo {} | wc -c", "x".repeat(len - "echo  | wc -c".len()));
    harness.send(&call(1, &command(200_000))).await;
    let refused = harness.next().await;
    let message = text(&refused);
    assert!(
        message.starts_with("ERROR: Execution failed: command is 200000 bytes; "),
        "{message}"
    );
    let limit: usize = message
        .split("at most ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no limit in {message}"));
    // A command of the stated length runs; one byte more is refused.
    harness.send(&call(2, &command(limit))).await;
    let ran = text(&harness.next().await);
    let printed = limit - "echo  | wc -c".len() + 1;
    assert!(
        ran.starts_with(&format!("{printed}\n\n[exit:0 | ")),
        "{message} → {}",
        &ran[..ran.len().min(200)]
    );
    harness.send(&call(3, &command(limit + 1))).await;
    let refused = harness.next().await;
    assert!(
        text(&refused).starts_with(&format!(
            "ERROR: Execution failed: command is {} bytes; ",
            limit + 1
        )),
        "{refused}"
    );
    assert!(harness.finish().await.is_empty());
}

#[tokio::test]
async fn when_a_write_to_the_client_fails_every_call_in_flight_is_cancelled() {
    let mut harness = Harness::start(&[]);
    harness.fifo("release");
    harness.send(&call(1, "cat release; echo never")).await;
    harness.stop_reading();
    // The answer to this cannot be written: the client has gone.
    harness
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
        .await;
    let started = std::time::Instant::now();
    while !harness.audit().contains("cat release; echo never\t130\t") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not cancelled: {:?}",
            harness.audit()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Input after that is read and ignored; at its end the server returns.
    harness.send(&call(3, "touch ran")).await;
    harness.to_server.shutdown().await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(30), &mut harness.served).await;
    assert_eq!(served.expect("returned").unwrap().unwrap(), Exit::Eof);
    assert_eq!(harness.audit().lines().count(), 1, "{}", harness.audit());
    assert!(!harness.workdir().join("ran").exists());
}

#[tokio::test]
async fn an_argument_the_schema_does_not_allow_is_refused_by_name() {
    let mut harness = Harness::start(&[]);
    harness
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "run", "arguments": {"command": "touch ran", "cwd": "/"}}})
            .to_string(),
        )
        .await;
    let refused = harness.next().await;
    assert_eq!(refused["id"], 1, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "unknown argument \"cwd\"; run takes only \"command\""
    );
    let workdir = harness.workdir();
    assert!(harness.finish().await.is_empty());
    assert!(!workdir.join("ran").exists());
    assert!(harness.audit().is_empty());
}
