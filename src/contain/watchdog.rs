//! The watchdog: a process of its own that ends the server's commands when the server
//! dies (SIGKILL, a crash), since a dead server can no longer do it.
//!
//! The server starts it as `forge-bash __watchdog` and tells it, one line at a time on
//! its stdin, what to kill:
//!
//! - `*<tag> <cgroup-root|-> <keep> <pids-root|->`: the server's marker prefix, its
//!   cgroup v2 directory for calls, whether background jobs of answered calls outlive
//!   it (`1`) or not (`0`), and its directory in the v1 `pids` hierarchy;
//! - `c<cpu-root>`: its directory in the v1 `cpu` hierarchy, which calls share;
//! - `m<memory-root>`: its directory in the v1 `memory` hierarchy;
//! - `+<marker> <pgid> <cgroup|->`: a call started;
//! - `-<marker>`: it was answered.
//!
//! When its stdin closes (the server is gone, however it went) it kills the running
//! calls and, unless told to keep them, everything any call started; then it removes
//! the server's cgroup directories (those that kept background jobs stay until the
//! next server sweeps them) and exits.
//! The server notices when the watchdog dies and starts another.
//!
//! It wakes for the close at once, but not for each line: after a line, it reads what
//! came every [`READ_EVERY`] until a round brings nothing. Woken for each, it took the
//! processor from the server twice a call, on the answer's path.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use super::{cgroup, killpg, sweep_prefix};

/// The argument that makes the binary a watchdog.
pub const ARG: &str = "__watchdog";

/// How often the watchdog reads its orders while they come.
const READ_EVERY: Duration = Duration::from_millis(200);

/// The pipe's room for orders not read yet: about 10,000 calls'.
const PIPE_ROOM: libc::c_int = 1024 * 1024;

/// What the watchdog was told.
#[derive(Debug, Default)]
struct Orders {
    tag: Option<String>,
    root: Option<PathBuf>,
    keep: bool,
    pids_root: Option<PathBuf>,
    cpu_root: Option<PathBuf>,
    memory_root: Option<PathBuf>,
    running: HashMap<String, (libc::pid_t, Option<PathBuf>)>,
}

impl Orders {
    fn take(&mut self, line: &str) {
        let cgroup = |s: &str| (s != "-").then(|| PathBuf::from(s));
        if let Some(rest) = line.strip_prefix('*') {
            let mut parts = rest.splitn(4, ' ');
            if let (Some(tag), Some(root), Some(keep)) = (parts.next(), parts.next(), parts.next())
            {
                self.tag = Some(tag.to_owned());
                self.root = cgroup(root);
                self.keep = keep == "1";
                self.pids_root = parts.next().and_then(cgroup);
            }
        } else if let Some(rest) = line.strip_prefix('+') {
            let mut parts = rest.splitn(3, ' ');
            if let (Some(marker), Some(pgid), Some(dir)) =
                (parts.next(), parts.next(), parts.next())
            {
                let pgid = pgid.parse().unwrap_or(0);
                self.running.insert(marker.to_owned(), (pgid, cgroup(dir)));
            }
        } else if let Some(root) = line.strip_prefix('c') {
            self.cpu_root = cgroup(root);
        } else if let Some(root) = line.strip_prefix('m') {
            self.memory_root = cgroup(root);
        } else if let Some(marker) = line.strip_prefix('-') {
            self.running.remove(marker);
        }
    }

    /// The server is gone: take its calls along.
    fn carry_out(self) {
        let mut cgroups = Vec::new();
        for (marker, (pgid, dir)) in self.running {
            if let Some(dir) = dir {
                let _ = cgroup::kill(&dir);
                cgroups.push(dir);
            }
            if pgid > 0 {
                let _ = killpg(pgid);
            }
            super::sweep(&marker);
        }
        if !self.keep {
            if let Some(root) = &self.root {
                let _ = cgroup::kill(root);
            } else if let Some(root) = &self.pids_root {
                cgroup::kill_listed(root);
            }
            if let Some(tag) = &self.tag {
                sweep_prefix(&format!("{tag}-"));
            }
        }
        // Empty cgroups can be removed once the kernel has reaped what was in them.
        std::thread::sleep(std::time::Duration::from_millis(100));
        for dir in cgroups {
            let _ = std::fs::remove_dir(&dir);
        }
        for root in [
            &self.root,
            &self.pids_root,
            &self.cpu_root,
            &self.memory_root,
        ]
        .into_iter()
        .flatten()
        {
            cgroup::remove_tree(root);
        }
    }
}

/// The watchdog's life: read orders from stdin until it closes, then carry them out.
pub fn run() {
    // SAFETY: plain libc calls on standard descriptors and signal dispositions.
    unsafe {
        // Ctrl-C at a terminal reaches the whole group; the server handles it.
        for signal in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::setsid();
    }
    let mut orders = Orders::default();
    let stdin = std::io::stdin();
    let fd = stdin.as_raw_fd();
    // SAFETY: fcntl on the standard input this process owns; flags and pipe size only.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_ROOM);
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let mut input = stdin.lock();
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut idle = true;
    loop {
        // Idle, a line wakes it; while lines come, only the close or the next round.
        let events = if idle { libc::POLLIN } else { 0 };
        let timeout = if idle {
            -1
        } else {
            READ_EVERY.as_millis() as libc::c_int
        };
        let mut poll = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut poll, 1, timeout) };
        let (read, closed) = read_available(&mut input, &mut buf, &mut pending);
        for line in take_lines(&mut pending) {
            orders.take(&line);
        }
        if closed {
            break;
        }
        idle = !read;
    }
    orders.carry_out();
}

/// Reads what the pipe holds into `pending`: whether anything came, and whether the
/// server's end is closed.
fn read_available(input: &mut impl Read, buf: &mut [u8], pending: &mut Vec<u8>) -> (bool, bool) {
    let mut read = false;
    loop {
        match input.read(buf) {
            Ok(0) => return (read, true),
            Ok(n) => {
                read = true;
                pending.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return (read, false),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return (read, true),
        }
    }
}

/// The whole lines in `pending`, taken out of it.
fn take_lines(pending: &mut Vec<u8>) -> Vec<String> {
    let Some(end) = pending.iter().rposition(|&b| b == b'\n') else {
        return Vec::new();
    };
    let lines: Vec<u8> = pending.drain(..=end).collect();
    lines
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_taken_whole_and_a_partial_one_waits() {
        let mut pending = b"+a 1 -\n-a\n+b 2".to_vec();
        assert_eq!(take_lines(&mut pending), ["+a 1 -", "-a"]);
        assert_eq!(pending, b"+b 2");
        assert!(take_lines(&mut pending).is_empty());
        pending.extend_from_slice(b" -\n");
        assert_eq!(take_lines(&mut pending), ["+b 2 -"]);
        assert!(pending.is_empty());
    }

    #[test]
    fn orders_track_running_calls() {
        let mut orders = Orders::default();
        orders.take("*12-34 /sys/fs/cgroup/x/forge-bash-12 0 /sys/fs/cgroup/pids/forge-bash-12");
        orders.take("+12-34-1 100 /sys/fs/cgroup/x/forge-bash-12/call-1");
        orders.take("+12-34-2 200 -");
        orders.take("-12-34-1");
        orders.take("garbage");
        assert_eq!(orders.tag.as_deref(), Some("12-34"));
        assert!(!orders.keep);
        assert_eq!(
            orders.root.as_deref(),
            Some(std::path::Path::new("/sys/fs/cgroup/x/forge-bash-12"))
        );
        assert_eq!(
            orders.pids_root.as_deref(),
            Some(std::path::Path::new("/sys/fs/cgroup/pids/forge-bash-12"))
        );
        assert_eq!(orders.running.len(), 1);
        assert_eq!(orders.running["12-34-2"], (200, None));
    }
}
