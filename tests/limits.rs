//! What commands consume is bounded: `--max-memory` per user (a memory cgroup, or
//! `RLIMIT_DATA` without one), the out-of-memory answer, `oom_score_adj` 1000, and
//! commands below the server (nice, IO priority).

use crate::support::{Options, PATIENCE, Server, eventually, text};

/// Allocates and touches 1 GiB, after a line of output.
const GIGABYTE: &str = "echo before; python3 -c 'a = bytearray(1 << 30); print(len(a))'";

/// A server with `args`, once its start-up line (which names the memory limit's
/// mechanism) was logged.
fn started(options: Options) -> Server {
    let server = options.start();
    assert!(eventually(PATIENCE, || server
        .stderr()
        .contains("containment of commands")));
    server
}

/// Whether the start-up line says a memory cgroup holds the commands; says why not.
fn memory_cgroup(server: &Server) -> bool {
    let stderr = server.stderr();
    let here = stderr.contains("of memory per user (memory, cgroup");
    if !here {
        assert!(
            stderr.contains("RLIMIT_DATA: no memory cgroup here"),
            "{stderr}"
        );
        eprintln!("skipped: no memory cgroup for calls here (the RLIMIT_DATA fallback)");
    }
    here
}

#[test]
fn a_gigabyte_under_256m_is_killed_answered_as_out_of_memory_and_audited_137() {
    let mut server = started(Options::default().arg("--max-memory").arg("256M"));
    if !memory_cgroup(&server) {
        return;
    }
    assert!(
        server
            .stderr()
            .contains("at most 256 MiB of memory per user")
    );
    let answer = server.call(GIGABYTE);
    let shown = text(&answer);
    let expected = "ERROR: Out of memory: the command reached its limit of 256 MiB (--max-memory) and was killed.\nbefore\n\n[exit:137 | ";
    assert!(shown.starts_with(expected), "{shown}");
    assert!(crate::support::is_error(&answer));
    // The server, and the next call, go on.
    assert_eq!(
        crate::support::mask_ms(&server.run("echo next")),
        "next\n\n[exit:0 | Xms]"
    );
    let rows = server.audit_rows();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0][2], "137");
    assert_eq!(rows[1][2], "0");
    // A command killed otherwise (its own SIGKILL) is not called out of memory.
    let killed = server.run("kill -9 $$");
    assert!(killed.contains("[exit:137 | "), "{killed}");
    assert!(!killed.contains("Out of memory"), "{killed}");
}

/// The limit is the user's: every call and background job together. A job holding
/// 200 MiB and a call allocating 200 MiB under 300 MiB cannot both hold it.
#[test]
fn a_background_job_and_a_call_cannot_both_hold_more_than_the_limit() {
    let mut server = started(Options::default().arg("--max-memory").arg("300M"));
    if !memory_cgroup(&server) {
        return;
    }
    let hold = "python3 -c 'import time; a = bytearray(200 << 20); open(\"held\", \"w\").close(); time.sleep(60)' > /dev/null 2>&1 & echo $! > job";
    assert!(server.run(hold).contains("[exit:0"));
    let workdir = server.workdir.clone();
    assert!(eventually(PATIENCE, || workdir.join("held").exists()));
    let job = crate::support::read_pid(&workdir.join("job"));
    let second = server.run("python3 -c 'a = bytearray(200 << 20); print(\"second holds\")'");
    let second_held = second.starts_with("second holds\n");
    let job_died = eventually(std::time::Duration::from_secs(2), || {
        !crate::support::alive(job)
    });
    // One of the two was killed (the kernel chooses which), never neither.
    assert!(
        !second_held || job_died,
        "both held 400 MiB under 300 MiB: {second}"
    );
    if !second_held {
        assert!(second.starts_with("ERROR: Out of memory"), "{second}");
    }
    // SAFETY: kill has no memory-safety preconditions; the job is this test's.
    unsafe { libc::kill(job, libc::SIGKILL) };
}

#[test]
fn commands_run_oom_first_niced_and_at_low_io_priority_while_the_server_keeps_its_own() {
    let mut server = started(Options::default());
    let pid = server.pid();
    let own = |field: &str| std::fs::read_to_string(format!("/proc/{pid}/{field}"));
    let before = own("oom_score_adj").unwrap();
    let answer = server.run("cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'");
    assert!(answer.starts_with("1000\n1000\n"), "{answer}");
    assert_eq!(
        own("oom_score_adj").unwrap(),
        before,
        "the server's changed"
    );
    let server_nice = nice_of(&own("stat").unwrap());
    let answer = server.run("cat /proc/self/stat; ionice");
    let mut lines = answer.lines();
    let nice = nice_of(lines.next().unwrap());
    assert_eq!(nice, (server_nice + 10).min(19), "{answer}");
    assert_eq!(lines.next(), Some("best-effort: prio 7"), "{answer}");
}

/// A root server's user (a uid of their own, one per stdio server) is bounded, gets
/// the out-of-memory answer, and cannot lower its commands' score: the score was set
/// by root, and the user lacks CAP_SYS_RESOURCE.
#[test]
fn a_root_servers_user_is_bounded_and_cannot_lower_the_score() {
    let Some(host) = crate::librechat::RootHost::new() else {
        return;
    };
    let mut server = host.start("alice", &["--max-memory", "256M"]);
    assert!(eventually(PATIENCE, || server
        .stderr()
        .contains("containment of commands")));
    let below = server
        .run("cat /proc/self/oom_score_adj; echo -1 > /proc/self/oom_score_adj && echo lowered");
    assert!(below.starts_with("1000\n"), "{below}");
    assert!(below.contains("Permission denied"), "{below}");
    // Set by a root that holds CAP_SYS_RESOURCE, 1000 is also the floor; a root
    // without it (a container's default set) can only make 0 the floor.
    if sys_resource() {
        let lowered = server.run("echo 0 > /proc/self/oom_score_adj && echo lowered");
        assert!(lowered.contains("Permission denied"), "{lowered}");
    } else {
        eprintln!("without CAP_SYS_RESOURCE here, the floor stays 0");
    }
    if !memory_cgroup(&server) {
        return;
    }
    // One user per stdio server: the server's user cgroup is theirs.
    let cgroup = server.run("grep memory /proc/self/cgroup");
    assert!(cgroup.contains("/user/slot-"), "{cgroup}");
    assert!(server.run(GIGABYTE).starts_with("ERROR: Out of memory"));
    assert!(server.run("echo next").starts_with("next\n"));
}

/// Whether this process (root, running the servers) holds CAP_SYS_RESOURCE.
fn sys_resource() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let effective = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    // CAP_SYS_RESOURCE is capability 24.
    effective & (1 << 24) != 0
}

/// The nice value of a `/proc/<pid>/stat` line (its 19th field, counted after the
/// command's closing parenthesis).
fn nice_of(stat: &str) -> i32 {
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(16).unwrap().parse().unwrap()
}

/// A server that is not root has no memory cgroup (the v1 tree is root's): it bounds
/// each process's data instead, says so at start-up, and still raises the commands'
/// `oom_score_adj` and nice level.
#[test]
fn a_server_that_is_not_root_falls_back_to_rlimit_data_and_says_so() {
    let Some(uid) = crate::support::unprivileged() else {
        return;
    };
    let mut server = started(Options::default().user(uid).arg("--max-memory").arg("256M"));
    let stderr = server.stderr();
    if stderr.contains("of memory per user (memory, cgroup") {
        eprintln!(
            "skipped: this machine delegates a memory cgroup to uid {uid}: nothing to fall back from"
        );
        return;
    }
    assert!(
        stderr.contains("at most 256 MiB of data per process (RLIMIT_DATA"),
        "{stderr}"
    );
    let answer = server.run(GIGABYTE);
    assert!(answer.starts_with("before\n"), "{answer}");
    assert!(answer.contains("MemoryError"), "{answer}");
    assert!(!answer.contains("\n1073741824\n"), "{answer}");
    assert!(server.run("echo next").starts_with("next\n"));
    // Raised from outside right after the exec: what the shell forks later has it.
    let answer = server.run("sleep 0.5; cat /proc/self/oom_score_adj; nice");
    assert!(answer.starts_with("1000\n10\n"), "{answer}");
    // Not below the server's own: that would take CAP_SYS_RESOURCE.
    let lowered = server.run("echo -1 > /proc/self/oom_score_adj && echo lowered");
    assert!(!lowered.contains("lowered"), "{lowered}");
}

/// `--max-memory` takes bytes or K/M/G, `0` for none; anything else is refused with a
/// clear error.
#[test]
fn max_memory_reads_sizes_and_refuses_others() {
    let none = started(Options::default().arg("--max-memory").arg("0"));
    assert!(
        none.stderr().contains("no memory limit (--max-memory 0)"),
        "{}",
        none.stderr()
    );
    let by_env = started(Options::default().env("FORGE_BASH_MAX_MEMORY", "1G"));
    assert!(
        by_env.stderr().contains("at most 1 GiB of "),
        "{}",
        by_env.stderr()
    );
    for bad in ["12T", "lots", "-1"] {
        let out = crate::support::binary()
            .arg(format!("--max-memory={bad}"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("a size is bytes"), "{stderr}");
    }
    let out = crate::support::binary()
        .args(["--max-cpu", "0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("cores are a number above 0"));
}

/// Where the machine's cgroup v2 hierarchy holds the memory controller, the calls are
/// bounded through it (`memory.max`); on a hybrid machine, where the v1 hierarchy
/// holds it, there is no v2 memory controller to test with.
#[test]
fn cgroup_v2_bounds_memory_where_it_holds_the_memory_controller() {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let v2 = mountinfo.lines().find_map(|line| {
        let (fields, tail) = line.split_once(" - ")?;
        tail.starts_with("cgroup2 ")
            .then(|| fields.split(' ').nth(4).map(str::to_owned))
            .flatten()
    });
    let Some(v2) = v2 else {
        eprintln!("skipped: no cgroup v2 mounted here");
        return;
    };
    let controllers =
        std::fs::read_to_string(format!("{v2}/cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "memory") {
        eprintln!(
            "skipped: the memory controller is bound to the v1 hierarchy here (cgroup v2 at {v2} offers {controllers:?}); a cgroup2 mount of its own would offer no more"
        );
        return;
    }
    let mut server = started(Options::default().arg("--max-memory").arg("256M"));
    let stderr = server.stderr();
    if !stderr.contains("(memory, cgroup v2)") {
        eprintln!("skipped: the server's cgroup cannot delegate memory here: {stderr}");
        return;
    }
    let answer = server.run(GIGABYTE);
    assert!(answer.starts_with("ERROR: Out of memory"), "{answer}");
    assert!(server.run("echo next").starts_with("next\n"));
}

/// The service's users each have the limit: alice's job holding 200 MiB under
/// 300 MiB leaves bob room for 200 MiB of his own, and alice's second 200 MiB is not.
#[cfg(feature = "http")]
#[test]
fn each_user_of_the_service_has_a_limit_of_their_own() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid (and cgroups) per user needs a root server");
        return;
    }
    let server = crate::support::http::HttpServer::start(&[
        "--workdir",
        "{root}/ws/{user}",
        "--state-dir",
        "{root}/state/{user}",
        "--max-memory",
        "300M",
    ]);
    assert!(eventually(PATIENCE, || server
        .stderr()
        .contains("containment of commands")));
    if !server
        .stderr()
        .contains("of memory per user (memory, cgroup")
    {
        eprintln!("skipped: no memory cgroup for calls here (the RLIMIT_DATA fallback)");
        return;
    }
    let (mut alice, mut bob) = (server.client(Some("alice")), server.client(Some("bob")));
    alice.initialize();
    bob.initialize();
    let hold = "python3 -c 'import time; a = bytearray(200 << 20); open(\"held\", \"w\").close(); time.sleep(60)' > /dev/null 2>&1 & echo $! > job";
    assert!(alice.run(hold).contains("[exit:0"));
    let held = server.path("ws/alice/held");
    assert!(eventually(PATIENCE, || held.exists()));
    let job = crate::support::read_pid(&server.path("ws/alice/job"));
    let allocate = "python3 -c 'a = bytearray(200 << 20); print(\"holds\")'";
    let answer = bob.run(allocate);
    assert!(answer.starts_with("holds\n"), "{answer}");
    assert!(
        crate::support::alive(job),
        "bob's allocation took alice's job"
    );
    let answer = alice.run(allocate);
    let killed =
        answer.starts_with("ERROR: Out of memory: the command reached its limit of 300 MiB");
    let job_died = eventually(std::time::Duration::from_secs(2), || {
        !crate::support::alive(job)
    });
    assert!(
        killed || job_died,
        "alice held 400 MiB under 300 MiB: {answer}"
    );
    // SAFETY: kill has no memory-safety preconditions; the job is this test's.
    unsafe { libc::kill(job, libc::SIGKILL) };
}

/// A user of the service who left is released with their cgroups: the directory that
/// held their memory limit is gone once they idled (`--user-idle-secs`).
#[cfg(feature = "http")]
#[test]
fn a_released_user_leaves_no_cgroup_behind() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a uid (and cgroups) per user needs a root server");
        return;
    }
    let server = crate::support::http::HttpServer::start(&[
        "--workdir",
        "{root}/ws/{user}",
        "--state-dir",
        "{root}/state/{user}",
        "--user-idle-secs",
        "1",
    ]);
    let mut alice = server.client(Some("alice"));
    alice.initialize();
    let answer = alice.run("sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup");
    let slot = answer.lines().next().unwrap().to_owned();
    assert!(
        !slot.contains("/user/"),
        "alice has the server's own cgroup: {slot}"
    );
    if !slot.contains("/user-") {
        eprintln!("skipped: no memory cgroup for calls here: {answer}");
        return;
    }
    let user = std::path::Path::new("/sys/fs/cgroup/memory")
        .join(slot.trim_start_matches('/'))
        .parent()
        .unwrap()
        .to_owned();
    assert!(user.is_dir(), "{}", user.display());
    assert_eq!(alice.delete().status, 204);
    assert!(
        eventually(PATIENCE, || !user.exists()),
        "{} is still there: {}",
        user.display(),
        server.stderr()
    );
    // Back: their cgroups are made again.
    let mut back = server.client(Some("alice"));
    back.initialize();
    assert!(back.run("true").contains("[exit:0"));
    assert!(user.is_dir());
}
