//! A shared LibreChat: two servers started as LibreChat starts a per-user stdio server
//! (`{{LIBRECHAT_USER_ID}}` substituted in `args`), as its container's non-root user,
//! with the sandbox on. Each user's agent keeps to its own workspace; LibreChat's files,
//! its database port and the other user's processes are out of reach.

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
    groups.0.push(crate::support::read_pid(
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

    // 6 (audit). Each user's calls are in that user's own log.
    let rows = |user: &str| crate::support::audit_rows(&container.path(&format!("state/{user}")));
    assert!(rows("alice").iter().all(|r| !r[1].contains("mine.txt")));
    assert!(rows("bob").iter().any(|r| r[1].contains("mine.txt")));
    drop(registry);
    drop(database);
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
