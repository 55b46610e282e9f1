use serde_json::json;

use super::parse::{members, parse, replace_lone_surrogates};
use super::*;

/// The verdict on one line, as text: the exact error line, or what is accepted.
fn verdict(line: &str) -> String {
    match check_line(line.as_bytes(), "run") {
        Err(refusal) => String::from_utf8(refusal.line())
            .unwrap()
            .trim_end()
            .to_owned(),
        Ok(Accepted::Nothing) => "nothing".to_owned(),
        Ok(Accepted::Request { id, request }) => {
            let rmcp = serde_json::to_string(&request.id).unwrap();
            format!(
                "request {} {} as {rmcp}",
                request.request.method(),
                id.echo()
            )
        }
        Ok(Accepted::Notification {
            cancels,
            notification,
        }) => {
            let method = serde_json::to_value(&notification).unwrap()["method"].clone();
            let cancels = cancels.map_or_else(|| "-".to_owned(), |id| id.echo());
            format!("notification {method} cancels {cancels}")
        }
    }
}

/// Lines that pass, each with what is passed on.
const ACCEPTED: &[(&str, &str)] = &[
    (
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"command":"ls"}}}"#,
        "request tools/call 1 as 1",
    ),
    (
        r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
        r#"request ping "a" as "a""#,
    ),
    (
        r#"  {"jsonrpc":"2.0","id":-5,"method":"tools/list","params":{"cursor":"c"}}  "#,
        "request tools/list -5 as -5",
    ),
    (
        r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}"#,
        r#"request ping 99999999999999999999 as "forge-bash:integer-id:99999999999999999999""#,
    ),
    (
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}"#,
        "request initialize 0 as 0",
    ),
    // Which tool a call names, and its arguments, are the server's to judge.
    (
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{"cwd":"/"}}}"#,
        "request tools/call 2 as 2",
    ),
    (
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        r#"notification "notifications/cancelled" cancels 7"#,
    ),
    (
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":18446744073709551616}}"#,
        r#"notification "notifications/cancelled" cancels 18446744073709551616"#,
    ),
    (
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"notification "notifications/initialized" cancels -"#,
    ),
    (
        r#"{"jsonrpc":"2.0","method":"some/thing","params":{"x":1}}"#,
        r#"notification "some/thing" cancels -"#,
    ),
    // A response the server did not ask for, and a blank line.
    (r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, "nothing"),
    ("   ", "nothing"),
];

/// Lines that are refused, each with the id echoed, the code and the message.
const REFUSED: &[(&str, &str, i32, &str)] = &[
    (
        "not json",
        "null",
        -32700,
        "parse error: expected ident at line 1 column 2",
    ),
    (
        "[1, 2]",
        "null",
        -32600,
        "invalid request: batch requests are not supported",
    ),
    (
        "42",
        "null",
        -32600,
        "invalid request: a request must be a JSON object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
        "null",
        -32600,
        "invalid request: id must be a string or an integer",
    ),
    (
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        "null",
        -32600,
        "invalid request: id must be a string or an integer",
    ),
    (
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        "null",
        -32600,
        "invalid request: id must be a string or an integer",
    ),
    (
        r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
        "7",
        -32600,
        "invalid request: jsonrpc must be \"2.0\"",
    ),
    (
        r#"{"id":"s","method":"ping"}"#,
        r#""s""#,
        -32600,
        "invalid request: jsonrpc must be \"2.0\"",
    ),
    (
        r#"{"jsonrpc":"2.0","id":8}"#,
        "8",
        -32600,
        "invalid request: no method",
    ),
    (
        r#"{"jsonrpc":"2.0","id":8,"method":5}"#,
        "8",
        -32600,
        "invalid request: method must be a string",
    ),
    (
        r#"{"jsonrpc":"2.0","id":9,"method":"foo/bar"}"#,
        "9",
        -32601,
        "Method not found: foo/bar",
    ),
    (
        r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"no/such"}"#,
        "-9223372036854775809",
        -32601,
        "Method not found: no/such",
    ),
    (
        r#"{"jsonrpc":"2.0","id":10,"method":"tools/call"}"#,
        "10",
        -32602,
        r#"invalid params: tools/call needs params {"name": "run", "arguments": {"command": "…"}}"#,
    ),
    (
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":[]}"#,
        "11",
        -32602,
        "invalid params: params must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":5}}"#,
        "12",
        -32602,
        "invalid params: params.name must be a string",
    ),
    (
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{}}"#,
        "12",
        -32602,
        "invalid params: params.name is missing",
    ),
    (
        r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"run","arguments":[]}}"#,
        "13",
        -32602,
        "invalid params: params.arguments must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"run","_meta":5}}"#,
        "14",
        -32602,
        "invalid params: params._meta must be an object",
    ),
    (
        r#"{"jsonrpc":"2.0","id":15,"method":"ping","params":{"_meta":{"progressToken":1.5}}}"#,
        "15",
        -32602,
        "invalid params: params._meta.progressToken must be a string or an integer",
    ),
    (
        r#"{"jsonrpc":"2.0","id":-3,"method":"initialize","params":{"protocolVersion":5}}"#,
        "-3",
        -32602,
        "invalid params: initialize: invalid type: integer `5`, expected a string",
    ),
    (
        r#"{"jsonrpc":"2.0","id":-4,"method":"initialize"}"#,
        "-4",
        -32602,
        "invalid params: initialize: missing field `params`",
    ),
    (
        r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"run","name":"run"}}"#,
        "16",
        -32602,
        "invalid params: duplicate key \"name\" in params",
    ),
    (
        r#"{"jsonrpc":"2.0","id":17,"id":17,"method":"ping"}"#,
        "17",
        -32600,
        "invalid request: duplicate key \"id\"",
    ),
    (
        r#"{"jsonrpc":"2.0","id":18,"method":"ping","x":{"a":1,"a":1}}"#,
        "18",
        -32600,
        "invalid request: duplicate key \"a\" in x",
    ),
    (
        r#"{"jsonrpc":"2.0","id":19,"id":20,"method":"ping"}"#,
        "null",
        -32600,
        "invalid request: the message has two different ids",
    ),
    (
        r#"{"jsonrpc":"2.0","\u0069d":"\u0061","method":"ping","result":1}"#,
        r#""a""#,
        -32600,
        "invalid request: a message with a method has no result or error",
    ),
    // Well-formed JSON that serde_json will not read into a value.
    (
        r#"{"jsonrpc":"2.0","id":"n","method":"ping","params":{"n":1e400}}"#,
        r#""n""#,
        -32600,
        "invalid request: number out of range at line 1 column 61",
    ),
    (
        r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
        "null",
        -32700,
        "parse error: number out of range at line 1 column 27",
    ),
    // A notification that rmcp cannot read; its id cannot be known.
    (
        r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":3}"#,
        "null",
        -32600,
        "invalid request: notifications/initialized: data did not match any variant of untagged enum ClientNotification",
    ),
];

#[test]
fn each_line_gets_its_exact_verdict() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":21,"method":"ping","params":{{"deep":{}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let deep_error = error(
        21,
        "invalid request: recursion limit exceeded at line 1 column 184",
    );
    let accepted = ACCEPTED.iter().map(|&(line, want)| (line, want.to_owned()));
    let refused = REFUSED.iter().map(|&(line, id, code, message)| {
        let error = json!({ "code": code, "message": message });
        (
            line,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#),
        )
    });
    let mut wrong = Vec::new();
    for (line, want) in accepted.chain(refused).chain([(deep.as_str(), deep_error)]) {
        let got = verdict(line);
        if got != want {
            wrong.push(format!("{line}\n  want {want}\n  got  {got}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The error line refusing a request with an integer id.
fn error(id: i64, message: &str) -> String {
    let error = json!({ "code": -32600, "message": message });
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

#[test]
fn an_id_in_flight_is_refused_with_the_id_as_written() {
    let id = Id::read(&json!(1e20), Some("100000000000000000000")).unwrap();
    assert_eq!(
        String::from_utf8(Refusal::in_flight(id).line()).unwrap(),
        concat!(
            r#"{"jsonrpc":"2.0","id":100000000000000000000,"error":{"code":-32600,"#,
            r#""message":"invalid request: request id 100000000000000000000 is already in flight"}}"#,
            "\n"
        )
    );
}

#[test]
fn parse_reads_what_serde_json_reads_and_notes_repeated_keys() {
    let lines = [
        r#"{"a":[1,-2,18446744073709551615,-9223372036854775808,1.5,1e300,-0.0,true,null],"b":{"c":"\u00e9\n","d":[]}}"#,
        r#"[{"x":{}},"s",3]"#,
        r#""just a string""#,
        "  42 ",
        r#"{"id": 7 ,"params":{"requestId":"x","y":{"requestId":1}}}"#,
    ];
    for line in lines {
        let (value, seen) = parse(line.as_bytes()).unwrap();
        assert_eq!(
            value,
            serde_json::from_str::<Value>(line).unwrap(),
            "{line}"
        );
        assert!(
            seen.first_repeated.is_none() && !seen.conflicting_ids,
            "{line}"
        );
    }
    let (_, seen) = parse(br#"{"id": 7 ,"params":{"requestId":"x","y":{"requestId":1}}}"#).unwrap();
    assert_eq!(
        (seen.id.as_deref(), seen.request_id.as_deref()),
        (Some("7"), Some(r#""x""#))
    );
    let (_, seen) = parse(br#"{"a":{"b":{"c":1,"c":1}},"d":1,"d":2}"#).unwrap();
    let first = seen.first_repeated.unwrap();
    assert_eq!(
        (first.member.as_deref(), first.key.as_str()),
        (Some("a"), "c")
    );
    assert!(!seen.conflicting_ids);
    let (_, seen) = parse(br#"{"id":1,"id":1}"#).unwrap();
    assert!(seen.first_repeated.unwrap().member.is_none() && !seen.conflicting_ids);
    let (_, seen) = parse(br#"{"id":1,"id":"1"}"#).unwrap();
    assert!(seen.conflicting_ids);
    assert!(parse(b"{} x").is_err());
    assert!(parse(br#"{"a":1,}"#).is_err());
}

#[test]
fn integer_ids_beyond_64_bits_are_read_as_written() {
    for written in ["0", "-0", "18446744073709551616", "-9223372036854775809"] {
        assert!(is_integer(written), "{written}");
    }
    for written in ["", "-", "01", "-01", "1.0", "1e3", "+1", "1 "] {
        assert!(!is_integer(written), "{written}");
    }
    let line = br#"{"id": 99999999999999999999 ,"method":"ping","x":[1.50]}"#;
    let (message, seen) = parse(line).unwrap();
    let id = Id::read(&message["id"], seen.id.as_deref()).unwrap();
    assert_eq!(id.echo(), "99999999999999999999");
    assert_eq!(
        id.rmcp,
        RequestId::String("forge-bash:integer-id:99999999999999999999".into())
    );
    assert!(members(br#"{"a":1,"b":2,"a":1}"#).is_none());
    assert!(members(br#"[1]"#).is_none());
    assert!(members(br#"{"a":1} x"#).is_none());
    let deep = format!(r#"{{"id":"d","x":{}{}}}"#, "[".repeat(500), "]".repeat(500));
    assert_eq!(readable_id(deep.as_bytes()).unwrap().echo(), r#""d""#);
    assert!(Id::read(&json!(1e20), Some("1e20")).is_none());
    let small = Id::read(&json!(-7), Some("-7")).unwrap();
    assert_eq!((small.echo(), small.written), ("-7".to_owned(), None));
}

#[test]
fn what_rmcp_cannot_read_is_refused_with_the_reason() {
    let mut call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": "ls"}}});
    assert!(request::<CallToolRequest>(call.clone()).is_ok());
    // rmcp cannot read these at all, and would answer with "id": null.
    call["params"]["_meta"] = json!(5);
    let e = request::<CallToolRequest>(call).unwrap_err();
    assert_eq!(e.to_string(), "invalid type: integer `5`, expected a map");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": []}});
    assert!(request::<PingRequest>(ping).is_err());
}

fn replaced(line: &str) -> String {
    String::from_utf8(replace_lone_surrogates(line.as_bytes()).into_owned()).unwrap()
}

#[test]
fn lone_surrogates_become_the_replacement_character_and_pairs_stay() {
    let cases = [
        (r#""a\ud800b""#, r#""a\uFFFDb""#),
        (r#""\uDC00""#, r#""\uFFFD""#),
        (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
        (r#""\ud800\ud83d\ude00""#, r#""\uFFFD\ud83d\ude00""#),
        (r#""\ud800\ud800""#, r#""\uFFFD\uFFFD""#),
        (r#""\ude00\ud83d""#, r#""\uFFFD\uFFFD""#),
        (r#""\ud800\u0041""#, r#""\uFFFD\u0041""#),
        // An escaped backslash followed by text that looks like an escape.
        (r#""\\ud800""#, r#""\\ud800""#),
        (r#""\\\ud800""#, r#""\\\uFFFD""#),
        (r#""\u00e9 \n""#, r#""\u00e9 \n""#),
        ("no escapes", "no escapes"),
        ("ends with \\", "ends with \\"),
        ("\\ud8", "\\ud8"),
    ];
    for (line, want) in cases {
        assert_eq!(replaced(line), want, "{line}");
    }
    let decoded: String = serde_json::from_str(&replaced(r#""x\ud800y\ud83d\ude00""#)).unwrap();
    assert_eq!(decoded, "x\u{FFFD}y\u{1F600}");
}
