use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Options, Server, pipe_through, text};

#[test]
fn identity_and_tool_list() {
    let mut server = Server::start(Options::default());
    let init = server.initialize();
    let info = &init["result"]["serverInfo"];
    assert_eq!(info["name"], "forge-bash");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    let workdir = server.workdir.display().to_string();
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert_eq!(
        instructions,
        format!(
            "Bash execution in {workdir}. Supports chains (| && || ;).\n\
             rm is blocked — use uvilo-trash instead. All commands are audit-logged."
        )
    );
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let id = server.request("tools/list", json!({}));
    let list = server.response(id);
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    let tool = &tools[0];
    assert_eq!(tool["name"], "run");
    assert_eq!(
        tool["description"],
        format!(
            "Execute a shell command or pipeline in {workdir}, supporting operators |, &&, ||, ;. \
             rm is blocked — use uvilo-trash instead. All commands are audit-logged. \
             For a server, or anything that runs longer than the 300 s timeout, end the \
             command with & (`npm run dev &`): the answer names a file that keeps receiving \
             its output, to read with cat or tail in later calls."
        )
    );
    let schema = &tool["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["command"]));
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 1);
    assert_eq!(properties["command"]["type"], "string");
    assert_eq!(
        properties["command"]["description"],
        "Full command string, including pipes and chain operators."
    );
    let annotations = &tool["annotations"];
    assert_eq!(annotations["title"], "Forge Bash");
    assert_eq!(annotations["readOnlyHint"], false);
    assert_eq!(annotations["destructiveHint"], true);
    assert_eq!(annotations["openWorldHint"], true);
    server.assert_stdout_is_protocol();
}

#[test]
fn initialize_then_call() {
    let mut server = Server::start(Options::default());
    server.initialize();
    let response = server.call("echo hello");
    assert!(text(&response).starts_with("hello\n\n[exit:0 | "));
    assert_eq!(response["result"]["isError"], false);
    let id = server.request("ping", json!({}));
    assert!(server.response(id)["result"].is_object());
}

#[test]
fn seed_smoke_test_one_line_then_eof() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"command":"echo hello"}}}"#;
    let args = [
        "--workdir",
        dir.path().to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let (stdout, stderr, status) = pipe_through(&args, &[], format!("{line}\n").as_bytes());
    assert!(status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let response: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(response["id"], 1);
    assert!(text(&response).starts_with("hello\n\n[exit:0 | "));
    // The audit log was created.
    assert_eq!(crate::support::audit_rows(&state).len(), 1);
}

#[test]
fn concurrent_calls_run_in_parallel() {
    let mut server = Server::start(Options::default());
    server.initialize();
    let started = Instant::now();
    let ids: Vec<u64> = (0..8).map(|_| server.start_call("sleep 1")).collect();
    for id in ids {
        assert!(text(&server.response(id)).starts_with("\n[exit:0 | "));
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(3),
        "8 × sleep 1 took {elapsed:?}"
    );
}

#[test]
fn requests_from_a_file_on_stdin() {
    // Not a pipe: the server falls back to blocking stdio handles.
    let dir = tempfile::tempdir().unwrap();
    let requests = dir.path().join("requests.jsonl");
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"command":"sleep 1; echo from-file"}}}"#;
    std::fs::write(&requests, format!("{call}\n")).unwrap();
    let output = crate::support::binary()
        .args(["--workdir", dir.path().to_str().unwrap()])
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .stdin(std::fs::File::open(&requests).unwrap())
        .output()
        .unwrap();
    assert!(output.status.success());
    let response: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(text(&response).starts_with("from-file\n\n[exit:0 | "));
}

/// Peak resident memory of a process, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap()
}

#[test]
fn a_client_that_stops_reading_costs_bounded_memory_and_loses_nothing() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    const CALLS: u64 = 2000;
    let dir = tempfile::tempdir().unwrap();
    let mut child = crate::support::binary()
        .arg("--workdir")
        .arg(dir.path())
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Blocks once the server stops reading; that is the point.
    let writer = std::thread::spawn(move || {
        for id in 1..=CALLS {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": "printf '%50000s\\n' x"}}});
            if writeln!(stdin, "{request}").is_err() {
                return;
            }
        }
    });
    // Nobody reads stdout for a while.
    std::thread::sleep(Duration::from_secs(6));
    let peak = peak_rss_kb(child.id());
    let expected = format!("{:>50000}\n\n[exit:0 | ", "x");
    let mut answered = std::collections::HashSet::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let response: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let answer = text(&response);
        assert!(
            answer.starts_with(&expected),
            "{}",
            &answer[answer.len().saturating_sub(300)..]
        );
        answered.insert(response["id"].as_u64().unwrap());
        if answered.len() as u64 == CALLS {
            break;
        }
    }
    writer.join().unwrap();
    assert_eq!(answered.len() as u64, CALLS);
    eprintln!("peak RSS while the client did not read: {} kB", peak);
    assert!(peak < 64 * 1024, "peak RSS {peak} kB");
    let _ = child.kill();
    let _ = child.wait();
}
