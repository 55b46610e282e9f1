//! The static binary where LibreChat's `node:20-alpine` image runs it: no glibc, no
//! bash, a user that is not root.
//!
//! The test builds forge-bash with `-C target-feature=+crt-static` for the host target
//! (a debug build without debug info, in a target dir of its own under
//! `CARGO_TARGET_TMPDIR`, reused by later runs), or takes the binary named by
//! `FORGE_BASH_STATIC_BIN`. It then makes a root that holds only that binary, a static
//! busybox as `/bin/sh` and `/bin/id`, `/dev/null`, a workdir and a state dir, and
//! serves from it through `chroot --userspec=65534:65534`: once without `/proc`, once
//! with `/proc` mounted in a mount namespace of its own. It needs root and a static
//! busybox (Debian's `busybox-static`); without them it says so and skips.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

use crate::support::{PATIENCE, audit_rows, text};

const NOBODY: u32 = 65534;

/// Where busybox may be installed.
const BUSYBOX: &[&str] = &["/bin/busybox", "/usr/bin/busybox"];

/// What the server logs when it cannot re-execute itself as its watchdog (src/main.rs).
const NO_WATCHDOG: &str = "cannot start the watchdog";

#[test]
fn answers_in_a_root_without_glibc_bash_or_proc() {
    let Some(root) = Root::make() else { return };
    let mut server = root.serve(false);
    server.handshake();

    let answer = server.run("echo hello from $0; id -u");
    assert!(
        answer.starts_with("hello from /bin/sh\n65534\n"),
        "{answer}"
    );
    assert!(answer.contains("[exit:0 |"), "{answer}");

    // The root holds nothing else: no loader, no libc, no bash.
    let listing = server.run("echo /* /bin/*; command -v bash || echo no bash");
    assert!(
        listing.starts_with(
            "/bin /dev /forge-bash /proc /state /work /bin/busybox /bin/id /bin/sh\nno bash\n"
        ),
        "{listing}"
    );

    let stderr = server.finish();
    // Without /proc there is no /proc/self/exe to start the watchdog from: the server
    // says so and serves on.
    assert!(stderr.contains(NO_WATCHDOG), "{stderr}");
    let rows = audit_rows(&root.dir.path().join("state"));
    assert_eq!(rows.len(), 2, "one audit row per call: {rows:?}");
}

#[test]
fn starts_its_watchdog_there_with_proc() {
    let Some(root) = Root::make() else { return };
    let mut server = root.serve(true);
    if !server.try_handshake() {
        let stderr = server.finish();
        if stderr.contains("unshare:") || stderr.contains("mount:") {
            eprintln!("skipped: no mount namespace here: {}", stderr.trim());
            return;
        }
        panic!("no answer to initialize; stderr:\n{stderr}");
    }
    let answer = server.run("echo hello from $0; id -u");
    assert!(
        answer.starts_with("hello from /bin/sh\n65534\n"),
        "{answer}"
    );
    assert!(answer.contains("[exit:0 |"), "{answer}");
    let stderr = server.finish();
    assert!(!stderr.contains(NO_WATCHDOG), "{stderr}");
}

/// A root directory with the static server, a static busybox and nothing else.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    /// The root, or `None` (having said why) where this test cannot run.
    fn make() -> Option<Root> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: chroot and device nodes need root");
            return None;
        }
        let Some(busybox) = BUSYBOX.iter().map(Path::new).find(|p| p.is_file()) else {
            eprintln!("skipped: no busybox; install Debian's busybox-static (.ci/run does)");
            return None;
        };
        if has_interpreter(busybox) {
            eprintln!(
                "skipped: {} is dynamically linked; install Debian's busybox-static",
                busybox.display()
            );
            return None;
        }
        if Command::new("chroot").arg("--version").output().is_err() {
            eprintln!("skipped: chroot is not installed");
            return None;
        }
        let binary = static_binary();
        assert!(
            !has_interpreter(&binary),
            "{} asks for a dynamic loader",
            binary.display()
        );

        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        for sub in ["bin", "dev", "proc", "work", "state"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        for sub in ["work", "state"] {
            std::os::unix::fs::chown(root.join(sub), Some(NOBODY), Some(NOBODY)).unwrap();
        }
        std::fs::copy(busybox, root.join("bin/busybox")).unwrap();
        for applet in ["sh", "id"] {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
        }
        std::fs::copy(&binary, root.join("forge-bash")).unwrap();
        // The shell's stdin; the only device a call needs.
        let null =
            std::ffi::CString::new(root.join("dev/null").into_os_string().into_encoded_bytes())
                .unwrap();
        // SAFETY: a valid C string and plain integers.
        let made =
            unsafe { libc::mknod(null.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        assert_eq!(
            made,
            0,
            "mknod /dev/null: {}",
            std::io::Error::last_os_error()
        );
        std::fs::set_permissions(
            root.join("dev/null"),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        Some(Root { dir })
    }

    /// Starts the server in the root as the unprivileged user; with `proc`, inside a
    /// mount namespace where the root has `/proc`.
    fn serve(&self, proc: bool) -> Jail {
        let root = self.dir.path().to_str().unwrap();
        let user = format!("--userspec={NOBODY}:{NOBODY}");
        let server = ["/forge-bash", "--workdir", "/work", "--state-dir", "/state"];
        let mut command = if proc {
            let mut command = Command::new("unshare");
            command.args([
                "-m",
                "sh",
                "-c",
                r#"mount -t proc proc "$1/proc" && exec chroot "$2" "$1" "$3" "$4" "$5" "$6" "$7""#,
                "sh",
                root,
                &user,
            ]);
            command.args(server);
            command
        } else {
            let mut command = Command::new("chroot");
            command.args([&user, root]).args(server);
            command
        };
        command
            .env_clear()
            // chroot and unshare are in the sbin directories; the root has only /bin.
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("RUST_LOG", "forge_bash=debug,warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Jail::start(command)
    }
}

/// The server in its root, spoken to line by line.
struct Jail {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
}

impl Jail {
    fn start(mut command: Command) -> Jail {
        let mut child = command.spawn().expect("start the server in its root");
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut stream = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = stream.read_to_end(&mut all);
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&all));
        });
        Jail {
            child,
            stdin,
            lines,
            stderr,
            next_id: 0,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        // A server that died is reported by the missing answer, with its stderr.
        let _ = writeln!(stdin, "{message}").and_then(|()| stdin.flush());
    }

    /// Sends a request; its answer, or `None` when none comes in time.
    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line:?}"));
            if message["id"] == json!(id) {
                return Some(message);
            }
        }
    }

    fn answer(&mut self, method: &str, params: Value) -> Value {
        self.request(method, params).unwrap_or_else(|| {
            let stderr = self.finish();
            panic!("no answer to {method} within {PATIENCE:?}; stderr:\n{stderr}")
        })
    }

    /// `initialize`, then `tools/list`; false when `initialize` has no answer.
    fn try_handshake(&mut self) -> bool {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "forge-bash-tests", "version": "0"}
        });
        let Some(init) = self.request("initialize", params) else {
            return false;
        };
        assert_eq!(init["result"]["serverInfo"]["name"], "forge-bash", "{init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let tools = self.answer("tools/list", json!({}));
        assert_eq!(tools["result"]["tools"][0]["name"], "run", "{tools}");
        true
    }

    fn handshake(&mut self) {
        if !self.try_handshake() {
            let stderr = self.finish();
            panic!("no answer to initialize; stderr:\n{stderr}");
        }
    }

    /// Runs a command; the answer's text.
    fn run(&mut self, command: &str) -> String {
        let params = json!({"name": "run", "arguments": {"command": command}});
        text(&self.answer("tools/call", params))
    }

    /// Closes stdin and waits for the server to stop; its stderr.
    fn finish(&mut self) -> String {
        self.stdin = None;
        let deadline = std::time::Instant::now() + PATIENCE;
        while self.child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // The reader thread ends with the stream; give it a moment to hand over.
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The static binary: `FORGE_BASH_STATIC_BIN`, or built once for all the tests here.
fn static_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("FORGE_BASH_STATIC_BIN") {
        return PathBuf::from(path);
    }
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(build_static)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `cargo build` with crt-static for the host target into a target dir of its own
/// (`--target` keeps the flag off build scripts and proc macros), niced so that the
/// tests running meanwhile keep their pace. Debug without debug info: the fastest
/// build that is still the same code.
fn build_static() -> Result<PathBuf, String> {
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("rustc -vV: {e}"))?;
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: ").map(str::to_owned))
        .ok_or("rustc -vV names no host")?;
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("static");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let started = std::time::Instant::now();
    let out = Command::new("nice")
        .args(["-n", "19", env!("CARGO"), "build", "--locked", "--offline"])
        .args(["--bin", "forge-bash", "--target", &host])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .output()
        .map_err(|e| format!("nice cargo build: {e}"))?;
    eprintln!("static build: {:.1} s", started.elapsed().as_secs_f64());
    if !out.status.success() {
        return Err(format!(
            "the static build failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(target_dir.join(host).join("debug/forge-bash"))
}

/// Whether an ELF file names a program interpreter (a dynamic loader) to run it.
fn has_interpreter(path: &Path) -> bool {
    const PT_INTERP: u32 = 3;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert!(
        bytes.starts_with(b"\x7fELF\x02\x01"),
        "{} is not a 64-bit little-endian ELF file",
        path.display()
    );
    let phoff = usize::try_from(u64_at(0x20)).unwrap();
    let (size, count) = (usize::from(u16_at(0x36)), usize::from(u16_at(0x38)));
    (0..count).any(|i| u32_at(phoff + i * size) == PT_INTERP)
}
