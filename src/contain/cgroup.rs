//! The cgroups of calls.
//!
//! Under the server's own cgroup it makes `forge-bash-<pid>`, in it a directory per
//! user (`user` for the server's own, `user-<uid>` for a root server's users), and one
//! `call-N` (v2) or `slot-N` (v1) in that per call. Several hierarchies may serve:
//!
//! - **cgroup v2**, for `cgroup.kill` (every process of a call, or of the server, at
//!   once), and for `pids.max`, `memory.max` and `cpu.weight` where those controllers
//!   are enabled for the server's cgroup;
//! - **the v1 `pids` hierarchy**, where the system still mounts `pids` there (hybrid
//!   set-ups): for `pids.max`;
//! - **the v1 `cpu` and `memory` hierarchies** of hybrid set-ups: the user's weight and
//!   `--max-cpu`, and the user's `--max-memory` ([`super::limits`]).
//!
//! The process limit stops a fork bomb at `--max-processes` processes per call, so
//! the calls after it can still fork. The memory limit is the user's, over all of
//! their calls; each call's own cgroup below it counts the kernel's out-of-memory
//! kills of that call (`oom_kill`), which its answer reports.
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

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use super::limits::{self, Limits};
use super::spawn;
use crate::worker::Worker;

/// Free slots made ahead, so that a call seldom makes one on its path.
const SPARE_SLOTS: usize = 2;

/// Emptied v2 call cgroups kept for the next calls, at most: for the server's own user,
/// and for each of a root server's users (none: thousands of held users would hold two
/// files each).
const KEPT_CGROUPS: usize = 4;
const USER_KEPT_CGROUPS: usize = 0;

/// Numbers of v1 slots, for all users: a user released and back later never meets
/// the `slot-N` a background job of theirs still holds.
static SLOT_NUMBERS: AtomicU64 = AtomicU64::new(1);

/// One hierarchy's directory for this server's calls.
#[derive(Debug, Default)]
struct Tree {
    /// `<home>/forge-bash-<pid>`, or a user's directory in it.
    root: PathBuf,
    /// Call cgroups get `pids.max` here.
    pids: bool,
    /// cgroup v2: the `memory` controller is enabled for the cgroups below.
    memory: bool,
    /// cgroup v2: the `cpu` controller is enabled for the cgroups below.
    cpu: bool,
}

/// This server's call cgroups, found once at start-up.
#[derive(Debug, Default)]
pub struct Cgroups {
    v2: Option<Tree>,
    pids_v1: Option<Tree>,
    /// The v1 `cpu` cgroup all calls' processes share ([`Cgroups::join_cpu`]).
    cpu_v1: Option<Tree>,
    /// The v1 `memory` cgroup of all calls, where v2 has no memory controller.
    memory_v1: Option<Tree>,
    /// Each user's cgroups, made at their first call (the server's own user's at
    /// start-up).
    users: Mutex<HashMap<Option<u32>, Arc<User>>>,
    next: AtomicU64,
    max_processes: u32,
    limits: Limits,
}

/// One user's cgroups: every call and background job of the user is below them, so
/// the memory limit and the cpu weight are the user's, not each call's.
#[derive(Debug, Default)]
struct User {
    /// `forge-bash-<pid>/user-<uid>` in cgroup v2, with the user's limits.
    v2: Option<Tree>,
    /// Spawning threads in the v1 hierarchies, below the user's cgroups there.
    slots: Option<Arc<Slots>>,
    /// v2 call cgroups whose calls ended with nothing left in them.
    kept: Mutex<Vec<V2Cgroup>>,
    /// How many are kept at most.
    keep: usize,
}

/// A v2 call cgroup: its directory, opened for `clone3`, and its `cgroup.events`, which
/// tells whether any process is left in it.
#[derive(Debug)]
struct V2Cgroup {
    path: PathBuf,
    dir: OwnedFd,
    events: File,
    /// `memory.events`, where the memory controller is enabled: its `oom_kill` count.
    memory_events: Option<Arc<File>>,
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
            Ok((dir, events)) => Some(V2Cgroup {
                memory_events: tree
                    .memory
                    .then(|| File::open(path.join("memory.events")).ok().map(Arc::new))
                    .flatten(),
                path,
                dir,
                events,
            }),
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

/// The `oom_kill` count of a v2 `memory.events` or a v1 `memory.oom_control` file.
fn oom_kills(file: &File) -> Option<u64> {
    let mut buf = [0u8; 512];
    let n = file.read_at(&mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("oom_kill "))?
        .trim()
        .parse()
        .ok()
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
    /// The slot's `memory` cgroup, for as long as the call has processes in it.
    memory_v1: Mutex<Option<PathBuf>>,
    /// Where the out-of-memory kills of the call's cgroup are counted (v2
    /// `memory.events`, v1 `memory.oom_control`), and the count when the call began.
    ooms: Option<(Arc<File>, u64)>,
    /// The slot the shell is spawned from, until the call is answered.
    slot: Mutex<Option<Slot>>,
    slots: Option<Arc<Slots>>,
    /// The cgroups of the call's user, where its v2 cgroup is kept once it ended.
    user: Option<Arc<User>>,
    /// Its v2 cgroup was killed: it serves no other call.
    killed: AtomicBool,
    /// Whether the kernel killed a process of the call for memory, read as its slot
    /// went back: the slot's cgroup, and its count, may be gone by the time the answer
    /// asks.
    oomed_when_released: OnceLock<bool>,
}

/// The v1 slots of a server: threads, each in a `pids` cgroup of its own.
#[derive(Debug)]
struct Slots {
    root: PathBuf,
    /// The user's `cpu` cgroup: each slot thread lives in a `slot-N` cgroup of its own
    /// under it, so that each call's processes weigh as one against the others'.
    cpu_root: Option<PathBuf>,
    /// The user's `memory` cgroup, with the user's limit: each slot has a `slot-N` of
    /// its own under it, which counts the call's out-of-memory kills.
    memory_root: Option<PathBuf>,
    max_processes: u32,
    /// Free slots made ahead.
    spares: usize,
    /// Free slots kept at most: the spares and one; none for a root server's users,
    /// who then hold no thread and no file between their calls.
    keep: usize,
    free: Mutex<Vec<Slot>>,
}

/// A thread that lives in `dir` and runs what it is sent; `current` is the cgroup's
/// `pids.current`, opened.
#[derive(Debug)]
struct Slot {
    dir: PathBuf,
    /// Its cgroup in the v1 `cpu` hierarchy, under the user's one.
    cpu: Option<PathBuf>,
    /// Its cgroup in the v1 `memory` hierarchy, under the user's one.
    memory: Option<PathBuf>,
    /// That cgroup's `memory.oom_control`, opened.
    ooms: Option<Arc<File>>,
    current: File,
    work: Worker,
}

/// A slot's new cgroups, before a thread lives in them.
struct SlotDirs {
    dir: PathBuf,
    cpu: Option<PathBuf>,
    memory: Option<PathBuf>,
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
    /// Finds where this server may make cgroups, and makes the cgroups of the
    /// server's own user; without any, calls have none.
    pub fn find(max_processes: u32, limits: Limits) -> Cgroups {
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
            tree.pids = enable(&tree.root, "pids");
            tree.memory = limits.memory.is_some() && enable(&tree.root, "memory");
            tree.cpu = enable(&tree.root, "cpu")
                && write(&tree.root, "cpu.weight", limits::COMMANDS_WEIGHT);
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
        let cpu_v1 = if v2.as_ref().is_some_and(|t| t.cpu) {
            None
        } else {
            v1_tree(&own, &mountinfo, "cpu").inspect(|tree| {
                write(&tree.root, "cpu.shares", limits::COMMANDS_SHARES);
            })
        };
        let memory_v1 = if v2.as_ref().is_some_and(|t| t.memory) || limits.memory.is_none() {
            None
        } else {
            v1_tree(&own, &mountinfo, "memory")
        };
        let cgroups = Cgroups {
            v2,
            pids_v1,
            cpu_v1,
            memory_v1,
            users: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            max_processes,
            limits,
        };
        cgroups.user(None);
        cgroups
    }

    /// The cgroups of `user` (`None`: the server's own), made at their first call:
    /// `user-<uid>` (or `user`) under this server's directory in each hierarchy,
    /// holding the user's limits, and the user's slots.
    fn user(&self, user: Option<u32>) -> Arc<User> {
        if let Some(made) = lock(&self.users).get(&user) {
            return made.clone();
        }
        let name = user.map_or_else(|| "user".to_owned(), |uid| format!("user-{uid}"));
        let dir = |tree: &Tree| user_dir(tree, &name);
        let v2 = self.v2.as_ref().and_then(|tree| {
            let root = dir(tree)?;
            Some(Tree {
                pids: tree.pids && enable(&root, "pids"),
                memory: tree.memory && self.limit_v2(&root) && enable(&root, "memory"),
                cpu: tree.cpu && self.weigh_v2(&root),
                root,
            })
        });
        let slots = self.pids_v1.as_ref().and_then(|tree| {
            let root = dir(tree)?;
            let cpu = self
                .cpu_v1
                .as_ref()
                .and_then(dir)
                .filter(|cpu| self.weigh_v1(cpu));
            let memory = (self.memory_v1.as_ref())
                .and_then(dir)
                .filter(|memory| self.limit_v1(memory));
            // A root server's users make a slot for each call (a thread that ends with
            // it): thousands of users held would otherwise hold a thread and two files
            // each.
            let (spares, keep) = match user {
                None => (SPARE_SLOTS, SPARE_SLOTS + 1),
                Some(_) => (0, 0),
            };
            Some(Slots::new(
                root,
                cpu,
                memory,
                self.max_processes,
                spares,
                keep,
            ))
        });
        let made = Arc::new(User {
            v2,
            slots,
            kept: Mutex::new(Vec::new()),
            keep: if user.is_none() {
                KEPT_CGROUPS
            } else {
                USER_KEPT_CGROUPS
            },
        });
        lock(&self.users).entry(user).or_insert(made).clone()
    }

    /// A user's v2 memory limit, swap included (none).
    fn limit_v2(&self, dir: &Path) -> bool {
        let Some(bytes) = self.limits.memory else {
            return false;
        };
        let swap = write(dir, "memory.swap.max", 0);
        write(dir, "memory.max", bytes) && (swap || !dir.join("memory.swap.max").exists())
    }

    /// A user's v2 weight and `--max-cpu`.
    fn weigh_v2(&self, dir: &Path) -> bool {
        let quota = self
            .limits
            .cpu_quota_us()
            .map(|quota| write(dir, "cpu.max", format!("{quota} {}", limits::CPU_PERIOD_US)));
        write(dir, "cpu.weight", limits::USER_WEIGHT) && quota.unwrap_or(true)
    }

    /// A user's v1 memory limit, swap included where the kernel counts it.
    fn limit_v1(&self, dir: &Path) -> bool {
        let Some(bytes) = self.limits.memory else {
            return false;
        };
        let memsw = dir.join("memory.memsw.limit_in_bytes");
        write(dir, "memory.limit_in_bytes", bytes)
            && (!memsw.exists() || write(dir, "memory.memsw.limit_in_bytes", bytes))
    }

    /// A user's v1 `cpu.shares` and `--max-cpu`.
    fn weigh_v1(&self, dir: &Path) -> bool {
        let quota = self.limits.cpu_quota_us().map(|quota| {
            write(dir, "cpu.cfs_period_us", limits::CPU_PERIOD_US)
                && write(dir, "cpu.cfs_quota_us", quota)
        });
        write(dir, "cpu.shares", limits::USER_SHARES) && quota.unwrap_or(true)
    }

    /// Whether a memory controller bounds the calls of the server's own user: else
    /// commands get `RLIMIT_DATA`.
    pub fn bounds_memory(&self) -> bool {
        let user = self.user(None);
        user.v2.as_ref().is_some_and(|t| t.memory)
            || user.slots.as_ref().is_some_and(|s| s.memory_root.is_some())
    }

    /// Whether a cpu controller weighs each user's calls as one.
    fn weighs_users(&self) -> bool {
        let user = self.user(None);
        user.v2.as_ref().is_some_and(|t| t.cpu)
            || user.slots.as_ref().is_some_and(|s| s.cpu_root.is_some())
    }

    /// The limits this server was given.
    pub fn limits(&self) -> Limits {
        self.limits
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
        let cpu = if self.v2.as_ref().is_some_and(|t| t.cpu) {
            "; commands weigh half the server in one cpu cgroup, each user's with an equal weight there (cpu, cgroup v2)"
        } else if self.cpu_v1.is_some() && self.weighs_users() {
            "; commands weigh half the server in one cpu cgroup, each user's with an equal weight there and each call's in one of its own (cpu, cgroup v1)"
        } else if self.cpu_v1.is_some() {
            "; the commands of all calls share one cpu cgroup, each call's in one of its own there (cpu, cgroup v1)"
        } else {
            "; commands share the processor with the server's own threads one by one (no cpu cgroup here)"
        };
        let max_cpu = match self.limits.cpu {
            Some(cores) if self.weighs_users() => format!(", at most {cores} cores per user"),
            Some(cores) => format!(", --max-cpu {cores} not enforced (no cpu cgroup)"),
            None => String::new(),
        };
        let memory = match self.limits.memory {
            None => "; no memory limit (--max-memory 0)".to_owned(),
            Some(bytes) if self.user(None).v2.as_ref().is_some_and(|t| t.memory) => format!(
                "; at most {} of memory per user (memory, cgroup v2)",
                limits::human(bytes)
            ),
            Some(bytes) if self.bounds_memory() => format!(
                "; at most {} of memory per user (memory, cgroup v1)",
                limits::human(bytes)
            ),
            Some(bytes) => format!(
                "; at most {} of data per process (RLIMIT_DATA: no memory cgroup here)",
                limits::human(bytes)
            ),
        };
        format!(
            "{kill}{limit}{cpu}{max_cpu}{memory}; commands run at nice {}, IO best-effort 7, oom_score_adj {}",
            limits::NICE,
            limits::OOM_SCORE_ADJ
        )
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

    /// The calls' directory in the v1 `memory` hierarchy, for the watchdog.
    pub fn memory_root(&self) -> Option<&Path> {
        self.memory_v1.as_ref().map(|t| t.root.as_path())
    }

    /// Whether [`Cgroups::call`] would make nothing for `user`: their cgroups are
    /// made, a v2 cgroup is kept and a slot is free, where there are such.
    pub fn ready(&self, user: Option<u32>) -> bool {
        let Some(made) = lock(&self.users).get(&user).cloned() else {
            return false;
        };
        (made.v2.is_none() || !lock(&made.kept).is_empty())
            && made
                .slots
                .as_ref()
                .is_none_or(|slots| !lock(&slots.free).is_empty())
    }

    /// Gives a call of `user` a v2 cgroup (a kept one, or a new one) and a v1 slot,
    /// below the user's cgroups; a hierarchy that refuses is left out.
    pub fn call(&self, user: Option<u32>) -> CallCgroups {
        let made = self.user(user);
        let v2 = made.v2.as_ref().and_then(|tree| {
            let kept = lock(&made.kept).pop();
            kept.or_else(|| {
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                V2Cgroup::make(tree, n, self.max_processes)
            })
        });
        let slot = made.slots.as_ref().and_then(|slots| slots.take());
        let memory_v1 = slot.as_ref().and_then(|slot| slot.memory.clone());
        let ooms = match v2.as_ref().and_then(|cgroup| cgroup.memory_events.clone()) {
            Some(events) => Some(events),
            None => slot.as_ref().and_then(|slot| slot.ooms.clone()),
        }
        .map(|file| {
            let before = oom_kills(&file).unwrap_or(0);
            (file, before)
        });
        CallCgroups {
            v2,
            pids_v1: Mutex::new(slot.as_ref().map(|slot| slot.dir.clone())),
            cpu_v1: Mutex::new(slot.as_ref().and_then(|slot| slot.cpu.clone())),
            memory_v1: Mutex::new(memory_v1),
            ooms,
            slot: Mutex::new(slot),
            slots: made.slots.clone(),
            user: Some(made),
            killed: AtomicBool::new(false),
            oomed_when_released: OnceLock::new(),
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
        if let (Some(cgroup), Some(user)) = (call.v2.take(), call.user.as_ref()) {
            let mut kept = lock(&user.kept);
            let lends = lends && !call.killed.load(Ordering::Relaxed);
            if lends && kept.len() < user.keep && !cgroup.populated() {
                kept.push(cgroup);
            } else {
                dirs.push(cgroup.path);
            }
        }
        dirs.extend(lock(&call.pids_v1).take());
        dirs.extend(lock(&call.cpu_v1).take());
        dirs.extend(lock(&call.memory_v1).take());
        dirs
    }

    /// `user` (a root server's) was released: their free slots' threads end and their
    /// kept cgroups are closed, and their directories are removed once empty, on a
    /// thread of its own. Calls still running keep what they hold; the user's next
    /// call makes their cgroups again.
    pub fn release_user(&self, user: u32) {
        let Some(made) = lock(&self.users).remove(&Some(user)) else {
            return;
        };
        let released = move || {
            lock(&made.kept).clear();
            let mut dirs: Vec<PathBuf> = made.v2.iter().map(|t| t.root.clone()).collect();
            if let Some(slots) = &made.slots {
                slots.close();
                dirs.push(slots.root.clone());
                dirs.extend(slots.cpu_root.clone());
                dirs.extend(slots.memory_root.clone());
            }
            for dir in dirs {
                remove_tree(&dir);
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("user release".to_owned())
            .spawn(released)
        {
            tracing::debug!(error = %e, "no thread to release a user's cgroups");
        }
    }

    /// Removes the empty call cgroups, then the server's own, at exit. A cgroup that
    /// still holds a background job stays until the system removes it.
    pub fn remove(&self) {
        let users = std::mem::take(&mut *lock(&self.users));
        for user in users.values() {
            if let Some(slots) = &user.slots {
                slots.close();
            }
            lock(&user.kept).clear();
        }
        for tree in [&self.v2, &self.pids_v1, &self.cpu_v1, &self.memory_v1]
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
            let _ = self.oomed_when_released.set(self.counted_out_of_memory());
            *lock(&self.pids_v1) = None;
            *lock(&self.cpu_v1) = None;
            *lock(&self.memory_v1) = None;
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

    /// Whether the kernel killed a process of the call because the user's memory
    /// limit was reached, since the call began.
    pub fn out_of_memory(&self) -> bool {
        match self.oomed_when_released.get() {
            Some(&oomed) => oomed,
            None => self.counted_out_of_memory(),
        }
    }

    /// What the call's count of out-of-memory kills says now.
    fn counted_out_of_memory(&self) -> bool {
        self.ooms
            .as_ref()
            .is_some_and(|(file, before)| oom_kills(file).is_some_and(|now| now > *before))
    }

    /// Whether a memory cgroup bounds the call.
    pub fn bounds_memory(&self) -> bool {
        self.ooms.is_some()
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

/// The cgroup `name` of a user under `tree`, made unless it is there.
fn user_dir(tree: &Tree, name: &str) -> Option<PathBuf> {
    let dir = tree.root.join(name);
    match std::fs::create_dir(&dir) {
        Ok(()) => Some(dir),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Some(dir),
        Err(e) => {
            tracing::warn!(error = %e, dir = %dir.display(), "no cgroup for a user");
            None
        }
    }
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
    Some(Tree {
        root,
        ..Tree::default()
    })
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

/// Enables `controller` for the cgroups under `root`, where the parent offers it.
fn enable(root: &Path, controller: &str) -> bool {
    let offered = std::fs::read_to_string(root.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == controller));
    offered
        && std::fs::write(
            root.join("cgroup.subtree_control"),
            format!("+{controller}"),
        )
        .is_ok()
}

/// Writes `value` to the cgroup file `dir/name`; a refusal is logged.
fn write(dir: &Path, name: &str, value: impl std::fmt::Display) -> bool {
    match std::fs::write(dir.join(name), value.to_string()) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(error = %e, dir = %dir.display(), name, "cannot set a cgroup limit");
            false
        }
    }
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

/// Removes the empty cgroups under `root` (users' and calls'), then `root`.
pub fn remove_tree(root: &Path) {
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
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
    /// The slots under `root`, each with a cgroup of its own under `cpu_root` and
    /// `memory_root` where there are such, and the spares made.
    fn new(
        root: PathBuf,
        cpu_root: Option<PathBuf>,
        memory_root: Option<PathBuf>,
        max_processes: u32,
        spares: usize,
        keep: usize,
    ) -> Arc<Slots> {
        let slots = Arc::new(Slots {
            root,
            cpu_root,
            memory_root,
            max_processes,
            spares,
            keep,
            free: Mutex::new(Vec::new()),
        });
        for _ in 0..spares {
            if let Some(slot) = slots.make() {
                lock(&slots.free).push(slot);
            }
        }
        slots
    }

    /// Makes a slot: a `slot-N` cgroup with the process limit, and a thread that moves
    /// into it and then runs what it is sent. `None` when the hierarchy refuses.
    fn make(&self) -> Option<Slot> {
        let SlotDirs {
            dir,
            cpu,
            memory,
            current,
        } = self.new_dir()?;
        let tasks = dir.join("tasks");
        let cpu_tasks = self.cpu_tasks(cpu.as_ref());
        let memory_tasks = memory.as_ref().map(|dir| dir.join("tasks"));
        let started = Worker::start("spawn slot", move || {
            std::fs::write(&tasks, "0")?;
            if let Some(memory) = memory_tasks {
                std::fs::write(&memory, "0")?;
            }
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
                for dir in std::iter::once(&dir).chain(&cpu).chain(&memory) {
                    let _ = std::fs::remove_dir(dir);
                }
                return None;
            }
        };
        Some(Slot {
            ooms: oom_control(memory.as_deref()),
            dir,
            cpu,
            memory,
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
        let n = SLOT_NUMBERS.fetch_add(1, Ordering::Relaxed);
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
                let slot_dir = |root: &PathBuf| {
                    let slot = root.join(format!("slot-{n}"));
                    match std::fs::create_dir(&slot) {
                        Ok(()) => Some(slot),
                        Err(e) => {
                            tracing::debug!(error = %e, dir = %slot.display(), "no cgroup for a slot");
                            None
                        }
                    }
                };
                let cpu = self.cpu_root.as_ref().and_then(slot_dir);
                let memory = self.memory_root.as_ref().and_then(slot_dir);
                Some(SlotDirs {
                    dir,
                    cpu,
                    memory,
                    current,
                })
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
        if left < self.spares {
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
            let Some(SlotDirs {
                dir,
                cpu,
                memory,
                current,
            }) = slots.new_dir()
            else {
                return;
            };
            let moved = std::fs::write(dir.join("tasks"), "0").and_then(|()| {
                memory
                    .as_ref()
                    .map_or(Ok(()), |memory| std::fs::write(memory.join("tasks"), "0"))
            });
            if let Err(e) = moved {
                tracing::warn!(error = %e, "cannot move a spawn slot");
                for dir in std::iter::once(&dir).chain(&cpu).chain(&memory) {
                    let _ = std::fs::remove_dir(dir);
                }
                return;
            }
            if let Some(cpu) = slots.cpu_tasks(cpu.as_ref()) {
                join_cpu(&cpu);
            }
            slots.give_back(Slot {
                ooms: oom_control(memory.as_deref()),
                dir,
                cpu,
                memory,
                current,
                work,
            });
        }));
        if moved.is_err() {
            tracing::debug!("a spawn slot is gone");
        }
    }

    /// Frees a slot; beyond those kept, its thread goes home (off the answer's path:
    /// the move is that thread's), removes the slot's cgroup and ends.
    fn give_back(&self, slot: Slot) {
        let mut free = lock(&self.free);
        if free.len() < self.keep {
            free.push(slot);
            return;
        }
        drop(free);
        let homes = [
            (home(&self.root), Some(slot.dir.clone())),
            (self.cpu_tasks(None), slot.cpu.clone()),
            (
                self.memory_root.as_deref().and_then(home),
                slot.memory.clone(),
            ),
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
        let homes = [
            home(&self.root),
            self.cpu_root.as_deref().and_then(home),
            self.memory_root.as_deref().and_then(home),
        ];
        for slot in free {
            let (done, finished) = mpsc::sync_channel(1);
            let homes = homes.clone();
            let _ = slot.work.send(Box::new(move || {
                for home in homes.into_iter().flatten() {
                    let _ = std::fs::write(home, "0");
                }
                let _ = done.send(());
            }));
            let _ = finished.recv();
        }
    }
}

/// A v1 memory cgroup's `memory.oom_control`, opened once for the calls of its slot.
fn oom_control(dir: Option<&Path>) -> Option<Arc<File>> {
    File::open(dir?.join("memory.oom_control"))
        .ok()
        .map(Arc::new)
}

/// The `tasks` file of the server's own cgroup, for a user's directory `root` in a v1
/// hierarchy (`<own>/forge-bash-<pid>/user-…`).
fn home(root: &Path) -> Option<PathBuf> {
    Some(root.parent()?.parent()?.join("tasks"))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
