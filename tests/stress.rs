//! One call's end never holds up the others: timeouts amid fork storms answer in time,
//! and thousands of calls, cancelled at random moments or leaving jobs behind, are each
//! answered once with their own output and leave no process or descriptor behind.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Groups, Options, PATIENCE, Server, alive, eventually, landlock_here, text};

/// Every process whose environment carries one of `markers`.
fn carrying(markers: &HashSet<String>) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .filter_map(|v| v.strip_prefix(b"FORGE_BASH_CALL="))
                    .any(|m| markers.contains(std::str::from_utf8(m).unwrap_or("")))
            })
        })
        .collect()
}

/// Lines of a file the calls append to (empty when none wrote it yet).
fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// What a pipelined run saw of one call.
struct Seen {
    sent: Instant,
    answered: Option<(Duration, Value)>,
    cancelled: bool,
}

/// Sends `total` calls, `command(n)` each, with at most `window` in flight, and cancels
/// call `n` after `cancel(n)` when it gives a delay; returns what each call got.
fn pipelined(
    server: &mut Server,
    total: usize,
    window: usize,
    command: impl Fn(usize) -> String,
    cancel: impl Fn(usize) -> Option<Duration>,
) -> HashMap<u64, (usize, Seen)> {
    let mut seen: HashMap<u64, (usize, Seen)> = HashMap::new();
    let mut cancels: Vec<(Instant, u64)> = Vec::new();
    let mut open = 0;
    let mut next = 0;
    let deadline = Instant::now() + Duration::from_secs(240);
    while next < total || open > 0 {
        while next < total && open < window {
            let id = server.start_call(&command(next));
            if let Some(after) = cancel(next) {
                cancels.push((Instant::now() + after, id));
            }
            let call = Seen {
                sent: Instant::now(),
                answered: None,
                cancelled: false,
            };
            seen.insert(id, (next, call));
            next += 1;
            open += 1;
        }
        let now = Instant::now();
        for &(_, id) in cancels.iter().filter(|(at, _)| *at <= now) {
            server.send(&json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "stress"}
            }));
            let call = &mut seen.get_mut(&id).unwrap().1;
            if call.answered.is_none() {
                call.cancelled = true;
                // A cancelled call may get no answer: it no longer counts as open.
                open -= 1;
            }
        }
        cancels.retain(|(at, _)| *at > now);
        assert!(Instant::now() < deadline, "the run took over 240 s");
        let wait = cancels
            .iter()
            .map(|(at, _)| at.saturating_duration_since(now))
            .min()
            .unwrap_or(PATIENCE);
        let is_answer = |m: &Value| m.get("id").is_some() && m.get("method").is_none();
        let Some(answer) = server.try_wait_for(wait, &is_answer) else {
            assert!(
                !cancels.is_empty(),
                "no answer within {PATIENCE:?}; {open} open"
            );
            continue;
        };
        let id = answer["id"].as_u64().unwrap();
        let (_, call) = seen.get_mut(&id).expect("an answer to a call never made");
        assert!(call.answered.is_none(), "call {id} answered twice");
        if !call.cancelled {
            open -= 1;
        }
        call.answered = Some((call.sent.elapsed(), answer));
    }
    seen
}

/// The reproduction: commands that each start 20 loops forking `/bin/true`, 300
/// of them with 32 in flight and a 1 s timeout. Each timeout answers in time (killing a
/// call never waits on its dying processes), and nothing of the calls is left.
fn timeouts_amid_fork_storms(sandbox: bool) {
    let mut options = Options::default().timeout(1);
    if sandbox {
        options = options.arg("--sandbox");
    }
    let mut server = options.start();
    server.initialize();
    let workdir = server.workdir.clone();
    let storm = "echo $FORGE_BASH_CALL >> markers; echo $$ >> groups; \
        for k in $(seq 20); do (while :; do /bin/true & sleep 0.01; done) & done; \
        sleep 5 & wait";
    let seen = pipelined(&mut server, 300, 32, |_| storm.to_owned(), |_| None);
    let mut groups = Groups::default();
    for pgid in lines(&workdir.join("groups")) {
        groups.push(pgid.parse().unwrap());
    }
    let mut took: Vec<Duration> = seen
        .values()
        .map(|(_, call)| {
            let (took, answer) = call.answered.as_ref().expect("every call answered");
            let text = text(answer);
            assert!(text.contains("[exit:124 |"), "not a timeout: {text}");
            *took
        })
        .collect();
    took.sort();
    let slowest = *took.last().unwrap();
    eprintln!(
        "fork storms (sandbox: {sandbox}): 300 calls with a 1 s timeout answered in median {:?}, p90 {:?}, max {slowest:?}",
        took[took.len() / 2],
        took[took.len() * 9 / 10],
    );
    assert!(
        slowest < Duration::from_secs(5),
        "a 1 s timeout answered after {slowest:?}"
    );
    let markers: HashSet<String> = lines(&workdir.join("markers")).into_iter().collect();
    assert_eq!(markers.len(), 300, "each call wrote its marker");
    assert!(
        eventually(Duration::from_secs(20), || carrying(&markers).is_empty()),
        "processes of the calls left running: {:?}",
        carrying(&markers)
    );
    // The server still serves.
    assert!(server.run("echo still").starts_with("still\n"));
}

#[test]
fn timeouts_amid_fork_storms_answer_in_time_and_leave_nothing() {
    timeouts_amid_fork_storms(false);
}

#[test]
fn sandboxed_timeouts_amid_fork_storms_answer_in_time_and_leave_nothing() {
    if !landlock_here(1) {
        return;
    }
    timeouts_amid_fork_storms(true);
}

/// A shell stuck before it executes bash (here: born into a frozen cgroup, as a hung
/// filesystem or a stop signal would hold it) holds up nothing: other requests are
/// answered meanwhile, the call fails within the start bound saying why, the child is
/// killed, and later calls run once the cgroup thaws.
#[test]
fn a_shell_stuck_before_exec_is_killed_and_holds_up_nothing() {
    let mut server = Server::start(Options::default());
    server.initialize();
    assert!(server.run("echo warm").starts_with("warm\n"));
    let tree = format!("/sys/fs/cgroup/unified/forge-bash-{}", server.pid());
    let tree = [tree, format!("/sys/fs/cgroup/forge-bash-{}", server.pid())]
        .into_iter()
        .find(|t| std::path::Path::new(t).join("cgroup.freeze").exists());
    let Some(tree) = tree else {
        eprintln!("skipped: the server has no cgroup v2 tree of its own to freeze here");
        return;
    };
    let freeze = format!("{tree}/cgroup.freeze");
    if std::fs::write(&freeze, "1").is_err() {
        eprintln!("skipped: {freeze} cannot be written by this user");
        return;
    }
    let started = Instant::now();
    let stuck = server.start_call("echo never");
    // The server goes on serving while the spawn is stuck.
    let listed = server.request("tools/list", json!({}));
    let list = server.response(listed);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "tools/list waited {:?} for a stuck spawn: {list}",
        started.elapsed()
    );
    let refused = server.run("rm -rf x");
    assert!(refused.contains("rm"), "{refused}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let answer = text(&server.response(stuck));
    let took = started.elapsed();
    std::fs::write(&freeze, "0").unwrap();
    assert!(
        answer.starts_with("ERROR: Execution failed: ")
            && answer.contains("did not start within 10 s")
            && answer.contains("it was killed"),
        "{answer}"
    );
    assert!(
        took < Duration::from_secs(20),
        "the stuck call answered after {took:?}"
    );
    eprintln!("a shell stuck before exec: the call answered after {took:?}");
    // Later calls run: the thread that was stuck is not used again.
    for n in 0..5 {
        let answer = server.run(&format!("echo after {n}"));
        assert!(answer.starts_with(&format!("after {n}\n")), "{answer}");
    }
}
