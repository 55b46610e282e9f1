//! The Landlock sandbox, end to end. Where the kernel has no Landlock, each test says
//! so and skips.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::support::{Options, Server, mask_ms};

/// A fresh directory that the sandbox does not leave writable: not under /tmp (where
/// the test's workdir and state dir are too).
fn outside_dir() -> Option<tempfile::TempDir> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    ["/var/tmp".into(), env!("CARGO_TARGET_TMPDIR").into()]
        .into_iter()
        .chain(home)
        .filter_map(|base: std::path::PathBuf| base.canonicalize().ok())
        .filter(|base| !base.starts_with("/tmp") && !base.starts_with("/dev"))
        .find_map(|base| tempfile::tempdir_in(base).ok())
}

/// `--readable` for the toolchains this machine keeps in the home directory
/// (`~/.cargo`, `~/.rustup`, `~/.pyenv`, `~/.nvm`), as an operator would give them.
pub fn toolchains() -> Vec<String> {
    let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) else {
        return Vec::new();
    };
    [".cargo", ".rustup", ".pyenv", ".nvm"]
        .iter()
        .map(|dir| home.join(dir))
        .filter(|dir| dir.is_dir())
        .flat_map(|dir| ["--readable".to_owned(), dir.display().to_string()])
        .collect()
}

fn sandboxed(extra: &[&str]) -> Server {
    let mut options = Options::default().arg("--sandbox");
    for arg in toolchains()
        .iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
    {
        options = options.arg(arg);
    }
    options.start()
}

#[test]
fn writes_are_confined_and_ordinary_work_still_works() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let Some(outside) = outside_dir() else {
        eprintln!("skipped: no directory outside /tmp to test a refused write in");
        return;
    };
    let extra = tempfile::tempdir().unwrap();
    let extra_path = extra.path().display().to_string();
    // A root server's sandboxed commands run as nobody: the place given them is theirs.
    if forge_bash::users::euid() == 0 {
        std::os::unix::fs::chown(extra.path(), Some(65534), Some(65534)).unwrap();
    }
    let mut server = sandboxed(&["--writable", &extra_path]);
    assert!(server.logged("writes confined"), "{}", server.stderr());
    let answer = server.run(&format!(
        "echo in > inside && echo tmp > \"$TMPDIR/t\" && mktemp > /dev/null && \
         echo more > {extra_path}/allowed && cat inside \"$TMPDIR/t\""
    ));
    assert_eq!(mask_ms(&answer), "in\ntmp\n\n[exit:0 | Xms]");
    assert_eq!(
        std::fs::read_to_string(server.state.join("tmp/t")).unwrap(),
        "tmp\n"
    );
    assert_eq!(
        std::fs::read_to_string(extra.path().join("allowed")).unwrap(),
        "more\n"
    );
    // The shared /tmp is not the commands' temp space.
    let shared = tempfile::Builder::new()
        .prefix("sandbox-")
        .tempfile_in("/tmp")
        .unwrap();
    let answer = server.run(&format!("echo x > {}", shared.path().display()));
    assert!(answer.contains("Permission denied"), "{answer}");
    assert_eq!(std::fs::read_to_string(shared.path()).unwrap(), "");

    // Outside: every kind of write is refused with the usual error.
    let target = outside.path().join("file");
    std::fs::write(&target, "original").unwrap();
    let out = outside.path().display();
    for command in [
        format!("echo x > {out}/new"),
        format!("echo x >> {out}/file"),
        format!(": > {out}/file"),
        format!("truncate -s 0 {out}/file"),
        format!("mkdir {out}/dir"),
        format!("mv {out}/file {out}/moved"),
        format!("ln {out}/file {out}/link"),
        format!("ln -s {out}/file {out}/symlink"),
        format!("unlink {out}/file"),
        format!("mkfifo {out}/fifo"),
    ] {
        let answer = server.run(&command);
        assert!(
            answer.contains("Permission denied") || answer.contains("Operation not permitted"),
            "{command}: {answer}"
        );
        assert!(!answer.contains("[exit:0 "), "{command}: {answer}");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);

    // Reading is confined too: the system's directories, not the rest.
    let answer = server.run(&format!("cat {}", target.display()));
    assert!(answer.contains("Permission denied"), "{answer}");
    assert!(
        server
            .run("ls /usr/bin > /dev/null && echo listed")
            .starts_with("listed\n")
    );

    // Everyday tools in the workdir.
    let answer = server.run("printf 'a\\nb\\n' > f && sed -i s/a/A/ f && cat f");
    assert_eq!(mask_ms(&answer), "A\nb\n\n[exit:0 | Xms]");
    let git = Command::new("git").arg("--version").output().is_ok();
    if git {
        let answer = server.run(
            "git init -q repo && cd repo && echo x > x && git add x && \
             git -c user.email=a@b.c -c user.name=n commit -qm first && git log --oneline | wc -l",
        );
        assert_eq!(mask_ms(&answer), "1\n\n[exit:0 | Xms]");
    }
    if Command::new("npm").arg("--version").output().is_ok() {
        // A local package: no network needed, but npm still writes its cache and logs.
        let answer = server.run(
            "mkdir -p lib app && cd lib && npm init -y > /dev/null && cd ../app && \
             npm init -y > /dev/null && npm install --no-audit --no-fund ../lib > /dev/null && \
             ls node_modules",
        );
        // npm may write a notice to stderr, which a successful command's answer shows.
        let answer = mask_ms(&answer);
        assert!(answer.starts_with("lib\n\n"), "{answer}");
        assert!(answer.ends_with("\n[exit:0 | Xms]"), "{answer}");
    }
    cargo_builds(&mut server);
}

/// `cargo new` and `cargo build` in the workdir, where cargo is within the commands'
/// reach: a root server's sandboxed commands run as nobody, and root's toolchains are
/// under `/root` (mode 0700); [`cargo_builds_as_nobody`] gives them one.
fn cargo_builds(server: &mut Server) {
    if !server.run("command -v cargo").contains("[exit:0 ") {
        eprintln!("skipped: no cargo the commands' uid can run");
        return;
    }
    let answer = server.run(
        "cargo new -q --offline hello && cd hello && cargo build -q --offline && ls target/debug/hello",
    );
    assert_eq!(mask_ms(&answer), "target/debug/hello\n\n[exit:0 | Xms]");
}

/// A root server's sandboxed commands, which run as nobody, build with cargo from a
/// toolchain installed where every uid may read it (root's own, bound there in a mount
/// namespace of the server's: `/root` is 0700).
#[test]
fn cargo_builds_as_nobody() {
    let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) else {
        return;
    };
    let (cargo, rustup) = (home.join(".cargo"), home.join(".rustup"));
    if !crate::support::landlock_here(1) || forge_bash::users::euid() != 0 || !rustup.is_dir() {
        eprintln!("skipped: needs Landlock, a root server and a rustup toolchain");
        return;
    }
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        shared.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (to_cargo, to_rustup) = (shared.path().join("cargo"), shared.path().join("rustup"));
    for dir in [&to_cargo, &to_rustup] {
        std::fs::create_dir(dir).unwrap();
    }
    let bind = "mount --bind \"$0\" \"$1\" && mount --bind \"$2\" \"$3\" && shift 3 && exec \"$@\"";
    let words = [&cargo, &to_cargo, &rustup, &to_rustup].map(|p| p.display().to_string());
    let mut through = vec!["unshare", "-m", "sh", "-c", bind];
    through.extend(words.iter().map(String::as_str));
    let path = format!("{}/bin:/usr/local/bin:/usr/bin:/bin", to_cargo.display());
    let mut server = Options::default()
        .arg("--sandbox")
        .arg("--readable")
        .arg(shared.path().display().to_string())
        .env("CARGO_HOME", to_cargo.display().to_string())
        .env("RUSTUP_HOME", to_rustup.display().to_string())
        .env("PATH", path)
        .through(&through)
        .start();
    let answer = server.run("id -u");
    if server.stderr().contains("unshare:") || server.stderr().contains("mount:") {
        eprintln!("skipped: mount namespaces are refused here");
        return;
    }
    assert_eq!(mask_ms(&answer), "65534\n\n[exit:0 | Xms]");
    assert!(server.run("command -v cargo").contains("[exit:0 "));
    cargo_builds(&mut server);
}

#[test]
fn network_deny_refuses_tcp_and_allow_does_not() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let mut denied = sandboxed(&["--network", "deny"]);
    let answer = denied.run(&connect);
    assert!(refused(&answer), "{answer}");
    let answer = denied
        .run("python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))' && echo bound");
    assert!(
        !answer.contains("bound\n") && answer.contains("PermissionError"),
        "{answer}"
    );

    let mut allowed = sandboxed(&[]);
    let accept = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1];
        let _ = stream.read(&mut buf);
    });
    assert!(allowed.run(&connect).starts_with("connected\n"));
    accept.join().unwrap();
}

/// Whether this kernel's Landlock scopes signals (ABI 6); says why not when it does not.
fn signals_scoped_here() -> bool {
    if !crate::support::landlock_here(1) {
        return false;
    }
    if forge_bash::sandbox::kernel_abi().is_ok_and(|abi| (abi as i32) < 6) {
        eprintln!("skipped: signals are scoped from Landlock ABI 6");
        return false;
    }
    true
}

#[test]
fn a_sandboxed_command_cannot_signal_the_server() {
    if !signals_scoped_here() {
        return;
    }
    let mut server = sandboxed(&[]);
    let answer = server.run("kill -STOP $PPID");
    assert!(answer.contains("Operation not permitted"), "{answer}");
    // The server was not stopped: it still answers.
    assert!(server.run("echo alive").starts_with("alive\n"));
    // Its own processes it still may signal.
    assert!(
        server
            .run("sleep 30 & kill $! && echo killed")
            .starts_with("killed\n")
    );
}

/// A root server with `--sandbox`, no users and no `--run-as` does not run its
/// commands as uid 0, which owns every root-owned file even without capabilities: they
/// run as nobody, or as the workdir's owner when that is not root. Root-only files are
/// out of their reach, to read and to change the mode of. Root only: that is the
/// deployment.
#[test]
fn a_root_servers_sandboxed_commands_are_not_root() {
    if !crate::support::landlock_here(1) || forge_bash::users::euid() != 0 {
        eprintln!("skipped: needs Landlock and a root server");
        return;
    }
    let Some(outside) = outside_dir() else {
        eprintln!("skipped: no directory outside /tmp to hold a root-only file");
        return;
    };
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "root's\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let readable = outside.path().display().to_string();
    let mut server = sandboxed(&["--readable", &readable]);
    let answer = server.run(&format!(
        "id -u; id -g; cat {0}; chmod 666 {0}; head -c 1 /etc/shadow; head -c 1 /proc/$PPID/environ; touch made && stat -c %u made",
        secret.display()
    ));
    assert!(answer.starts_with("65534\n65534\n65534\n"), "{answer}");
    assert!(
        answer.contains("cat: ") && answer.contains("Permission denied"),
        "{answer}"
    );
    assert!(
        answer.contains("chmod: ") && answer.contains("Operation not permitted"),
        "{answer}"
    );
    assert!(
        answer.contains("head: cannot open '/etc/shadow'"),
        "{answer}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        server.logged("commands run as nobody"),
        "{}",
        server.stderr()
    );
    // A workdir of a user's own: its owner.
    let mine = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(mine.path(), Some(4321), Some(4322)).unwrap();
    let mut server = crate::support::Options::default()
        .arg("--sandbox")
        .workdir(mine.path())
        .start();
    assert_eq!(
        mask_ms(&server.run("id -u; id -g")),
        "4321\n4322\n\n[exit:0 | Xms]"
    );
}

/// The way an answer names to stop a job it left running (`kill -- -PGID`) stops it
/// under the sandbox too, where each call's commands are in a Landlock domain of their
/// own and their own `kill` of another call's group is refused: the server carries it
/// out for groups that are its jobs, and for nothing else. As root and as an
/// unprivileged user.
#[test]
fn the_stop_an_answer_names_stops_the_job() {
    if !signals_scoped_here() {
        return;
    }
    for user in as_root_and_nobody() {
        let mut server = sandboxed_as(user, &[]);
        let answer = server.run("sleep 300 &");
        let stop = answer
            .split("stop it with: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_else(|| panic!("{user:?}: no stop in {answer}"));
        let pgid: i32 = stop.trim_start_matches("kill -- -").parse().expect(stop);
        // The job's own group, from another call: refused by Landlock without the server.
        let by_hand = server.run(&format!("kill -0 -- -{pgid} && echo reached"));
        assert!(refused(&by_hand), "{user:?}: {by_hand}");
        assert_eq!(mask_ms(&server.run(stop)), "\n[exit:0 | Xms]", "{user:?}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // SAFETY: signal 0 only asks whether the group exists.
        while unsafe { libc::killpg(pgid, 0) } == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{user:?}: {pgid} still runs"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // A group that is not one of the server's jobs is the command's own business:
        // its `kill` runs, and Landlock refuses it.
        let mut other = Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .unwrap();
        let answer = server.run(&format!("kill -- -{}", other.id()));
        assert!(refused(&answer), "{user:?}: {answer}");
        assert!(
            other.try_wait().unwrap().is_none(),
            "{user:?}: it was killed"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }
}

#[test]
fn refusals_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::binary()
        .args(["--network", "deny", "--workdir"])
        .arg(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--network deny needs --sandbox"));
    if !crate::support::landlock_here(1) {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let out = crate::support::binary()
        .args(["--sandbox", "--writable", "/does/not/exist", "--workdir"])
        .arg(dir.path())
        .arg("--state-dir")
        .arg(state.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--writable /does/not/exist"));
}

/// Refused, as a program reports a refusal: with the usual error, and not as success.
fn refused(answer: &str) -> bool {
    !answer.contains("[exit:0 ")
        && (answer.contains("Operation not permitted") || answer.contains("Permission denied"))
}

/// A sandboxed server run as `user` (root when `None`), with these flags.
fn sandboxed_as(user: Option<u32>, extra: &[&str]) -> Server {
    let mut options = Options::default().arg("--sandbox");
    // Root's toolchains are not the unprivileged user's to read: it uses the system's.
    let toolchains = match user {
        Some(uid) => {
            options = options.user(uid);
            Vec::new()
        }
        None => toolchains(),
    };
    for arg in toolchains
        .iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
    {
        options = options.arg(arg);
    }
    options.start()
}

/// The users to try an attack as: root, and the unprivileged user where the tests can
/// switch to it.
fn as_root_and_nobody() -> Vec<Option<u32>> {
    std::iter::once(None)
        .chain(crate::support::unprivileged().map(Some))
        .collect()
}

/// Bob's agent keeps a tmux session and a git credential cache in his own directories
/// (his operator allows him unix sockets); alice's, on a server with the default,
/// knows their paths. She can type into neither, nor connect to any socket she did not
/// make, while her own processes still talk through socket pairs.
#[test]
fn another_users_sockets_are_out_of_reach() {
    if !crate::support::landlock_here(1) {
        return;
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    for user in as_root_and_nobody() {
        let mut bob = sandboxed_as(user, &["--unix-sockets", "allow"]);
        let mut alice = sandboxed_as(user, &[]);
        let tmux = bob.state.join("tmp/tm");
        let cache = bob.state.join("home/.cache/git/credential/socket");
        let (tmux, cache) = (tmux.display(), cache.display());
        // tmux runs a pane's command with $SHELL, else the user's login shell, which
        // for nobody is nologin: without SHELL (CI's environment) the pane would end
        // at once, and the tmux server with it.
        let answer = bob.run(&format!(
            "SHELL=$(command -v bash) tmux -S {tmux} new-session -d -s b bash && \
             printf 'protocol=https\\nhost=github.com\\nusername=bob\\npassword=bob-token\\n\\n' | \
             git credential-cache --socket {cache} store && \
             printf 'protocol=https\\nhost=github.com\\n\\n' | git credential-cache --socket {cache} get"
        ));
        assert!(answer.contains("password=bob-token"), "{user:?}: {answer}");

        let typed = bob.workdir.join("typed");
        let answer = alice.run(&format!(
            "tmux -S {tmux} send-keys -t b 'touch {}' Enter",
            typed.display()
        ));
        assert!(!answer.contains("[exit:0 "), "{user:?}: {answer}");
        let answer = alice.run(&format!(
            "printf 'protocol=https\\nhost=github.com\\n\\n' | git credential-cache --socket {cache} get; \
             python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{cache}\")'"
        ));
        assert!(!answer.contains("bob-token"), "{user:?}: {answer}");
        assert!(refused(&answer), "{user:?}: {answer}");
        // Bob's shell got nothing: a key typed into it would have run by now.
        let answer = bob.run("sleep 1; tmux -S $TMPDIR/tm has-session -t b && echo up");
        assert!(
            answer.starts_with("up\n"),
            "{user:?}: {answer}\n--- bob's server ---\n{}",
            bob.stderr()
        );
        assert!(!typed.exists(), "{user:?}: alice typed into bob's tmux");

        // A listener of anyone's, made outside the sandbox: never reached.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let answer = alice.run(&format!(
            "python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{}\")'",
            path.display()
        ));
        assert!(refused(&answer), "{user:?}: {answer}");
        let accepted = listener.accept();
        assert!(accepted.is_err(), "{user:?}: the listener was reached");

        // What a program's own processes share still works.
        let answer = alice.run(
            "python3 -c 'import multiprocessing as m; a, b = m.Pipe(); a.send(\"piped\"); print(b.recv())' && \
             node -e 'require(\"child_process\").spawn(process.execPath, [\"-e\", \"process.send(1)\"], {stdio: [\"ignore\", \"inherit\", \"inherit\", \"ipc\"]}).on(\"message\", () => console.log(\"ipc\"))' && \
             python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"pair\"); print(b.recv(4).decode())'",
        );
        assert!(answer.starts_with("piped\n"), "{user:?}: {answer}");
        assert!(answer.contains("\nipc\npair\n"), "{user:?}: {answer}");
    }
}

/// The ways to a TCP port that Landlock's port rules do not see, each tried against a
/// listener that must never be reached.
const AROUND_THE_PORTS: &str = r#"
import socket, sys
port = int(sys.argv[1])
def mptcp(family, host):
    socket.socket(family, socket.SOCK_STREAM, 262).connect((host, port))
def fast_open():
    socket.socket().sendto(b"x", 0x20000000, ("127.0.0.1", port))
def fast_open_connect():
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, 30, 1)
    s.connect(("127.0.0.1", port))
    s.send(b"x")
def listen():
    socket.socket().listen()
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
def packet():
    socket.socket(17, socket.SOCK_RAW, 0)
for name, attack in [
    ("mptcp", lambda: mptcp(socket.AF_INET, "127.0.0.1")),
    ("mptcp6", lambda: mptcp(socket.AF_INET6, "::1")),
    ("fast_open", fast_open),
    ("fast_open_connect", fast_open_connect),
    ("listen", listen),
    ("raw", raw),
    ("packet", packet),
]:
    try:
        attack()
        print(name, "went through")
    except OSError as e:
        print(name, "refused:", e.strerror)
"#;

/// With a port list, MPTCP, TCP Fast Open, listening and raw sockets are refused, while
/// the listed port and UDP (name resolution) stay open; with `deny`, no internet socket
/// is made at all.
#[test]
fn no_way_around_the_port_rules() {
    if !crate::support::landlock_here(4) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let listener6 = TcpListener::bind(("::1", port)).ok();
    for l in std::iter::once(&listener).chain(&listener6) {
        l.set_nonblocking(true).unwrap();
    }
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = allowed.local_addr().unwrap().port().to_string();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    for user in as_root_and_nobody() {
        let mut server = sandboxed_as(user, &["--network", &open]);
        std::fs::write(server.workdir.join("around.py"), AROUND_THE_PORTS).unwrap();
        let answer = server.run(&format!("python3 around.py {port}"));
        for attack in [
            "mptcp ",
            "mptcp6 ",
            "fast_open ",
            "fast_open_connect ",
            "listen ",
            "raw ",
            "packet ",
        ] {
            let line = answer.lines().find(|l| l.starts_with(attack));
            assert!(
                line.is_some_and(|l| l.ends_with("refused: Operation not permitted")),
                "{user:?}: {attack}: {answer}"
            );
        }
        // The listed port and UDP still work.
        let answer = server.run(&format!(
            "exec 3<>/dev/tcp/127.0.0.1/{open} && echo connected && echo datagram > /dev/udp/127.0.0.1/{udp_port}"
        ));
        assert!(answer.starts_with("connected\n"), "{user:?}: {answer}");
        let mut buf = [0u8; 16];
        let (n, _) = udp.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"datagram\n");

        let mut denied = sandboxed_as(user, &["--network", "deny"]);
        std::fs::write(denied.workdir.join("around.py"), AROUND_THE_PORTS).unwrap();
        let answer = denied.run(&format!(
            "python3 around.py {port}; echo datagram > /dev/udp/127.0.0.1/{udp_port}"
        ));
        assert_eq!(
            answer.matches("refused: Operation not permitted").count(),
            7,
            "{answer}"
        );
        assert!(refused(&answer), "{user:?}: {answer}");
    }
    for l in std::iter::once(&listener).chain(&listener6) {
        assert!(l.accept().is_err(), "the listener was reached");
    }
    udp.set_nonblocking(true).unwrap();
    assert!(udp.recv_from(&mut [0u8; 16]).is_err(), "a datagram got out");
}

/// `/dev` is the devices a program needs, not the tree: `/dev/shm` is out of reach.
/// `/run` is not readable either (a container's secrets are under `/run/secrets`), and
/// a token file that commands could read refuses start-up. io_uring, whose operations
/// skip the system call checks, is refused.
#[test]
fn shared_memory_run_and_io_uring_are_out_of_reach() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let shm = tempfile::Builder::new()
        .prefix("forge-bash-test-")
        .tempfile_in("/dev/shm")
        .unwrap();
    std::fs::write(shm.path(), "shared memory\n").unwrap();
    // A secret under /run, where the test may make one (root); `ls /run` is tried anyway.
    let secrets = tempfile::Builder::new()
        .prefix("forge-bash-test-")
        .tempdir_in("/run")
        .inspect_err(|e| eprintln!("no secret under /run ({e}): only `ls /run` is tried"))
        .ok();
    let token = secrets.as_ref().map(|dir| dir.path().join("token"));
    let mut fixtures = vec![shm.path().to_owned()];
    if let (Some(dir), Some(token)) = (&secrets, &token) {
        std::fs::write(token, "secret-token-0123456789\n").unwrap();
        fixtures.extend([dir.path().to_owned(), token.clone()]);
    }
    for path in &fixtures {
        let mode = if path.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    }
    let io_uring = "python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); \
        r = libc.syscall(425, 4, ctypes.create_string_buffer(120)); \
        print(\"io_uring\", r, ctypes.get_errno())'";
    for user in as_root_and_nobody() {
        let mut server = sandboxed_as(user, &[]);
        for attack in [
            format!("cat {}", shm.path().display()),
            format!("echo x > {}", shm.path().display()),
            "ls /dev/shm".to_owned(),
            "ls /run".to_owned(),
        ]
        .into_iter()
        .chain(token.iter().map(|token| format!("cat {}", token.display())))
        {
            let answer = server.run(&attack);
            assert!(refused(&answer), "{user:?}: {attack}: {answer}");
        }
        let answer = server.run(io_uring);
        assert!(answer.starts_with("io_uring -1 1\n"), "{user:?}: {answer}");
        // What programs need of /dev still works.
        let answer = server.run(
            "echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c && \
             cat /dev/stdin < /dev/null && echo y | cat /dev/stdin && cat <(echo substituted)",
        );
        assert_eq!(
            mask_ms(&answer),
            "4\n4\ny\nsubstituted\n\n[exit:0 | Xms]",
            "{user:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(shm.path()).unwrap(),
        "shared memory\n"
    );
    // --writable gives /dev/shm back, for the programs that need POSIX shared memory.
    let mut server = sandboxed_as(None, &["--writable", "/dev/shm"]);
    let answer = server.run(&format!("cat {}", shm.path().display()));
    assert!(answer.starts_with("shared memory\n"), "{answer}");

    // A token file that commands could read (here through --readable) refuses start-up.
    let (workdir, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let readable = tempfile::tempdir().unwrap();
    let token = readable.path().join("token");
    std::fs::write(&token, "secret-token-0123456789\n").unwrap();
    let mut server = Options::default()
        .workdir(workdir.path())
        .state(state.path())
        .arg("--sandbox")
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg("--http-token-file")
        .arg(token.display().to_string())
        .arg("--readable")
        .arg(readable.path().display().to_string())
        .start();
    let status = server.wait_exit(crate::support::PATIENCE);
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "{}",
        server.stderr()
    );
    let stderr = server.stderr();
    assert!(
        stderr.contains(&format!("--http-token-file {}", token.display()))
            && stderr.contains("sandboxed commands can read it"),
        "{stderr}"
    );
}

/// Each command enters the ruleset itself, in a Landlock domain of its own: a later
/// call cannot signal what an earlier one left running, though the same uid runs both.
#[test]
fn one_call_cannot_signal_what_another_left_running() {
    if !signals_scoped_here() {
        return;
    }
    let mut server = sandboxed(&[]);
    let answer = server.run("sleep 300 > /dev/null 2>&1 & echo $!");
    let pid: libc::pid_t = answer
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .expect(&answer);
    let answer = server.run(&format!("kill -TERM {pid}; echo rc=$?"));
    assert!(
        answer.contains("Operation not permitted") && answer.contains("rc=1"),
        "{answer}"
    );
    // SAFETY: kill with signal 0 only checks that the process exists.
    assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "the job was stopped");
}

/// The filter is installed once on the server's spawning threads, not per command:
/// every command has it, once (its two programs, not a stack that grows with each
/// call), while the server's own threads have none.
#[test]
fn every_command_has_the_filter_once_and_the_server_none() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let mut server = sandboxed(&[]);
    // The filter the tests put on the server itself where they refuse it clone3.
    let theirs = crate::support::refusing_clone3();
    let filters = 2 + usize::from(theirs);
    for _ in 0..3 {
        let answer = server.run("grep Seccomp /proc/self/status");
        assert!(
            answer.starts_with(&format!("Seccomp:\t2\nSeccomp_filters:\t{filters}\n")),
            "{answer}"
        );
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let mode = if theirs { 2 } else { 0 };
    assert!(status.contains(&format!("Seccomp:\t{mode}\n")), "{status}");
}

/// The tools an agent runs in its workdir, with the seccomp layer on: a build, a test
/// runner (node's and Python's), pip, and programs whose processes talk to each other.
#[test]
fn everyday_tools_still_work() {
    if !crate::support::landlock_here(1) {
        return;
    }
    for user in as_root_and_nobody() {
        let mut server = sandboxed_as(user, &["--network", "deny"]);
        let answer = server.run(
            "printf 'all:\\n\\t@echo made\\n' > Makefile && make && \
             printf 'import unittest\\nclass T(unittest.TestCase):\\n    def test_x(self):\\n        self.assertEqual(1, 1)\\n' > test_x.py && \
             python3 -m unittest -q 2>&1 | tail -1 && \
             python3 -m pip --version > /dev/null && echo pip && \
             python3 -c 'import subprocess; print(subprocess.run([\"echo\", \"child\"], capture_output=True, text=True).stdout, end=\"\")' && \
             printf 'const t = require(\"node:test\");\\nt.test(\"x\", () => {});\\n' > x.test.js && \
             node --test x.test.js 2>&1 | grep -E '^# (pass|fail)'",
        );
        assert_eq!(
            mask_ms(&answer),
            "made\nOK\npip\nchild\n# pass 1\n# fail 0\n\n[exit:0 | Xms]",
            "{user:?}"
        );
    }
}

/// A command sets no other process's limits, priority or scheduling: not the server's
/// (`prlimit --pid $PPID --fsize=0:0` would kill it at its next write), nor a job an
/// earlier call left running, which `kill` could not reach either. Its own still
/// change (`ulimit`, `nice`, `ionice`, `prlimit` on a command it starts), and the
/// server goes on serving and auditing. As root and as an unprivileged user.
#[test]
fn no_command_reaches_another_process_limits_or_scheduling() {
    if !crate::support::landlock_here(1) {
        return;
    }
    for user in as_root_and_nobody() {
        let mut server = sandboxed_as(user, &[]);
        let answer = server.run("prlimit --pid $PPID --fsize=0:0 --nofile=3:3");
        assert!(refused(&answer), "{user:?}: {answer}");
        let answer = server.run("sleep 300 > /dev/null 2>&1 & echo $!");
        let job: i32 = answer.lines().next().unwrap().parse().expect(&answer);
        for attack in [
            format!("prlimit --pid {job} --cpu=1:2"),
            "prlimit --pid $PPID --nproc=1:1".to_owned(),
            format!("renice -n 10 -p {job}"),
            "renice -n 10 -p $PPID".to_owned(),
            format!("renice -n 10 -u {}", user.unwrap_or(0)),
            format!("ionice -c3 -p {job}"),
            format!("ionice -c3 -u {}", user.unwrap_or(0)),
            format!("taskset -p 1 {job}"),
            format!("chrt -o -p 0 {job}"),
        ] {
            let answer = server.run(&attack);
            assert!(refused(&answer), "{user:?}: {attack}: {answer}");
        }
        let answer = server.run(
            "ulimit -n 100 && ulimit -n && nice -n 5 true && ionice -c3 true && \
             prlimit --nofile=50:50 bash -c 'ulimit -n' && prlimit --pid $$ --nofile -o SOFT --noheadings > /dev/null && echo own",
        );
        assert_eq!(
            mask_ms(&answer),
            "100\n50\nown\n\n[exit:0 | Xms]",
            "{user:?}"
        );
        // The server still writes its files and serves.
        let answer = server.run("seq 1 3000");
        assert!(answer.contains("written to "), "{user:?}: {answer}");
        assert!(crate::support::alive(job));
        let rows = server.audit_rows();
        assert_eq!(rows.len(), 13, "{user:?}: {rows:?}");
        assert!(crate::support::alive(server.pid() as i32));
    }
}

/// Under `--network deny` no netlink socket but NETLINK_ROUTE can be made: sock_diag
/// (NETLINK_SOCK_DIAG, 4, what `ss` asks first) and the others are refused, while name
/// resolution and `ip link` (NETLINK_ROUTE) still work. A root server's commands are
/// in a network namespace of their own, so `ss`, which then reads `/proc/net`, lists
/// none of the host's sockets; a server that is not root says at start-up that it
/// cannot give them one. As root and as an unprivileged user.
#[test]
fn network_deny_refuses_netlink_but_what_name_resolution_needs() {
    if !crate::support::landlock_here(4) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for user in as_root_and_nobody() {
        let mut server = sandboxed_as(user, &["--network", "deny"]);
        let answer = server.run(&format!(
            "ss -tanl 2> /dev/null | grep -c ':{port} '; grep -ci ':{port:04X} ' /proc/net/tcp"
        ));
        let stderr = server.stderr();
        if user.is_none() {
            assert_eq!(mask_ms(&answer), "0\n0\n\n[exit:1 | Xms]", "{answer}");
            assert!(
                stderr.contains("a network namespace of their own"),
                "{stderr}"
            );
        } else {
            assert!(stderr.contains("the host's network namespace"), "{stderr}");
        }
        for protocol in [4, 9, 15, 16] {
            let answer = server.run(&format!(
                "python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, {protocol})'"
            ));
            assert!(refused(&answer), "{user:?}: netlink {protocol}: {answer}");
        }
        let answer = server.run("ss -tan 2>&1 > /dev/null | head -1");
        assert!(
            answer.starts_with("Cannot open netlink socket: Operation not permitted"),
            "{user:?}: {answer}"
        );
        let answer = server.run(
            "getent hosts localhost | head -1 | cut -d' ' -f1 && ip -o link | grep -c ': lo:' && \
             python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print(\"route\")'",
        );
        let shown = mask_ms(&answer);
        assert!(
            shown.ends_with("\n1\nroute\n\n[exit:0 | Xms]") && shown.contains("127.0.0.1"),
            "{user:?}: {answer}"
        );
    }
}

/// A root server's sandboxed commands are not root's equal: they hold no capability
/// (bounding, permitted, effective, inheritable, ambient), gain none by running a
/// program, and cannot set the clock or the host name, reboot, or load BPF programs.
/// As uid 65534 they had none to start with (but the bounding set, which only root can
/// lower), and the same calls are refused.
#[test]
fn sandboxed_commands_hold_no_capability_and_cannot_touch_the_machine() {
    if !crate::support::landlock_here(1) {
        return;
    }
    let users: Vec<Option<u32>> = std::iter::once(None)
        .chain(crate::support::unprivileged().map(Some))
        .collect();
    for user in users {
        let mut server = sandboxed_as(user, &[]);
        let caps =
            server.run("grep ^Cap /proc/self/status; sh -c 'grep ^CapEff /proc/self/status'");
        // A server that is not root cannot drop from the bounding set, nor needs to:
        // with no_new_privs, nothing it runs gains what the set bounds.
        let sets: &[&str] = match user {
            None => &["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"],
            Some(_) => &["CapInh", "CapPrm", "CapEff", "CapAmb"],
        };
        for name in sets {
            assert!(
                caps.contains(&format!("{name}:\t0000000000000000\n")),
                "{user:?}: {caps}"
            );
        }
        // Each call with arguments the kernel would refuse as invalid (EINVAL, EFAULT)
        // were it let through: nothing changes on the machine even then. Refused,
        // each gets EPERM.
        let calls = [
            ("reboot", "169, 0, 0, 0, 0"),
            ("sethostname", "170, b'x' * 100, 100"),
            ("clock_settime", "227, 0, 0"),
            ("settimeofday", "164, 0, 0"),
            ("bpf", "321, 999, 0, 0"),
        ];
        for (name, args) in calls {
            let script = format!(
                "import ctypes; l = ctypes.CDLL(None, use_errno=True); r = l.syscall({args}); print(ctypes.get_errno() if r < 0 else 'allowed')"
            );
            let answer = server.run(&format!("python3 -c \"{script}\""));
            assert!(answer.starts_with("1\n"), "{user:?}: {name}: {answer}");
        }
    }
}
