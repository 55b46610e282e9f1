//! More than one machine, on one: three replicas sharing a workspace root, a state root
//! and the uid file, behind a real nginx (Debian's, started here on a loopback port
//! with a prefix of its own) that serves the project's own `deploy/nginx.conf`. Users
//! stick to a replica and are spread over several; when one replica stops, its users
//! come back through nginx on another, with their files and their uid.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::http::{Client, HttpServer, TOKEN};
use crate::support::{BIN, PATIENCE, eventually, own_uids};

const NGINX: &str = "/usr/sbin/nginx";

/// nginx, started by this test; stopped (and waited for) when dropped.
struct Nginx {
    child: Child,
    log: PathBuf,
}

impl Nginx {
    /// nginx serving `deploy/nginx.conf` with its upstream servers replaced by
    /// `replicas` and its `listen` by a free loopback port, under `prefix`.
    fn start(prefix: &Path, replicas: &[std::net::SocketAddr]) -> (Nginx, std::net::SocketAddr) {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let project = std::fs::read_to_string(manifest.join("deploy/nginx.conf")).unwrap();
        let listen = free_port();
        let mut servers = replicas.iter();
        let mut replaced = 0;
        let conf: String = project
            .lines()
            .map(|line| {
                let indent = &line[..line.len() - line.trim_start().len()];
                let trimmed = line.trim_start();
                if trimmed == "listen 80;" {
                    replaced += 1;
                    return format!("{indent}listen {listen};\n");
                }
                if let Some(rest) = trimmed.strip_prefix("server forge-bash-") {
                    let options = rest.split_once(' ').map_or(";", |(_, o)| o);
                    let addr = servers
                        .next()
                        .expect("as many replicas as upstream servers");
                    replaced += 1;
                    return format!("{indent}server {addr} {options}\n");
                }
                format!("{line}\n")
            })
            .collect();
        assert_eq!(
            replaced,
            1 + replicas.len(),
            "deploy/nginx.conf changed shape"
        );
        std::fs::write(prefix.join("forge-bash.conf"), conf).unwrap();
        let temp: String = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
            .iter()
            .map(|kind| format!("{kind}_temp_path {}/{kind};\n", prefix.display()))
            .collect();
        let main = format!(
            "daemon off;\nworker_processes 1;\npid {p}/nginx.pid;\nerror_log {p}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{\naccess_log off;\n{temp}include {p}/forge-bash.conf;\n}}\n",
            p = prefix.display()
        );
        std::fs::write(prefix.join("nginx.conf"), main).unwrap();
        let log = prefix.join("error.log");
        let child = Command::new(NGINX)
            .arg("-p")
            .arg(prefix)
            .arg("-e")
            .arg(&log)
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let nginx = Nginx { child, log };
        let up = eventually(PATIENCE, || std::net::TcpStream::connect(listen).is_ok());
        assert!(up, "nginx did not listen: {}", nginx.log());
        (nginx, listen)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SAFETY: a signal to the nginx master this test started; its workers end
        // with it.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn free_port() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A replica: its own temporary root (unused), the shared `root`'s workspaces, state
/// dirs and uid file.
fn replica(root: &Path) -> HttpServer {
    let mut command = Command::new(BIN);
    command
        .args(["--http", "127.0.0.1:0", "--shutdown-grace-secs", "1"])
        .arg("--workdir")
        .arg(root.join("ws/{user}"))
        .arg("--state-dir")
        .arg(root.join("state/{user}"))
        .env("FORGE_BASH_HTTP_TOKEN", TOKEN)
        .env("RUST_LOG", "forge_bash=info,warn");
    own_uids(&mut command, root);
    HttpServer::spawn(command, tempfile::tempdir().unwrap())
}

/// What one call tells of where it ran: the server's pid (the shell's parent) and
/// the uid.
fn whereabouts(client: &mut Client) -> (i32, u32) {
    let answer = client.run("echo $PPID $(id -u)");
    let mut words = answer.split_whitespace();
    let pid = words.next().and_then(|w| w.parse().ok());
    let uid = words.next().and_then(|w| w.parse().ok());
    pid.zip(uid).unwrap_or_else(|| panic!("{answer}"))
}

#[test]
fn replicas_behind_nginx_keep_users_apart_and_take_over_a_stopped_ones_users() {
    if !Path::new(NGINX).exists() {
        eprintln!("skipped: no {NGINX} (.ci/run installs Debian's nginx-light)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut replicas: Vec<HttpServer> = (0..3).map(|_| replica(root.path())).collect();
    let pids: BTreeSet<i32> = replicas.iter().map(HttpServer::pid).collect();
    let prefix = tempfile::tempdir().unwrap();
    // nginx's workers (nobody, when the test is root) reach their temporary files.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(prefix.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let addrs: Vec<_> = replicas.iter().map(|r| r.addr).collect();
    let (nginx, front) = Nginx::start(prefix.path(), &addrs);

    let users: Vec<String> = (0..12).map(|n| format!("user{n:02}")).collect();
    let mut served: BTreeMap<String, (i32, u32)> = BTreeMap::new();
    let mut clients = Vec::new();
    for user in &users {
        let mut client = replicas[0].client(Some(user));
        client.addr = front;
        let reply = client.initialize();
        assert_eq!(reply.status, 200, "{user}: {reply:?}\n{}", nginx.log());
        let first = whereabouts(&mut client);
        client.run(&format!("echo {user}-file > mine"));
        // Sticky: a second session of theirs, and its calls, reach the same one.
        let mut again = client.clone();
        again.session = None;
        assert_eq!(again.initialize().status, 200);
        assert_eq!(whereabouts(&mut again), first, "{user}");
        assert_eq!(whereabouts(&mut client), first, "{user}");
        assert!(pids.contains(&first.0), "{user} ran on {first:?}");
        served.insert(user.clone(), first);
        clients.push(client);
    }
    let used: BTreeSet<i32> = served.values().map(|(pid, _)| *pid).collect();
    assert!(used.len() > 1, "every user on one replica: {served:?}");
    let uids: BTreeSet<u32> = served.values().map(|(_, uid)| *uid).collect();
    // As root, a uid each (from the one shared file); otherwise the server's own.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(uids.len(), users.len(), "{served:?}");
    }

    // The replica with the most users stops.
    let mut count: BTreeMap<i32, usize> = BTreeMap::new();
    for (pid, _) in served.values() {
        *count.entry(*pid).or_default() += 1;
    }
    let (&gone, _) = count.iter().max_by_key(|(_, n)| **n).unwrap();
    let at = replicas.iter().position(|r| r.pid() == gone).unwrap();
    let mut stopped = replicas.remove(at);
    // SAFETY: a signal to the replica this test started.
    unsafe { libc::kill(stopped.pid(), libc::SIGTERM) };
    let status = stopped.child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    for (user, mut client) in users.iter().zip(clients) {
        let (pid, uid) = served[user];
        if pid != gone {
            // Untouched: the same session, the same replica.
            assert_eq!(whereabouts(&mut client), (pid, uid), "{user}");
            continue;
        }
        // Their session went with the replica: 404, as MCP says, and a new one.
        let lost = client.post(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        assert_eq!(lost.status, 404, "{user}: {lost:?}\n{}", nginx.log());
        client.session = None;
        assert_eq!(client.initialize().status, 200, "{user}");
        let (now, same_uid) = whereabouts(&mut client);
        assert!(now != gone && pids.contains(&now), "{user} on {now}");
        assert_eq!(same_uid, uid, "{user} keeps their uid");
        let mine = client.run("cat mine");
        assert!(
            mine.starts_with(&format!("{user}-file\n")),
            "{user}: {mine}"
        );
    }
    drop(nginx);
    // The replicas' temporary roots were unused: the shared root held everything.
    assert!(root.path().join("uids").is_file());
}
