//! The protocol in process: the library's server on an in-memory duplex, the test
//! holding the other ends (with paused time where a test would otherwise wait).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use forge_bash::config::Config;
use forge_bash::contain::Containment;
use forge_bash::server::Server;
use forge_bash::stdio::{self, Exit};

/// A server reading one duplex and writing another; the test holds their other ends.
pub struct Harness {
    pub to_server: DuplexStream,
    pub from_server: tokio::io::Lines<BufReader<DuplexStream>>,
    pub served: tokio::task::JoinHandle<std::io::Result<Exit>>,
    dir: tempfile::TempDir,
}

impl Harness {
    pub fn start(args: &[&str]) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let mut argv = vec![
            "forge-bash".to_owned(),
            "--workdir".to_owned(),
            work.display().to_string(),
            "--state-dir".to_owned(),
            dir.path().join("state").display().to_string(),
        ];
        argv.extend(args.iter().map(|a| a.to_string()));
        let config = Config::try_parse_from(argv).unwrap();
        let server = Server::new(
            config,
            forge_bash::config::find_shell(),
            Arc::new(Containment::without_watchdog()),
        );
        let (to_server, input) = tokio::io::duplex(1 << 20);
        let (output, from_server) = tokio::io::duplex(1 << 20);
        let served = tokio::spawn(stdio::serve(server, input, output, std::future::pending()));
        Harness {
            to_server,
            from_server: BufReader::new(from_server).lines(),
            served,
            dir,
        }
    }

    pub fn workdir(&self) -> std::path::PathBuf {
        self.dir.path().join("work")
    }

    /// A named pipe in the workdir: a command that reads it waits for the test.
    pub fn fifo(&self, name: &str) -> std::path::PathBuf {
        let fifo = self.workdir().join(name);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        fifo
    }

    /// Closes the test's end of the server's output: writes to it fail from now on.
    pub fn stop_reading(&mut self) {
        let (closed, _) = tokio::io::duplex(1);
        self.from_server = BufReader::new(closed).lines();
    }

    pub async fn send(&mut self, line: &str) {
        self.to_server.write_all(line.as_bytes()).await.unwrap();
        self.to_server.write_all(b"\n").await.unwrap();
    }

    pub async fn next(&mut self) -> Value {
        serde_json::from_str(&self.next_raw().await).unwrap()
    }

    /// The next line as written, within a generous bound.
    pub async fn next_raw(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(60), self.from_server.next_line())
            .await
            .expect("a line within 60 s")
            .unwrap()
            .expect("a line")
    }

    pub fn audit(&self) -> String {
        let Ok(entries) = std::fs::read_dir(self.dir.path().join("state")) else {
            return String::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("audit-"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect()
    }

    /// Closes the input; the server answers what it read, then returns.
    pub async fn finish(&mut self) -> Vec<Value> {
        self.to_server.shutdown().await.unwrap();
        let mut rest = Vec::new();
        while let Some(line) = self.from_server.next_line().await.unwrap() {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        assert_eq!((&mut self.served).await.unwrap().unwrap(), Exit::Eof);
        rest
    }
}

pub fn call(id: impl Into<Value>, command: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": "tools/call",
           "params": {"name": "run", "arguments": {"command": command}}})
    .to_string()
}
