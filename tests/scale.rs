//! The service at scale: what a user leaves behind is released once they have been
//! idle (`--user-idle-secs`), and the descriptor limit refuses new sessions (503)
//! without failing a call of those already in, or start-up when it has no room.

use std::process::Command;
use std::time::Duration;

use crate::support::http::{Client, HttpServer, TOKEN};
use crate::support::{BIN, PATIENCE, eventually};

const PER_USER: [&str; 4] = [
    "--workdir",
    "{root}/ws/{user}",
    "--state-dir",
    "{root}/state/{user}",
];

/// Descriptors a server holds beyond its start once its users are released: the
/// emptied call cgroups it keeps for the next calls (4, two descriptors each) and the
/// spawning slots made ahead. Far below the two per user it used to keep.
const SETTLED: usize = 24;

/// A range of 300 uids of its own for each server of this process, apart from the
/// support's ranges.
fn wide_uid_range() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 3;
    let first = 20_000_000 + (std::process::id() % 1000) * 1_000 + n * 300;
    format!("{first}-{}", first + 299)
}

/// The descriptors `pid` has open; `None` where they cannot be counted: a server not
/// run as root makes itself not dumpable, and its `/proc/<pid>/fd` is root's then.
fn open_fds(pid: i32) -> Option<usize> {
    match std::fs::read_dir(format!("/proc/{pid}/fd")) {
        Ok(entries) => Some(entries.count()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => None,
        Err(e) => panic!("/proc/{pid}/fd: {e}"),
    }
}

/// `user`'s session, open and initialized.
fn session(server: &HttpServer, user: &str) -> Client {
    let mut client = server.client(Some(user));
    let reply = client.initialize();
    assert_eq!(reply.status, 200, "{user}: {reply:?}");
    client
}

/// 200 users each open a session, call and close it (4 at a time); with
/// `--user-idle-secs 1`, once they idled the server holds the descriptors it held at
/// start (± [`SETTLED`]), and a returning user is set up again: the same uid, their
/// files still there.
#[test]
fn users_who_left_are_released_and_set_up_again_when_they_return() {
    let uids = wide_uid_range();
    let mut args = PER_USER.to_vec();
    args.extend(["--user-idle-secs", "1"]);
    let server = HttpServer::start_with(
        &args,
        &[
            ("FORGE_BASH_HTTP_TOKEN", TOKEN),
            ("FORGE_BASH_USER_UIDS", &uids),
        ],
    );
    let pid = server.pid();
    let at_start = open_fds(pid);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for lane in 0..4 {
            let (server, tx) = (&server, tx.clone());
            scope.spawn(move || {
                for n in (lane..200).step_by(4) {
                    let user = format!("user{n}");
                    let mut client = session(server, &user);
                    let answer = client.run("echo mine > kept.txt && id -u");
                    let uid: u32 = answer.lines().next().unwrap().parse().expect(&answer);
                    assert_eq!(client.delete().status, 204, "{user}");
                    tx.send((user, uid)).unwrap();
                }
            });
        }
    });
    drop(tx);
    let uids: std::collections::HashMap<String, u32> = rx.into_iter().collect();
    assert_eq!(uids.len(), 200);
    let released = eventually(PATIENCE, || {
        server.stderr().contains("users with no session released")
            && open_fds(pid) <= at_start.map(|n| n + SETTLED)
    });
    let now = open_fds(pid);
    assert!(
        released,
        "{now:?} descriptors open after 200 users idled, {at_start:?} at start: {}",
        server.stderr()
    );
    match (at_start, now) {
        (Some(at_start), Some(now)) => {
            eprintln!("descriptors: {at_start} at start, {now} once 200 users idled");
        }
        _ => eprintln!("descriptors not counted: the server's /proc/<pid>/fd is root's"),
    }
    let mut back = session(&server, "user7");
    let answer = back.run("cat kept.txt && id -u");
    let mut lines = answer.lines();
    assert_eq!(lines.next(), Some("mine"), "{answer}");
    let uid: u32 = lines.next().unwrap().parse().expect(&answer);
    assert_eq!(uid, uids["user7"], "{answer}");
    assert_eq!(back.delete().status, 204);
}

/// Under `prlimit --nofile=256:256` the server says at start how many sessions it
/// holds, answers 503 naming the limit to the next one, and every session already
/// open keeps working; users whose sessions ended make room for new ones.
#[test]
fn a_low_descriptor_limit_refuses_new_sessions_not_calls() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("skipped: prlimit (util-linux) is not installed");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let at = root.path().display().to_string();
    let mut command = Command::new("prlimit");
    command.args(["--nofile=256:256", BIN, "--http", "127.0.0.1:0"]);
    command.args(PER_USER.map(|arg| arg.replace("{root}", &at)));
    crate::support::own_uids(&mut command, root.path());
    command
        .env("FORGE_BASH_HTTP_TOKEN", TOKEN)
        .env("FORGE_BASH_USER_UIDS", wide_uid_range())
        .env("RUST_LOG", "forge_bash=info,warn");
    let server = HttpServer::spawn(command, root);
    let log = server.stderr();
    let held: usize = log
        .split_once(" sessions at once")
        .and_then(|(before, _)| before.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sessions held in the start-up log: {log}"));
    assert!((2..1024).contains(&held), "{log}");
    let round = |from: usize| -> Vec<Client> {
        let mut open = Vec::new();
        for n in from..from + held {
            let mut client = session(&server, &format!("user{n}"));
            assert!(client.run("echo in").starts_with("in\n"));
            open.push(client);
        }
        let refused = server.client(Some("one-too-many")).initialize();
        assert_eq!(refused.status, 503, "{refused:?}");
        assert!(refused.body.contains("RLIMIT_NOFILE 256"), "{refused:?}");
        open
    };
    let open = round(0);
    // Those already in keep working, six of them at once (the commands that fit).
    std::thread::scope(|scope| {
        for lane in open.chunks(open.len().div_ceil(6)) {
            scope.spawn(move || {
                for client in lane {
                    let mut client = client.clone();
                    let answer = client.run("sleep 0.2; echo still");
                    assert!(answer.starts_with("still\n"), "{answer}");
                }
            });
        }
    });
    for client in &open {
        assert_eq!(client.delete().status, 204);
    }
    // As many new users again: the idle ones are released to make room.
    let again = round(held);
    assert!(
        server.logged("users with no session released"),
        "{}",
        server.stderr()
    );
    for client in &again {
        assert_eq!(client.delete().status, 204);
    }
    let eventually_served = eventually(Duration::from_secs(5), || {
        server.client(Some("late")).initialize().status == 200
    });
    assert!(eventually_served, "{}", server.stderr());
}

/// A descriptor limit with no room for a single session refuses start-up, naming it.
#[test]
fn a_limit_with_no_room_for_a_session_refuses_start_up() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("skipped: prlimit (util-linux) is not installed");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let at = root.path().display().to_string();
    let output = Command::new("prlimit")
        .args(["--nofile=64:64", BIN, "--http", "127.0.0.1:0"])
        .args(PER_USER.map(|arg| arg.replace("{root}", &at)))
        .env("FORGE_BASH_HTTP_TOKEN", TOKEN)
        .env("FORGE_BASH_USER_UIDS_FILE", root.path().join("uids"))
        .env("FORGE_BASH_USER_UIDS", wide_uid_range())
        .env("FORGE_BASH_ALLOW_SHARED_UID", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the open-file limit (RLIMIT_NOFILE 64) leaves no room for a session"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}
