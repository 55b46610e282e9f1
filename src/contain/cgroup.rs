//! The cgroups of calls.
//!
//! Under the server's own cgroup it makes `forge-bash-<pid>`, and one `call-N` in it
//! per call. Two hierarchies may serve:
//!
//! - **cgroup v2**, for `cgroup.kill` (every process of a call, or of the server, at
//!   once), and for `pids.max` where the `pids` controller is enabled for the server's
//!   cgroup;
//! - **the v1 `pids` hierarchy**, where the system still mounts `pids` there (hybrid
//!   set-ups): only for `pids.max`.
//!
//! The process limit stops a fork bomb at `--max-processes` processes per call, so
//! the calls after it can still fork.
//!
//! No call moves anything between cgroups on its way to the answer (see [`spawn`]):
//! the shell is born in its v2 cgroup by `clone3`, and in the v1 hierarchy, which moves
//! threads, it is spawned from a *slot*: a thread that lives in a `slot-N` cgroup of
//! its own, made ahead. A call takes a free slot; once answered, the slot is free again
//! when nothing of the call is left in it, and otherwise its thread moves to a new
//! `slot-N` off the answer's path, leaving the old one to the call's background jobs.
//!
//! A v2 `call-N` is kept for the next calls in the same way once its call ended with
//! nothing left in it: making and removing a cgroup, and the kernel's first clone into
//! a new one, cost more than the rest of the server's work on a call.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::spawn;
use crate::worker::Worker;

/// Free slots made ahead, so that a call seldom makes one on its path.
const SPARE_SLOTS: usize = 2;

/// Emptied v2 call cgroups kept for the next calls, at most.
const KEPT_CGROUPS: usize = 4;

/// One hierarchy's directory for this server's calls.
#[derive(Debug)]
struct Tree {
    /// `<home>/forge-bash-<pid>`.
    root: PathBuf,
    /// Call cgroups get `pids.max` here.
    pids: bool,
}

/// This server's call cgroups, found once at start-up.
#[derive(Debug, Default)]
pub struct Cgroups {
    v2: Option<Tree>,
    pids_v1: Option<Tree>,
    /// The v1 `cpu` cgroup all calls' processes share ([`Cgroups::join_cpu`]).
    cpu_v1: Option<Tree>,
    /// Spawning threads in the v1 `pids` hierarchy.
    slots: Option<Arc<Slots>>,
    /// v2 call cgroups whose calls ended with nothing left in them.
    kept: Mutex<Vec<V2Cgroup>>,
    next: AtomicU64,
    max_processes: u32,
}

/// A v2 call cgroup: its directory, opened for `clone3`, and its `cgroup.events`, which
/// tells whether any process is left in it.
#[derive(Debug)]
struct V2Cgroup {
    path: PathBuf,
    dir: OwnedFd,
    events: File,
}

impl V2Cgroup {
    /// Makes `call-N` under `tree`, limited to `max` processes where `tree` limits.
    fn make(tree: &Tree, n: u64, max: u32) -> Option<V2Cgroup> {
        let path = tree.root.join(format!("call-{n}"));
        if let Err(e) = std::fs::create_dir(&path) {
            tracing::debug!(error = %e, dir = %path.display(), "no cgroup for this call");
            return None;
        }
        if tree.pids
            && let Err(e) = std::fs::write(path.join("pids.max"), max.to_string())
        {
            tracing::warn!(error = %e, dir = %path.display(), "cannot limit the call's processes");
        }
        let opened = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(io::Error::other)
            .and_then(|c| spawn::open_cloexec(&c, libc::O_RDONLY | libc::O_DIRECTORY))
            .and_then(|dir| Ok((dir, File::open(path.join("cgroup.events"))?)));
        match opened {
            Ok((dir, events)) => Some(V2Cgroup { path, dir, events }),
            Err(e) => {
                tracing::debug!(error = %e, "cannot open the call's cgroup");
                let _ = std::fs::remove_dir(&path);
                None
            }
        }
    }

    /// Whether any process is in it, or may be: `populated 0` says none is.
    fn populated(&self) -> bool {
        let mut buf = [0u8; 128];
        let Ok(n) = self.events.read_at(&mut buf, 0) else {
            return true;
        };
        !buf[..n]
            .split(|&b| b == b'\n')
            .any(|line| line == b"populated 0")
    }
}

/// The cgroups of one call.
#[derive(Debug, Default)]
pub struct CallCgroups {
    /// Killed with `cgroup.kill`; the shell is cloned into it.
    v2: Option<V2Cgroup>,
    /// Holds the process limit when v2 cannot: the slot's cgroup, for as long as the
    /// call has processes in it.
    pids_v1: Mutex<Option<PathBuf>>,
    /// The slot's `cpu` cgroup, for as long as the call has processes in it.
    cpu_v1: Mutex<Option<PathBuf>>,
    /// The slot the shell is spawned from, until the call is answered.
    slot: Mutex<Option<Slot>>,
    slots: Option<Arc<Slots>>,
    /// Its v2 cgroup was killed: it serves no other call.
    killed: AtomicBool,
}

/// The v1 slots of a server: threads, each in a `pids` cgroup of its own.
#[derive(Debug)]
struct Slots {
    root: PathBuf,
    /// The calls' `cpu` cgroup: each slot thread lives in a `slot-N` cgroup of its own
    /// under it, so that each call's processes weigh as one against the others'.
    cpu_root: Option<PathBuf>,
    max_processes: u32,
    free: Mutex<Vec<Slot>>,
    next: AtomicU64,
}

/// A thread that lives in `dir` and runs what it is sent; `current` is the cgroup's
/// `pids.current`, opened.
#[derive(Debug)]
struct Slot {
    dir: PathBuf,
    /// Its cgroup in the v1 `cpu` hierarchy, under the calls' one.
    cpu: Option<PathBuf>,
    current: File,
    work: Worker,
}

/// A slot's new cgroups, before a thread lives in them.
struct SlotDirs {
    dir: PathBuf,
    cpu: Option<PathBuf>,
    current: File,
}

impl Slot {
    /// The tasks in the slot's cgroup, its own thread included.
    fn tasks(&self) -> Option<u32> {
        let mut buf = [0u8; 24];
        let n = self.current.read_at(&mut buf, 0).ok()?;
        std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
    }
}

impl Cgroups {
    /// Finds where this server may make cgroups; without any, calls have none.
    pub fn find(max_processes: u32) -> Cgroups {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let v2 = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .zip(mount_point(&mountinfo, |fs| fs.starts_with("cgroup2 ")))
            .and_then(|(own, mount)| make_tree(&Path::new(mount).join(own.trim_start_matches('/'))))
            .filter(|tree| {
                let kills = tree.root.join("cgroup.kill").exists();
                if !kills {
                    let _ = std::fs::remove_dir(&tree.root);
                }
                kills
            });
        let v2 = v2.map(|mut tree| {
            tree.pids = enable_pids(&tree.root);
            tree
        });
        let pids_v1 = if v2.as_ref().is_some_and(|t| t.pids) {
            None
        } else {
            v1_tree(&own, &mountinfo, "pids").map(|mut tree| {
                tree.pids = true;
                tree
            })
        };
        let cpu_v1 = v1_tree(&own, &mountinfo, "cpu");
        let slots = pids_v1.as_ref().map(|tree| {
            let cpu_root = cpu_v1.as_ref().map(|tree| tree.root.clone());
            Slots::new(tree.root.clone(), cpu_root, max_processes)
        });
        Cgroups {
            v2,
            pids_v1,
            cpu_v1,
            slots,
            kept: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
            max_processes,
        }
    }

    /// What holds a call's processes and limits their number, for the start-up log.
    pub fn mechanism(&self) -> String {
        let kill = match self.v2 {
            Some(_) => "cgroup per call, process group and marker",
            None => "process group and marker",
        };
        let limit = if self.v2.as_ref().is_some_and(|t| t.pids) {
            format!(
                "; at most {} processes per call (pids, cgroup v2)",
                self.max_processes
            )
        } else if self.pids_v1.is_some() {
            format!(
                "; at most {} processes per call (pids, cgroup v1)",
                self.max_processes
            )
        } else {
            "; no process limit (no pids controller here)".to_owned()
        };
        let cpu = if self.cpu_v1.is_some() {
            "; the commands of all calls share one cpu cgroup, each call's in one of its own there (cpu, cgroup v1)"
        } else {
            "; commands share the processor with the server's own threads one by one (no cpu cgroup here)"
        };
        format!("{kill}{limit}{cpu}")
    }

    /// The `tasks` file of the `cpu` cgroup every call's processes share, where there
    /// is one: threads that only spawn calls' shells join it ([`join_cpu`]), and the
    /// shells are born there. All of them together then weigh as much as one of the
    /// server's own threads, so a command that forks without end cannot starve the
    /// thread that answers calls, times them out and kills them.
    pub fn cpu_tasks(&self) -> Option<PathBuf> {
        self.cpu_v1.as_ref().map(|tree| tree.root.join("tasks"))
    }

    /// True when calls are killed through cgroup v2.
    pub fn kills(&self) -> bool {
        self.v2.is_some()
    }

    /// The v2 directory of every call, for the watchdog.
    pub fn root(&self) -> Option<&Path> {
        self.v2.as_ref().map(|t| t.root.as_path())
    }

    /// The calls' directory in the v1 `cpu` hierarchy, for the watchdog.
    pub fn cpu_root(&self) -> Option<&Path> {
        self.cpu_v1.as_ref().map(|t| t.root.as_path())
    }

    /// The directory of every call in the v1 `pids` hierarchy, for the watchdog.
    pub fn pids_root(&self) -> Option<&Path> {
        self.pids_v1.as_ref().map(|t| t.root.as_path())
    }

    /// Whether [`Cgroups::call`] would make nothing: a v2 cgroup is kept and a slot is
    /// free, where there are such.
    pub fn ready(&self) -> bool {
        (self.v2.is_none() || !lock(&self.kept).is_empty())
            && self
                .slots
                .as_ref()
                .is_none_or(|slots| !lock(&slots.free).is_empty())
    }

    /// Gives a call a v2 cgroup (a kept one, or a new one) and a v1 slot; a hierarchy
    /// that refuses is left out.
    pub fn call(&self) -> CallCgroups {
        let v2 = self.v2.as_ref().and_then(|tree| {
            let kept = lock(&self.kept).pop();
            kept.or_else(|| {
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                V2Cgroup::make(tree, n, self.max_processes)
            })
        });
        let slot = self.slots.as_ref().and_then(|slots| slots.take());
        CallCgroups {
            v2,
            pids_v1: Mutex::new(slot.as_ref().map(|slot| slot.dir.clone())),
            cpu_v1: Mutex::new(slot.as_ref().and_then(|slot| slot.cpu.clone())),
            slot: Mutex::new(slot),
            slots: self.slots.clone(),
            killed: AtomicBool::new(false),
        }
    }

    /// Kills every process of every call, answered ones included.
    pub fn kill_all(&self) {
        if let Some(tree) = &self.v2 {
            let _ = kill(&tree.root);
        } else if let Some(tree) = &self.pids_v1 {
            kill_listed(&tree.root);
        }
    }

    /// A call ended: its v2 cgroup is kept for the next calls when the call `lends`
    /// it, it was never killed, no process is left in it and too few are kept. A
    /// cgroup killed through `cgroup.kill` may kill what is cloned into it later (some
    /// kernels compare its kill count with that of the parent's cgroup). The
    /// directories left to remove are returned.
    pub fn ended(&self, call: &mut CallCgroups, lends: bool) -> Vec<PathBuf> {
        call.release();
        let mut dirs = Vec::new();
        if let Some(cgroup) = call.v2.take() {
            let mut kept = lock(&self.kept);
            let lends = lends && !call.killed.load(Ordering::Relaxed);
            if lends && kept.len() < KEPT_CGROUPS && !cgroup.populated() {
                kept.push(cgroup);
            } else {
                dirs.push(cgroup.path);
            }
        }
        dirs.extend(lock(&call.pids_v1).take());
        dirs.extend(lock(&call.cpu_v1).take());
        dirs
    }

    /// Removes the empty call cgroups, then the server's own, at exit. A cgroup that
    /// still holds a background job stays until the system removes it.
    pub fn remove(&self) {
        if let Some(slots) = &self.slots {
            slots.close();
        }
        lock(&self.kept).clear();
        for tree in [&self.v2, &self.pids_v1, &self.cpu_v1]
            .into_iter()
            .flatten()
        {
            remove_tree(&tree.root);
        }
    }
}

impl CallCgroups {
    /// The v2 directory, opened, for the spawn.
    pub fn v2_fd(&self) -> Option<&OwnedFd> {
        self.v2.as_ref().map(|cgroup| &cgroup.dir)
    }

    /// The thread of the call's slot, which the call's shell must be spawned from.
    pub fn slot_worker(&self) -> Option<Worker> {
        lock(&self.slot).as_ref().map(|slot| slot.work.clone())
    }

    /// A spawn on the slot's thread never came back: the slot serves no other call.
    /// Its cgroup stays the call's, and is removed with it once empty.
    pub fn lose_slot(&self) {
        drop(lock(&self.slot).take());
    }

    /// The call was answered: its slot is free again when nothing of the call is left
    /// in it; otherwise the slot's thread moves to a new cgroup, off the answer's path,
    /// and the old one stays the call's.
    pub fn release(&self) {
        let Some(slot) = lock(&self.slot).take() else {
            return;
        };
        let Some(slots) = &self.slots else {
            return;
        };
        // The slot's own thread is one of the tasks counted.
        if slot.tasks() == Some(1) {
            *lock(&self.pids_v1) = None;
            *lock(&self.cpu_v1) = None;
            slots.give_back(slot);
        } else {
            slots.clone().renew(slot);
        }
    }

    /// Kills everything in the call's cgroup: `Ok(true)` when that proves every process
    /// of the call gone (`cgroup.kill` took the v2 cgroup, or the v1 cgroup was
    /// emptied), `Ok(false)` when some may be left; `None` when it has none to kill
    /// with. Blocks on the kernel's cgroup lock: not for the runtime's thread.
    pub fn kill(&self) -> Option<io::Result<bool>> {
        if let Some(cgroup) = &self.v2
            && !holds_me(&cgroup.path)
        {
            self.killed.store(true, Ordering::Relaxed);
            return Some(kill(&cgroup.path).map(|()| true));
        }
        let dir = lock(&self.pids_v1).clone();
        // The slot's thread may be there: the server is never killed.
        dir.map(|dir| Ok(kill_listed(&dir)))
    }

    /// Whether the call's cgroup holds no process; `None` when it has no cgroup.
    pub fn is_empty(&self) -> Option<bool> {
        let dir = self
            .v2
            .as_ref()
            .map(|cgroup| cgroup.path.clone())
            .or_else(|| lock(&self.pids_v1).clone())?;
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        Some(procs.trim().is_empty())
    }

    /// The v2 directory, for the watchdog.
    pub fn v2(&self) -> Option<&Path> {
        self.v2.as_ref().map(|cgroup| cgroup.path.as_path())
    }
}

/// This server's tree in the v1 hierarchy of `controller`, under its own cgroup there:
/// `None` where that hierarchy is not mounted or refuses.
fn v1_tree(own: &str, mountinfo: &str, controller: &str) -> Option<Tree> {
    let path = own.lines().find_map(|l| {
        let (_, rest) = l.split_once(':')?;
        let (controllers, path) = rest.split_once(':')?;
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })?;
    let mount = mount_point(mountinfo, |fs| {
        fs.starts_with("cgroup ") && fs.split([' ', ',']).any(|o| o == controller)
    })?;
    make_tree(&Path::new(mount).join(path.trim_start_matches('/')))
}

/// The mount point of the first mount whose "fstype source options" part matches.
fn mount_point(mountinfo: &str, fs: impl Fn(&str) -> bool) -> Option<&str> {
    mountinfo.lines().find_map(|line| {
        let (fields, tail) = line.split_once(" - ")?;
        fs(tail).then(|| fields.split(' ').nth(4)).flatten()
    })
}

/// Makes the server's tree under `base` ([`tree_name`]), after removing what earlier
/// servers left there.
fn make_tree(base: &Path) -> Option<Tree> {
    if !base.join("cgroup.procs").exists() {
        return None;
    }
    let (prefix, pid) = tree_name();
    remove_stale(base, &prefix);
    let root = base.join(format!("{prefix}{pid}"));
    std::fs::create_dir(&root).ok()?;
    Some(Tree { root, pids: false })
}

/// The inode of the initial PID namespace (`PROC_PID_INIT_INO`).
const INITIAL_PID_NAMESPACE: u64 = 0xEFFF_FFFC;

/// The name of the server's tree, as a prefix and the server's pid: `forge-bash-<pid>`
/// in the initial PID namespace, `forge-bash-<namespace inode>-<pid>` in another (a
/// container's, `unshare -p`), where the pid is that namespace's. Servers of different
/// PID namespaces may share one cgroup tree: each judges only the trees of its own
/// namespace, whose pids it can see.
fn tree_name() -> (String, u32) {
    use std::os::unix::fs::MetadataExt;
    let namespace = std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino());
    let prefix = match namespace {
        INITIAL_PID_NAMESPACE => "forge-bash-".to_owned(),
        other => format!("forge-bash-{other}-"),
    };
    (prefix, std::process::id())
}

/// Enables the `pids` controller for the call cgroups under `root`, where the parent
/// offers it.
fn enable_pids(root: &Path) -> bool {
    let offered = std::fs::read_to_string(root.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"));
    offered && std::fs::write(root.join("cgroup.subtree_control"), "+pids").is_ok()
}

/// True when the server itself is in `cgroup` (it could not leave it after a spawn):
/// that cgroup is then never killed whole.
fn holds_me(cgroup: &Path) -> bool {
    let me = std::process::id().to_string();
    std::fs::read_to_string(cgroup.join("cgroup.procs"))
        .is_ok_and(|procs| procs.lines().any(|pid| pid == me))
}

/// Kills everything in a v2 cgroup and its descendants with `cgroup.kill`.
pub fn kill(cgroup: &Path) -> io::Result<()> {
    match std::fs::write(cgroup.join("cgroup.kill"), "1") {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Kills every process listed in a v1 cgroup and its children, round after round:
/// with the process limit in force, a fork bomb runs out of room to replace them. True
/// once a round found none.
pub fn kill_listed(cgroup: &Path) -> bool {
    let me = std::process::id();
    for _ in 0..64 {
        let mut found = false;
        let mut dirs = vec![cgroup.to_owned()];
        while let Some(dir) = dirs.pop() {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.lines().filter_map(|p| p.parse::<u32>().ok()) {
                if pid != me {
                    found = true;
                    // SAFETY: kill has no memory-safety preconditions.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                }
            }
            if let Ok(entries) = std::fs::read_dir(&dir) {
                dirs.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
        if !found {
            return true;
        }
    }
    false
}

/// Moves the calling thread into the v1 cgroup whose `tasks` file this is; a refusal is
/// logged, and the thread stays where it is.
pub fn join_cpu(tasks: &Path) {
    if let Err(e) = std::fs::write(tasks, "0") {
        tracing::warn!(error = %e, tasks = %tasks.display(), "cannot move a spawning thread into the calls' cpu cgroup");
    }
}

/// Removes the empty call cgroups under `root`, then `root`.
pub fn remove_tree(root: &Path) {
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(root);
}

/// Removes what earlier servers of this PID namespace left in `base`: the trees named
/// `<prefix><pid>` ([`tree_name`]) whose server is gone, once their background jobs are
/// gone too (a non-empty cgroup stays). Another namespace's trees are never judged by
/// pids that mean other processes here: a live server's emptied call cgroups, kept
/// for its next calls, would go, and its next spawn into one would fail (`ENOENT`).
fn remove_stale(base: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new("/proc").join(pid).exists() {
            remove_tree(&entry.path());
        }
    }
}

impl Slots {
    /// The slots under `root`, each with a cgroup of its own under `cpu_root` where
    /// there is one, and the spares made.
    fn new(root: PathBuf, cpu_root: Option<PathBuf>, max_processes: u32) -> Arc<Slots> {
        let slots = Arc::new(Slots {
            root,
            cpu_root,
            max_processes,
            free: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
        });
        for _ in 0..SPARE_SLOTS {
            if let Some(slot) = slots.make() {
                lock(&slots.free).push(slot);
            }
        }
        slots
    }

    /// Makes a slot: a `slot-N` cgroup with the process limit, and a thread that moves
    /// into it and then runs what it is sent. `None` when the hierarchy refuses.
    fn make(&self) -> Option<Slot> {
        let SlotDirs { dir, cpu, current } = self.new_dir()?;
        let tasks = dir.join("tasks");
        let cpu_tasks = self.cpu_tasks(cpu.as_ref());
        let started = Worker::start("spawn slot", move || {
            std::fs::write(&tasks, "0")?;
            if let Some(cpu) = cpu_tasks {
                join_cpu(&cpu);
            }
            crate::sandbox::only_spawns_here();
            Ok(())
        });
        let work = match started {
            Ok(work) => work,
            Err(e) => {
                tracing::warn!(error = %e, dir = %dir.display(), "cannot make a slot for spawning in the pids cgroup");
                for dir in std::iter::once(&dir).chain(&cpu) {
                    let _ = std::fs::remove_dir(dir);
                }
                return None;
            }
        };
        Some(Slot {
            dir,
            cpu,
            current,
            work,
        })
    }

    /// The `tasks` file of the `cpu` cgroup a slot thread joins: its own, or the calls'
    /// where it could not have one.
    fn cpu_tasks(&self, own: Option<&PathBuf>) -> Option<PathBuf> {
        own.or(self.cpu_root.as_ref()).map(|dir| dir.join("tasks"))
    }

    /// A new `slot-N` cgroup with the process limit: the call's processes and the
    /// slot's own thread.
    fn new_dir(&self) -> Option<SlotDirs> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self.root.join(format!("slot-{n}"));
        if let Err(e) = std::fs::create_dir(&dir) {
            tracing::debug!(error = %e, dir = %dir.display(), "no pids cgroup for a slot");
            return None;
        }
        let max = (u64::from(self.max_processes) + 1).to_string();
        if let Err(e) = std::fs::write(dir.join("pids.max"), max) {
            tracing::warn!(error = %e, dir = %dir.display(), "cannot limit the call's processes");
        }
        match File::open(dir.join("pids.current")) {
            Ok(current) => {
                let cpu = self.cpu_root.as_ref().and_then(|root| {
                    let cpu = root.join(format!("slot-{n}"));
                    match std::fs::create_dir(&cpu) {
                        Ok(()) => Some(cpu),
                        Err(e) => {
                            tracing::debug!(error = %e, dir = %cpu.display(), "no cpu cgroup for a slot");
                            None
                        }
                    }
                });
                Some(SlotDirs { dir, cpu, current })
            }
            Err(e) => {
                tracing::warn!(error = %e, dir = %dir.display(), "cannot count the call's processes");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// A free slot; when it was the last, another is made off the answer's path.
    fn take(self: &Arc<Self>) -> Option<Slot> {
        let (slot, left) = {
            let mut free = lock(&self.free);
            (free.pop(), free.len())
        };
        if left < SPARE_SLOTS {
            let slots = self.clone();
            let _ = std::thread::Builder::new()
                .name("slot maker".to_owned())
                .spawn(move || {
                    // Kept as a freed slot is: slots made for a burst that ended
                    // meanwhile do not pile up past the spares.
                    if let Some(slot) = slots.make() {
                        slots.give_back(slot);
                    }
                });
        }
        slot.or_else(|| self.make())
    }

    /// Moves the slot's thread to a new cgroup, on that thread, and frees it there; the
    /// old cgroup keeps what the call left running, and its limit loses the room the
    /// thread took.
    fn renew(self: Arc<Self>, slot: Slot) {
        let old = slot.dir.join("pids.max");
        let work = slot.work.clone();
        let slots = self.clone();
        let moved = slot.work.send(Box::new(move || {
            if let Err(e) = std::fs::write(&old, slots.max_processes.to_string()) {
                tracing::warn!(error = %e, "cannot limit the call's processes");
            }
            let Some(SlotDirs { dir, cpu, current }) = slots.new_dir() else {
                return;
            };
            if let Err(e) = std::fs::write(dir.join("tasks"), "0") {
                tracing::warn!(error = %e, "cannot move a spawn slot");
                for dir in std::iter::once(&dir).chain(&cpu) {
                    let _ = std::fs::remove_dir(dir);
                }
                return;
            }
            if let Some(cpu) = slots.cpu_tasks(cpu.as_ref()) {
                join_cpu(&cpu);
            }
            slots.give_back(Slot {
                dir,
                cpu,
                current,
                work,
            });
        }));
        if moved.is_err() {
            tracing::debug!("a spawn slot is gone");
        }
    }

    /// Frees a slot; beyond the spares and one, its thread goes home (off the answer's
    /// path: the move is that thread's), removes the slot's cgroup and ends.
    fn give_back(&self, slot: Slot) {
        let mut free = lock(&self.free);
        if free.len() <= SPARE_SLOTS {
            free.push(slot);
            return;
        }
        drop(free);
        let homes = [
            (
                self.root.parent().map(|p| p.join("tasks")),
                Some(slot.dir.clone()),
            ),
            (self.cpu_tasks(None), slot.cpu.clone()),
        ];
        let _ = slot.work.send(Box::new(move || {
            for (home, dir) in homes {
                if let (Some(home), Some(dir)) = (home, dir)
                    && std::fs::write(home, "0").is_ok()
                {
                    let _ = std::fs::remove_dir(dir);
                }
            }
        }));
    }

    /// Sends the free slots' threads home and ends them, so that their cgroups can be
    /// removed.
    fn close(&self) {
        let free = std::mem::take(&mut *lock(&self.free));
        let home = self.root.parent().map(|p| p.join("tasks"));
        let cpu_home =
            (self.cpu_root.as_deref()).and_then(|root| Some(root.parent()?.join("tasks")));
        for slot in free {
            let (done, finished) = mpsc::sync_channel(1);
            let home = home.clone();
            let cpu_home = cpu_home.clone();
            let _ = slot.work.send(Box::new(move || {
                for home in [home, cpu_home].into_iter().flatten() {
                    let _ = std::fs::write(home, "0");
                }
                let _ = done.send(());
            }));
            let _ = finished.recv();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
