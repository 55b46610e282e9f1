//! Containment: every process a call starts can be found and killed, even after it
//! left the call's process group, and even after the server itself died.
//!
//! Three nets, from the tightest:
//!
//! - **A cgroup per call** (cgroup v2, where the server may create one under its own
//!   cgroup): the shell is moved into it right after it starts, everything it starts
//!   stays in it, and `cgroup.kill` kills them all at once.
//! - **The process group**: the shell leads a group of its own; `killpg` reaches what
//!   did not call `setsid` or `setpgid` (bash's `set -m` does).
//! - **A marker**: every call's shell gets `FORGE_BASH_CALL=<id>` in its environment,
//!   which its descendants inherit; a sweep of `/proc/*/environ` finds them wherever
//!   they went. A process that starts with an empty environment (`env -i setsid …`)
//!   loses it; only the cgroup still holds such a process.
//!
//! A **watchdog** process, forked at start-up before any thread exists, holds the read
//! end of a pipe. The server registers each running call on it and unregisters the
//! call when it is answered. If the server dies (SIGKILL, a crash), the pipe closes and
//! the watchdog kills every call still registered, then exits. Background jobs of calls
//! that were answered are left alone.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The environment variable that marks a call's processes.
pub const MARKER: &str = "FORGE_BASH_CALL";

/// Rounds of the `/proc` sweep: processes forked while a round runs are caught by the
/// next; a fork bomb outlives this many rounds only while its group and cgroup live.
const SWEEP_ROUNDS: usize = 8;

/// How this server contains calls; built once at start-up.
#[derive(Debug)]
pub struct Containment {
    /// This server's cgroup for calls (`…/forge-bash-<pid>`), when it could make one.
    cgroups: Option<PathBuf>,
    /// The cgroup the server itself lives in.
    home: Option<PathBuf>,
    watchdog: Option<Mutex<File>>,
    /// Unique per server: pid and start time.
    tag: String,
    next: AtomicU64,
    /// Call cgroups that still held processes when their call ended.
    lingering: Mutex<Vec<PathBuf>>,
}

impl Containment {
    /// Sets up containment: forks the watchdog and creates the cgroup for calls where
    /// the system allows. Must run before any thread exists (it forks).
    ///
    /// # Safety
    ///
    /// The process must have a single thread.
    pub unsafe fn start() -> Containment {
        // SAFETY: forwarded from the caller.
        let watchdog = match unsafe { spawn_watchdog() } {
            Ok(file) => Some(Mutex::new(file)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the watchdog; a killed server would leave its commands running");
                None
            }
        };
        let mut containment = Containment::without_watchdog();
        containment.watchdog = watchdog;
        containment
    }

    /// Containment without the watchdog (for tests and tools): cgroup, group, marker.
    pub fn without_watchdog() -> Containment {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let (home, cgroups) = match call_cgroups() {
            Some((home, cgroups)) => (Some(home), Some(cgroups)),
            None => (None, None),
        };
        Containment {
            cgroups,
            home,
            watchdog: None,
            tag: format!("{}-{started}", std::process::id()),
            next: AtomicU64::new(1),
            lingering: Mutex::new(Vec::new()),
        }
    }

    /// What holds a call's processes, for the start-up log and the README.
    pub fn mechanism(&self) -> &'static str {
        match self.cgroups {
            Some(_) => "cgroup per call, process group and marker",
            None => "process group and marker",
        }
    }

    /// A new call: its marker, and its cgroup when there are cgroups.
    pub fn call(self: &Arc<Self>) -> Arc<Call> {
        self.retry_lingering();
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let marker = format!("{}-{n}", self.tag);
        let cgroup = self.cgroups.as_ref().and_then(|root| {
            let dir = root.join(format!("call-{n}"));
            match std::fs::create_dir(&dir) {
                Ok(()) => Some(dir),
                Err(e) => {
                    tracing::debug!(error = %e, dir = %dir.display(), "no cgroup for this call");
                    None
                }
            }
        });
        Arc::new(Call {
            marker,
            cgroup,
            pgid: AtomicI32::new(0),
            registered: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            containment: self.clone(),
        })
    }

    fn watchdog(&self, line: &str) {
        if let Some(watchdog) = &self.watchdog {
            let mut file = watchdog.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = file.write_all(line.as_bytes()) {
                tracing::debug!(error = %e, "watchdog gone");
            }
        }
    }

    fn retry_lingering(&self) {
        let mut lingering = self.lingering.lock().unwrap_or_else(|e| e.into_inner());
        lingering.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
    }
}

impl Containment {
    /// Removes the server's call cgroups that are empty, then its own, at exit. A cgroup
    /// that still holds a background job stays until the system removes it.
    pub fn remove_cgroups(&self) {
        let Some(root) = &self.cgroups else {
            return;
        };
        if let Ok(entries) = std::fs::read_dir(root) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
        let _ = std::fs::remove_dir(root);
    }
}

/// The processes of one call.
#[derive(Debug)]
pub struct Call {
    marker: String,
    cgroup: Option<PathBuf>,
    pgid: AtomicI32,
    registered: AtomicBool,
    killed: AtomicBool,
    containment: Arc<Containment>,
}

impl Call {
    /// The variable to set in the shell's environment: `(MARKER, id)`.
    pub fn marker(&self) -> (&'static str, &str) {
        (MARKER, &self.marker)
    }

    /// Runs `spawn` with the server inside the call's cgroup, so the shell is born
    /// there and nothing it starts is ever outside; then the server moves back. This
    /// keeps the spawn free of hooks between fork and exec (posix_spawn stays usable).
    pub fn spawn_inside<T>(&self, spawn: impl FnOnce() -> T) -> T {
        let (Some(cgroup), Some(home)) = (&self.cgroup, &self.containment.home) else {
            return spawn();
        };
        if let Err(e) = std::fs::write(cgroup.join("cgroup.procs"), "0") {
            tracing::debug!(error = %e, "cannot enter the call's cgroup");
            return spawn();
        }
        let spawned = spawn();
        if let Err(e) = std::fs::write(home.join("cgroup.procs"), "0") {
            tracing::error!(error = %e, "cannot leave a call's cgroup");
        }
        spawned
    }

    /// Takes the just-spawned shell (leader of its own group) into the call: its group
    /// id, and the watchdog's list.
    pub fn adopt(&self, pid: u32) {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        self.pgid.store(pid, Ordering::Relaxed);
        let cgroup = self
            .cgroup
            .as_deref()
            .map_or_else(|| "-".to_owned(), |p| p.display().to_string());
        self.containment
            .watchdog(&format!("+{} {pid} {cgroup}\n", self.marker));
        self.registered.store(true, Ordering::Relaxed);
    }

    /// Kills every process of the call: its cgroup, its group, and whatever carries
    /// its marker. Processes already gone are not an error; a second kill does nothing.
    pub fn kill(&self) -> io::Result<()> {
        if self.killed.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        let mut result = Ok(());
        if let Some(cgroup) = &self.cgroup
            && !holds_me(cgroup)
        {
            result = kill_cgroup(cgroup);
        }
        let pgid = self.pgid.load(Ordering::Relaxed);
        if pgid > 0 {
            result = result.and(killpg(pgid));
        }
        sweep(&self.marker);
        result
    }

    /// The call was answered: a server death no longer takes its processes along.
    pub fn release(&self) {
        if self.registered.swap(false, Ordering::Relaxed) {
            self.containment.watchdog(&format!("-{}\n", self.marker));
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.release();
        if let Some(cgroup) = self.cgroup.take()
            && std::fs::remove_dir(&cgroup).is_err()
            && cgroup.exists()
        {
            let mut lingering =
                (self.containment.lingering.lock()).unwrap_or_else(|e| e.into_inner());
            lingering.push(cgroup);
        }
    }
}

/// SIGKILL to a process group; a group that is gone already is not an error.
pub fn killpg(pgid: libc::pid_t) -> io::Result<()> {
    // SAFETY: killpg has no memory-safety preconditions.
    if unsafe { libc::killpg(pgid, libc::SIGKILL) } == 0 {
        return Ok(());
    }
    match io::Error::last_os_error() {
        e if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        e => Err(e),
    }
}

/// True when the server itself is in `cgroup` (it could not leave it after a spawn):
/// that cgroup is then never killed whole.
fn holds_me(cgroup: &Path) -> bool {
    let me = std::process::id().to_string();
    std::fs::read_to_string(cgroup.join("cgroup.procs"))
        .is_ok_and(|procs| procs.lines().any(|pid| pid == me))
}

/// Kills everything in a cgroup (and its descendants) with `cgroup.kill`.
fn kill_cgroup(cgroup: &Path) -> io::Result<()> {
    match std::fs::write(cgroup.join("cgroup.kill"), "1") {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Kills every process whose environment holds `MARKER=marker`, round after round
/// until a round finds none.
pub fn sweep(marker: &str) {
    let needle = format!("{MARKER}={marker}");
    let me = std::process::id();
    for _ in 0..SWEEP_ROUNDS {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut found = false;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            let marked = environ
                .split(|&b| b == 0)
                .any(|var| var == needle.as_bytes());
            if marked {
                found = true;
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        }
        if !found {
            return;
        }
    }
}

/// The server's own cgroup and the cgroup v2 directory for its calls, created under
/// it, when cgroup v2 is mounted, writable here, and has `cgroup.kill`.
fn call_cgroups() -> Option<(PathBuf, PathBuf)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|line| {
        let (fields, fs) = line.split_once(" - ")?;
        fs.starts_with("cgroup2 ")
            .then(|| fields.split(' ').nth(4))
            .flatten()
    })?;
    let base = Path::new(mount).join(own.trim_start_matches('/'));
    if !base.join("cgroup.kill").exists() && !base.join("cgroup.procs").exists() {
        return None;
    }
    remove_stale(&base);
    let dir = base.join(format!("forge-bash-{}", std::process::id()));
    match std::fs::create_dir(&dir) {
        Ok(()) if dir.join("cgroup.kill").exists() => Some((base, dir)),
        Ok(()) => {
            let _ = std::fs::remove_dir(&dir);
            None
        }
        Err(_) => None,
    }
}

/// Removes what earlier servers left in `base`: `forge-bash-<pid>` cgroups whose
/// server is gone, once their background jobs are gone too (a non-empty cgroup stays).
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("forge-bash-")) else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        if let Ok(calls) = std::fs::read_dir(entry.path()) {
            for call in calls.flatten() {
                if call.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir(call.path());
                }
            }
        }
        let _ = std::fs::remove_dir(entry.path());
    }
}

/// Forks the watchdog. The parent gets the write end of its pipe.
///
/// # Safety
///
/// The process must have a single thread.
unsafe fn spawn_watchdog() -> io::Result<File> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two fresh descriptors that we now own.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the caller guarantees a single thread, so the child may run any code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(write);
            watchdog(File::from(read));
            // SAFETY: _exit ends the child without running the parent's destructors.
            unsafe { libc::_exit(0) }
        }
        _ => Ok(File::from(write)),
    }
}

/// The watchdog's life: keep the list of running calls until the pipe closes, then
/// kill them all.
fn watchdog(pipe: File) {
    // SAFETY: plain libc calls on standard descriptors and signal dispositions.
    unsafe {
        // The server owns stdin and stdout; the client must see them close with it.
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::close(null);
        }
        // Ctrl-C at a terminal reaches the whole group; the server handles it.
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::setsid();
    }
    let mut running: HashMap<String, (libc::pid_t, Option<PathBuf>)> = HashMap::new();
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        if let Some(rest) = line.strip_prefix('+') {
            let mut parts = rest.splitn(3, ' ');
            let (Some(marker), Some(pgid), Some(cgroup)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let cgroup = (cgroup != "-").then(|| PathBuf::from(cgroup));
            running.insert(marker.to_owned(), (pgid.parse().unwrap_or(0), cgroup));
        } else if let Some(marker) = line.strip_prefix('-') {
            running.remove(marker);
        }
    }
    // The server is gone: take its running calls along.
    let mut cgroups = Vec::new();
    for (marker, (pgid, cgroup)) in running {
        if let Some(cgroup) = cgroup {
            let _ = kill_cgroup(&cgroup);
            cgroups.push(cgroup);
        }
        if pgid > 0 {
            let _ = killpg(pgid);
        }
        sweep(&marker);
    }
    // Empty cgroups can be removed once the kernel has reaped what was in them.
    std::thread::sleep(std::time::Duration::from_millis(100));
    for cgroup in cgroups {
        let _ = std::fs::remove_dir(&cgroup);
        if let Some(parent) = cgroup.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
}
