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

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One hierarchy's directory for this server's calls.
#[derive(Debug)]
struct Tree {
    /// The `cgroup.procs` of the cgroup the server itself lives in, kept open: it
    /// returns there after each spawn.
    home: Option<std::fs::File>,
    /// Its `tasks` (cgroup v1), kept open: the spawning thread returns there.
    home_tasks: Option<std::fs::File>,
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
    max_processes: u32,
}

/// The cgroups of one call.
#[derive(Debug, Default)]
pub struct CallCgroups {
    /// Killed with `cgroup.kill`.
    v2: Option<PathBuf>,
    /// Holds the process limit when v2 cannot.
    pids_v1: Option<PathBuf>,
    /// The shell was born in `pids_v1`.
    entered_v1: std::sync::atomic::AtomicBool,
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
            own.lines()
                .find_map(|l| l.split_once(":pids:").map(|(_, path)| path))
                .zip(mount_point(&mountinfo, |fs| {
                    fs.starts_with("cgroup ") && fs.split([' ', ',']).any(|o| o == "pids")
                }))
                .and_then(|(own, mount)| {
                    make_tree(&Path::new(mount).join(own.trim_start_matches('/')))
                })
                .map(|mut tree| {
                    tree.pids = true;
                    tree
                })
        };
        Cgroups {
            v2,
            pids_v1,
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
        format!("{kill}{limit}")
    }

    /// True when calls are killed through cgroup v2.
    pub fn kills(&self) -> bool {
        self.v2.is_some()
    }

    /// The v2 directory of every call, for the watchdog.
    pub fn root(&self) -> Option<&Path> {
        self.v2.as_ref().map(|t| t.root.as_path())
    }

    /// The directory of every call in the v1 `pids` hierarchy, for the watchdog.
    pub fn pids_root(&self) -> Option<&Path> {
        self.pids_v1.as_ref().map(|t| t.root.as_path())
    }

    /// Makes the cgroups of call `n`; a hierarchy that refuses is left out.
    pub fn call(&self, n: u64) -> CallCgroups {
        let make = |tree: &Option<Tree>| {
            let tree = tree.as_ref()?;
            let dir = tree.root.join(format!("call-{n}"));
            if let Err(e) = std::fs::create_dir(&dir) {
                tracing::debug!(error = %e, dir = %dir.display(), "no cgroup for this call");
                return None;
            }
            if tree.pids {
                let max = self.max_processes.to_string();
                if let Err(e) = std::fs::write(dir.join("pids.max"), max) {
                    tracing::warn!(error = %e, dir = %dir.display(), "cannot limit the call's processes");
                }
            }
            Some(dir)
        };
        CallCgroups {
            v2: make(&self.v2),
            pids_v1: make(&self.pids_v1),
            entered_v1: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs `spawn` with the server inside the call's cgroups, so the shell is born in
    /// them and nothing it starts is ever outside; then the server moves back home.
    ///
    /// Into cgroup v2 the whole server moves (v2 moves processes); into the v1 `pids`
    /// cgroup only the spawning thread (v1 moves threads through `tasks`), which is
    /// all a spawn needs. Were the shell moved there after its spawn instead, what it
    /// forked first (on a loaded machine, a whole fork bomb) would stay outside the
    /// limit.
    pub fn spawn_inside<T>(&self, call: &CallCgroups, spawn: impl FnOnce() -> T) -> T {
        let v2 = enter(&self.v2, &call.v2, "cgroup.procs");
        let v1 = enter(&self.pids_v1, &call.pids_v1, "tasks");
        call.entered_v1
            .store(v1.is_some(), std::sync::atomic::Ordering::Relaxed);
        let spawned = spawn();
        let back = |home: &Option<std::fs::File>, what: &str| {
            let left = match home {
                Some(home) => (&*home).write_all(b"0"),
                None => Err(io::Error::other(format!(
                    "the server's own {what} is not open"
                ))),
            };
            if let Err(e) = left {
                tracing::error!(error = %e, "cannot leave a call's cgroup");
            }
        };
        if let Some(tree) = v1 {
            back(&tree.home_tasks, "tasks");
        }
        if let Some(tree) = v2 {
            back(&tree.home, "cgroup.procs");
        }
        spawned
    }

    /// Kills every process of every call, answered ones included.
    pub fn kill_all(&self) {
        if let Some(tree) = &self.v2 {
            let _ = kill(&tree.root);
        } else if let Some(tree) = &self.pids_v1 {
            kill_listed(&tree.root);
        }
    }

    /// Removes the empty call cgroups, then the server's own, at exit. A cgroup that
    /// still holds a background job stays until the system removes it.
    pub fn remove(&self) {
        for tree in [&self.v2, &self.pids_v1].into_iter().flatten() {
            remove_tree(&tree.root);
        }
    }
}

impl CallCgroups {
    /// Takes the just-spawned shell into the v1 `pids` cgroup when it was not born
    /// there (the spawning thread could not enter it).
    pub fn adopt(&self, pid: libc::pid_t) {
        if let Some(dir) = &self.pids_v1
            && !self.entered_v1.load(std::sync::atomic::Ordering::Relaxed)
            && let Err(e) = std::fs::write(dir.join("cgroup.procs"), pid.to_string())
        {
            tracing::warn!(error = %e, "cannot limit the call's processes");
        }
    }

    /// Kills everything in the call's cgroup; false when it has none to kill with.
    pub fn kill(&self) -> Option<io::Result<()>> {
        if let Some(dir) = &self.v2
            && !holds_me(dir)
        {
            return Some(kill(dir));
        }
        if let Some(dir) = &self.pids_v1
            && !holds_me(dir)
        {
            kill_listed(dir);
            return Some(Ok(()));
        }
        None
    }

    /// Whether the call's cgroup holds no process; `None` when it has no cgroup.
    pub fn is_empty(&self) -> Option<bool> {
        let dir = self.v2.as_ref().or(self.pids_v1.as_ref())?;
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        Some(procs.trim().is_empty())
    }

    /// The v2 directory, for the watchdog.
    pub fn v2(&self) -> Option<&Path> {
        self.v2.as_deref()
    }

    /// Takes the call's cgroup directories, for removal once the call ended.
    pub fn take(&mut self) -> Vec<PathBuf> {
        [self.v2.take(), self.pids_v1.take()]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// Moves the server (`cgroup.procs`) or its calling thread (`tasks`) into a call's
/// cgroup of `tree`; the tree when it did.
fn enter<'a>(tree: &'a Option<Tree>, dir: &Option<PathBuf>, file: &str) -> Option<&'a Tree> {
    let (tree, dir) = (tree.as_ref()?, dir.as_ref()?);
    match std::fs::write(dir.join(file), "0") {
        Ok(()) => Some(tree),
        Err(e) => {
            tracing::debug!(error = %e, dir = %dir.display(), "cannot enter the call's cgroup");
            None
        }
    }
}

/// The mount point of the first mount whose "fstype source options" part matches.
fn mount_point(mountinfo: &str, fs: impl Fn(&str) -> bool) -> Option<&str> {
    mountinfo.lines().find_map(|line| {
        let (fields, tail) = line.split_once(" - ")?;
        fs(tail).then(|| fields.split(' ').nth(4)).flatten()
    })
}

/// Makes `<base>/forge-bash-<pid>`, after removing what earlier servers left there.
fn make_tree(base: &Path) -> Option<Tree> {
    if !base.join("cgroup.procs").exists() {
        return None;
    }
    remove_stale(base);
    let root = base.join(format!("forge-bash-{}", std::process::id()));
    std::fs::create_dir(&root).ok()?;
    let open = |name: &str| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(base.join(name))
            .ok()
    };
    Some(Tree {
        home: open("cgroup.procs"),
        home_tasks: open("tasks"),
        root,
        pids: false,
    })
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
/// with the process limit in force, a fork bomb runs out of room to replace them.
pub fn kill_listed(cgroup: &Path) {
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
            return;
        }
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
        if !Path::new("/proc").join(pid).exists() {
            remove_tree(&entry.path());
        }
    }
}
