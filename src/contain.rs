//! Containment: every process a call starts can be found and killed, even after it
//! left the call's process group, and even after the server itself died.
//!
//! Three nets, from the tightest:
//!
//! - **A cgroup per call** (cgroup v2, where the server may create one under its own
//!   cgroup): the shell is born in it, everything it starts stays in it, and
//!   `cgroup.kill` kills them all at once. Where a `pids` controller is at hand, the
//!   call's cgroup also limits its processes (`--max-processes`), so a fork bomb
//!   cannot take the tool down with it (see [`cgroup`]).
//! - **The process group**: the shell leads a group of its own; `killpg` reaches what
//!   did not call `setsid` or `setpgid` (bash's `set -m` does).
//! - **A marker**: every call's shell gets `FORGE_BASH_CALL=<server>-<n>` in its
//!   environment, which its descendants inherit; a sweep of `/proc/*/environ` finds
//!   them wherever they went. A process that starts with an empty environment
//!   (`env -i setsid …`) loses it; only the cgroup still holds such a process.
//!
//! When the server stops, it ends everything any call started, background jobs of
//! answered calls included, unless `--keep-background` is given. Before anything is
//! killed, whatever their output goes to is [`Told`] why, as it is when a session
//! ends. A [`watchdog`] process does the same when the server dies without stopping
//! (SIGKILL, a crash).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};

pub mod cgroup;
pub mod clones;
pub mod limits;
pub mod spawn;
pub mod watchdog;

use crate::worker::Worker;
use cgroup::{CallCgroups, Cgroups};
pub use limits::Limits;

/// The environment variable that marks a call's processes.
pub const MARKER: &str = "FORGE_BASH_CALL";

/// Why the server stops what an answered call left running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopping {
    /// The server stops; `kept`: background jobs are left running (`--keep-background`).
    Server { kept: bool },
    /// The client session of the call ends.
    Session,
}

/// Told when the server stops what an answered call left running, before anything is
/// killed: the file that a background job's output goes to ends with a line saying why.
pub trait Told: Send + Sync + std::fmt::Debug {
    fn stopping(&self, why: Stopping);
}

/// Processes a call may have at once, where a `pids` controller enforces it.
pub const DEFAULT_MAX_PROCESSES: u32 = 2048;

/// Rounds of the `/proc` sweep: processes forked while a round runs are caught by the
/// next; a fork bomb outlives this many rounds only while its group and cgroup live.
const SWEEP_ROUNDS: usize = 8;

/// The stack of a thread that kills a call's processes: it only reads small files.
const KILL_STACK: usize = 256 * 1024;

/// Idle spawning threads kept, of each kind.
const IDLE_SPAWNERS: usize = 4;

/// How long a shell may take from its clone to executing bash before it is killed and
/// its call fails.
pub const START_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// How this server contains calls; built once at start-up.
#[derive(Debug)]
pub struct Containment {
    /// Found on a thread of its own at start-up (making cgroups takes a millisecond
    /// or two), and waited for by the first call.
    cgroups: OnceLock<Cgroups>,
    finding: Mutex<Option<std::thread::JoinHandle<Cgroups>>>,
    max_processes: u32,
    limits: Limits,
    /// The server serves many users, each with a uid of their own (`--http` with
    /// `{user}` paths, as root): each uid's calls share cgroups of their own. Otherwise
    /// every call is the server's one user's, whatever uid it runs as.
    many_users: bool,
    /// Unique per server: pid and start time.
    tag: String,
    next: AtomicU64,
    /// Background jobs of answered calls outlive the server.
    keep_background: bool,
    /// The write end of the watchdog's stdin, once it runs.
    watchdog: Mutex<Option<File>>,
    /// The watchdog's line of every running call, for a watchdog started later.
    running: Mutex<HashMap<String, String>>,
    /// Idle threads that calls without a cgroup slot are spawned from: plain, and
    /// carrying the sandbox's filter. A spawn takes one (or starts one) and gives it
    /// back when its child executed; one whose spawn never came back is not used again.
    spawners: Mutex<[Vec<Worker>; 2]>,
    /// The thread that makes calls' cgroups when none is ready ([`Containment::new_call`]).
    maker: Mutex<Option<Worker>>,
    /// Hands the cgroups of ended calls to a thread that removes them, off the
    /// answer's path.
    removals: Mutex<Option<mpsc::Sender<Vec<PathBuf>>>>,
    /// What is told when the server stops: background jobs' output files.
    told: Mutex<Vec<Weak<dyn Told>>>,
}

impl Containment {
    /// Finds the cgroups calls can have (on a thread of its own); the watchdog is
    /// started apart ([`Containment::keep_watchdog`]).
    pub fn new(max_processes: u32, keep_background: bool, limits: Limits) -> Containment {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let finding = std::thread::Builder::new()
            .name("cgroups".to_owned())
            .spawn(move || {
                let cgroups = Cgroups::find(max_processes, limits);
                tracing::info!(mechanism = cgroups.mechanism(), "containment of commands");
                cgroups
            })
            .ok();
        Containment {
            cgroups: OnceLock::new(),
            finding: Mutex::new(finding),
            max_processes,
            limits,
            many_users: false,
            tag: format!("{}-{started}", std::process::id()),
            next: AtomicU64::new(1),
            keep_background,
            watchdog: Mutex::new(None),
            running: Mutex::new(HashMap::new()),
            spawners: Mutex::new([Vec::new(), Vec::new()]),
            maker: Mutex::new(None),
            removals: Mutex::new(None),
            told: Mutex::new(Vec::new()),
        }
    }

    /// The server serves many users, each under a uid of their own: each uid's calls
    /// are bounded together, apart from the others'.
    pub fn with_many_users(mut self, many: bool) -> Containment {
        self.many_users = many;
        self
    }

    /// Whether what answered calls left running outlives the server.
    pub fn keeps_background(&self) -> bool {
        self.keep_background
    }

    /// Containment with the defaults and no watchdog (for tests and tools).
    pub fn without_watchdog() -> Containment {
        Containment::new(DEFAULT_MAX_PROCESSES, false, Limits::default())
    }

    /// What holds a call's processes and limits their number.
    pub fn mechanism(&self) -> String {
        self.cgroups().mechanism()
    }

    fn cgroups(&self) -> &Cgroups {
        self.cgroups.get_or_init(|| {
            let finding = lock(&self.finding).take();
            let cgroups = finding
                .and_then(|thread| thread.join().ok())
                .unwrap_or_else(|| Cgroups::find(self.max_processes, self.limits));
            self.watchdog(&self.orders(Some(&cgroups)));
            cgroups
        })
    }

    /// The watchdog's first line: this server's marker prefix, its cgroup v2 directory
    /// for calls (`-` while unknown), whether background jobs are kept, and its
    /// directory in the v1 `pids` hierarchy.
    fn orders(&self, cgroups: Option<&Cgroups>) -> String {
        let dir = |root: Option<&std::path::Path>| {
            root.map_or_else(|| "-".to_owned(), |p| p.display().to_string())
        };
        let cpu = cgroups
            .and_then(Cgroups::cpu_root)
            .map(|root| format!("c{}\n", root.display()))
            .unwrap_or_default();
        let memory = cgroups
            .and_then(Cgroups::memory_root)
            .map(|root| format!("m{}\n", root.display()))
            .unwrap_or_default();
        format!(
            "*{} {} {} {}\n{cpu}{memory}",
            self.tag,
            dir(cgroups.and_then(Cgroups::root)),
            u8::from(self.keep_background),
            dir(cgroups.and_then(Cgroups::pids_root)),
        )
    }

    /// A new call, as [`Containment::call`], whose cgroups are made on a thread of
    /// their own when none is ready to take: making a cgroup (and moving a slot's thread into
    /// it) waits for the kernel's cgroup locks, which a storm of forks and kills holds.
    pub async fn new_call(self: &Arc<Self>, user: Option<u32>) -> Arc<Call> {
        let user = user.filter(|_| self.many_users);
        if self.cgroups().ready(user) {
            return self.call_of(user);
        }
        let maker = lock(&self.maker).clone();
        let maker = match maker {
            Some(maker) => maker,
            None => match Worker::start("cgroup maker", || Ok(())) {
                Ok(maker) => lock(&self.maker).insert(maker).clone(),
                Err(_) => return self.call(),
            },
        };
        let containment = self.clone();
        let made = maker.run_detached(move || Ok(containment.call_of(user)), drop);
        match made.result().await {
            Ok(call) => call,
            Err(_) => self.call_of(user),
        }
    }

    /// A root server's user (their uid) was released: their cgroups go, once their
    /// calls ended (see [`Cgroups::release_user`]).
    pub fn release_user(&self, uid: u32) {
        if let Some(cgroups) = self.cgroups.get() {
            cgroups.release_user(uid);
        }
    }

    /// A new call of the server's own user: its marker, and its cgroups when there are
    /// cgroups.
    pub fn call(self: &Arc<Self>) -> Arc<Call> {
        self.call_of(None)
    }

    /// A new call of `user` (a uid of the users' range, when the server serves many;
    /// `None`: the server's one user).
    pub fn call_of(self: &Arc<Self>, user: Option<u32>) -> Arc<Call> {
        let user = user.filter(|_| self.many_users);
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Arc::new(Call {
            marker: format!("{}-{n}", self.tag),
            cgroups: self.cgroups().call(user),
            pgid: AtomicI32::new(0),
            reaped: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            answered: AtomicBool::new(false),
            told: OnceLock::new(),
            containment: self.clone(),
        })
    }

    /// Keeps a watchdog (this binary, as `forge-bash __watchdog`) running: starts one,
    /// and another each time it dies. Returns only when a watchdog died and no other
    /// could be started, so that the server stops rather than run without one.
    pub async fn keep_watchdog(&self) {
        let mut started = false;
        loop {
            match self.start_watchdog().await {
                Ok(mut child) => {
                    started = true;
                    let status = child.wait().await;
                    tracing::error!(?status, "the watchdog died; starting another");
                }
                Err(e) if !started => {
                    tracing::warn!(error = %e, "cannot start the watchdog; a killed server would leave its commands running");
                    return std::future::pending().await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot restart the watchdog; stopping the server");
                    return;
                }
            }
        }
    }

    /// Starts a watchdog and tells it what runs. Its orders are in its pipe before it
    /// starts, so calls can register at once; the spawn itself runs off the runtime's
    /// thread (it waits for the exec), so nothing waits for it.
    async fn start_watchdog(&self) -> io::Result<tokio::process::Child> {
        let exe = std::env::current_exe()?;
        let (read, mut write) = std::io::pipe()?;
        // The cgroups may still be being found: then they tell it when they are.
        let mut orders = self.orders(self.cgroups.get());
        for line in lock(&self.running).values() {
            orders.push_str(line);
        }
        write.write_all(orders.as_bytes())?;
        *lock(&self.watchdog) = Some(File::from(std::os::fd::OwnedFd::from(write)));
        let spawn = tokio::task::spawn_blocking(move || {
            // std's spawn returns once the child executed the program.
            let _in_flight = clones::begin();
            tokio::process::Command::new(exe)
                .arg(watchdog::ARG)
                .stdin(read)
                .stdout(std::process::Stdio::null())
                .spawn()
        });
        spawn.await.map_err(io::Error::other)?
    }

    /// The server stops: whatever background jobs' output goes to is told (once).
    /// Nothing is killed yet.
    pub fn end_background_output(&self) {
        let told = std::mem::take(&mut *lock(&self.told));
        let why = Stopping::Server {
            kept: self.keep_background,
        };
        for told in told.iter().filter_map(Weak::upgrade) {
            told.stopping(why);
        }
    }

    /// The server stops: unless background jobs are kept, every process any call
    /// started is killed. Then the empty cgroups are removed.
    pub fn stop(&self) {
        self.end_background_output();
        if !self.keep_background {
            self.cgroups().kill_all();
            sweep_prefix(&format!("{}-", self.tag));
            // Killed processes leave their cgroups once the kernel has reaped them.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.cgroups().remove();
    }

    /// An idle thread to spawn a call without a cgroup slot from, or a new one:
    /// `confined`, one that may carry the sandbox's filter.
    fn spawner(&self, confined: bool) -> io::Result<Worker> {
        if let Some(worker) = lock(&self.spawners)[usize::from(confined)].pop() {
            return Ok(worker);
        }
        let cpu = self.cgroups().cpu_tasks();
        let name = if confined {
            "sandbox spawner"
        } else {
            "spawner"
        };
        Worker::start(name, move || {
            if let Some(cpu) = cpu {
                cgroup::join_cpu(&cpu);
            }
            if confined {
                crate::sandbox::only_spawns_here();
            }
            Ok(())
        })
    }

    /// A spawning thread is idle again; beyond a few kept, it ends.
    fn idle_spawner(&self, confined: bool, worker: Worker) {
        let mut spawners = lock(&self.spawners);
        let idle = &mut spawners[usize::from(confined)];
        if idle.len() < IDLE_SPAWNERS {
            idle.push(worker);
        }
    }

    fn watchdog(&self, line: &str) {
        if let Some(file) = &mut *lock(&self.watchdog)
            && let Err(e) = file.write_all(line.as_bytes())
        {
            tracing::debug!(error = %e, "watchdog gone");
        }
    }

    /// Removes an ended call's cgroups on the removal thread (started on first use):
    /// removing a cgroup waits for the kernel, and the call is answered already or
    /// about to be. Those that still hold background jobs are tried again with each
    /// later call's.
    fn remove_later(&self, dirs: Vec<PathBuf>) {
        if dirs.is_empty() {
            return;
        }
        let mut removals = lock(&self.removals);
        let dirs = match removals.as_ref() {
            Some(tx) => match tx.send(dirs) {
                Ok(()) => return,
                Err(mpsc::SendError(dirs)) => dirs,
            },
            None => dirs,
        };
        let (tx, rx) = mpsc::channel::<Vec<PathBuf>>();
        let started = std::thread::Builder::new()
            .name("cgroup removal".to_owned())
            .spawn(move || {
                let mut lingering = Vec::new();
                while let Ok(dirs) = rx.recv() {
                    lingering.extend(dirs);
                    lingering.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
                }
            });
        match started {
            Ok(_) => {
                let _ = tx.send(dirs);
                *removals = Some(tx);
            }
            Err(e) => {
                tracing::debug!(error = %e, "no removal thread; removing here");
                for dir in dirs {
                    let _ = std::fs::remove_dir(dir);
                }
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The processes of one call.
#[derive(Debug)]
pub struct Call {
    marker: String,
    cgroups: CallCgroups,
    pgid: AtomicI32,
    /// The shell was reaped: its pid, the group's id, may be another's by now.
    reaped: AtomicBool,
    /// The shell exited of itself, not by a signal: nothing killed its cgroup.
    exited: AtomicBool,
    registered: AtomicBool,
    killed: AtomicBool,
    answered: AtomicBool,
    /// Where its background job's output goes, once it was answered with one.
    told: OnceLock<Weak<dyn Told>>,
    containment: Arc<Containment>,
}

impl Call {
    /// The variable to set in the shell's environment: `(MARKER, id)`.
    pub fn marker(&self) -> (&'static str, &str) {
        (MARKER, &self.marker)
    }

    /// Starts `command` as the call's shell, born inside the call's cgroups so that
    /// nothing it starts is ever outside, with no migration ([`spawn`]). `wrap` runs
    /// the spawn's [`spawn::Start`] where it must run: as it is, or entering a sandbox
    /// (`confined`: the spawning thread may carry the sandbox's filter).
    ///
    /// The clone runs on a thread of its own (the call's cgroup slot, or a spawning
    /// thread), never on the runtime's: the thread waits until the child executed its
    /// program, and a child stuck before that (a hung filesystem, a stop signal) would
    /// hold it. The wait is bounded by [`START_BOUND`]: past it, the child is killed,
    /// its thread is given up, and the call gets an error saying so. Must be called
    /// within the runtime, which watches the child.
    pub async fn spawn<W>(
        self: &Arc<Self>,
        command: &spawn::Command,
        confined: bool,
        wrap: W,
    ) -> io::Result<spawn::Child>
    where
        W: FnOnce(spawn::Start<'_>) -> io::Result<spawn::Started> + Send + 'static,
    {
        let prepared = command.prepare()?;
        let pid = prepared.pid();
        let given_up = Arc::new(AtomicBool::new(false));
        let (worker, slot) = match self.cgroups.slot_worker() {
            Some(worker) => (worker, true),
            None => (self.containment.spawner(confined)?, false),
        };
        // A spawning thread of the containment's goes back to it once its spawn came
        // back; the call's slot is the call's.
        let back = (!slot).then(|| worker.clone());
        let call = self.clone();
        let late = given_up.clone();
        let started = worker.run_detached(
            move || {
                if late.load(Ordering::Relaxed) {
                    return Err(io::Error::from(io::ErrorKind::TimedOut));
                }
                let cgroup = call.cgroups.v2_fd().map(AsFd::as_fd);
                let started = wrap(spawn::Start::new(prepared, cgroup));
                if let Some(worker) = back {
                    call.containment.idle_spawner(confined, worker);
                }
                started
            },
            spawn::Started::give_up,
        );
        match tokio::time::timeout(START_BOUND, started.result()).await {
            Ok(started) => spawn::Child::watch(started?),
            Err(_) => {
                given_up.store(true, Ordering::Relaxed);
                let pid = pid.load(Ordering::Relaxed);
                if pid > 0 {
                    // SAFETY: kill has no memory-safety preconditions; the child is not
                    // reaped until its spawn's result is taken or given up, so the pid
                    // is still its own.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                if slot {
                    self.cgroups.lose_slot();
                }
                tracing::warn!(pid, "a shell did not start within its bound; killed");
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the shell did not start within {} s (stuck before executing bash: a hung filesystem or a stopped process); it was killed",
                        START_BOUND.as_secs()
                    ),
                ))
            }
        }
    }

    /// The memory limit that killed a process of the call, if the kernel's OOM killer
    /// took one because the user's memory cgroup was full since the call began.
    pub fn out_of_memory(&self) -> Option<u64> {
        let limit = self.containment.limits.memory?;
        self.cgroups.out_of_memory().then_some(limit)
    }

    /// The `RLIMIT_DATA` the call's shell gets: the memory limit, where no memory
    /// cgroup bounds the call.
    pub fn data_limit(&self) -> Option<u64> {
        let limit = self.containment.limits.memory?;
        (!self.cgroups.bounds_memory()).then_some(limit)
    }

    /// The call's process group: its shell's pid (0 before the shell started).
    pub fn pgid(&self) -> libc::pid_t {
        self.pgid.load(Ordering::Relaxed)
    }

    /// The shell exited and was reaped; `exited`: of itself (with a code), not by a
    /// signal.
    pub fn reaped(&self, exited: bool) {
        self.reaped.store(true, Ordering::Relaxed);
        self.exited.store(exited, Ordering::Relaxed);
    }

    /// Whether the call's cgroup may serve another call once empty: its shell exited of
    /// itself. One killed by a signal may have been killed through its cgroup by a
    /// command of its own (the server's kills are known to the cgroup).
    fn lends_its_cgroup(&self) -> bool {
        self.exited.load(Ordering::Relaxed)
    }

    /// The call's group id, while it is certainly the call's: until the shell is
    /// reaped; after, while no process has that id. A group keeps its id from every
    /// new process while it has members, so no process with it means the group is the
    /// call's or gone; a process with it means the id was given again (on a busy
    /// machine, pids wrap within seconds), and a kill of that group would hit another's.
    fn own_group(&self) -> Option<libc::pid_t> {
        let pgid = self.pgid.load(Ordering::Relaxed);
        let ours = pgid > 0
            && (!self.reaped.load(Ordering::Relaxed)
                || !std::path::Path::new("/proc")
                    .join(pgid.to_string())
                    .exists());
        ours.then_some(pgid)
    }

    /// `told` is where the call's background output goes: it is told when the server,
    /// or the call's session, stops the call's processes.
    pub fn tell(&self, told: Weak<dyn Told>) {
        let _ = self.told.set(told.clone());
        let mut all = lock(&self.containment.told);
        all.retain(|told| told.strong_count() > 0);
        all.push(told);
    }

    fn stopping(&self, why: Stopping) {
        if let Some(told) = self.told.get().and_then(Weak::upgrade) {
            told.stopping(why);
        }
    }

    /// Takes the just-spawned shell (leader of its own group) into the call: its group
    /// id, and the watchdog's list.
    pub fn adopt(&self, pid: u32) {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        self.pgid.store(pid, Ordering::Relaxed);
        let cgroup = self
            .cgroups
            .v2()
            .map_or_else(|| "-".to_owned(), |p| p.display().to_string());
        let line = format!("+{} {pid} {cgroup}\n", self.marker);
        self.containment.watchdog(&line);
        lock(&self.containment.running).insert(self.marker.clone(), line);
        self.registered.store(true, Ordering::Relaxed);
    }

    /// Kills every process of the call: its group at once, then, on a thread of its
    /// own, its cgroup and whatever carries its marker ([`Call::kill_off_thread`]).
    /// Processes already gone are not an error; a second kill does nothing.
    pub fn kill(self: &Arc<Self>) -> io::Result<()> {
        if self.killed.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        let result = self.own_group().map_or(Ok(()), killpg);
        self.kill_off_thread();
        result
    }

    /// Kills the call's cgroup, and sweeps `/proc` for its marker where no cgroup
    /// proves every process gone, on a thread of its own: a cgroup write waits for the
    /// kernel's cgroup lock, and reading a dying process's environment waits for its
    /// memory map, neither with a bound. The thread is never waited for: the call's
    /// answer and every other call go on meanwhile.
    fn kill_off_thread(self: &Arc<Self>) {
        let call = self.clone();
        let work = move || call.kill_processes();
        let spawned = std::thread::Builder::new()
            .name("kill".to_owned())
            .stack_size(KILL_STACK)
            .spawn(work);
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread to kill a call's processes on");
        }
    }

    /// The blocking part of a kill: the cgroup, then the sweep where it is needed.
    fn kill_processes(&self) {
        match self.cgroups.kill() {
            Some(Ok(true)) => {}
            Some(Ok(false)) => sweep(&self.marker),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "cannot kill a call's cgroup");
                sweep(&self.marker);
            }
            None => sweep(&self.marker),
        }
    }

    /// True once the call was answered and nothing it started runs any more (as far
    /// as its cgroup, or without one its process group, can tell).
    fn is_over(&self) -> bool {
        if !self.answered.load(Ordering::Relaxed) {
            return false;
        }
        match self.cgroups.is_empty() {
            Some(empty) => empty,
            None => {
                let pgid = self.pgid.load(Ordering::Relaxed);
                // SAFETY: kill with signal 0 only checks that the group exists.
                pgid <= 0 || unsafe { libc::kill(-pgid, 0) } != 0
            }
        }
    }

    /// The call was answered: a server death no longer counts it as running.
    pub fn release(&self) {
        self.answered.store(true, Ordering::Relaxed);
        self.cgroups.release();
        if self.registered.swap(false, Ordering::Relaxed) {
            lock(&self.containment.running).remove(&self.marker);
            self.containment.watchdog(&format!("-{}\n", self.marker));
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.release();
        let lends = self.lends_its_cgroup();
        let dirs = self.containment.cgroups().ended(&mut self.cgroups, lends);
        self.containment.remove_later(dirs);
    }
}

/// The calls of one client session (an HTTP session): when it ends, what its calls
/// left running in the background ends with it, while other sessions' calls go on.
#[derive(Debug, Default)]
pub struct Scope {
    calls: Mutex<Vec<Arc<Call>>>,
    ended: AtomicBool,
}

impl Scope {
    /// Keeps `call` until the scope ends. Calls that are over are let go here, so a
    /// long session keeps only the calls that still have processes.
    pub fn keep(&self, call: &Arc<Call>) {
        let mut calls = lock(&self.calls);
        calls.retain(|call| !call.is_over());
        calls.push(call.clone());
        if self.ended.load(Ordering::Relaxed) {
            drop(calls);
            self.kill_all();
        }
    }

    /// Lets go of the calls that are over (answered, nothing of them left running).
    pub fn forget_over(&self) {
        lock(&self.calls).retain(|call| !call.is_over());
    }

    /// Ends the scope: every process of every call kept is killed. Running calls are
    /// stopped by their own cancellation; this takes what they left behind. Only the
    /// first end does anything.
    pub fn end(&self) {
        if !self.ended.swap(true, Ordering::Relaxed) {
            self.kill_all();
        }
    }

    /// Ends the scope as the server stops with `--keep-background`: what answered
    /// calls left running is let go, not killed (their output files are told by
    /// [`Containment::end_background_output`]). A call kept after this is killed, as
    /// after [`Scope::end`].
    pub fn let_go(&self) {
        if !self.ended.swap(true, Ordering::Relaxed) {
            lock(&self.calls).clear();
        }
    }

    fn kill_all(&self) {
        let calls = std::mem::take(&mut *lock(&self.calls));
        for call in &calls {
            call.stopping(Stopping::Session);
            // What the answered call left behind; its group id is not used: the
            // group may be gone and the id reused.
            call.kill_off_thread();
        }
    }
}

/// The calls of one server answered with a job still running: the answer names their
/// process group, and a later call may have the server signal it ([`Jobs::signal`]).
/// Under the sandbox, each call's commands are in a Landlock domain of their own and
/// cannot signal another call's processes; the server is outside every domain.
#[derive(Debug, Default)]
pub struct Jobs {
    calls: Mutex<Vec<Weak<Call>>>,
}

impl Jobs {
    /// Keeps `call`, whose answer names its group, for as long as something else
    /// holds it (its output file's writer).
    pub fn keep(&self, call: &Arc<Call>) {
        let mut calls = lock(&self.calls);
        calls.retain(|call| call.strong_count() > 0);
        calls.push(Arc::downgrade(call));
    }

    /// Whether `pgid` is the group of a job kept here, with processes in it, and
    /// certainly the job's (see [`Call::own_group`]).
    pub fn holds(&self, pgid: libc::pid_t) -> bool {
        let calls = lock(&self.calls);
        calls
            .iter()
            .filter_map(Weak::upgrade)
            .any(|call| call.own_group() == Some(pgid) && group_exists(pgid))
    }

    /// Sends `signal` to the group `pgid`, a group [`Jobs::holds`] holds.
    pub fn signal(&self, pgid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
        if !self.holds(pgid) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // SAFETY: killpg has no memory-safety preconditions.
        if unsafe { libc::killpg(pgid, signal) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Whether a process group `pgid` has processes.
fn group_exists(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the group exists and may be signalled.
    unsafe { libc::killpg(pgid, 0) == 0 }
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

/// Kills every process whose environment holds `MARKER=marker`, round after round
/// until a round finds none.
pub fn sweep(marker: &str) {
    let needle = format!("{MARKER}={marker}");
    sweep_matching(|var| var == needle.as_bytes());
}

/// Kills every process whose marker starts with `prefix`: all of one server's calls.
pub fn sweep_prefix(prefix: &str) {
    let needle = format!("{MARKER}={prefix}");
    sweep_matching(|var| var.starts_with(needle.as_bytes()));
}

fn sweep_matching(marked: impl Fn(&[u8]) -> bool) {
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
            if environ.split(|&b| b == 0).any(&marked) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};

    /// Once a call's shell was reaped, a process that got its pid (leading a group of
    /// its own) is not the call's: a kill of the call spares it. Before the reap, the
    /// group is the call's and is killed.
    #[test]
    fn a_reaped_call_spares_the_group_that_got_its_id_again() {
        let containment = Arc::new(Containment::new(64, false, Limits::default()));
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let id = libc::pid_t::try_from(other.id()).unwrap();

        let reaped = containment.call();
        reaped.pgid.store(id, Ordering::Relaxed);
        reaped.reaped(true);
        reaped.kill().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            other.try_wait().unwrap().is_none(),
            "another's group was killed"
        );

        let running = containment.call();
        running.pgid.store(id, Ordering::Relaxed);
        running.kill().unwrap();
        assert_eq!(other.wait().unwrap().signal(), Some(libc::SIGKILL));
        containment.stop();
    }
}
