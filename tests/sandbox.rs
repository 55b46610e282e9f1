//! The Landlock sandbox, end to end. Where the kernel has no Landlock, each test says
//! so and skips.

use std::io::Read;
use std::net::TcpListener;
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
    let mut server = sandboxed(&["--writable", &extra_path]);
    assert!(
        server.stderr().contains("writes confined") || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            server.stderr().contains("writes confined")
        }
    );
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
    if Command::new("cargo").arg("--version").output().is_ok() {
        let answer = server.run(
            "cargo new -q --offline hello && cd hello && cargo build -q --offline && ls target/debug/hello",
        );
        assert_eq!(mask_ms(&answer), "target/debug/hello\n\n[exit:0 | Xms]");
    }
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
    assert!(answer.contains("Permission denied"), "{answer}");
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

#[test]
fn a_sandboxed_command_cannot_signal_the_server() {
    if !crate::support::landlock_here(1) {
        return;
    }
    if forge_bash::sandbox::kernel_abi().is_ok_and(|abi| (abi as i32) < 6) {
        eprintln!("skipped: signals are scoped from Landlock ABI 6");
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
    let out = crate::support::binary()
        .args(["--sandbox", "--writable", "/does/not/exist", "--workdir"])
        .arg(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--writable /does/not/exist"));
}
