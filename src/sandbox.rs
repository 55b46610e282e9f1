//! The opt-in kernel sandbox: Landlock, through the `landlock` crate.
//!
//! With `--sandbox`, every command runs under a Landlock ruleset prepared once at
//! start-up. Each command's shell enters it itself, between its clone and its
//! `execve` (one `prctl` and one `landlock_restrict_self`), so the shell is under it
//! from its first instruction, in a Landlock domain of its own
//! ([`Sandbox::spawn_confined`]).
//!
//! - **Reads** (reading files, listing directories, executing) are allowed only under
//!   the system's directories ([`READ_DIRS`]), the workdir, the state dir, the private
//!   temp dir and the `--readable` and `--writable` paths: another user's workspace,
//!   the application's files (`/app/.env`) and the shared `/tmp` are out of reach.
//! - **Writes** (create, modify, truncate, remove, rename, link, make directories,
//!   FIFOs and sockets, device ioctls) are allowed only under the workdir, the server's
//!   private temp dir (`<state-dir>/tmp`, the commands' `TMPDIR`), `/dev/pts`, the
//!   usual character devices and the `--writable` paths. The state dir itself is
//!   read-only to commands, and no command can make a device node anywhere.
//! - **TCP** (ABI 4): `--network deny` refuses connect and bind; `--network 443,80`
//!   allows connect to those ports only, and bind to none.
//! - With ABI 6, **signals and abstract unix sockets** are scoped: a command cannot
//!   signal or connect to anything outside its own domain, the server included.
//!
//! The kernel's ABI decides what can be enforced. Strict mode (`--sandbox`) refuses to
//! start when the kernel lacks what is asked; `--sandbox=best-effort` warns once and
//! applies what the kernel has. It is never silently off.

mod seccomp;

use std::fmt;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, NetPort,
    PathBeneath, PathFd, RestrictSelf, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    Scope,
};

use crate::worker::Worker;

pub use seccomp::{UnixSockets, only_spawns_here};

/// `--sandbox`: off, strict, or best effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Off,
    /// Refuse to start when the kernel cannot enforce everything asked for.
    Strict,
    /// Warn once and enforce what the kernel can.
    BestEffort,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "" | "on" | "1" | "true" | "strict" => Ok(Mode::Strict),
            "best-effort" => Ok(Mode::BestEffort),
            "off" | "0" | "false" => Ok(Mode::Off),
            other => Err(format!(
                "unknown sandbox mode {other:?} (expected on, best-effort or off)"
            )),
        }
    }
}

/// `--network`: TCP for commands: allowed, denied, or connect to some ports only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    #[default]
    Allow,
    Deny,
    /// Connect to these ports only; bind to none.
    Ports(Vec<u16>),
}

impl std::str::FromStr for Network {
    type Err = String;

    fn from_str(s: &str) -> Result<Network, String> {
        match s {
            "allow" => return Ok(Network::Allow),
            "deny" => return Ok(Network::Deny),
            _ => {}
        }
        let ports = s
            .split(',')
            .map(|port| match port.trim().parse::<u16>() {
                Ok(port) if port > 0 => Ok(port),
                _ => Err(format!(
                    "{port:?} is not a port (expected allow, deny, or ports such as 443,80)"
                )),
            })
            .collect::<Result<Vec<u16>, String>>()?;
        Ok(Network::Ports(ports))
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Network::Allow => f.write_str("allowed"),
            Network::Deny => f.write_str("denied (TCP)"),
            Network::Ports(ports) => {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                write!(f, "TCP connect to ports {} only, no bind", ports.join(","))
            }
        }
    }
}

/// Directories every command may read and execute from: the system's toolchain.
/// `/dev` and `/run` are not among them: `/dev/shm` holds other programs' shared
/// memory, and `/run` the secrets a container is given (`/run/secrets`) and daemons'
/// sockets. The devices a program needs are granted one by one ([`DEVICES`]), and of
/// `/run` only what name resolution reads ([`RESOLVER_DIRS`]).
pub const READ_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
];

/// What name resolution reads under `/run`, where present: systemd-resolved's
/// `resolv.conf` (which `/etc/resolv.conf` links to on such systems).
const RESOLVER_DIRS: &[&str] = &["/run/systemd/resolve"];

/// The writes that the sandbox confines. Reads, execution and unix socket connects
/// are not handled, so they stay allowed everywhere.
fn confined_writes(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_write(abi) & !AccessFs::ResolveUnix
}

/// Character devices every command may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
];

/// Caches that tools keep under the home directory, moved into the private temp dir
/// for sandboxed commands: npm cannot install without writing its cache (and its
/// logs) there.
const CACHES: &[(&str, &str)] = &[("npm_config_cache", "npm"), ("PIP_CACHE_DIR", "pip")];

/// The private temp dir's name in the state dir.
pub const TEMP_DIR: &str = "tmp";

/// The commands' home directory's name in the state dir.
pub const HOME_DIR: &str = "home";

/// Toolchains installed in the server's home, and the variable that names each: set
/// for sandboxed commands when the directory is `--readable`, since their `HOME` is
/// not the server's.
const TOOLCHAINS: &[(&str, &str)] = &[
    (".cargo", "CARGO_HOME"),
    (".rustup", "RUSTUP_HOME"),
    (".pyenv", "PYENV_ROOT"),
    (".nvm", "NVM_DIR"),
];

/// Directories every command may write under, besides the workdir and the private
/// temp dir. Neither the shared `/tmp` nor `/dev/shm` is one of them (`--writable`
/// makes them so): two servers' commands could meet there.
const SHARED_DIRS: &[&str] = &["/dev/pts"];

/// The ABI that strict mode needs for confining writes: truncate is handled from
/// ABI 3, and renames or links across directories (refer) from ABI 2.
const WRITES_ABI: ABI = ABI::V3;

/// The ABI that `--network deny` or ports need.
const NETWORK_ABI: ABI = ABI::V4;

/// The ABI from which signals and abstract unix sockets are scoped.
const SCOPE_ABI: ABI = ABI::V6;

/// Why the sandbox cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "--sandbox: this kernel has no Landlock ({0}); use --sandbox=best-effort to run unsandboxed with a warning"
    )]
    NoLandlock(&'static str),
    #[error(
        "--sandbox: {what} needs Landlock ABI {needed}, and this kernel has ABI {have}; use --sandbox=best-effort to apply what it has"
    )]
    OldKernel {
        what: &'static str,
        needed: i32,
        have: i32,
    },
    #[error("--network {0} needs --sandbox")]
    NetworkWithoutSandbox(String),
    #[error("--readable {0}: {1}")]
    Readable(PathBuf, io::Error),
    #[error("--writable {0}: {1}")]
    Writable(PathBuf, io::Error),
    #[error(
        "--sandbox: the state dir {state} is inside {root}, where commands may write: they could rewrite the audit log and overflow files; choose a state dir outside it"
    )]
    StateDirWritable { state: PathBuf, root: PathBuf },
    #[error("--sandbox: cannot make the private directory {0}: {1}")]
    Temp(PathBuf, io::Error),
    #[error("cannot prepare the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("--sandbox: {0}")]
    Seccomp(#[from] seccomp::Error),
}

/// What the sandbox asks for.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub mode: Mode,
    pub network: &'a Network,
    pub unix_sockets: UnixSockets,
    pub workdir: &'a Path,
    /// Read-only to commands; it must not lie under any writable path.
    pub state_dir: &'a Path,
    /// The server's private temp dir: writable, and commands' `TMPDIR`.
    pub temp: &'a Path,
    /// The commands' home directory: writable, private to this server's state dir.
    pub home: &'a Path,
    pub writable: &'a [PathBuf],
    pub readable: &'a [PathBuf],
}

/// The prepared ruleset, applied to each command's shell.
#[derive(Debug)]
pub struct Sandbox {
    /// The ruleset's descriptor, which each shell enters; `None` where the kernel
    /// enforces none of it (best effort).
    ruleset: Option<OwnedFd>,
    /// What Landlock does not govern (unix sockets, other ways to a port, io_uring).
    filter: seccomp::Filter,
    /// Under `--network deny` on a root server: the network namespace every command
    /// enters, with no interface but a loopback that is down.
    network: Option<BorrowedFd<'static>>,
    /// A thread carrying the filter, which the spawning threads of calls that have no
    /// spawning thread of their own (a cgroup slot) start from.
    spawner: OnceLock<Worker>,
    /// What is enforced, for the start-up log.
    pub summary: String,
    /// Variables set for sandboxed commands: tool caches that would live under the
    /// home directory go under /tmp instead (only where the server's own environment
    /// does not set them).
    pub env: Vec<(&'static str, String)>,
}

impl fmt::Display for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}

/// The kernel's Landlock ABI, without restricting anything.
pub fn kernel_abi() -> Result<ABI, &'static str> {
    let status = RestrictSelf::default()
        .no_new_privs(false)
        .apply()
        .map(|status| status.landlock);
    match status {
        Ok(LandlockStatus::Available { effective_abi, .. }) => Ok(effective_abi),
        Ok(LandlockStatus::NotEnabled) => Err("it is built in but not enabled"),
        Ok(LandlockStatus::NotImplemented) | Err(_) => Err("it is not built in"),
    }
}

/// What the kernel lets the sandbox enforce, decided before any ruleset is built.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// The ABI to build the ruleset for; `None`: no Landlock, commands run unsandboxed
    /// (best effort only).
    pub abi: Option<ABI>,
    /// TCP is handled (denied, or allowed to some ports).
    pub confine_tcp: bool,
    pub scoped: bool,
    /// What best-effort mode could not enforce, to warn about once.
    pub warnings: Vec<String>,
}

/// Decides, from the mode, the network setting and the kernel's Landlock ABI (or why
/// there is none), what to enforce: `Ok(None)` when the sandbox is off, an error when
/// strict mode cannot have what it asks for.
pub fn plan(
    mode: Mode,
    network: &Network,
    kernel: Result<ABI, &'static str>,
) -> Result<Option<Plan>, Error> {
    if mode == Mode::Off {
        return match network {
            Network::Allow => Ok(None),
            Network::Deny => Err(Error::NetworkWithoutSandbox("deny".to_owned())),
            Network::Ports(_) => Err(Error::NetworkWithoutSandbox("PORTS".to_owned())),
        };
    }
    let strict = mode == Mode::Strict;
    let mut warnings = Vec::new();
    let abi = match kernel {
        Ok(abi) => abi,
        Err(why) if strict => return Err(Error::NoLandlock(why)),
        Err(why) => {
            warnings.push(format!(
                "this kernel has no Landlock ({why}): commands run unsandboxed"
            ));
            return Ok(Some(Plan {
                abi: None,
                confine_tcp: false,
                scoped: false,
                warnings,
            }));
        }
    };
    let have = abi as i32;
    let mut need = |what, needed| require(strict, have, what, needed, &mut warnings);
    need(
        "confining every kind of write (truncate, rename)",
        WRITES_ABI,
    )?;
    let confine_tcp = match network {
        Network::Allow => false,
        Network::Deny => need("--network deny", NETWORK_ABI)?,
        Network::Ports(_) => need("--network PORTS", NETWORK_ABI)?,
    };
    let scoped = have >= SCOPE_ABI as i32;
    if !scoped {
        warnings.push(format!(
            "this kernel has Landlock ABI {have}: signals and abstract unix sockets are not scoped (ABI {})",
            SCOPE_ABI as i32
        ));
    }
    Ok(Some(Plan {
        abi: Some(abi),
        confine_tcp,
        scoped,
        warnings,
    }))
}

/// Whether the kernel's ABI `have` enforces `what`, which needs `needed`: strict mode
/// refuses when it does not, best effort warns.
fn require(
    strict: bool,
    have: i32,
    what: &'static str,
    needed: ABI,
    warnings: &mut Vec<String>,
) -> Result<bool, Error> {
    if have >= needed as i32 {
        return Ok(true);
    }
    if strict {
        return Err(Error::OldKernel {
            what,
            needed: needed as i32,
            have,
        });
    }
    warnings.push(format!(
        "{what} needs Landlock ABI {}, and this kernel has ABI {have}: not enforced",
        needed as i32
    ));
    Ok(false)
}

impl Sandbox {
    /// Prepares the ruleset once, at start-up. `Ok(None)` when the sandbox is off.
    /// In best-effort mode, what cannot be enforced is in the returned warnings.
    pub fn prepare(request: &Request<'_>) -> Result<(Option<Sandbox>, Vec<String>), Error> {
        let Some(plan) = plan(request.mode, request.network, kernel_abi())? else {
            return Ok((None, Vec::new()));
        };
        request.check_state_dir_is_not_writable()?;
        let Plan {
            abi: Some(abi),
            confine_tcp,
            scoped,
            warnings,
        } = plan
        else {
            return Ok((None, plan.warnings));
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(confined_writes(abi) | AccessFs::from_read(abi))?;
        if confine_tcp {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        if scoped {
            ruleset = ruleset.scope(Scope::Signal | Scope::AbstractUnixSocket)?;
        }
        let mut ruleset = add_rules(ruleset.create()?, abi, request)?;
        if let (true, Network::Ports(ports)) = (confine_tcp, request.network) {
            for &port in ports {
                ruleset = ruleset.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
            }
        }
        let network = if confine_tcp {
            request.network.to_string()
        } else {
            Network::Allow.to_string()
        };
        let filter = seccomp::Filter::new(request.network, request.unix_sockets)?;
        let (namespace, namespaced) = namespace_for(request.network);
        let summary = format!(
            "Landlock ABI {}: reads and writes confined (state dir read-only, no device nodes); network {network}{namespaced}; signals and abstract unix sockets {}; {filter}",
            abi as i32,
            if scoped { "scoped" } else { "not scoped" },
        );
        let env = environment(request);
        Ok((
            Some(Sandbox {
                ruleset: ruleset.into(),
                filter,
                network: namespace,
                spawner: OnceLock::new(),
                summary,
                env,
            }),
            warnings,
        ))
    }

    /// Runs `spawn` on a thread that carries the seccomp filter, and hands it the
    /// ruleset the child enters between its clone and its `execve`. The kernel binds
    /// the filter to the calling thread alone and passes it on to every process it
    /// starts: the server's own threads stay free. Each shell makes a Landlock domain of its own, so the
    /// ruleset's scope (signals, abstract unix sockets) keeps calls apart.
    ///
    /// The filter is the same for every call: the calling thread carries it when it
    /// only spawns (a cgroup slot); otherwise `spawn` runs on the sandbox's own
    /// spawning thread, which does.
    pub fn spawn_confined<T: Send>(
        &self,
        spawn: impl FnOnce(Option<BorrowedFd<'_>>, Option<BorrowedFd<'_>>) -> io::Result<T> + Send,
    ) -> io::Result<T> {
        let ruleset = self.ruleset.as_ref().map(AsFd::as_fd);
        let network = self.network;
        if !self.filter.carried_here()? {
            let spawner = match self.spawner.get() {
                Some(spawner) => spawner,
                None => {
                    let started = Worker::start("sandbox spawner", || {
                        only_spawns_here();
                        Ok(())
                    })?;
                    self.spawner.get_or_init(|| started)
                }
            };
            return spawner.run(|| {
                if !self.filter.carried_here()? {
                    return Err(io::Error::other(
                        "the sandbox's spawning thread has no filter",
                    ));
                }
                spawn(ruleset, network)
            });
        }
        spawn(ruleset, network)
    }
}

/// The network namespace commands enter under `network`, and what the start-up line
/// says of it: under `--network deny`, one of their own where the server can make it.
fn namespace_for(network: &Network) -> (Option<BorrowedFd<'static>>, &'static str) {
    if *network != Network::Deny {
        return (None, "");
    }
    match denied_network() {
        Some(fd) => (Some(fd), "; a network namespace of their own"),
        None => (
            None,
            "; the host's network namespace (a namespace of their own needs a root server): /proc/net lists the host's sockets",
        ),
    }
}

/// The network namespace of commands under `--network deny`, made once for the whole
/// server: with no interface but a loopback that is down, `ss` and `/proc/net` show
/// none of the host's sockets. Needs a root server (CAP_SYS_ADMIN).
fn denied_network() -> Option<BorrowedFd<'static>> {
    static NAMESPACE: OnceLock<Option<OwnedFd>> = OnceLock::new();
    let made = NAMESPACE.get_or_init(|| {
        // unshare moves the calling thread alone: a thread of its own, which ends.
        let made = std::thread::spawn(|| -> io::Result<OwnedFd> {
            // SAFETY: unshare of the calling thread's network namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(std::fs::File::open("/proc/thread-self/ns/net")?.into())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the thread making it panicked")));
        made.inspect_err(|e| tracing::debug!(error = %e, "no network namespace for commands"))
            .ok()
    });
    made.as_ref().map(AsFd::as_fd)
}

/// The variables set for sandboxed commands: `TMPDIR` and `HOME` in the server's
/// private directories, the tool caches that would live under the home directory in
/// the temp dir, and the toolchains of the server's own home that are `--readable`
/// (`~/.cargo` → `CARGO_HOME`), so they are still found. A variable the server's
/// environment sets is left as it is, but `HOME`.
fn environment(request: &Request<'_>) -> Vec<(&'static str, String)> {
    let temp = request.temp.display();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let toolchains = TOOLCHAINS.iter().filter_map(|(dir, name)| {
        let path = home.as_ref()?.join(dir);
        let readable = request
            .readable
            .iter()
            .any(|r| real(&path).starts_with(real(r)));
        readable.then(|| (*name, path.display().to_string()))
    });
    let caches = CACHES
        .iter()
        .map(|(name, dir)| (*name, format!("{temp}/{dir}")));
    std::iter::once(("TMPDIR", temp.to_string()))
        .chain(caches)
        .chain(toolchains)
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .chain([("HOME", request.home.display().to_string())])
        .collect()
}

/// The places commands may read (the system's directories, the state dir and the
/// `--readable` paths) and those they may also write: the workdir, the private temp
/// dir, the shared device directories and the `--writable` paths (directories without
/// the right to make device nodes), and the usual character devices.
fn add_rules(
    mut created: RulesetCreated,
    abi: ABI,
    request: &Request<'_>,
) -> Result<RulesetCreated, Error> {
    let reads = AccessFs::from_read(abi);
    let system = READ_DIRS.iter().chain(RESOLVER_DIRS).map(Path::new);
    for dir in system.chain([request.state_dir]) {
        if let Ok(fd) = PathFd::new(dir) {
            created = created.add_rule(PathBeneath::new(fd, reads))?;
        }
    }
    for path in request.readable {
        let fd = PathFd::new(path).map_err(|e| {
            Error::Readable(path.clone(), io::Error::new(io::ErrorKind::NotFound, e))
        })?;
        let access = if path.is_dir() {
            reads
        } else {
            reads & AccessFs::from_file(abi)
        };
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    let writes = confined_writes(abi) | reads;
    let in_dirs = writes & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let in_files = writes & AccessFs::from_file(abi);
    let mut dirs: Vec<&Path> = vec![request.workdir, request.temp, request.home];
    dirs.extend(SHARED_DIRS.iter().map(Path::new));
    for dir in dirs {
        if let Ok(fd) = PathFd::new(dir) {
            created = created.add_rule(PathBeneath::new(fd, in_dirs))?;
        }
    }
    for device in DEVICES {
        if let Ok(fd) = PathFd::new(device) {
            created = created.add_rule(PathBeneath::new(fd, in_files))?;
        }
    }
    for path in request.writable {
        let fd = PathFd::new(path).map_err(|e| {
            Error::Writable(path.clone(), io::Error::new(io::ErrorKind::NotFound, e))
        })?;
        let access = if path.is_dir() { in_dirs } else { in_files };
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    Ok(created)
}

impl Request<'_> {
    /// The state dir must stay out of every place commands may write: Landlock rules
    /// only add rights, so a writable parent would make the audit log writable too.
    fn check_state_dir_is_not_writable(&self) -> Result<(), Error> {
        let state = real(self.state_dir);
        let roots = [self.workdir]
            .into_iter()
            .chain(SHARED_DIRS.iter().map(Path::new))
            .chain(self.writable.iter().map(PathBuf::as_path));
        for root in roots {
            if state.starts_with(real(root)) {
                return Err(Error::StateDirWritable {
                    state: self.state_dir.to_owned(),
                    root: root.to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// The directory through which a sandboxed command could read `path`, if one could:
/// one of the system's directories, or one of `roots` (the workdir, the state dir, the
/// `--readable` and `--writable` paths). A per-user root (`{user}`) counts from the
/// directory that holds the users' directories.
pub fn readable_through<'a>(
    path: &Path,
    roots: impl IntoIterator<Item = &'a Path>,
) -> Option<PathBuf> {
    let path = real(path);
    let system = READ_DIRS.iter().chain(RESOLVER_DIRS).map(Path::new);
    system
        .chain(roots)
        .map(|root| {
            let shown = root.to_string_lossy();
            match shown.find(crate::users::USER) {
                Some(at) => Path::new(&shown[..at]).to_owned(),
                None => root.to_owned(),
            }
        })
        .find(|root| path.starts_with(real(root)))
}

/// The path with symlinks resolved where it exists; as given otherwise.
fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_refuses_what_the_kernel_lacks_and_names_its_abi() {
        let refused = |kernel, network| {
            plan(Mode::Strict, &network, kernel)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(Err("it is not built in"), Network::Allow),
            "--sandbox: this kernel has no Landlock (it is not built in); use \
             --sandbox=best-effort to run unsandboxed with a warning"
        );
        assert_eq!(
            refused(Ok(ABI::V2), Network::Allow),
            "--sandbox: confining every kind of write (truncate, rename) needs Landlock ABI 3, \
             and this kernel has ABI 2; use --sandbox=best-effort to apply what it has"
        );
        assert_eq!(
            refused(Ok(ABI::V3), Network::Deny),
            "--sandbox: --network deny needs Landlock ABI 4, and this kernel has ABI 3; use \
             --sandbox=best-effort to apply what it has"
        );
        let full = plan(Mode::Strict, &Network::Deny, Ok(ABI::V7))
            .unwrap()
            .unwrap();
        assert_eq!(
            (full.abi, full.confine_tcp, full.scoped),
            (Some(ABI::V7), true, true)
        );
        assert!(full.warnings.is_empty());
    }

    #[test]
    fn best_effort_warns_and_applies_what_there_is() {
        let none = plan(
            Mode::BestEffort,
            &Network::Deny,
            Err("it is built in but not enabled"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(none.abi, None);
        assert_eq!(none.warnings.len(), 1);
        let old = plan(Mode::BestEffort, &Network::Deny, Ok(ABI::V1))
            .unwrap()
            .unwrap();
        assert_eq!(
            (old.abi, old.confine_tcp, old.scoped),
            (Some(ABI::V1), false, false)
        );
        assert_eq!(old.warnings.len(), 3, "{:?}", old.warnings);
    }

    #[test]
    fn off_is_off_and_network_deny_needs_the_sandbox() {
        assert_eq!(plan(Mode::Off, &Network::Allow, Ok(ABI::V7)).unwrap(), None);
        assert!(matches!(
            plan(Mode::Off, &Network::Deny, Ok(ABI::V7)),
            Err(Error::NetworkWithoutSandbox(_))
        ));
    }
}

#[cfg(test)]
mod network_tests {
    use super::*;

    #[test]
    fn a_file_under_a_readable_root_is_found_and_one_outside_is_not() {
        let roots = [Path::new("/srv/ws/{user}"), Path::new("/srv/state/{user}")];
        let through = |path: &str| readable_through(Path::new(path), roots);
        assert_eq!(through("/srv/ws/token"), Some(PathBuf::from("/srv/ws/")));
        assert_eq!(
            through("/etc/forge-bash/token"),
            Some(PathBuf::from("/etc"))
        );
        assert_eq!(through("/run/secrets/token"), None);
        assert_eq!(through("/srv/secrets/token"), None);
    }

    #[test]
    fn network_takes_allow_deny_or_ports() {
        assert_eq!("allow".parse::<Network>(), Ok(Network::Allow));
        assert_eq!("deny".parse::<Network>(), Ok(Network::Deny));
        assert_eq!(
            "443,80".parse::<Network>(),
            Ok(Network::Ports(vec![443, 80]))
        );
        assert_eq!("8080".parse::<Network>(), Ok(Network::Ports(vec![8080])));
        for bad in ["", "0", "70000", "443,", "https", "443;80"] {
            assert!(bad.parse::<Network>().is_err(), "{bad:?}");
        }
        let ports = Network::Ports(vec![443, 80]);
        assert!(matches!(
            plan(Mode::Off, &ports, Ok(ABI::V7)),
            Err(Error::NetworkWithoutSandbox(_))
        ));
        let planned = plan(Mode::Strict, &ports, Ok(ABI::V7)).unwrap().unwrap();
        assert!(planned.confine_tcp);
        assert!(plan(Mode::Strict, &ports, Ok(ABI::V3)).is_err());
    }
}
