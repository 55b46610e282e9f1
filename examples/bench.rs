//! Benchmark of the release binary: start-up, per-call overhead against the floor the
//! operating system sets, concurrency, and memory.
//!
//! Run with `cargo run --release --example bench`. It builds the release binary,
//! spawns it as a client would, and prints a table of medians next to the targets.
//! Figures, not assertions: nothing here fails on a slow machine.
//!
//! The row "in turn with neighbours" calls other shell servers between forge-bash's
//! calls, as a desktop with several MCP servers does. With `FORGE_BASH_BENCH_PEERS`
//! naming a directory where
//! `npm install @wonderwhy-er/desktop-commander@0.2.52 @openai/codex-shell-tool-mcp@0.97.0`
//! ran, the neighbours are those two servers (`start_process` and `shell`, each
//! `true`), run with a temporary home, telemetry off and, where `unshare -n` works, no
//! network; otherwise the bench itself spawns two `bash -c true` in their place.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const COLD_STARTS: usize = 30;
const ROUND_TRIPS: usize = 500;

fn main() {
    let binary = build_release();
    if std::env::args().nth(1).as_deref() == Some("scale") {
        return print_rows(&service_at_scale(&binary));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let state = dir.path().join("state");

    let cold = median(
        (0..COLD_STARTS)
            .map(|_| cold_start(&binary, &work, &state))
            .collect(),
    );

    let (run_true, floor) = call_against_floor(&mut Client::spawn(&binary, &work, &state));
    let among = call_among_neighbours(&binary, &work, &state, dir.path());
    // The same under the sandbox (Landlock and seccomp), on a server of its own.
    let (sandboxed_true, sandboxed_floor) = call_against_floor(&mut Client::spawn_with(
        &binary,
        &work,
        &state,
        &["--sandbox=best-effort"],
    ));
    // The same over Streamable HTTP on loopback: one kept-alive connection.
    let (http_true, http_floor) = http_call_against_floor(&binary, &work, &state);
    let neighbours = users_sharing_cores(&binary, dir.path());
    let mut server = Client::spawn(&binary, &work, &state);
    server.initialize();

    let concurrent = median(
        (0..3)
            .map(|_| {
                let started = Instant::now();
                let ids: Vec<u64> = (0..8).map(|_| server.start_call("sleep 1")).collect();
                for id in ids {
                    server.response(id);
                }
                started.elapsed()
            })
            .collect(),
    );
    std::thread::sleep(Duration::from_millis(200));
    let idle_rss = status_kb(server.child.id(), "VmRSS");
    drop(server);

    // Commands writing 50 MB of text (short lines; base64 of random bytes), each on a
    // fresh server so VmHWM is that call's peak: medians of five.
    let (big_wall, big_peak, big_answer) = fifty_mb(
        &binary,
        &work,
        &state,
        "yes 'forty bytes of text, again and again...' | head -c 50000000",
        "Output truncated",
    );
    let (b64_wall, b64_peak, b64_answer) = fifty_mb(
        &binary,
        &work,
        &state,
        "head -c 37500000 /dev/urandom | base64",
        "Output truncated",
    );
    // The same text on stderr of a command that succeeds (shown, and saved), and 50 MB
    // of binary stdout (saved to cmd-N.bin).
    let (err_wall, err_peak, err_answer) = fifty_mb(
        &binary,
        &work,
        &state,
        "head -c 37500000 /dev/urandom | base64 >&2",
        "--- stderr ---",
    );
    // 50 MB of a compiler's error lines: every line is one the key line rules read.
    let (key_wall, key_peak, key_answer) = fifty_mb(
        &binary,
        &work,
        &state,
        "yes 'src/parse.c:12:5: error: unknown type name foo' | head -c 50000000",
        "Output truncated",
    );
    let (bin_wall, bin_peak, bin_answer) = fifty_mb(
        &binary,
        &work,
        &state,
        "head -c 50000000 /dev/urandom",
        "Binary output detected (50,000,000 bytes)",
    );

    let guard_128k = guard_worst_case();
    let (audit_summary, audit_peak) = audit_million_rows(&binary, dir.path());
    let (stalled_peak, stalled_answered) = client_that_stops_reading(&binary, &work, &state);

    let size = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    let mb = |kb: u64| format!("{:.1} MB", kb as f64 / 1024.0);
    let scale = service_at_scale(&binary);
    let rows = [
        ("spawn → initialize response", ms(cold), "≤ 3 ms".to_owned()),
        (
            "run(\"true\") round trip",
            ms(run_true),
            format!(
                "≤ floor + 0.5 ms = {}",
                ms(floor + Duration::from_micros(500))
            ),
        ),
        (
            "run(\"true\") back to back, same server as the next row",
            format!("{} (p90 {})", ms(among.quiet.0), ms(among.quiet.1)),
            "—".to_owned(),
        ),
        (
            &*among.row,
            format!("{} (p90 {})", ms(among.busy.0), ms(among.busy.1)),
            format!("≤ 1.5 × back to back = {}", ms(among.quiet.0.mul_f64(1.5))),
        ),
        (
            "run(\"true\") with --sandbox (Landlock + seccomp)",
            ms(sandboxed_true),
            format!(
                "≤ floor + 0.7 ms = {}",
                ms(sandboxed_floor + Duration::from_micros(700))
            ),
        ),
        (
            "run(\"true\") over HTTP (--http, loopback, kept-alive)",
            ms(http_true),
            format!("stdio's + ε (its floor here: {})", ms(http_floor)),
        ),
        (
            if neighbours.own_uids {
                "bob's CPU-bound command beside alice's 6 busy loops (one --http service, a uid each), to its time alone"
            } else {
                "bob's CPU-bound command beside alice's 6 busy loops (one --http service, one shared uid: not root), to its time alone"
            },
            format!("{:.2}×", neighbours.cpu_ratio),
            format!("≤ 1.6× on {} cores", cores()),
        ),
        (
            "bob's run(\"true\") over HTTP while alice's loops keep the cores busy",
            format!(
                "{} (alone {}, {:.2}×)",
                ms(neighbours.busy_true),
                ms(neighbours.quiet_true),
                neighbours.busy_true.as_secs_f64() / neighbours.quiet_true.as_secs_f64()
            ),
            format!("≤ 3 × alone = {}", ms(neighbours.quiet_true.mul_f64(3.0))),
        ),
        (
            "floor: spawn + wait `bash -c true`, piped",
            ms(floor),
            "—".to_owned(),
        ),
        (
            "8 concurrent `sleep 1`",
            ms(concurrent),
            "≈ 1000 ms".to_owned(),
        ),
        (
            "50 MB command (`yes` text, 40-byte lines): wall time",
            ms(big_wall),
            "within 10% of before".to_owned(),
        ),
        (
            "50 MB `yes` command: server peak RSS (VmHWM)",
            mb(big_peak),
            "≤ 24 MB".to_owned(),
        ),
        (
            "50 MB command (base64 of /dev/urandom): wall time",
            ms(b64_wall),
            "within 10% of before".to_owned(),
        ),
        (
            "50 MB base64 command: server peak RSS (VmHWM)",
            mb(b64_peak),
            "≤ 24 MB".to_owned(),
        ),
        (
            "50 MB base64 on stderr, exit 0: wall time",
            ms(err_wall),
            "as on stdout".to_owned(),
        ),
        (
            "50 MB base64 on stderr, exit 0: server peak RSS (VmHWM)",
            mb(err_peak),
            "≤ 24 MB".to_owned(),
        ),
        (
            "50 MB of error lines (`file:line:col: error: …`): wall time",
            ms(key_wall),
            "≤ 3 s".to_owned(),
        ),
        (
            "50 MB of error lines: server peak RSS (VmHWM)",
            mb(key_peak),
            "≤ 24 MB".to_owned(),
        ),
        (
            "50 MB of binary stdout (kept in cmd-N.bin): wall time",
            ms(bin_wall),
            "reported".to_owned(),
        ),
        (
            "50 MB of binary stdout: server peak RSS (VmHWM)",
            mb(bin_peak),
            "≤ 24 MB".to_owned(),
        ),
        (
            "50 MB commands: answer size (yes, base64, stderr, error lines, binary)",
            format!(
                "{big_answer} / {b64_answer} / {err_answer} / {key_answer} / {bin_answer} bytes"
            ),
            "≤ 16 KB".to_owned(),
        ),
        ("idle RSS (VmRSS)", mb(idle_rss), "≤ 8 MB".to_owned()),
        (
            "2,000 × 50 KB answers, client not reading for 25 s: peak RSS",
            format!("{} ({stalled_answered} answered after)", mb(stalled_peak)),
            "< 64 MB, all 2,000".to_owned(),
        ),
        (
            "`audit --summary` of 1,000,000 rows: wall time",
            ms(audit_summary),
            "< 2000 ms".to_owned(),
        ),
        (
            "`audit --summary` of 1,000,000 rows: peak RSS",
            mb(audit_peak),
            "flat in the log's size".to_owned(),
        ),
        (
            "guard: 128 KB command, slowest of 8 shapes",
            ms(guard_128k),
            "< 5 ms".to_owned(),
        ),
        (
            "release binary (with the default `http` feature)",
            format!("{:.2} MB", size as f64 / 1048576.0),
            "reported".to_owned(),
        ),
    ];
    let mut rows: Vec<(String, String, String)> = rows
        .into_iter()
        .map(|(what, value, target)| (what.to_owned(), value, target))
        .collect();
    rows.extend(scale);
    print_rows(&rows);
}

fn print_rows(rows: &[(String, String, String)]) {
    eprintln!(
        "forge-bash {} on {} cores (load average {})",
        env!("CARGO_PKG_VERSION"),
        cores(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut out = std::io::stdout().lock();
    writeln!(out, "| measure | median | target |").unwrap();
    writeln!(out, "|---|---|---|").unwrap();
    for (what, value, target) in rows {
        writeln!(out, "| {what} | {value} | {target} |").unwrap();
    }
}

/// Users who come and go at once: each opens a session, makes two calls, and keeps
/// the session open until every user has called; then all close.
const SCALE_USERS: usize = 1_500;

/// Clients at once in [`service_at_scale`].
const SCALE_CLIENTS: usize = 8;

/// The service at scale: a server with per-user paths (a uid per user as root) and
/// `--user-idle-secs 1`; [`SCALE_USERS`] users, [`SCALE_CLIENTS`] at a time, open a
/// session and make two `run("true")` calls, one connection per request. Its RSS and
/// descriptors at start, with every session open, once all closed, and once they
/// idled; the time the calls took, and their median.
fn service_at_scale(binary: &Path) -> Vec<(String, String, String)> {
    const TOKEN: &str = "bench-token-0123456789abcdef";
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    std::fs::set_permissions(root, std::os::unix::fs::PermissionsExt::from_mode(0o711)).unwrap();
    let mut child = Command::new(binary)
        .args(["--http", "127.0.0.1:0", "--user-idle-secs", "1"])
        .args(["--http-max-sessions", &(SCALE_USERS + 16).to_string()])
        .arg("--workdir")
        .arg(root.join("ws/{user}"))
        .arg("--state-dir")
        .arg(root.join("state/{user}"))
        .env("FORGE_BASH_HTTP_TOKEN", TOKEN)
        .env("FORGE_BASH_USER_UIDS_FILE", root.join("uids"))
        .env("FORGE_BASH_USER_UIDS", "600000-609999")
        .env("FORGE_BASH_ALLOW_SHARED_UID", "1")
        .env("RUST_LOG", "warn,forge_bash=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn forge-bash --http");
    let mut log = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(log.read_line(&mut line).unwrap() > 0, "no address logged");
        if let Some(addr) = line.split("addr=").nth(1) {
            break addr.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    let pid = child.id();
    let fds = || std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let sample = || (status_kb(pid, "VmRSS"), fds());
    std::thread::sleep(Duration::from_millis(300));
    let at_start = sample();
    let connect = |session: Option<String>, user: &str| {
        let stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_nodelay(true).unwrap();
        HttpClient {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
            addr: addr.clone(),
            token: TOKEN,
            session,
            user: Some(user.to_owned()),
            next: 1,
        }
    };
    let started = Instant::now();
    let (sessions, calls) = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..SCALE_CLIENTS)
            .map(|lane| {
                let connect = &connect;
                scope.spawn(move || {
                    let (mut sessions, mut calls) = (Vec::new(), Vec::new());
                    for n in (lane..SCALE_USERS).step_by(SCALE_CLIENTS) {
                        let user = format!("user{n}");
                        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "bench", "version": "1"}}});
                        let mut http = connect(None, &user);
                        http.post(&init.to_string());
                        let mut http = connect(http.session.take(), &user);
                        http.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
                        for id in 1..=2 {
                            let mut http = connect(http.session.clone(), &user);
                            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                "params": {"name": "run", "arguments": {"command": "true"}}});
                            let called = Instant::now();
                            let answer = http.post(&body.to_string());
                            calls.push(called.elapsed());
                            assert!(answer.contains("[exit:0 |"), "{user}: {answer}");
                        }
                        sessions.push((user, http.session.take().unwrap()));
                    }
                    (sessions, calls)
                })
            })
            .collect();
        let (mut sessions, mut calls) = (Vec::new(), Vec::new());
        for lane in lanes {
            let (s, c) = lane.join().unwrap();
            sessions.extend(s);
            calls.extend(c);
        }
        (sessions, calls)
    });
    let calls_in = started.elapsed();
    let open = sample();
    for (user, session) in sessions {
        connect(Some(session), &user).delete();
    }
    std::thread::sleep(Duration::from_millis(300));
    let closed = sample();
    // Released between 1 and 1.25 s after their last session; the memory given back
    // 100 ms after.
    std::thread::sleep(Duration::from_secs(3));
    let idled = sample();
    let _ = child.kill();
    let _ = child.wait();
    let (ms, mb) = (
        |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3),
        |kb: u64| format!("{:.1} MB", kb as f64 / 1024.0),
    );
    let figures = |(rss, fds): (u64, usize)| format!("{}, {fds} descriptors", mb(rss));
    let n = SCALE_USERS;
    vec![
        (
            format!(
                "service at scale: {n} users ({SCALE_CLIENTS} at once) open a session and call `true` twice: all in, and a call's median"
            ),
            format!("{:.2} s, {}", calls_in.as_secs_f64(), ms(median(calls))),
            "reported".to_owned(),
        ),
        (
            "service at scale: at start".to_owned(),
            figures(at_start),
            "—".to_owned(),
        ),
        (
            format!("service at scale: {n} sessions open"),
            figures(open),
            "reported".to_owned(),
        ),
        (
            format!("service at scale: {n} sessions closed"),
            figures(closed),
            "reported".to_owned(),
        ),
        (
            "service at scale: closed, then idle past --user-idle-secs 1".to_owned(),
            figures(idled),
            format!(
                "≤ start + 16 MB, ≤ start + 20 = {} descriptors",
                at_start.1 + 20
            ),
        ),
    ]
}

/// `command` (50 MB of output) on fresh servers: the median wall time and peak RSS
/// (kB), and the largest answer (bytes), which must hold `expect`.
fn fifty_mb(
    binary: &Path,
    work: &Path,
    state: &Path,
    command: &str,
    expect: &str,
) -> (Duration, u64, usize) {
    let (mut walls, mut peaks, mut size) = (Vec::new(), Vec::new(), 0);
    for _ in 0..5 {
        let mut big = Client::spawn(binary, work, state);
        big.initialize();
        let started = Instant::now();
        let answer = big.call(command);
        walls.push(started.elapsed());
        peaks.push(status_kb(big.child.id(), "VmHWM"));
        assert!(answer.contains(expect), "{answer}");
        size = size.max(answer.len());
    }
    peaks.sort_unstable();
    (median(walls), peaks[peaks.len() / 2], size)
}

/// The guard on 128 KB commands of several shapes (chains, quotes, heredocs,
/// substitutions, arithmetic, case, globs, one huge word): the slowest median.
fn guard_worst_case() -> Duration {
    const SIZE: usize = 128 * 1024;
    let fill = |unit: &str| unit.repeat(SIZE / unit.len() + 1)[..SIZE].to_owned();
    let shapes = [
        fill("echo a && ls -l | grep x; "),
        format!("echo '{}'", fill("a;b|c&d ")),
        format!("cat <<EOF\n{}\nEOF", fill("line $(date) `x` ${v:-y}\n")),
        fill("x=$(echo $((1 << 2)) \"$(true)\"); "),
        fill("case $v in a|b) echo;; esac; [[ $x =~ ^(a|b)$ ]]; (( n <<= 1 )); "),
        fill("/usr/bin/r[a-z]*{a,b} "),
        fill("a"),
        fill("$(("),
    ];
    shapes
        .iter()
        .map(|command| {
            median(
                (0..21)
                    .map(|_| {
                        let started = Instant::now();
                        std::hint::black_box(forge_bash::guard::check(command));
                        started.elapsed()
                    })
                    .collect(),
            )
        })
        .max()
        .unwrap_or_default()
}

/// `forge-bash audit --all --summary` over one million rows in the server's format
/// (ten daily files): the median wall time of three runs, and the peak RSS (kB).
fn audit_million_rows(binary: &Path, dir: &Path) -> (Duration, u64) {
    let state = dir.join("audit-state");
    std::fs::create_dir_all(&state).unwrap();
    for day in 0..10 {
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(state.join(format!("audit-2026-01-{:02}.tsv", day + 1))).unwrap(),
        );
        for n in 0..100_000u64 {
            let exit = [0, 0, 0, 1, -1, 124, 130][(n % 7) as usize];
            writeln!(
                file,
                "2026-01-{:02}T12:00:00.{:03}Z\tcargo test --package p{n} -- --nocapture\\tx\t{exit}\t{}",
                day + 1,
                n % 1000,
                (n * 7919) % 300_000
            )
            .unwrap();
        }
    }
    let mut peak = 0;
    let runs = (0..3)
        .map(|_| {
            let started = Instant::now();
            // Reaped by wait4 below, which also reports its peak RSS.
            #[allow(clippy::zombie_processes)]
            let child = Command::new(binary)
                .args(["audit", "--all", "--summary", "--state-dir"])
                .arg(&state)
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let mut status = 0;
            // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waits for the child we just spawned, with valid pointers.
            unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
            peak = peak.max(usage.ru_maxrss as u64);
            started.elapsed()
        })
        .collect();
    (median(runs), peak)
}

/// 2,000 pipelined calls with 50 KB answers and a client that reads nothing for 25 s:
/// the server's peak RSS (kB) and how many answers arrive once the client reads.
fn client_that_stops_reading(binary: &Path, work: &Path, state: &Path) -> (u64, usize) {
    const CALLS: usize = 2000;
    let mut child = server_command(binary, work, state, &[])
        .spawn()
        .expect("spawn forge-bash");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for id in 0..CALLS {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": "printf '%50000s\\n' x"}}});
            if writeln!(stdin, "{request}").is_err() {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_secs(25));
    let peak = status_kb(child.id(), "VmHWM");
    let answered = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .take(CALLS)
        .map_while(Result::ok)
        .count();
    writer.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    (peak, answered)
}

fn build_release() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args(["build", "--release", "--bin", "forge-bash"])
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build --release failed");
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    Path::new(&target).join("release/forge-bash")
}

fn cold_start(binary: &Path, work: &Path, state: &Path) -> Duration {
    let started = Instant::now();
    let mut client = Client::spawn(binary, work, state);
    client.initialize();
    let elapsed = started.elapsed();
    drop(client);
    elapsed
}

/// Medians of `run("true")` and of the floor, measured in alternation so that drift in
/// the machine's load touches both alike.
fn call_against_floor(server: &mut Client) -> (Duration, Duration) {
    server.initialize();
    for _ in 0..20 {
        server.call("true");
    }
    let (mut calls, mut floors) = (Vec::new(), Vec::new());
    for _ in 0..ROUND_TRIPS {
        let started = Instant::now();
        server.call("true");
        calls.push(started.elapsed());
        floors.push(spawn_floor());
    }
    (median(calls), median(floors))
}

/// `run("true")` on one server, back to back and then in turn with neighbours: median
/// and p90 of each.
struct AmongNeighbours {
    row: String,
    quiet: (Duration, Duration),
    busy: (Duration, Duration),
}

/// `run("true")` 200 times back to back, then 200 times in turn with neighbours: each
/// call comes after one call to every neighbour, so the machine has spawned and
/// waited for other shells in between (see the module's documentation).
fn call_among_neighbours(binary: &Path, work: &Path, state: &Path, dir: &Path) -> AmongNeighbours {
    const CALLS: usize = 200;
    let mut peers = std::env::var_os("FORGE_BASH_BENCH_PEERS")
        .map(|peers| start_peers(Path::new(&peers), work, dir))
        .unwrap_or_default();
    let mut server = Client::spawn(binary, work, state);
    server.initialize();
    let timed = |server: &mut Client, between: &mut dyn FnMut()| {
        for _ in 0..20 {
            server.call("true");
        }
        let mut calls: Vec<Duration> = (0..CALLS)
            .map(|_| {
                between();
                let started = Instant::now();
                server.call("true");
                started.elapsed()
            })
            .collect();
        calls.sort();
        (calls[CALLS / 2], calls[CALLS * 9 / 10])
    };
    let quiet = timed(&mut server, &mut || {});
    let row = if peers.is_empty() {
        let busy = timed(&mut server, &mut || {
            spawn_floor();
            spawn_floor();
        });
        let row = "run(\"true\") in turn with neighbours (2 × `bash -c true` between calls)";
        return AmongNeighbours {
            row: row.to_owned(),
            quiet,
            busy,
        };
    } else {
        "run(\"true\") in turn with neighbours (desktop-commander, codex-shell-tool-mcp)"
    };
    let busy = timed(&mut server, &mut || {
        for (peer, name, args) in &mut peers {
            let answer = peer.call_tool(name, args.clone());
            assert!(answer.get("result").is_some(), "{answer}");
        }
    });
    AmongNeighbours {
        row: row.to_owned(),
        quiet,
        busy,
    }
}

/// The two peer servers installed in `peers` (see the module's documentation), each
/// with the tool call that runs `true`.
fn start_peers(peers: &Path, work: &Path, dir: &Path) -> Vec<(Client, &'static str, Value)> {
    let modules = peers.join("node_modules");
    let home = dir.join("peers-home");
    let config = home.join(".claude-server-commander");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"telemetryEnabled": false}"#).unwrap();
    let offline = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let node = |script: &str| {
        let mut command = Command::new(if offline { "unshare" } else { "node" });
        if offline {
            command.args(["-n", "node"]);
        }
        command
            .arg(modules.join(script))
            .current_dir(work)
            .env("HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        Client::from_command(command)
    };
    let mut commander = node("@wonderwhy-er/desktop-commander/dist/index.js");
    commander.initialize();
    let mut codex = node("@openai/codex-shell-tool-mcp/bin/mcp-server.js");
    codex.initialize_with(json!({"experimental": {"codex/sandbox-state": {"version": "1.0.0"}}}));
    // Without a sandbox policy it refuses to run anything: full access, as a user
    // who runs it outside Codex would set.
    let id = codex.send(
        json!({"jsonrpc": "2.0", "method": "codex/sandbox-state/update",
        "params": {"sandboxPolicy": {"type": "danger-full-access"}, "codexLinuxSandboxExe": null,
            "sandboxCwd": work, "useLinuxSandboxBwrap": false}}),
    );
    codex.response(id);
    vec![
        (
            commander,
            "start_process",
            json!({"command": "true", "timeout_ms": 5000}),
        ),
        (
            codex,
            "shell",
            json!({"command": "true", "workdir": work, "login": false}),
        ),
    ]
}

/// Medians of `run("true")` over HTTP and of the floor, in alternation: a server on
/// 127.0.0.1 with a token, one session, one kept-alive connection.
const TOKEN: &str = "bench-token-0123456789abcdef";

/// `forge-bash --http 127.0.0.1:0` with `args` and `env`: the child and its address.
fn http_server(binary: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(binary)
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .env("FORGE_BASH_HTTP_TOKEN", TOKEN)
        .env("RUST_LOG", "warn,forge_bash=info")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn forge-bash --http");
    let mut log = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(log.read_line(&mut line).unwrap() > 0, "no address logged");
        if let Some(addr) = line.split("addr=").nth(1) {
            break addr.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    (child, addr)
}

fn http_call_against_floor(binary: &Path, work: &Path, state: &Path) -> (Duration, Duration) {
    let args = [
        "--workdir".as_ref(),
        work.as_os_str(),
        "--state-dir".as_ref(),
        state.as_os_str(),
    ];
    let (mut child, addr) = http_server(binary, &args, &[]);
    let mut http = HttpClient::connect(addr, None);
    for _ in 0..20 {
        http.run("true");
    }
    let (mut calls, mut floors) = (Vec::new(), Vec::new());
    for _ in 0..ROUND_TRIPS {
        let started = Instant::now();
        http.run("true");
        calls.push(started.elapsed());
        floors.push(spawn_floor());
    }
    let _ = child.kill();
    let _ = child.wait();
    (median(calls), median(floors))
}

/// Two users of one HTTP service while one of them keeps the cores busy.
struct Neighbours {
    /// Bob's CPU-bound command beside alice's 6 busy loops, as a ratio to its time
    /// alone.
    cpu_ratio: f64,
    /// `run("true")` round trips of bob's, alone and beside alice's loops.
    quiet_true: Duration,
    busy_true: Duration,
    /// Users get a uid (and cgroups) of their own: the bench runs as root.
    own_uids: bool,
}

/// Bob's CPU-bound command: a shell loop of about half a second on an idle core.
const BOB_CPU: &str = "i=0; while [ $i -lt 400000 ]; do i=$((i + 1)); done; echo $i";

/// alice and bob on one `--http` service with `{user}` paths (as root, each with a uid
/// and cgroups of their own): bob's CPU-bound command and `run("true")` alone, then
/// while alice's call has left 6 busy loops running in the background.
fn users_sharing_cores(binary: &Path, dir: &Path) -> Neighbours {
    use std::os::unix::fs::PermissionsExt;
    let root = dir.join("users");
    std::fs::create_dir_all(&root).unwrap();
    // The users' uids pass through to their workdirs.
    for dir in [dir, &root] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let (work, state, uids) = (
        root.join("ws/{user}"),
        root.join("st/{user}"),
        root.join("uids"),
    );
    let args = [
        "--workdir".as_ref(),
        work.as_os_str(),
        "--state-dir".as_ref(),
        state.as_os_str(),
        "--timeout-secs".as_ref(),
        "600".as_ref(),
    ];
    // SAFETY: geteuid has no preconditions.
    let own_uids = unsafe { libc::geteuid() } == 0;
    let uids = uids.display().to_string();
    let mut env = vec![
        ("FORGE_BASH_USER_UIDS_FILE", uids.as_str()),
        ("FORGE_BASH_USER_UIDS", "390000-390019"),
    ];
    if !own_uids {
        env.push(("FORGE_BASH_ALLOW_SHARED_UID", "1"));
    }
    let (mut child, addr) = http_server(binary, &args, &env);
    let mut bob = HttpClient::connect(addr.clone(), Some("bob"));
    let timed = |bob: &mut HttpClient, command: &str| {
        let started = Instant::now();
        bob.run(command);
        started.elapsed()
    };
    let trues = |bob: &mut HttpClient| median((0..200).map(|_| timed(bob, "true")).collect());
    for _ in 0..20 {
        bob.run("true");
    }
    let quiet_cpu = median((0..5).map(|_| timed(&mut bob, BOB_CPU)).collect());
    let quiet_true = trues(&mut bob);
    // A connection of her own now: the service closes one that idles.
    let mut alice = HttpClient::connect(addr, Some("alice"));
    let loops = "for n in 1 2 3 4 5 6; do (while :; do :; done) > /dev/null 2>&1 & done";
    alice.run(loops);
    std::thread::sleep(Duration::from_millis(300));
    let busy_cpu = median((0..5).map(|_| timed(&mut bob, BOB_CPU)).collect());
    let busy_true = trues(&mut bob);
    // The server's end ends alice's loops with every other process of its calls.
    // SAFETY: SIGTERM to the server this function started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let _ = child.wait();
    Neighbours {
        cpu_ratio: busy_cpu.as_secs_f64() / quiet_cpu.as_secs_f64(),
        quiet_true,
        busy_true,
        own_uids,
    }
}

/// HTTP/1.1 on one kept-alive connection: POST /mcp, the answer's body whole.
struct HttpClient {
    stream: std::net::TcpStream,
    reader: BufReader<std::net::TcpStream>,
    addr: String,
    token: &'static str,
    session: Option<String>,
    /// The `X-User-ID` header, when given.
    user: Option<String>,
    next: u64,
}

impl HttpClient {
    /// A kept-alive connection to `addr` with an initialized session.
    fn connect(addr: String, user: Option<&str>) -> HttpClient {
        let stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut http = HttpClient {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
            addr,
            token: TOKEN,
            session: None,
            user: user.map(str::to_owned),
            next: 1,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}});
        http.post(&init.to_string());
        http.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        http
    }

    /// Runs `command`, which must exit 0.
    fn run(&mut self, command: &str) {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": "run", "arguments": {"command": command}}});
        let answer = self.post(&body.to_string());
        assert!(answer.contains("[exit:0 |"), "{answer}");
    }

    fn post(&mut self, body: &str) -> String {
        let mut session = self
            .session
            .as_ref()
            .map_or_else(String::new, |s| format!("Mcp-Session-Id: {s}\r\n"));
        if let Some(user) = &self.user {
            session.push_str(&format!("X-User-ID: {user}\r\n"));
        }
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n{session}\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        );
        self.stream.write_all(head.as_bytes()).unwrap();
        let mut line = String::new();
        let (mut length, mut chunked) = (0, false);
        let mut status = String::new();
        self.reader.read_line(&mut status).unwrap();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if header.starts_with("mcp-session-id:") {
                let id = line.split_once(':').map(|(_, id)| id.trim());
                self.session = id.map(str::to_owned);
            } else if let Some(n) = header.strip_prefix("content-length: ") {
                length = n.parse().unwrap();
            } else if header == "transfer-encoding: chunked" {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader.read_line(&mut line).unwrap();
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                std::io::Read::read_exact(&mut self.reader, &mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length, 0);
            std::io::Read::read_exact(&mut self.reader, &mut body).unwrap();
        }
        if !status.contains(" 20") {
            return format!("{status}{}", String::from_utf8_lossy(&body));
        }
        String::from_utf8_lossy(&body).into_owned()
    }

    /// Ends the session with a DELETE; the answer's status line.
    fn delete(&mut self) -> String {
        let head = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Mcp-Session-Id: {}\r\nX-User-ID: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            self.token,
            self.session.as_deref().unwrap_or_default(),
            self.user.as_deref().unwrap_or_default()
        );
        self.stream.write_all(head.as_bytes()).unwrap();
        let mut status = String::new();
        self.reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 204 "), "DELETE: {status}");
        status
    }
}

/// The server as a client starts it: piped stdin and stdout, stderr discarded.
fn server_command(binary: &Path, work: &Path, state: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(binary);
    command
        .args(args)
        .arg("--workdir")
        .arg(work)
        .arg("--state-dir")
        .arg(state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

fn spawn_floor() -> Duration {
    let started = Instant::now();
    let output = Command::new("bash")
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn bash");
    assert!(output.status.success());
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Responses that arrived before they were asked for.
    early: HashMap<u64, Value>,
}

impl Client {
    fn spawn(binary: &Path, work: &Path, state: &Path) -> Client {
        Client::spawn_with(binary, work, state, &[])
    }

    fn spawn_with(binary: &Path, work: &Path, state: &Path, args: &[&str]) -> Client {
        Client::from_command(server_command(binary, work, state, args))
    }

    /// Any MCP server on stdio.
    fn from_command(mut command: Command) -> Client {
        let mut child = command.spawn().expect("spawn an MCP server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
            next_id: 0,
            early: HashMap::new(),
        }
    }

    fn send(&mut self, message: Value) -> u64 {
        self.next_id += 1;
        let mut message = message;
        message["id"] = json!(self.next_id);
        writeln!(self.stdin, "{message}").unwrap();
        self.next_id
    }

    fn response(&mut self, id: u64) -> Value {
        if let Some(value) = self.early.remove(&id) {
            return value;
        }
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let value: Value = serde_json::from_str(&line).unwrap();
            match value["id"].as_u64() {
                Some(got) if got == id => return value,
                Some(other) => {
                    self.early.insert(other, value);
                }
                None => {}
            }
        }
    }

    fn initialize(&mut self) {
        self.initialize_with(json!({}));
    }

    fn initialize_with(&mut self, capabilities: Value) {
        let id = self.send(json!({"jsonrpc": "2.0", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": {"name": "bench", "version": "0"}}}));
        self.response(id);
        writeln!(
            self.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
    }

    fn start_call(&mut self, command: &str) -> u64 {
        self.send(json!({"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "run", "arguments": {"command": command}}}))
    }

    fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        let id = self.send(json!({"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
        self.response(id)
    }

    fn call(&mut self, command: &str) -> String {
        let id = self.start_call(command);
        let response = self.response(id);
        response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
