//! Starting a call's shell straight inside its cgroups, with no migration.
//!
//! Moving a task between cgroups (a write to `cgroup.procs` or `tasks`) takes the
//! kernel's global cgroup threadgroup lock for writing, which waits for an RCU grace
//! period whenever the lock was idle: on a busy machine, for milliseconds, on every
//! call that follows a pause. So the shell is never moved: it is born where it
//! belongs.
//!
//! - **cgroup v2**: `clone3` with `CLONE_INTO_CGROUP` (Linux 5.7) puts the child in the
//!   call's cgroup as it is created. Where `clone3` is refused (an old seccomp profile),
//!   the child enters the cgroup itself before `execve`, as the fallback.
//! - **The v1 `pids` hierarchy** (hybrid systems) has no such flag, but there a child
//!   is born in the cgroup of the *thread* that forks it. So the spawn runs on a thread
//!   that lives in the call's `pids` cgroup ([`super::cgroup`]'s slots).
//!
//! On x86_64 the child shares the server's memory until it executes the shell
//! (`CLONE_VM | CLONE_VFORK`, on a stack of its own, as `posix_spawn` does), so no page
//! table is copied; elsewhere it is a fork of the calling thread. Either way, between
//! the clone and `execve` it only makes system calls on memory prepared before the
//! clone (no allocation, no lock), with every signal handler of the server's reset
//! before signals are unblocked. The shell leads a process group of its own, with
//! stdin at `/dev/null` and both output streams piped. It is watched through its
//! pidfd.

use std::ffi::{CString, OsStr, OsString};
use std::future::Future;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

use super::clones;

/// `CLONE_INTO_CGROUP` (Linux 5.7), not in every libc's headers.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `CLOSE_RANGE_CLOEXEC` (Linux 5.11): mark the range close-on-exec.
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// The open-files limit commands get: the one the server started with, before it
/// raised its own soft limit ([`keep_commands_nofile`]).
static COMMANDS_NOFILE: OnceLock<libc::rlimit> = OnceLock::new();

/// Commands get `limit` as their open-files limit, whatever the server raises its own
/// to afterwards: programs built on `select()` break past 1,024 descriptors. Set once,
/// at start-up.
pub fn keep_commands_nofile(limit: libc::rlimit) {
    let _ = COMMANDS_NOFILE.set(limit);
}

/// `struct clone_args` up to its `cgroup` field (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// What to start: a program, its arguments, its directory and the variables set on top
/// of the server's environment, and the user it runs as. The builder's methods are
/// those of `std::process::Command`.
#[derive(Debug, Clone)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    uid: Option<u32>,
    gid: Option<u32>,
    groups: Option<Vec<u32>>,
    no_new_privs: bool,
    drop_capabilities: bool,
    data_limit: Option<u64>,
}

impl Command {
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            uid: None,
            gid: None,
            groups: None,
            no_new_privs: false,
            drop_capabilities: false,
            data_limit: None,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.env
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (name, value) in vars {
            self.env(name, value);
        }
        self
    }

    /// Runs the program as this user (`setuid` after `setgid` and `setgroups`).
    pub fn uid(&mut self, uid: u32) -> &mut Command {
        self.uid = Some(uid);
        self
    }

    pub fn gid(&mut self, gid: u32) -> &mut Command {
        self.gid = Some(gid);
        self
    }

    /// The supplementary groups (`setgroups`); none are changed unless given.
    pub fn groups(&mut self, groups: &[u32]) -> &mut Command {
        self.groups = Some(groups.to_vec());
        self
    }

    /// Sets `no_new_privs` in the child: no set-uid program it runs gains any rights.
    pub fn no_new_privs(&mut self) -> &mut Command {
        self.no_new_privs = true;
        self
    }

    /// The child gives up every capability (bounding, permitted, effective,
    /// inheritable, ambient) and, where it may, root's on `execve`: a root server's
    /// command is root without root's powers.
    pub fn drop_capabilities(&mut self) -> &mut Command {
        self.drop_capabilities = true;
        self
    }

    /// Bounds each process of the command to `bytes` of data (`RLIMIT_DATA`): the
    /// memory limit where no memory cgroup holds the command.
    pub fn data_limit(&mut self, bytes: u64) -> &mut Command {
        self.data_limit = Some(bytes);
        self
    }

    /// The program's environment: the variables set here as `NAME=value` strings, and
    /// the pointer array over the server's own (those not set here) and these.
    fn environment(&self) -> (Vec<CString>, Vec<*const libc::c_char>) {
        let envp: Vec<CString> = self
            .env
            .iter()
            .filter_map(|(name, value)| env_entry(name, value))
            .collect();
        let overridden = |name: &OsStr| self.env.iter().any(|(n, _)| n == name);
        let mut pointers: Vec<*const libc::c_char> = inherited()
            .iter()
            .filter(|(name, _)| !overridden(name))
            .map(|(_, entry)| entry.as_ptr())
            .chain(envp.iter().map(|entry| entry.as_ptr()))
            .collect();
        pointers.push(std::ptr::null());
        (envp, pointers)
    }

    /// Everything the child needs, made before the clone.
    pub(super) fn prepare(&self) -> io::Result<Prepared> {
        let nul = |s: &OsStr| {
            CString::new(s.as_bytes()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in an argument")
            })
        };
        let path = match self.env.iter().rev().find(|(name, _)| name == "PATH") {
            Some((_, value)) => Some(value.clone()),
            None => std::env::var_os("PATH"),
        };
        let program = resolve(&self.program, path.as_deref(), self.cwd.as_deref())?;
        let mut argv = vec![nul(&self.program)?];
        for arg in &self.args {
            argv.push(nul(arg)?);
        }
        let (envp, envp_ptrs) = self.environment();
        let cwd = self
            .cwd
            .as_deref()
            .map(|d| nul(d.as_os_str()))
            .transpose()?;
        let (out_r, out_w) = output_pipe()?;
        let (err_r, err_w) = output_pipe()?;
        let null = dev_null()?;
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|s| s.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        Ok(Prepared {
            pid: Arc::new(AtomicI32::new(0)),
            nofile: COMMANDS_NOFILE.get().copied(),
            data: self.data_limit.map(|bytes| libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            }),
            argv_ptrs,
            envp_ptrs,
            program,
            _argv: argv,
            _envp: envp,
            cwd,
            uid: self.uid,
            gid: self.gid,
            groups: self.groups.clone(),
            no_new_privs: self.no_new_privs,
            drop_capabilities: self.drop_capabilities,
            ruleset: None,
            network: None,
            null,
            out: (out_r, out_w),
            err: (err_r, err_w),
            report: None,
            failed: AtomicI32::new(0),
        })
    }
}

/// A command made ready for the clone: C strings, pointer arrays and pipes.
pub(super) struct Prepared {
    /// The child's pid once it was cloned (the kernel writes it before the child
    /// runs): what is killed when the child never gets to execute its program.
    pid: Arc<AtomicI32>,
    /// The open-files limit the child sets for its program.
    nofile: Option<libc::rlimit>,
    /// The data limit the child sets for its program (`--max-memory` without a
    /// memory cgroup).
    data: Option<libc::rlimit>,
    program: CString,
    /// Owns the strings `argv_ptrs` points to.
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    /// Owns the strings `envp_ptrs` points to, but the server's own variables'.
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    uid: Option<u32>,
    gid: Option<u32>,
    groups: Option<Vec<u32>>,
    no_new_privs: bool,
    drop_capabilities: bool,
    /// A Landlock ruleset the child enters last, after `no_new_privs`.
    ruleset: Option<RawFd>,
    /// A network namespace the child enters first, while it is still root.
    network: Option<RawFd>,
    /// `/dev/null`, opened once for every call.
    null: RawFd,
    out: (OwnedFd, OwnedFd),
    err: (OwnedFd, OwnedFd),
    /// Where a child that does not share this memory (a fork) reports the error
    /// number of what failed: the pipe closes on exec.
    report: Option<(OwnedFd, OwnedFd)>,
    /// Where a child that shares this memory (`CLONE_VM`) puts it.
    failed: AtomicI32,
}

// SAFETY: the raw pointers point into `argv` and `envp`, owned by the same value and
// never changed after `prepare` (moving the value moves no heap data), or into the
// server's environment, kept for the process's life.
unsafe impl Send for Prepared {}

/// A started child, before the runtime watches it.
#[derive(Debug)]
pub struct Started {
    pid: u32,
    pidfd: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    /// The clones that may hold a copy of the write ends of its pipes: those begun
    /// before the server closed its own.
    others: clones::Mark<'static>,
}

impl Started {
    /// A child whose call no longer waits for it (its start took too long): it and
    /// its group are killed, and it is reaped.
    pub fn give_up(self) {
        // SAFETY: a signal through a pidfd this value owns, and to the group the child
        // leads (its pid is its own until it is reaped, below).
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
            libc::kill(-(self.pid as libc::pid_t), libc::SIGKILL);
        }
        let _ = reap(self.pidfd.as_raw_fd(), 0);
    }
}

/// A spawn ready to run, on whichever thread it must run: the command made ready, the
/// call's cgroup v2 directory, opened, and the Landlock ruleset the child enters; both
/// descriptors are borrowed for as long as the spawn.
pub struct Start<'a> {
    pub(super) prepared: Prepared,
    pub(super) cgroup: Option<BorrowedFd<'a>>,
    ruleset: Option<BorrowedFd<'a>>,
    network: Option<BorrowedFd<'a>>,
}

impl<'a> Start<'a> {
    pub(super) fn new(prepared: Prepared, cgroup: Option<BorrowedFd<'a>>) -> Start<'a> {
        Start {
            prepared,
            cgroup,
            ruleset: None,
            network: None,
        }
    }

    /// The child enters this Landlock ruleset before it executes the program, with
    /// `no_new_privs` (which the kernel requires of an unprivileged process first),
    /// and this network namespace first of all.
    pub fn entering<'b>(
        self,
        ruleset: Option<BorrowedFd<'b>>,
        network: Option<BorrowedFd<'b>>,
    ) -> Start<'b>
    where
        'a: 'b,
    {
        let mut prepared = self.prepared;
        prepared.no_new_privs = true;
        Start {
            prepared,
            cgroup: self.cgroup,
            ruleset,
            network,
        }
    }

    /// Clones the calling thread into a child that becomes the program: born in the
    /// call's cgroup v2 and in the calling thread's v1 cgroups.
    pub fn run(self) -> io::Result<Started> {
        let Start {
            mut prepared,
            cgroup,
            ruleset,
            network,
        } = self;
        prepared.ruleset = ruleset.map(|fd| fd.as_raw_fd());
        prepared.network = network.map(|fd| fd.as_raw_fd());
        prepared.start(cgroup)
    }
}

impl Prepared {
    /// Where the child's pid is, once it was cloned (0 before).
    pub(super) fn pid(&self) -> Arc<AtomicI32> {
        self.pid.clone()
    }

    fn start(mut self, cgroup: Option<BorrowedFd<'_>>) -> io::Result<Started> {
        let mut pidfd: libc::c_int = -1;
        let mut args = CloneArgs {
            flags: (libc::CLONE_PIDFD | libc::CLONE_PARENT_SETTID) as u64,
            pidfd: &raw mut pidfd as u64,
            parent_tid: self.pid.as_ptr() as u64,
            exit_signal: libc::SIGCHLD as u64,
            ..CloneArgs::default()
        };
        if let Some(dir) = cgroup {
            args.flags |= CLONE_INTO_CGROUP;
            args.cgroup = dir.as_raw_fd() as u64;
        }
        // Until its child executed the program: it holds whatever the server had open.
        let in_flight = clones::begin();
        let pid = self.clone_child(&mut args, cgroup, &mut pidfd)?;
        // SAFETY: the kernel returned a new pidfd.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
        let Prepared {
            out,
            err,
            report,
            failed,
            ..
        } = self;
        drop((out.1, err.1));
        let others = clones::mark();
        let error = start_error(report, failed);
        drop(in_flight);
        if let Some(errno) = error {
            // The child could not start the program; it exited at once.
            let _ = reap(pidfd.as_raw_fd(), 0);
            return Err(io::Error::from_raw_os_error(errno));
        }
        oom_first(pid, pidfd.as_fd());
        Ok(Started {
            pid: pid as u32,
            pidfd,
            stdout: out.0,
            stderr: err.0,
            others,
        })
    }

    /// Clones the child with `args`, or where `clone3` is refused, forks it with
    /// `clone` and has it enter `cgroup` itself; the child's pid, in the parent.
    fn clone_child(
        &mut self,
        args: &mut CloneArgs,
        cgroup: Option<BorrowedFd<'_>>,
        pidfd: &mut libc::c_int,
    ) -> io::Result<libc::c_long> {
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.report = Some(pipe_cloexec()?);
        }
        match self.clone3(args) {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
                ) =>
            {
                static TOLD: std::sync::Once = std::sync::Once::new();
                TOLD.call_once(|| tracing::debug!(error = %e, "clone3 refused; forking instead"));
            }
            cloned => return cloned,
        }
        if self.report.is_none() {
            self.report = Some(pipe_cloexec()?);
        }
        // As around `clone3`: no handler of the server's may run in the child before it
        // resets them.
        let masked = Masked::all();
        let pid = clone_pidfd(pidfd);
        if matches!(pid, Ok(0)) {
            // SAFETY: in the forked child; see `child`.
            unsafe { self.child(cgroup.map(|fd| fd.as_raw_fd())) }
        }
        drop(masked);
        let pid = pid?;
        self.pid.store(pid as i32, Ordering::Relaxed);
        Ok(pid)
    }

    /// `clone3` with `args`; in the child, [`Prepared::child`]. Where the child can be
    /// started on a stack of its own (x86_64), it shares the server's memory until it
    /// executes the program (`CLONE_VM | CLONE_VFORK`, as `posix_spawn` does): no page
    /// table is copied, and the calling thread waits meanwhile. Elsewhere it is a fork.
    fn clone3(&self, args: &mut CloneArgs) -> io::Result<libc::c_long> {
        #[cfg(target_arch = "x86_64")]
        {
            let stack = Stack::take()?;
            args.flags |= (libc::CLONE_VM | libc::CLONE_VFORK) as u64;
            args.stack = stack.base as u64;
            args.stack_size = stack.size as u64;
            // No handler of the server's may run in the child before it resets them.
            let masked = Masked::all();
            // SAFETY: the child runs `vm_child` on `stack`, which outlives it (this
            // thread waits until it executed or exited), and touches only `self`.
            let pid = unsafe {
                clone3_on_stack(args, vm_child, std::ptr::from_ref(self).cast_mut().cast())
            };
            drop(masked);
            // The child executed its program or exited: the stack is free again.
            stack.keep();
            if pid < 0 {
                return Err(io::Error::from_raw_os_error(-pid as i32));
            }
            Ok(pid)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let masked = Masked::all();
            // SAFETY: clone3 with a valid clone_args; without CLONE_VM the child has a
            // copy of this memory and runs only `child`, which ends in execve or _exit.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone3,
                    std::ptr::from_mut(args),
                    std::mem::size_of::<CloneArgs>(),
                )
            };
            if pid == 0 {
                // SAFETY: in the child, a copy of this memory; see `child`.
                unsafe { self.child(None) }
            }
            let error = io::Error::last_os_error();
            drop(masked);
            match pid {
                pid if pid < 0 => Err(error),
                pid => Ok(pid),
            }
        }
    }

    /// The child's life between clone and execve: async-signal-safe calls only, on
    /// memory prepared before the clone. Never returns.
    unsafe fn child(&self, cgroup: Option<RawFd>) -> ! {
        // SAFETY: plain system calls on descriptors and strings made before the clone.
        unsafe {
            if !self.set_up(cgroup) || !self.take_credentials() {
                self.fail();
            }
            libc::execve(
                self.program.as_ptr(),
                self.argv_ptrs.as_ptr(),
                self.envp_ptrs.as_ptr(),
            );
            self.fail()
        }
    }

    /// In the child: its cgroup (where the clone could not place it), its signals, its
    /// process group, its three streams and its directory; false when one failed.
    unsafe fn set_up(&self, cgroup: Option<RawFd>) -> bool {
        // SAFETY: plain system calls on descriptors and strings made before the clone.
        unsafe {
            if let Some(dir) = cgroup {
                let procs = libc::openat(dir, c"cgroup.procs".as_ptr(), libc::O_WRONLY);
                if procs < 0 || libc::write(procs, c"0".as_ptr().cast(), 1) != 1 {
                    return false;
                }
                libc::close(procs);
            }
            reset_signals();
            below_the_server();
            // Descriptors the server inherited without close-on-exec reach no command
            // (a kernel without close_range leaves them as they are).
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            );
            libc::setpgid(0, 0) == 0
                && libc::dup2(self.null, 0) >= 0
                && libc::dup2(self.out.1.as_raw_fd(), 1) >= 0
                && libc::dup2(self.err.1.as_raw_fd(), 2) >= 0
                && self.nofile.as_ref().is_none_or(|limit| {
                    libc::syscall(
                        libc::SYS_prlimit64,
                        0,
                        libc::RLIMIT_NOFILE,
                        std::ptr::from_ref(limit),
                        std::ptr::null_mut::<libc::rlimit>(),
                    ) == 0
                })
                && self.data.as_ref().is_none_or(|limit| {
                    libc::syscall(
                        libc::SYS_prlimit64,
                        0,
                        libc::RLIMIT_DATA,
                        std::ptr::from_ref(limit),
                        std::ptr::null_mut::<libc::rlimit>(),
                    ) == 0
                })
                && self
                    .cwd
                    .as_ref()
                    .is_none_or(|cwd| libc::chdir(cwd.as_ptr()) == 0)
        }
    }

    /// In the child: its network namespace, groups, gid and uid, `no_new_privs`, then
    /// the Landlock ruleset; false when one failed. The credentials change through the
    /// system calls themselves: libc's wrappers would also change those of the server's
    /// threads.
    unsafe fn take_credentials(&self) -> bool {
        // SAFETY: plain system calls on values made before the clone.
        unsafe {
            // While the child is still root: the namespace needs CAP_SYS_ADMIN, and the
            // bounding set CAP_SETPCAP, which a uid of its own takes away.
            if self
                .network
                .is_some_and(|ns| libc::setns(ns, libc::CLONE_NEWNET) != 0)
            {
                return false;
            }
            if self.drop_capabilities {
                drop_bounding_set();
            }
            self.groups.as_ref().is_none_or(|groups| {
                libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) == 0
            }) && self
                .gid
                .is_none_or(|gid| libc::syscall(libc::SYS_setgid, gid) == 0)
                && self
                    .uid
                    .is_none_or(|uid| libc::syscall(libc::SYS_setuid, uid) == 0)
                && (!self.drop_capabilities || drop_capabilities())
                && (!self.no_new_privs || libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
                // The landlock crate's `restrict_self` is this one system call, but not
                // async-signal-safe; the ruleset was built and checked before the clone.
                && self.ruleset.is_none_or(|ruleset| {
                    libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) == 0
                })
        }
    }

    /// In the child: reports errno where the parent reads it, and exits. A step that
    /// failed without an error number (a short write) is reported as `EIO`: never as
    /// "os error 0".
    unsafe fn fail(&self) -> ! {
        // SAFETY: errno location, an atomic store and write/_exit are async-signal-safe.
        unsafe {
            let errno = match *libc::__errno_location() {
                0 => libc::EIO,
                errno => errno,
            };
            self.failed.store(errno, Ordering::Relaxed);
            if let Some((_, report)) = &self.report {
                libc::write(report.as_raw_fd(), (&raw const errno).cast(), 4);
            }
            libc::_exit(127)
        }
    }
}

/// In the child, before it changes its credentials (a process may always lower its own
/// standing): the kernel's OOM killer takes it first (`oom_score_adj` 1000; a vfork
/// child's write is its own, not the server's, whose memory it shares until it
/// executes), it runs [`NICE`](super::limits::NICE) levels nicer than the server and in the lowest
/// best-effort IO priority. Each is best effort: a refusal does not stop the command.
unsafe fn below_the_server() {
    // SAFETY: open, write, close, setpriority and ioprio_set on constants.
    unsafe {
        let adj = libc::open(
            c"/proc/self/oom_score_adj".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        );
        if adj >= 0 {
            let value = super::limits::OOM_SCORE_ADJ;
            libc::write(adj, value.as_ptr().cast(), value.len());
            libc::close(adj);
        }
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, (nice + super::limits::NICE).min(19));
        // IOPRIO_WHO_PROCESS, this process.
        libc::syscall(libc::SYS_ioprio_set, 1, 0, super::limits::IOPRIO);
    }
}

/// A server that is not root gives its just executed child `oom_score_adj` 1000 from
/// outside: the child could not before it executed (the server is not dumpable, so
/// until the exec its `/proc` files are root's). The kernel wakes this thread as the
/// child drops the shared memory, a moment before the exec makes it dumpable: the
/// write is tried again until then, within [`OOM_WRITE_BOUND`]. The child has not
/// been reaped, so its pid is its own; what it forked before this write keeps the
/// score it had (a shell forks after it read its command, well after this write).
fn oom_first(pid: libc::c_long, pidfd: BorrowedFd<'_>) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return;
    }
    let path = format!("/proc/{pid}/oom_score_adj");
    let start = std::time::Instant::now();
    loop {
        match std::fs::write(&path, super::limits::OOM_SCORE_ADJ) {
            Err(e)
                if e.kind() == io::ErrorKind::PermissionDenied
                    && start.elapsed() < OOM_WRITE_BOUND
                    && !exited(pidfd) =>
            {
                if start.elapsed() < std::time::Duration::from_millis(1) {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, path, "cannot raise a command's oom_score_adj");
                return;
            }
            Ok(()) => return,
        }
    }
}

/// Whether the process of `pidfd` exited (its pidfd is readable): a zombie's `/proc`
/// files are root's.
fn exited(pidfd: BorrowedFd<'_>) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, no wait.
    unsafe { libc::poll(&raw mut poll, 1, 0) != 0 }
}

/// How long [`oom_first`] tries, at most: the exec's last steps take microseconds, but
/// a busy machine may leave the child waiting for a processor in between.
const OOM_WRITE_BOUND: std::time::Duration = std::time::Duration::from_millis(200);

/// The errno of a child that could not start its program: from the report pipe
/// (which closes on exec), or else from the memory it shared with this thread, which
/// waited until it executed the program or exited.
fn start_error(report: Option<(OwnedFd, OwnedFd)>, failed: AtomicI32) -> Option<i32> {
    match report {
        Some((read, write)) => {
            drop(write);
            let mut errno = [0u8; 4];
            let reported = std::fs::File::from(read).read_exact(&mut errno).is_ok();
            reported.then(|| i32::from_ne_bytes(errno))
        }
        None => Some(failed.into_inner()).filter(|&errno| errno != 0),
    }
}

/// In the child, before it takes a uid of its own: the bounding set emptied (a server
/// that is not root has nothing there to drop), with root's rights on `execve` locked
/// off.
///
/// # Safety
/// Only between the clone and `execve`: plain system calls.
unsafe fn drop_bounding_set() {
    /// `SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
    /// SECBIT_NO_SETUID_FIXUP_LOCKED`: uid 0 gains nothing on `execve`.
    const NOROOT: libc::c_ulong = 0x0f;
    // SAFETY: prctl on plain values.
    unsafe {
        // EINVAL past the last capability; EPERM without CAP_SETPCAP (not root).
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                break;
            }
        }
        libc::prctl(libc::PR_SET_SECUREBITS, NOROOT, 0, 0, 0);
    }
}

/// In the child, once its uid is taken: the ambient, permitted, effective and
/// inheritable sets emptied. False when emptying them failed.
///
/// # Safety
/// Only between the clone and `execve`: plain system calls on local memory.
unsafe fn drop_capabilities() -> bool {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl and capset on values on this stack.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let header = Header {
            // _LINUX_CAPABILITY_VERSION_3: two Data, for capabilities 0-31 and 32-63.
            version: 0x2008_0522,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &raw const header, none.as_ptr()) == 0
    }
}

/// Every signal blocked on the calling thread, until dropped: across a clone, so that
/// no handler of the server's runs in the child before it resets them.
struct Masked(libc::sigset_t);

impl Masked {
    fn all() -> Masked {
        // SAFETY: a full signal set, and the calling thread's mask saved to restore.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
            Masked(before)
        }
    }
}

impl Drop for Masked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `all`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// In the child: every handler of the server's back to the default (none may run in
/// the child, which may share the server's memory), then every signal unblocked. The
/// signals the server ignores stay ignored, but SIGPIPE.
///
/// # Safety
/// Only between the clone and `execve`: it changes the process's dispositions.
unsafe fn reset_signals() {
    // SAFETY: sigaction, signal and pthread_sigmask are async-signal-safe, on local
    // memory.
    unsafe {
        for signal in 1..=64 {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                && action.sa_sigaction != libc::SIG_DFL
                && (action.sa_sigaction != libc::SIG_IGN || signal == libc::SIGPIPE)
            {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// A running shell, watched through its pidfd on the runtime; its pipes are read
/// through tokio.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    others: clones::Mark<'static>,
}

impl Child {
    /// Registers a started child with the current runtime.
    pub(super) fn watch(started: Started) -> io::Result<Child> {
        // SAFETY: an OwnedFd's descriptor stays open and the same while it is owned.
        let pidfd = unsafe {
            AsyncFd::register_with_interest(started.pidfd, tokio::io::Interest::READABLE)
        }
        .map_err(io::Error::from)?;
        Ok(Child {
            pid: started.pid,
            pidfd,
            status: None,
            // Read ends of pipes made non-blocking by `output_pipe`.
            stdout: Some(pipe::Receiver::from_owned_fd_unchecked(started.stdout)?),
            stderr: Some(pipe::Receiver::from_owned_fd_unchecked(started.stderr)?),
            others: started.others,
        })
    }

    /// Resolves once no clone of the server's for another call can still hold a copy
    /// of its pipes: while one does, its pipes stay open after every process of its own
    /// has ended.
    pub fn others_let_go(&self) -> impl Future<Output = ()> + Send + 'static {
        self.others.passed()
    }

    /// Its process id, until it was reaped.
    pub fn id(&self) -> Option<u32> {
        self.status.is_none().then_some(self.pid)
    }

    /// Waits for it to exit without reaping it: its pid stays taken (a zombie) until
    /// [`Child::wait`], so that whoever watches the pid (`tail --pid`) sees it end only
    /// then. Cancel-safe.
    pub async fn exited(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
            let mut ready = self.pidfd.readable().await?;
            let fd = self.pidfd.get_ref().as_raw_fd();
            if let Some(status) = reap(fd, libc::WNOHANG | libc::WNOWAIT)? {
                return Ok(status);
            }
            ready.clear_ready();
        }
    }

    /// Waits for it to exit and reaps it. Cancel-safe.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
            let mut ready = self.pidfd.readable().await?;
            if let Some(status) = reap(self.pidfd.get_ref().as_raw_fd(), libc::WNOHANG)? {
                self.status = Some(status);
                return Ok(status);
            }
            ready.clear_ready();
        }
    }
}

impl Drop for Child {
    /// A child dropped unreaped (its call was dropped) is reaped once it exits, by a
    /// thread of its own, so that it does not stay a zombie.
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let fd = self.pidfd.get_ref().as_raw_fd();
        if matches!(reap(fd, libc::WNOHANG), Ok(Some(_))) {
            return;
        }
        // SAFETY: dup of a descriptor this value owns.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup >= 0 {
            // SAFETY: a new descriptor from fcntl.
            let pidfd = unsafe { OwnedFd::from_raw_fd(dup) };
            let _ = std::thread::Builder::new()
                .name("reaper".to_owned())
                .spawn(move || reap(pidfd.as_raw_fd(), 0));
        }
    }
}

/// `waitid` on a pidfd: the exit status once the child exited, `None` while it runs
/// (with `WNOHANG`).
fn reap(pidfd: RawFd, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
    loop {
        // SAFETY: a zeroed siginfo_t is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on a pidfd this process owns, into a valid siginfo_t.
        let r = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd as libc::id_t,
                &mut info,
                libc::WEXITED | flags,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: waitid filled the siginfo_t of a child event.
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => status | 0x80,
            _ => status,
        };
        return Ok(Some(ExitStatus::from_raw(raw)));
    }
}

/// The program's path: as given when it has a slash, else the first executable of
/// that name on `PATH`.
fn resolve(program: &OsStr, path: Option<&OsStr>, cwd: Option<&Path>) -> io::Result<CString> {
    let nul = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))
    };
    if program.as_bytes().contains(&b'/') {
        return nul(Path::new(program));
    }
    let path = path.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(path) {
        let dir = match cwd {
            Some(cwd) if dir.is_relative() => cwd.join(dir),
            _ => dir,
        };
        let candidate = dir.join(program);
        let executable = CString::new(candidate.as_os_str().as_bytes())
            // SAFETY: access on a NUL-terminated path.
            .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0);
        if executable && candidate.is_file() {
            return nul(&candidate);
        }
    }
    Err(io::Error::from_raw_os_error(libc::ENOENT))
}

/// A pipe for one of the child's output streams: its read end non-blocking, for the
/// runtime; its write end blocking, as programs expect of their stdout and stderr.
fn output_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 into a two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors from pipe2.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor this function owns; status flags only.
    if unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((read, write))
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 into a two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors from pipe2.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The server's environment as `NAME=value` strings, with each name: read once, on
/// first use. The server sets its variables at start-up, before any thread starts,
/// and never after.
fn inherited() -> &'static [(OsString, CString)] {
    static INHERITED: OnceLock<Vec<(OsString, CString)>> = OnceLock::new();
    INHERITED.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(name, value)| Some((name.clone(), env_entry(&name, &value)?)))
            .collect()
    })
}

/// `NAME=value`, as `execve` takes it; `None` with a NUL byte in either.
fn env_entry(name: &OsStr, value: &OsStr) -> Option<CString> {
    let mut entry = name.to_owned();
    entry.push("=");
    entry.push(value);
    CString::new(entry.into_vec()).ok()
}

/// `/dev/null` for reading, opened on first use and kept: every call's stdin.
fn dev_null() -> io::Result<RawFd> {
    static NULL: OnceLock<OwnedFd> = OnceLock::new();
    if let Some(null) = NULL.get() {
        return Ok(null.as_raw_fd());
    }
    let opened = open_cloexec(c"/dev/null", libc::O_RDONLY)?;
    Ok(NULL.get_or_init(|| opened).as_raw_fd())
}

/// Opens `path` with `O_CLOEXEC`.
pub(super) fn open_cloexec(path: &std::ffi::CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: open on a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor from open.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The stack a `CLONE_VM` child runs on, with a guard page below it.
#[cfg(target_arch = "x86_64")]
struct Stack {
    mapping: *mut libc::c_void,
    base: *mut libc::c_void,
    size: usize,
}

// SAFETY: a stack is a mapping of its own, used by one child at a time.
#[cfg(target_arch = "x86_64")]
unsafe impl Send for Stack {}

/// Stacks whose children executed their program or exited, for the next spawns.
#[cfg(target_arch = "x86_64")]
static STACKS: std::sync::Mutex<Vec<Stack>> = std::sync::Mutex::new(Vec::new());

#[cfg(target_arch = "x86_64")]
impl Stack {
    /// Enough for the child's few calls into libc.
    const SIZE: usize = 64 * 1024;
    const GUARD: usize = 4096;
    /// Stacks kept for the next spawns, at most.
    const KEPT: usize = 4;

    /// A kept stack, or a new one.
    fn take() -> io::Result<Stack> {
        let kept = STACKS.lock().unwrap_or_else(|e| e.into_inner()).pop();
        kept.map_or_else(Stack::new, Ok)
    }

    /// Keeps the stack for the next spawn, once its child no longer runs on it.
    fn keep(self) {
        let mut kept = STACKS.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < Stack::KEPT {
            kept.push(self);
        }
    }

    fn new() -> io::Result<Stack> {
        let length = Stack::SIZE + Stack::GUARD;
        // SAFETY: a new private anonymous mapping, unmapped on drop.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack {
            mapping,
            // SAFETY: within the mapping.
            base: unsafe { mapping.cast::<u8>().add(Stack::GUARD).cast() },
            size: Stack::SIZE,
        };
        // SAFETY: the mapping's first page, made inaccessible.
        if unsafe { libc::mprotect(mapping, Stack::GUARD, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }
}

#[cfg(target_arch = "x86_64")]
impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer in use.
        unsafe { libc::munmap(self.mapping, Stack::SIZE + Stack::GUARD) };
    }
}

/// `clone` as a fork, returning a pidfd through `pidfd`: where `clone3` is refused.
fn clone_pidfd(pidfd: &mut libc::c_int) -> io::Result<libc::c_long> {
    // SAFETY: clone without CLONE_VM, as fork; the pidfd comes back through the
    // parent_tid argument, the third on every architecture.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PIDFD | libc::SIGCHLD) as libc::c_ulong,
            0 as libc::c_ulong,
            std::ptr::from_mut(pidfd),
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// The `CLONE_VM` child's entry, on its own stack.
#[cfg(target_arch = "x86_64")]
extern "C" fn vm_child(prepared: *mut libc::c_void) -> ! {
    // SAFETY: `clone3` passes the `Prepared` its caller holds while the child runs.
    unsafe { (*prepared.cast_const().cast::<Prepared>()).child(None) }
}

/// `clone3` whose child starts at `entry(arg)` on the stack `args` gives; returns the
/// child's pid, or minus the error number. The parent returns as from a system call.
///
/// # Safety
/// `args` must be valid and give a stack; `entry` must never return.
#[cfg(target_arch = "x86_64")]
unsafe fn clone3_on_stack(
    args: &CloneArgs,
    entry: extern "C" fn(*mut libc::c_void) -> !,
    arg: *mut libc::c_void,
) -> libc::c_long {
    let result: libc::c_long;
    // SAFETY: the caller's contract; the child never comes back here, and the parent
    // sees the system call's usual clobbers.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            // The child, on its new stack: no frame to return to.
            "xor ebp, ebp",
            "mov rdi, r13",
            "call r12",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => result,
            in("rdi") std::ptr::from_ref(args),
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") entry,
            in("r13") arg,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Starts `true` on a thread of its own and stops its child with SIGSTOP (which no
    /// mask holds off) before it executes the program: a clone that a busy machine
    /// leaves waiting for a processor. Its pid, and the thread that waits for its start.
    fn a_clone_stopped_before_its_exec() -> (i32, std::thread::JoinHandle<Started>) {
        let me = std::env::current_exe().unwrap();
        for _ in 0..50 {
            let prepared = Command::new("true").prepare().unwrap();
            let pid = prepared.pid();
            let start = std::thread::spawn(move || Start::new(prepared, None).run().unwrap());
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut child = 0;
            while child == 0 && Instant::now() < deadline {
                child = pid.load(Ordering::Relaxed);
            }
            assert!(child > 0, "the clone never happened");
            // SAFETY: a signal to the child just cloned, not yet reaped (its start
            // is not over).
            unsafe { libc::kill(child, libc::SIGSTOP) };
            // Where it stopped, not where it was when signalled: in the middle of its
            // execve, it stops only once that is done; `true` may have exited first.
            let exe = stopped(child).then(|| std::fs::read_link(format!("/proc/{child}/exe")));
            if exe.is_some_and(|exe| exe.is_ok_and(|exe| exe == me)) {
                return (child, start);
            }
            // It executed `true` first: it and its start end by themselves.
            // SAFETY: as above.
            unsafe { libc::kill(child, libc::SIGCONT) };
            start.join().unwrap().give_up();
        }
        panic!("no clone was caught before its exec in 50 tries");
    }

    /// Whether process `pid` stopped (true) or exited (false), within a few seconds.
    fn stopped(pid: i32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            // The state follows the command's closing parenthesis.
            match stat.rsplit_once(") ").map(|(_, rest)| rest.as_bytes()[0]) {
                Some(b'T') => return true,
                Some(b'Z' | b'X') => return false,
                _ => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        panic!("process {pid} neither stopped nor exited");
    }

    /// Another call's clone, made while a call's pipes were open in the server, holds
    /// them after the call's shell has exited, until it executes its program: the
    /// call's [`Child::others_let_go`] resolves only then, and the pipe ends then.
    #[tokio::test]
    async fn a_call_s_pipes_held_by_another_calls_clone_are_waited_for() {
        let prepared = Command::new("true").prepare().unwrap();
        let (stranger, stranger_start) = a_clone_stopped_before_its_exec();
        let started = Start::new(prepared, None).run().unwrap();
        let mut child = Child::watch(started).unwrap();
        assert!(child.wait().await.unwrap().success());
        let stdout = child.stdout.take().unwrap();
        let let_go = child.others_let_go();
        tokio::pin!(let_go);
        let mut buf = [0u8; 16];
        tokio::select! {
            () = &mut let_go => panic!("resolved while the stranger holds the pipe"),
            () = tokio::time::sleep(Duration::from_millis(300)) => {}
        }
        // SAFETY: read into a buffer from the pipe's non-blocking descriptor.
        let n = unsafe { libc::read(stdout.as_raw_fd(), buf.as_mut_ptr().cast(), 16) };
        assert_eq!(
            (n, io::Error::last_os_error().kind()),
            (-1, io::ErrorKind::WouldBlock),
            "the stranger holds the shell's stdout open"
        );

        // SAFETY: a signal to the stopped child, not yet reaped.
        unsafe { libc::kill(stranger, libc::SIGCONT) };
        tokio::time::timeout(Duration::from_secs(10), let_go)
            .await
            .expect("resolved once the stranger executed its program");
        let ended = (0..500).any(|_| {
            // SAFETY: as above.
            let n = unsafe { libc::read(stdout.as_raw_fd(), buf.as_mut_ptr().cast(), 16) };
            n == 0 || {
                std::thread::sleep(Duration::from_millis(10));
                false
            }
        });
        assert!(ended, "the pipe ended with the stranger's exec");
        tokio::task::spawn_blocking(move || stranger_start.join().unwrap().give_up())
            .await
            .unwrap();
    }
}
