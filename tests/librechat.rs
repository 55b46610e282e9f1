//! A shared LibreChat: two servers started as LibreChat starts a per-user stdio server
//! (`{{LIBRECHAT_USER_ID}}` substituted in `args`), as its container's non-root user,
//! with the sandbox on, and as root with `--user`, where each user gets a uid of their
//! own. Each user's agent keeps to its own workspace; LibreChat's files, its database
//! port and the other user's processes are out of reach.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Groups, Options, PATIENCE, Server, eventually, mask_ms, unprivileged};

/// LibreChat's container, in miniature: workspaces and state dirs per user, and the
/// application's secrets in `/app/.env`.
struct Container {
    root: tempfile::TempDir,
    uid: u32,
}

impl Container {
    fn new(uid: u32) -> Container {
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::chown(root.path(), Some(uid), Some(uid)).unwrap();
        let app = root.path().join("app");
        std::fs::create_dir(&app).unwrap();
        std::fs::write(app.join(".env"), "JWT_SECRET=shared-secret\n").unwrap();
        std::os::unix::fs::chown(app.join(".env"), Some(uid), Some(uid)).unwrap();
        Container { root, uid }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// The registration's `args` for `user`, as LibreChat substitutes them.
    fn start(&self, user: &str, port: u16) -> Server {
        let workdir = self.path(&format!("workspace/{user}"));
        let state = self.path(&format!("state/{user}"));
        Options::default()
            .user(self.uid)
            .workdir(&workdir)
            .state(&state)
            .arg("--create-workdir")
            .arg("--sandbox")
            .arg("--network")
            .arg(port.to_string())
            .start()
    }
}

fn denied(answer: &str) -> bool {
    !answer.contains("[exit:0 ")
        && (answer.contains("Permission denied") || answer.contains("Operation not permitted"))
}

#[test]
fn two_users_of_one_librechat_do_not_meet() {
    let Some(uid) = unprivileged() else {
        return;
    };
    if !crate::support::landlock_here(6) {
        return;
    }
    let container = Container::new(uid);
    // A registry the agents may reach, and LibreChat's database, which they may not.
    let registry = TcpListener::bind("127.0.0.1:0").unwrap();
    let database = TcpListener::bind("127.0.0.1:0").unwrap();
    let (allowed, mongo) = (
        registry.local_addr().unwrap().port(),
        database.local_addr().unwrap().port(),
    );
    let mut alice = container.start("alice", allowed);
    let mut bob = container.start("bob", allowed);
    let mut groups = Groups::default();

    // 1. The per-user workdirs were made, mode 0700, and each agent works in its own.
    let answer = alice.run("echo notes > notes.txt && echo tmp > \"$TMPDIR/t\" && pwd");
    assert!(answer.contains("workspace/alice\n"), "{answer}");
    assert!(bob.run("pwd").contains("workspace/bob\n"));
    for user in ["alice", "bob"] {
        let dir = container.path(&format!("workspace/{user}"));
        let mode = std::os::unix::fs::PermissionsExt::mode(&dir.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700, "{user}");
    }

    // 2. Reads confined: bob reaches none of alice's files, nor LibreChat's.
    let alice_work = container.path("workspace/alice").display().to_string();
    let alice_state = container.path("state/alice").display().to_string();
    let env_file = container.path("app/.env").display().to_string();
    let alice_log = forge_bash::audit::path(&container.path("state/alice"), chrono::Utc::now());
    let alice_log = alice_log.display();
    for attack in [
        format!("cat {alice_work}/notes.txt"),
        format!("ls {alice_work}"),
        format!("cat {alice_log}"),
        format!("ls {alice_state}/tmp"),
        format!("cat {alice_state}/tmp/t"),
        format!("cat {env_file}"),
        "ls /tmp".to_owned(),
        "echo x > /tmp/forge-bash-shared".to_owned(),
    ] {
        let answer = bob.run(&attack);
        assert!(denied(&answer), "bob: {attack}: {answer}");
    }
    // Its own work goes on.
    let answer = bob.run("echo mine > mine.txt && cat mine.txt");
    assert_eq!(mask_ms(&answer), "mine\n\n[exit:0 | Xms]");

    // 4. Network by port: the registry's port is open, the database's is not.
    let connect = |port: u16| format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    assert!(bob.run(&connect(allowed)).starts_with("connected\n"));
    let answer = bob.run(&connect(mongo));
    assert!(denied(&answer), "{answer}");

    // 5. Processes: alice's background job (with a secret in its environment), the
    // servers and PID 1 are out of bob's reach.
    let answer =
        alice.run("echo $$ > group; TOKEN=alice-token sleep 300 > /dev/null 2>&1 & echo $!");
    let job: i32 = answer.lines().next().unwrap().parse().expect(&answer);
    groups.push(crate::support::read_pid(
        &container.path("workspace/alice/group"),
    ));
    let alice_server = alice.pid();
    for attack in [
        format!("cat /proc/{job}/environ"),
        format!("exec 3< /proc/{job}/mem"),
        format!("kill -STOP {job}"),
        format!("cat /proc/{alice_server}/environ"),
        format!("kill -STOP {alice_server}"),
        "cat /proc/1/environ".to_owned(),
    ] {
        let answer = bob.run(&attack);
        assert!(denied(&answer), "bob: {attack}: {answer}");
    }
    assert!(crate::support::alive(job));
    assert!(alice.run("echo alive").starts_with("alive\n"));

    // Sockets: a daemon listening in alice's temp dir (her tmux, her credential cache)
    // is out of bob's reach, though he knows its path.
    let path = container.path("state/alice/tmp/daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::os::unix::fs::chown(&path, Some(container.uid), Some(container.uid)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let attack = format!(
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{}\")'",
        path.display()
    );
    let answer = bob.run(&attack);
    assert!(denied(&answer), "bob: {attack}: {answer}");
    assert!(listener.accept().is_err(), "bob reached alice's socket");
    // What stays open: command lines, in `ps` (no hidepid mount here). (A duration of
    // its own: tests run in parallel.)
    let marker = 400_000 + std::process::id();
    alice.run(&format!("sleep {marker} > /dev/null 2>&1 &"));
    let seen = bob.run(&format!(
        "for i in $(seq 100); do ps -eo args | grep -qx 'sleep {marker}' && echo seen && break; sleep 0.1; done"
    ));
    assert!(seen.starts_with("seen\n"), "{seen}");

    // 6 (audit). Each user's calls are in that user's own log.
    let rows = |user: &str| crate::support::audit_rows(&container.path(&format!("state/{user}")));
    assert!(rows("alice").iter().all(|r| !r[1].contains("mine.txt")));
    assert!(rows("bob").iter().any(|r| r[1].contains("mine.txt")));

    // 7. What stays open with one uid for all: Landlock has no rule for metadata, so
    // bob can change the mode of alice's state dir; her server restores it, and her
    // next call is still audited.
    let answer = bob.run(&format!("chmod 000 {alice_state} && echo changed"));
    assert!(answer.starts_with("changed\n"), "{answer}");
    assert!(alice.run("echo audited").starts_with("audited\n"));
    assert_eq!(rows("alice").last().unwrap()[1], "echo audited");
    drop(registry);
    drop(database);
}

/// A workdir whose mode a command took away (`chmod 000`) gets it back at its user's
/// next call, which runs, and the server logs it: alice's command to bob's workdir
/// where one uid serves both under the sandbox (as an unprivileged user), and a
/// user's own command to their own workdir on a root server with a uid per user.
#[test]
fn a_workdir_whose_mode_was_taken_away_gets_it_back() {
    let Some(uid) = unprivileged() else {
        return;
    };
    let back = |server: &mut Server, workdir: &Path| {
        let answer = server.run("echo still > mine.txt && cat mine.txt");
        assert_eq!(mask_ms(&answer), "still\n\n[exit:0 | Xms]");
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&workdir.metadata().unwrap().permissions());
        assert_eq!(mode & 0o7777, 0o700);
        assert!(
            eventually(PATIENCE, || server
                .stderr()
                .contains("the workdir's mode or owner was changed")),
            "{}",
            server.stderr()
        );
    };
    if crate::support::landlock_here(3) {
        let container = Container::new(uid);
        let (mut alice, mut bob) = (container.start("alice", 1), container.start("bob", 1));
        let bob_work = container.path("workspace/bob");
        assert!(bob.run("pwd").contains("workspace/bob\n"));
        let answer = alice.run(&format!("chmod 000 {} && echo done", bob_work.display()));
        assert!(answer.starts_with("done\n"), "{answer}");
        back(&mut bob, &bob_work);
    }
    let Some(host) = RootHost::new() else {
        return;
    };
    let mut bob = host.start("bob", &[]);
    let answer = bob.run("chmod 000 . && echo done");
    assert!(answer.starts_with("done\n"), "{answer}");
    back(&mut bob, &host.path("workspace/bob"));
}

#[test]
fn a_placeholder_left_in_a_path_or_a_relative_path_refuses_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "--workdir",
            format!(
                "{}/workspace/{{{{LIBRECHAT_USER_ID}}}}",
                dir.path().display()
            ),
            "placeholder",
        ),
        (
            "--state-dir",
            "/tmp/forge-bash/{{LIBRECHAT_USER_ID}}".to_owned(),
            "placeholder",
        ),
        ("--readable", "relative/dir".to_owned(), "absolute"),
    ];
    for (flag, path, why) in cases {
        let mut options = Options::default();
        if flag == "--workdir" {
            options = options.workdir(Path::new(&path));
        } else if flag == "--state-dir" {
            options = options.state(Path::new(&path));
        } else {
            options = options.arg(flag).arg(&path);
        }
        let mut server = options.arg("--create-workdir").start();
        let status = server.wait_exit(PATIENCE).map(|s| s.code());
        assert_eq!(status, Some(Some(1)), "{flag} {path}");
        assert!(
            eventually(Duration::from_secs(5), || {
                let stderr = server.stderr();
                stderr.contains(flag) && stderr.contains(&path) && stderr.contains(why)
            }),
            "{}",
            server.stderr()
        );
        assert!(!Path::new(&path).exists() || flag == "--readable");
    }
}

/// A root server: LibreChat's per-user registration with `--user`, in an image where
/// the server is root. Two servers started at once, for alice and bob, sharing one
/// uid mapping.
pub(crate) struct RootHost {
    root: tempfile::TempDir,
    uids: PathBuf,
    range: String,
}

impl RootHost {
    /// `None` (and why, on stderr) when the tests do not run as root.
    pub(crate) fn new() -> Option<RootHost> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: a uid per user needs a root server");
            return None;
        }
        let root = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let uids = root.path().join("etc/uids");
        Some(RootHost {
            root,
            uids,
            range: crate::support::uid_range(),
        })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// The server of `user`, as `--user {{LIBRECHAT_USER_ID}}` starts it.
    pub(crate) fn start(&self, user: &str, extra: &[&str]) -> Server {
        let mut options = Options::default()
            .workdir(&self.path("workspace/{user}"))
            .state(&self.path("state/{user}"))
            .arg("--user")
            .arg(user)
            .env("FORGE_BASH_USER_UIDS_FILE", self.uids.display().to_string())
            .env("FORGE_BASH_USER_UIDS", self.range.clone());
        for arg in extra {
            options = options.arg(*arg);
        }
        let mut server = options.start();
        server.initialize();
        server
    }
}

/// `id -u`, `id -g` and `id -G` of a server's commands.
fn ids(server: &mut Server) -> (u32, u32, String) {
    let answer = server.run("id -u; id -g; id -G");
    let lines: Vec<&str> = answer.lines().collect();
    (
        lines[0].parse().expect(&answer),
        lines[1].parse().expect(&answer),
        lines[2].to_owned(),
    )
}

fn root_server_keeps_its_users_apart(extra: &[&str]) {
    let Some(host) = RootHost::new() else {
        return;
    };
    let (mut alice, mut bob) = (host.start("alice", extra), host.start("bob", extra));
    let mut groups = Groups::default();
    let (a, b) = (ids(&mut alice), ids(&mut bob));
    // A uid and gid each, not root, no other group.
    assert!(a.0 != 0 && b.0 != 0 && a.0 != b.0, "{a:?} {b:?}");
    assert_eq!((a.1, b.1), (a.0, b.0));
    assert_eq!(
        (a.2.as_str(), b.2.as_str()),
        (&*a.0.to_string(), &*b.0.to_string())
    );
    let no_new_privs = alice.run("grep NoNewPrivs /proc/self/status");
    assert!(
        no_new_privs.starts_with("NoNewPrivs:\t1\n"),
        "{no_new_privs}"
    );
    // The workdir, HOME and TMPDIR are the user's, mode 0700; the state dir is root's.
    let answer =
        alice.run("stat -c '%u %a' . \"$HOME\" \"$TMPDIR\"; touch \"$HOME/h\" \"$TMPDIR/t\"");
    let mine = format!("{} 700", a.0);
    assert_eq!(
        mask_ms(&answer),
        format!("{mine}\n{mine}\n{mine}\n\n[exit:0 | Xms]")
    );
    // Its overflow files and audit log: read, not changed.
    let answer = alice.run("seq 1 5000");
    let at = answer.find("written to ").expect(&answer) + "written to ".len();
    let overflow = answer[at..].lines().next().unwrap().trim().to_owned();
    let log = forge_bash::audit::path(&host.path("state/alice"), chrono::Utc::now());
    let answer = alice.run(&format!(
        "tail -1 {overflow}; tail -1 {} | cut -f2",
        log.display()
    ));
    assert_eq!(mask_ms(&answer), "5000\nseq 1 5000\n\n[exit:0 | Xms]");
    for attack in [
        format!("echo x >> {overflow}"),
        format!("echo x >> {}", log.display()),
    ] {
        let answer = alice.run(&attack);
        assert!(denied(&answer), "alice: {attack}: {answer}");
    }
    let state = host.path("state/alice");
    let meta = std::fs::metadata(&state).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (meta.uid(), meta.gid(), meta.mode() & 0o7777),
        (0, a.0, 0o2750)
    );

    // Bob's work: a file, a background job with a secret, a unix socket in his TMPDIR.
    let answer = bob.run(
        "echo secret > notes; echo $$ > group; TOKEN=bob-token sleep 300 > /dev/null 2>&1 & echo $!",
    );
    let job: i32 = answer.lines().next().unwrap().parse().expect(&answer);
    groups.push(crate::support::read_pid(&host.path("workspace/bob/group")));
    // A daemon's socket in bob's TMPDIR (his tmux, his credential cache), his own.
    let socket = host.path("state/bob/tmp/agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::os::unix::fs::chown(&socket, Some(b.0), Some(b.0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{}\"); print(\"connected\")'",
        socket.display()
    );
    if extra.is_empty() {
        // Without the sandbox (whose seccomp layer makes no unix socket), bob reaches it.
        assert!(
            bob.run(&connect).starts_with("connected\n"),
            "bob reaches his own socket"
        );
        let _ = listener.accept();
    }

    let (bob_work, bob_state) = (host.path("workspace/bob"), host.path("state/bob"));
    let bob_server = bob.pid();
    // What stays open: command lines, in `ps` (no hidepid mount here).
    // (A duration of its own: tests run in parallel.)
    bob.run(&format!("sleep {} > /dev/null 2>&1 &", b.0));
    let seen = alice.run(&format!(
        "for i in $(seq 100); do ps -eo args | grep -qx 'sleep {}' && echo seen && break; sleep 0.1; done",
        b.0
    ));
    assert!(seen.starts_with("seen\n"), "{seen}");
    for attack in [
        format!("chmod 000 {}", bob_work.display()),
        format!("chmod 000 {}", bob_state.display()),
        format!("chmod 000 {}/tmp", bob_state.display()),
        format!("cat {}/notes", bob_work.display()),
        format!("echo x >> {}/notes", bob_work.display()),
        format!("ls {}", bob_work.display()),
        format!("echo x > {}/planted", bob_state.display()),
        format!(
            "ls {}/home {}/tmp",
            bob_state.display(),
            bob_state.display()
        ),
        format!(
            "cat {}",
            forge_bash::audit::path(&bob_state, chrono::Utc::now()).display()
        ),
        format!("kill -STOP {job}"),
        format!("kill -TERM {bob_server}"),
        format!("cat /proc/{job}/environ"),
        format!("exec 3< /proc/{job}/mem"),
        format!("cat /proc/{bob_server}/environ"),
        connect.clone(),
        "cat /proc/1/environ".to_owned(),
        // Its own server: its stdout to the client, its environment.
        format!("echo PWNED > /proc/{}/fd/1", alice.pid()),
        format!("cat /proc/{}/environ", alice.pid()),
    ] {
        let answer = alice.run(&attack);
        assert!(denied(&answer), "alice: {attack}: {answer}");
    }
    assert!(denied(&bob.run("cat /proc/1/environ")));
    assert!(listener.accept().is_err(), "alice reached bob's socket");
    // Bob goes on, audited.
    assert!(crate::support::alive(job));
    assert_eq!(mask_ms(&bob.run("cat notes")), "secret\n\n[exit:0 | Xms]");
    let rows = crate::support::audit_rows(&bob_state);
    assert_eq!(rows.last().unwrap()[1], "cat notes");
    drop((alice, bob, groups));

    // The same uids after a restart, whichever starts first.
    let (mut bob, mut alice) = (host.start("bob", extra), host.start("alice", extra));
    assert_eq!((ids(&mut alice).0, ids(&mut bob).0), (a.0, b.0));
}

#[test]
fn a_root_server_runs_each_users_commands_under_a_uid_of_their_own() {
    root_server_keeps_its_users_apart(&[]);
}

#[test]
fn with_the_sandbox_too() {
    if !crate::support::landlock_here(3) {
        return;
    }
    root_server_keeps_its_users_apart(&["--sandbox"]);
}

#[test]
fn a_full_uid_range_refuses_the_new_user_and_the_others_keep_theirs() {
    let Some(host) = RootHost::new() else {
        return;
    };
    let first: u32 = host.range.split('-').next().unwrap().parse().unwrap();
    let one = format!("{first}-{first}");
    let start = |user: &str| {
        Options::default()
            .workdir(&host.path("workspace/{user}"))
            .state(&host.path("state/{user}"))
            .arg("--user")
            .arg(user)
            .env("FORGE_BASH_USER_UIDS_FILE", host.uids.display().to_string())
            .env("FORGE_BASH_USER_UIDS", one.clone())
            .start()
    };
    let mut alice = start("alice");
    assert_eq!(ids(&mut alice).0, first);
    let mut bob = start("bob");
    assert_eq!(bob.wait_exit(PATIENCE).and_then(|s| s.code()), Some(1));
    let full = format!("user bob: every uid of --user-uids {one} is taken");
    assert!(
        eventually(PATIENCE, || bob.stderr().contains(&full)),
        "{}",
        bob.stderr()
    );
    assert!(!host.path("workspace/bob").exists());
    assert_eq!(ids(&mut alice).0, first);
    let map = std::fs::read_to_string(&host.uids).unwrap();
    assert_eq!(map, format!("alice {first}\n"));
}

#[test]
fn a_parent_the_users_uid_cannot_enter_refuses_start_up_naming_it() {
    let Some(host) = RootHost::new() else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let closed = host.path("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut server = Options::default()
        .workdir(&closed.join("{user}"))
        .state(&host.path("state/{user}"))
        .arg("--user")
        .arg("alice")
        .env("FORGE_BASH_USER_UIDS_FILE", host.uids.display().to_string())
        .env("FORGE_BASH_USER_UIDS", host.range.clone())
        .start();
    assert_eq!(server.wait_exit(PATIENCE).and_then(|s| s.code()), Some(1));
    let named = format!("{}: uid", closed.display());
    assert!(
        eventually(PATIENCE, || server.stderr().contains(&named)
            && server.stderr().contains("cannot enter it")),
        "{}",
        server.stderr()
    );
}

#[test]
fn run_as_gives_a_root_servers_commands_one_unprivileged_uid() {
    let Some(host) = RootHost::new() else {
        return;
    };
    let first: u32 = host.range.split('-').next().unwrap().parse().unwrap();
    let mut server = Options::default()
        .workdir(&host.path("work"))
        .state(&host.path("state"))
        .arg("--run-as")
        .arg(format!("{first}:{}", first + 1))
        .start();
    let (uid, gid, groups) = ids(&mut server);
    assert_eq!(
        (uid, gid, groups),
        (first, first + 1, (first + 1).to_string())
    );
    assert!(denied(&server.run("cat /proc/1/environ")));
    assert!(server.run("touch made && echo ok").starts_with("ok\n"));
}
