//! Every process a stopped call started is gone, whatever group it moved to; the
//! server's death takes its calls along (background jobs of answered calls stay only
//! with --keep-background); a call's processes are limited in number; a killed
//! watchdog is replaced; calls beyond --max-concurrent wait their turn.
//!
//! Each command writes its marker (`$FORGE_BASH_CALL`) and the pids it starts into the
//! workdir; the test then looks through /proc for anything left of the call.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Groups, Options, PATIENCE, Server, alive, eventually, read_pid, text};

/// Processes whose environment carries the call's marker.
fn leftovers(marker: &str) -> Vec<i32> {
    crate::support::carrying(|m| m == marker)
}

fn marker(dir: &Path) -> String {
    let path = dir.join("marker");
    assert!(eventually(Duration::from_secs(10), || path.exists()));
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

/// Starts processes that leave the call's group three ways and records them:
/// `set -m` (a job gets its own group), `setsid`, and a double fork.
const ESCAPEES: &str = "echo $FORGE_BASH_CALL > marker; \
    setsid sh -c 'echo $$ > a; exec sleep 3000' & \
    (setsid sh -c 'echo $$ > b; exec sleep 3000' &); \
    set -m; sh -c 'echo $$ > c; exec sleep 3000' & set +m; ";

fn escapees(server: &Server, groups: &mut Groups) -> Vec<i32> {
    let pids: Vec<i32> = ["a", "b", "c"]
        .iter()
        .map(|name| read_pid(&server.workdir.join(name)))
        .collect();
    for &pid in &pids {
        groups.push(pid);
        assert!(alive(pid));
    }
    pids
}

#[track_caller]
fn all_gone_within_a_second(pids: &[i32], marker: &str) {
    assert!(
        eventually(Duration::from_secs(1), || pids.iter().all(|&p| !alive(p))
            && leftovers(marker).is_empty()),
        "left behind: {:?} / {:?}",
        pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>(),
        leftovers(marker)
    );
}

#[test]
fn timeout_kills_processes_that_left_the_group() {
    let mut server = Options::default().timeout(1).start();
    let mut groups = Groups::default();
    let id = server.start_call(&format!("{ESCAPEES} sleep 60; echo never"));
    let pids = escapees(&server, &mut groups);
    let marker = marker(&server.workdir);
    let answer = text(&server.response(id));
    assert!(
        answer.starts_with("ERROR: Command timed out after 1 s."),
        "{answer}"
    );
    all_gone_within_a_second(&pids, &marker);
}

#[test]
fn set_minus_m_foreground_job_dies_at_the_timeout() {
    let mut server = Options::default().timeout(1).start();
    let mut groups = Groups::default();
    let id = server.start_call(
        "echo $FORGE_BASH_CALL > marker; set -m; sh -c 'echo $$ > a; exec sleep 3000'; echo never",
    );
    let pid = read_pid(&server.workdir.join("a"));
    groups.push(pid);
    let marker = marker(&server.workdir);
    assert!(text(&server.response(id)).contains("timed out"));
    all_gone_within_a_second(&[pid], &marker);
}

#[test]
fn cap_kills_processes_that_left_the_group() {
    let mut server = Options::default()
        .arg("--max-output-bytes")
        .arg("100000")
        .start();
    let mut groups = Groups::default();
    let id = server.start_call(&format!("{ESCAPEES} sleep 0.5; yes"));
    let pids = escapees(&server, &mut groups);
    let marker = marker(&server.workdir);
    assert!(text(&server.response(id)).contains("Output limit of 100000 bytes reached"));
    all_gone_within_a_second(&pids, &marker);
}

#[test]
fn cancel_kills_processes_that_left_the_group() {
    let mut server = Server::start(Options::default());
    server.initialize();
    let mut groups = Groups::default();
    let id = server.start_call(&format!("{ESCAPEES} sleep 60"));
    let pids = escapees(&server, &mut groups);
    let marker = marker(&server.workdir);
    cancel(&mut server, id);
    all_gone_within_a_second(&pids, &marker);
    assert!(eventually(Duration::from_secs(5), || server
        .audit_rows()
        .len()
        == 1));
    assert_eq!(server.audit_rows()[0][2], "130");
}

#[test]
fn shutdown_kills_processes_that_left_the_group() {
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    server.start_call(&format!("{ESCAPEES} sleep 60"));
    let pids = escapees(&server, &mut groups);
    let marker = marker(&server.workdir);
    // SAFETY: a plain syscall to the server process this test spawned.
    unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGTERM) };
    assert!(
        server
            .wait_exit(Duration::from_secs(5))
            .is_some_and(|s| s.success())
    );
    all_gone_within_a_second(&pids, &marker);
    assert_eq!(server.audit_rows()[0][2], "143");
}

#[test]
fn an_empty_environment_escapes_only_where_there_is_no_cgroup() {
    let mut server = Options::default().timeout(1).start();
    let mut groups = Groups::default();
    let id = server.start_call("env -i setsid sh -c 'echo $$ > d; exec sleep 3000' & sleep 60");
    let pid = read_pid(&server.workdir.join("d"));
    groups.push(pid);
    assert!(text(&server.response(id)).contains("timed out"));
    assert!(server.logged("containment of commands"));
    if server.stderr().contains("cgroup per call") {
        assert!(eventually(Duration::from_secs(1), || !alive(pid)));
    } else {
        eprintln!("no cgroup for calls here: `env -i setsid` stays out of reach, as documented");
    }
}

/// A call's cgroup serves the next calls once empty, but not one that was killed: a
/// cgroup killed through `cgroup.kill` may kill what is later cloned into it. Killed by
/// the server (a timeout), or by a command of its own, the next calls still run.
#[test]
fn calls_after_a_killed_cgroup_still_run() {
    let mut server = Options::default().timeout(1).start();
    assert!(eventually(PATIENCE, || server
        .stderr()
        .contains("containment of commands")));
    if !server.stderr().contains("cgroup per call") {
        eprintln!("skipped: no cgroup for calls here");
        return;
    }
    assert!(server.run("echo warm").starts_with("warm\n"));
    assert!(server.run("sleep 30").contains("timed out"));
    for n in 0..3 {
        let answer = server.run(&format!("echo after-timeout {n}"));
        assert!(
            answer.starts_with(&format!("after-timeout {n}\n")),
            "{answer}"
        );
    }
    let own_kill = "m=$(awk '{ for (i = 1; i < NF; i++) if ($i == \"-\") { if ($(i + 1) == \"cgroup2\") print $5; break } }' /proc/self/mountinfo | head -n 1); \
                    echo 1 > \"$m$(sed -n 's/^0:://p' /proc/self/cgroup)/cgroup.kill\"; echo survived";
    let answer = server.run(own_kill);
    assert!(answer.contains("[exit:137 "), "{answer}");
    for n in 0..3 {
        let answer = server.run(&format!("echo after-own-kill {n}"));
        assert!(
            answer.starts_with(&format!("after-own-kill {n}\n")),
            "{answer}"
        );
    }
}

fn cancel(server: &mut Server, id: u64) {
    server.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "test"}
    }));
}

#[test]
fn a_cancel_in_the_grace_stops_the_call_and_one_after_the_answer_does_nothing() {
    let mut server = Server::start(Options::default());
    server.initialize();
    let mut groups = Groups::default();
    let fifo = server.workdir.join("go");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // The shell exits when the test writes to the fifo, leaving a child on the pipes:
    // the call is then in its grace.
    let id = server.start_call(
        "echo $FORGE_BASH_CALL > marker; echo $$ > shell; (echo $BASHPID > bg; exec sleep 30) & \
         cat go > /dev/null",
    );
    let bg = read_pid(&server.workdir.join("bg"));
    let shell = read_pid(&server.workdir.join("shell"));
    // The shell leads the call's group, which `bg` belongs to.
    groups.push(shell);
    let marker = marker(&server.workdir);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .unwrap()
        .write_all(b"go\n")
        .unwrap();
    // The shell is gone (reaped): the call is in its 250 ms grace, waiting on `bg`.
    assert!(eventually(Duration::from_secs(5), || !alive(shell)));
    cancel(&mut server, id);
    all_gone_within_a_second(&[bg], &marker);
    assert!(eventually(Duration::from_secs(5), || server
        .audit_rows()
        .len()
        == 1));
    assert_eq!(server.audit_rows()[0][2], "130");
    // Cancelled: no answer was sent, and the call left no job, so no file for one.
    assert!(server.drain_buffered().iter().all(|m| m["id"] != json!(id)));
    assert_eq!(server.audit_rows()[0].len(), 4);
    assert!(!server.state.join("cmd-1.bg.txt").exists());

    // After the answer, a cancel changes nothing.
    let id = server
        .start_call("echo $$ > pgid2; sleep 3000 > /dev/null 2>&1 & echo $! > keep; echo done");
    assert!(text(&server.response(id)).starts_with("done\n"));
    let keep = read_pid(&server.workdir.join("keep"));
    groups.push(read_pid(&server.workdir.join("pgid2")));
    cancel(&mut server, id);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        alive(keep),
        "a cancel after the answer killed a background job"
    );
    assert_eq!(server.audit_rows()[1][2], "0");
    // SAFETY: the test's own recorded process.
    unsafe { libc::kill(keep, libc::SIGKILL) };
}

#[test]
fn background_jobs_of_answered_calls_stay() {
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    // One redirected, one writing to the call's pipes now and then.
    let answer = server.run(
        "echo $$ > pgid; sleep 3000 > log 2>&1 & echo $! > quiet; \
         (echo $BASHPID > ticking; while :; do echo tick; sleep 0.1; done) & echo started",
    );
    assert!(answer.contains("started\n"), "{answer}");
    let quiet = read_pid(&server.workdir.join("quiet"));
    let ticking = read_pid(&server.workdir.join("ticking"));
    groups.push(read_pid(&server.workdir.join("pgid")));
    std::thread::sleep(Duration::from_secs(1));
    assert!(alive(quiet) && alive(ticking));
    // SAFETY: the test's own recorded processes.
    unsafe {
        libc::kill(quiet, libc::SIGKILL);
        libc::kill(ticking, libc::SIGKILL);
    }
}

/// CPU time (user + system) of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn the_cap_counts_what_background_jobs_write_after_the_answer() {
    // A small cap: the writer is killed once it passes it.
    let mut server = Options::default()
        .arg("--max-output-bytes")
        .arg("1000000")
        .start();
    let mut groups = Groups::default();
    let answer =
        server.run("echo $$ > pgid; (sleep 0.3; echo $BASHPID > yes; exec yes) & echo bye");
    assert!(answer.starts_with("bye\n"), "{answer}");
    let yes = read_pid(&server.workdir.join("yes"));
    groups.push(read_pid(&server.workdir.join("pgid")));
    assert!(
        eventually(Duration::from_secs(5), || !alive(yes)),
        "yes still writing past the cap"
    );

    // The default cap: what the server pays for the 50 MB it reads after the answer is
    // bounded (a generous bound: the pipe read in small pieces on a loaded machine
    // costs more than on an idle one), and once the writer is killed it pays nothing.
    let mut server = Server::start(Options::default());
    let answer =
        server.run("echo $$ > pgid; (sleep 0.2; echo $BASHPID > yes; exec yes) & echo started");
    assert!(answer.contains("started\n"), "{answer:.200}");
    let yes = read_pid(&server.workdir.join("yes"));
    groups.push(read_pid(&server.workdir.join("pgid")));
    let ticks = cpu_ticks(server.pid());
    assert!(
        eventually(Duration::from_secs(20), || !alive(yes)),
        "yes still writing past the cap"
    );
    let capped = (cpu_ticks(server.pid()) - ticks) as f64 / clock_ticks();
    let ticks = cpu_ticks(server.pid());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let used = (cpu_ticks(server.pid()) - ticks) as f64 / clock_ticks();
    let share = used / started.elapsed().as_secs_f64();
    eprintln!(
        "server CPU for the 50 MB after the answer: {capped:.2} s; then {:.1} % of a core",
        share * 100.0
    );
    assert!(
        capped <= 2.0,
        "the server used {capped:.2} s of CPU for 50 MB"
    );
    assert!(
        share <= 0.05,
        "the server used {:.1} % of a core",
        share * 100.0
    );
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

#[test]
fn server_death_takes_every_call_along_unless_background_jobs_are_kept() {
    for keep in [false, true] {
        let (mut server, mut groups, background) = crate::support::server_with_background_job(keep);
        server.start_call(&format!("{ESCAPEES} echo $$ > shell; sleep 3000"));
        let mut pids = escapees(&server, &mut groups);
        let shell = read_pid(&server.workdir.join("shell"));
        groups.push(shell);
        pids.push(shell);
        let marker = marker(&server.workdir);
        // SAFETY: a plain syscall to the server process this test spawned.
        unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGKILL) };
        all_gone_within_a_second(&pids, &marker);
        let gone = eventually(Duration::from_secs(2), || !alive(background));
        assert_eq!(gone, !keep, "keep-background {keep}: answered call's job");
    }
}

/// The `forge-bash-<pid>` directories that server `pid` made for its calls, in every
/// cgroup hierarchy mounted here.
fn cgroup_dirs_of(pid: u32) -> Vec<std::path::PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let mounts = mountinfo.lines().filter_map(|line| {
        let (fields, tail) = line.split_once(" - ")?;
        (tail.starts_with("cgroup ") || tail.starts_with("cgroup2 "))
            .then(|| fields.split(' ').nth(4))
            .flatten()
    });
    let mut dirs = Vec::new();
    for mount in mounts {
        for path in own.lines().filter_map(|l| l.splitn(3, ':').nth(2)) {
            let dir = Path::new(mount)
                .join(path.trim_start_matches('/'))
                .join(format!("forge-bash-{pid}"));
            if dir.is_dir() && !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}

#[test]
fn server_death_removes_its_cgroup_directories() {
    let (mut server, _groups, background) = crate::support::server_with_background_job(false);
    server.run("true");
    let dirs = cgroup_dirs_of(server.pid());
    if dirs.is_empty() {
        eprintln!("skipped: no cgroup for calls here");
        return;
    }
    // SAFETY: a plain syscall to the server process this test spawned.
    unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGKILL) };
    assert!(eventually(Duration::from_secs(2), || !alive(background)));
    assert!(
        eventually(Duration::from_secs(5), || dirs.iter().all(|d| !d.exists())),
        "left behind: {:?}",
        dirs.iter().filter(|d| d.exists()).collect::<Vec<_>>()
    );
}

/// The watchdog this server started: its child running `forge-bash __watchdog`.
fn watchdog_of(server: &Server) -> Option<i32> {
    let parent = server.pid().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent.as_str())
                && cmdline.split(|&b| b == 0).any(|a| a == b"__watchdog")
                && alive(*pid)
        })
}

#[test]
fn a_killed_watchdog_is_replaced_and_server_death_still_ends_calls() {
    let mut server = Server::start(Options::default());
    let mut groups = Groups::default();
    let mut first = None;
    assert!(eventually(Duration::from_secs(5), || {
        first = watchdog_of(&server);
        first.is_some()
    }));
    let first = first.unwrap();
    // The watchdog leads a session and group of its own (setsid).
    // SAFETY: a plain syscall on the group of a process this test's server started.
    unsafe { libc::killpg(first, libc::SIGKILL) };
    assert!(eventually(PATIENCE, || {
        server
            .stderr()
            .contains("the watchdog died; starting another")
    }));
    let mut second = None;
    assert!(eventually(Duration::from_secs(5), || {
        second = watchdog_of(&server).filter(|&p| p != first);
        second.is_some()
    }));
    // It knows of calls started before it: one that was running when it started...
    server.start_call("echo $FORGE_BASH_CALL > marker; echo $$ > shell; sleep 3000");
    let marker = marker(&server.workdir);
    let shell = read_pid(&server.workdir.join("shell"));
    groups.push(shell);
    // SAFETY: a plain syscall to the server process this test spawned.
    unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGKILL) };
    all_gone_within_a_second(&[shell], &marker);
}

/// A server with `--max-processes 64` whose first call started `job` in the
/// background: the server, the call's group for cleanup, its id and its marker; `None`
/// (the test skips) where this machine gives calls no process limit.
fn limited_call(job: &str) -> Option<(Server, Groups, i32, String)> {
    let mut server = Options::default().arg("--max-processes").arg("64").start();
    if !limited(&server) {
        return None;
    }
    let mut groups = Groups::default();
    let answer = server.run(&format!(
        "echo $FORGE_BASH_CALL > marker; echo $$ > pgid; {job} > /dev/null 2>&1 & echo started"
    ));
    assert!(answer.starts_with("started\n"), "{answer}");
    let pgid = read_pid(&server.workdir.join("pgid"));
    groups.push(pgid);
    let marker = marker(&server.workdir);
    Some((server, groups, pgid, marker))
}

/// Skips unless this machine gives calls a process limit (a `pids` controller).
fn limited(server: &Server) -> bool {
    assert!(eventually(PATIENCE, || server
        .stderr()
        .contains("containment of commands")));
    let limited = server.stderr().contains("processes per call");
    if !limited {
        eprintln!("skipped: no pids cgroup controller here, so no process limit");
    }
    limited
}

#[test]
fn a_call_has_at_most_max_processes_and_the_next_call_can_stop_them() {
    // 300 sleeps in the background; at most 64 processes may exist for the call.
    let spawner = "(for i in $(seq 300); do sleep 3000 & done)";
    let Some((mut server, _groups, pgid, marker)) = limited_call(spawner) else {
        return;
    };
    assert!(eventually(Duration::from_secs(10), || leftovers(&marker)
        .len()
        >= 60));
    std::thread::sleep(Duration::from_millis(500));
    let count = leftovers(&marker).len();
    assert!((60..=64).contains(&count), "{count} processes");
    // The next call is not starved, and it can stop what the first one started.
    let answer = server.run(&format!("kill -9 -- -{pgid} && echo stopped"));
    assert!(answer.starts_with("stopped\n"), "{answer}");
    assert!(eventually(Duration::from_secs(5), || leftovers(&marker).is_empty()));
}

#[test]
fn a_background_fork_bomb_neither_disables_the_tool_nor_outlives_the_server() {
    let Some((mut server, _groups, _, marker)) = limited_call("(:(){ :|:& };:)") else {
        return;
    };
    assert!(eventually(Duration::from_secs(10), || leftovers(&marker)
        .len()
        >= 32));
    for n in 0..3 {
        let answer = server.run(&format!(
            "echo alive {n} && ls / > /dev/null && echo forked"
        ));
        assert!(
            answer.starts_with(&format!("alive {n}\nforked\n")),
            "{answer}"
        );
    }
    assert!(leftovers(&marker).len() <= 64);
    server.close_stdin();
    assert!(server.wait_exit(PATIENCE).is_some());
    assert!(
        eventually(Duration::from_secs(5), || leftovers(&marker).is_empty()),
        "{} left",
        leftovers(&marker).len()
    );
}

#[test]
fn calls_beyond_the_limit_wait_in_order_and_can_be_cancelled() {
    let mut server = Options::default()
        .arg("--max-concurrent")
        .arg("1")
        .timeout(2)
        .start();
    server.initialize();
    let started = Instant::now();
    let first = server.start_call("sleep 1.5; echo first");
    let second = server.start_call("sleep 1.5; echo second");
    let waiting = server.start_call("touch ran");
    std::thread::sleep(Duration::from_millis(300));
    cancel(&mut server, waiting);
    // The second call's timeout (2 s) starts when it starts, not when it arrived.
    assert!(text(&server.response(first)).starts_with("first\n"));
    assert!(text(&server.response(second)).starts_with("second\n"));
    assert!(started.elapsed() >= Duration::from_millis(2900));
    assert!(
        !server.workdir.join("ran").exists(),
        "a cancelled waiting call ran"
    );
    let rows = server.audit_rows();
    let cancelled = rows.iter().find(|r| r[1] == "touch ran").expect("audited");
    assert_eq!((cancelled[2].as_str(), cancelled[3].as_str()), ("130", "0"));

    let mut server = Options::default().arg("--max-concurrent").arg("2").start();
    let started = Instant::now();
    let ids: Vec<u64> = (0..4).map(|_| server.start_call("sleep 1")).collect();
    for id in ids {
        server.response(id);
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(8),
        "{took:?}"
    );
}

/// The server raises its own soft limit on open files to the hard limit; its commands
/// get the soft limit it started with (programs built on `select()` break past 1,024).
#[test]
fn the_open_file_limit_is_raised_to_the_hard_limit_for_the_server_alone() {
    let mut server = Options::default()
        .through(&["sh", "-c", "ulimit -Sn 256 && exec \"$@\"", "sh"])
        .start();
    let answer = server.run("ulimit -Sn; ulimit -Hn");
    let mut lines = answer.lines();
    let (soft, hard) = (lines.next().unwrap(), lines.next().unwrap());
    assert_eq!(soft, "256", "{answer}");
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid())).unwrap();
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let words: Vec<&str> = open_files.split_whitespace().collect();
    assert_eq!((words[3], words[4]), (hard, hard), "{open_files}");
}

/// A server started in a PID namespace of its own (a container's, `unshare -p`) that
/// shares the cgroup tree removes none of a live server's cgroups at its start-up: the
/// pids in their names are not its namespace's. It removed every emptied call cgroup
/// the live server kept for its next calls, whose spawns into one then failed with
/// `cannot start /usr/bin/bash: No such file or directory`.
#[test]
fn a_server_in_another_pid_namespace_leaves_a_live_servers_cgroups_alone() {
    let mut live = Server::start(crate::support::Options::default());
    // Calls that end by themselves: their emptied cgroups are kept for the next.
    for _ in 0..4 {
        assert!(live.run("true").contains("[exit:0 "));
    }
    let kept: Vec<std::path::PathBuf> = cgroup_dirs_of(live.pid())
        .iter()
        .filter_map(|tree| std::fs::read_dir(tree).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    if kept.is_empty() {
        eprintln!("skipped: the server keeps no call cgroups here");
        return;
    }
    let mut other = crate::support::Options::default()
        .through(&["unshare", "-fp", "--mount-proc"])
        .start();
    let answer = other.run("true");
    if !answer.contains("[exit:0 ") {
        eprintln!(
            "skipped: PID namespaces are refused here: {}",
            other.stderr()
        );
        return;
    }
    for dir in &kept {
        assert!(dir.is_dir(), "{} was removed", dir.display());
    }
    for _ in 0..8 {
        assert_eq!(
            crate::support::mask_ms(&live.run("echo alive")),
            "alive\n\n[exit:0 | Xms]"
        );
    }
}
