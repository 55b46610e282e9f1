//! One call's end never holds up the others: timeouts amid fork storms answer in time,
//! and thousands of calls, cancelled at random moments or leaving jobs behind, are each
//! answered once with their own output and leave no process or descriptor behind.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[allow(dead_code)]
mod support;

use support::{Groups, Options, PATIENCE, Server, alive, eventually, landlock_here, text};

/// One test at a time: each loads the machine on purpose.
fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every process whose environment carries one of `markers`.
fn carrying(markers: &HashSet<String>) -> Vec<i32> {
    support::carrying(|m| markers.contains(m))
}

/// Lines of a file the calls append to (empty when none wrote it yet).
fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Each thread of `pid`: its name, state and where in the kernel it waits.
fn threads(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return String::new();
    };
    tasks
        .flatten()
        .map(|task| {
            let read =
                |name: &str| std::fs::read_to_string(task.path().join(name)).unwrap_or_default();
            let stat = read("stat");
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            let state = state.split(' ').next().unwrap_or("");
            format!("{} {state} {}", read("comm").trim(), read("wchan"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
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
                "no answer within {PATIENCE:?}; {open} open; the server's threads:\n{}\nits log's end:\n{}",
                threads(server.pid()),
                tail(&server.stderr(), 30)
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
    // The groups the calls recorded are killed however the test ends.
    struct Recorded(std::path::PathBuf);
    impl Drop for Recorded {
        fn drop(&mut self) {
            let mut groups = Groups::default();
            for pgid in lines(&self.0).iter().filter_map(|l| l.parse().ok()) {
                groups.push(pgid);
            }
        }
    }
    let _recorded = Recorded(workdir.join("groups"));
    let seen = pipelined(&mut server, 300, 32, |_| storm.to_owned(), |_| None);
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
    // A call stopped before its shell ran a line has none.
    assert!(
        markers.len() > 250,
        "{} calls wrote their marker",
        markers.len()
    );
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
    let _alone = alone();
    timeouts_amid_fork_storms(false);
}

#[test]
fn sandboxed_timeouts_amid_fork_storms_answer_in_time_and_leave_nothing() {
    let _alone = alone();
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
    let _alone = alone();
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
    // Thawed however the test ends.
    struct Thaw<'a>(&'a str);
    impl Drop for Thaw<'_> {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0, "0");
        }
    }
    let _thaw = Thaw(&freeze);
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

/// Where `clone3` is refused (older container runtimes' seccomp profiles), calls run
/// through the fork fallback with the same results: output, exit codes, a timeout that
/// stops the group, a shell that cannot start. `.ci/run` runs the execution,
/// containment and lifecycle tests this way too.
#[test]
fn with_clone3_refused_calls_run_through_the_fork_fallback() {
    let _alone = alone();
    let mut server = Options {
        refuse_clone3: true,
        ..Options::default().timeout(1)
    }
    .start();
    server.initialize();
    let answer = server.run("echo out; echo err >&2; exit 3");
    assert!(answer.starts_with("out\n"), "{answer}");
    assert!(
        answer.contains("err") && answer.contains("[exit:3 |"),
        "{answer}"
    );
    let answer = server.run("echo $$ > group; sleep 30");
    assert!(answer.contains("[exit:124 |"), "{answer}");
    let mut groups = Groups::default();
    let group = support::read_pid(&server.workdir.join("group"));
    groups.push(group);
    assert!(eventually(Duration::from_secs(5), || !alive(group)));
    assert!(
        server.logged("clone3 refused; forking instead"),
        "the fallback did not run:\n{}",
        server.stderr()
    );
}

/// The call cgroups the server `pid` has in every hierarchy.
fn call_cgroups(pid: u32) -> Vec<std::path::PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found = Vec::new();
    for line in mountinfo.lines() {
        let Some((fields, tail)) = line.split_once(" - ") else {
            continue;
        };
        if !(tail.starts_with("cgroup ") || tail.starts_with("cgroup2 ")) {
            continue;
        }
        let Some(mount) = fields.split(' ').nth(4) else {
            continue;
        };
        for path in own.lines().filter_map(|l| l.splitn(3, ':').nth(2)) {
            let tree = std::path::Path::new(mount)
                .join(path.trim_start_matches('/'))
                .join(format!("forge-bash-{pid}"));
            for entry in std::fs::read_dir(&tree).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) && !found.contains(&entry.path()) {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

fn descriptors(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// 2,000 calls with 64 in flight: half are cancelled at random moments, a quarter
/// leave a subshell writing after the answer. Every call is answered at most once, a
/// call not cancelled exactly once, each answer holds its own call's output and no
/// other's; afterwards no process of any call runs, and the server holds no more call
/// cgroups or descriptors than it keeps for later calls.
#[test]
fn thousands_of_calls_cancelled_at_random_leave_nothing_behind() {
    let _alone = alone();
    let mut server = Options::default().start();
    server.initialize();
    let pid = server.pid();
    let workdir = server.workdir.clone();
    // Warm up: what the server keeps for later calls (spawning threads, cgroups).
    let warm: Vec<u64> = (0..64).map(|_| server.start_call("sleep 0.2")).collect();
    for id in warm {
        server.response(id);
    }
    let before = descriptors(pid);
    let command = |n: usize| {
        let tail = match n % 4 {
            0 => "sleep 0.$((RANDOM % 3));".to_owned(),
            1 => format!("(sleep 0.3; echo late-{n}) &"),
            2 => "sleep 0.5;".to_owned(),
            _ => String::new(),
        };
        format!("echo $FORGE_BASH_CALL >> markers; echo out-{n}; {tail} echo end-{n}")
    };
    // A fixed sequence, so that a failure can be replayed.
    let cancel = |n: usize| {
        let mixed = (n as u64).wrapping_mul(6_364_136_223_846_793_005) >> 33;
        n.is_multiple_of(2)
            .then(|| Duration::from_millis(mixed % 400))
    };
    let started = Instant::now();
    let seen = pipelined(&mut server, 2000, 64, command, cancel);
    let took = started.elapsed();
    let mut answered = 0;
    let mut cancelled_unanswered = 0;
    for (n, call) in seen.values() {
        let Some((_, answer)) = &call.answered else {
            assert!(call.cancelled, "call {n} was never answered");
            cancelled_unanswered += 1;
            continue;
        };
        answered += 1;
        let text = text(answer);
        let own = format!("out-{n}\n");
        let cancelled_early = call.cancelled && !text.contains(&own);
        assert!(text.contains(&own) || cancelled_early, "call {n}: {text}");
        for word in text.split(|c: char| c.is_whitespace()) {
            for prefix in ["out-", "end-", "late-"] {
                if let Some(m) = word.strip_prefix(prefix) {
                    assert_eq!(m, n.to_string(), "call {n} shows another's output: {text}");
                }
            }
        }
    }
    eprintln!(
        "2,000 calls, 64 in flight, in {took:?}: {answered} answered, {cancelled_unanswered} cancelled before an answer"
    );
    let markers: HashSet<String> = lines(&workdir.join("markers")).into_iter().collect();
    assert!(
        eventually(Duration::from_secs(20), || carrying(&markers).is_empty()),
        "processes of the calls left running: {:?}",
        carrying(&markers)
    );
    // What the server keeps for later calls: 4 call cgroups in cgroup v2, a few spare
    // spawn slots in the v1 pids hierarchy, its cpu cgroup's none.
    assert!(
        eventually(Duration::from_secs(20), || call_cgroups(pid).len() <= 12),
        "call cgroups left: {:?}",
        call_cgroups(pid)
    );
    if let Some(before) = before {
        assert!(
            eventually(Duration::from_secs(20), || descriptors(pid)
                .is_some_and(|now| now <= before + 12)),
            "descriptors grew from {before} to {:?}",
            descriptors(pid)
        );
    }
    assert!(server.run("echo still").starts_with("still\n"));
}
