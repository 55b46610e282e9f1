//! The opt-in kernel sandbox: Landlock, through the `landlock` crate.
//!
//! With `--sandbox`, every command runs under a Landlock ruleset prepared once at
//! start-up and applied in the child between fork and exec (one `prctl` and one
//! `landlock_restrict_self`, both async-signal-safe). Reading and executing stay
//! allowed everywhere. Writing (create, modify, truncate, remove, rename, link, make
//! directories, FIFOs and sockets, device ioctls) is allowed only under the workdir,
//! the server's private temp dir (`<state-dir>/tmp`, the commands' `TMPDIR`),
//! `/dev/shm`, `/dev/pts`, the usual character devices and the `--writable` paths.
//! The state dir itself is read-only to commands, and no command can make a device
//! node anywhere. `--network deny` refuses TCP connect and bind (ABI 4). With ABI
//! 6, signals and abstract unix sockets are scoped: a command cannot signal or connect
//! to anything outside its own domain, the server included.
//!
//! The kernel's ABI decides what can be enforced. Strict mode (`--sandbox`) refuses to
//! start when the kernel lacks what is asked; `--sandbox=best-effort` warns once and
//! applies what the kernel has. It is never silently off.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, PathBeneath,
    PathFd, RestrictSelf, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

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

/// `--network`: TCP allowed or denied to commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Network {
    #[default]
    Allow,
    Deny,
}

/// The writes that the sandbox confines. Reads, execution and unix socket connects
/// are not handled, so they stay allowed everywhere.
fn confined_writes(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_write(abi) & !AccessFs::ResolveUnix
}

/// Character devices every command may write to.
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
const CACHES: &[(&str, &str)] = &[("npm_config_cache", "npm")];

/// The private temp dir's name in the state dir.
pub const TEMP_DIR: &str = "tmp";

/// Directories every command may write under, besides the workdir and the private
/// temp dir. The shared `/tmp` is not one of them (`--writable /tmp` makes it one).
const SHARED_DIRS: &[&str] = &["/dev/shm", "/dev/pts"];

/// The ABI that strict mode needs for confining writes: truncate is handled from
/// ABI 3, and renames or links across directories (refer) from ABI 2.
const WRITES_ABI: ABI = ABI::V3;

/// The ABI that `--network deny` needs.
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
    #[error("--network deny needs --sandbox")]
    NetworkWithoutSandbox,
    #[error("--writable {0}: {1}")]
    Writable(PathBuf, io::Error),
    #[error(
        "--sandbox: the state dir {state} is inside {root}, where commands may write: they could rewrite the audit log and overflow files; choose a state dir outside it"
    )]
    StateDirWritable { state: PathBuf, root: PathBuf },
    #[error("--sandbox: cannot make the private temp dir {0}: {1}")]
    Temp(PathBuf, io::Error),
    #[error("cannot prepare the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
}

/// What the sandbox asks for.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub mode: Mode,
    pub network: Network,
    pub workdir: &'a Path,
    /// Read-only to commands; it must not lie under any writable path.
    pub state_dir: &'a Path,
    /// The server's private temp dir: writable, and commands' `TMPDIR`.
    pub temp: &'a Path,
    pub writable: &'a [PathBuf],
}

/// The prepared ruleset, applied to each command's shell.
#[derive(Debug)]
pub struct Sandbox {
    ruleset: RulesetCreated,
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
    pub deny_network: bool,
    pub scoped: bool,
    /// What best-effort mode could not enforce, to warn about once.
    pub warnings: Vec<String>,
}

/// Decides, from the mode, the network setting and the kernel's Landlock ABI (or why
/// there is none), what to enforce: `Ok(None)` when the sandbox is off, an error when
/// strict mode cannot have what it asks for.
pub fn plan(
    mode: Mode,
    network: Network,
    kernel: Result<ABI, &'static str>,
) -> Result<Option<Plan>, Error> {
    if mode == Mode::Off {
        return match network {
            Network::Deny => Err(Error::NetworkWithoutSandbox),
            Network::Allow => Ok(None),
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
                deny_network: false,
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
    let deny_network = network == Network::Deny && need("--network deny", NETWORK_ABI)?;
    let scoped = have >= SCOPE_ABI as i32;
    if !scoped {
        warnings.push(format!(
            "this kernel has Landlock ABI {have}: signals and abstract unix sockets are not scoped (ABI {})",
            SCOPE_ABI as i32
        ));
    }
    Ok(Some(Plan {
        abi: Some(abi),
        deny_network,
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
            deny_network,
            scoped,
            warnings,
        } = plan
        else {
            return Ok((None, plan.warnings));
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(confined_writes(abi))?;
        if deny_network {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        if scoped {
            ruleset = ruleset.scope(Scope::Signal | Scope::AbstractUnixSocket)?;
        }
        let ruleset = add_rules(ruleset.create()?, abi, request)?;
        let summary = format!(
            "Landlock ABI {}: writes confined (state dir read-only, no device nodes); network {}; signals and abstract unix sockets {}",
            abi as i32,
            if deny_network {
                "denied (TCP)"
            } else {
                "allowed"
            },
            if scoped { "scoped" } else { "not scoped" },
        );
        let temp = request.temp.display();
        let env = std::iter::once(("TMPDIR", temp.to_string()))
            .chain(
                CACHES
                    .iter()
                    .map(|(name, dir)| (*name, format!("{temp}/{dir}"))),
            )
            .filter(|(name, _)| std::env::var_os(name).is_none())
            .collect();
        Ok((
            Some(Sandbox {
                ruleset,
                summary,
                env,
            }),
            warnings,
        ))
    }

    /// A handle on the ruleset for one child (a duplicated descriptor, closed on exec).
    pub fn for_child(&self) -> io::Result<RulesetCreated> {
        self.ruleset.try_clone()
    }
}

/// The places commands may write: the workdir, the private temp dir, the shared
/// device directories and the `--writable` paths (directories without the right to
/// make device nodes), and the usual character devices.
fn add_rules(
    mut created: RulesetCreated,
    abi: ABI,
    request: &Request<'_>,
) -> Result<RulesetCreated, Error> {
    let writes = confined_writes(abi);
    let in_dirs = writes & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let in_files = writes & AccessFs::from_file(abi);
    let mut dirs: Vec<&Path> = vec![request.workdir, request.temp];
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

/// The path with symlinks resolved where it exists; as given otherwise.
fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// Applies `ruleset` to the calling process: meant for the child between fork and
/// exec, where it makes only async-signal-safe calls (`prctl`, the Landlock syscall,
/// `close`) and allocates nothing.
pub fn enter(ruleset: RulesetCreated) -> io::Result<()> {
    match ruleset.restrict_self() {
        Ok(_) => Ok(()),
        Err(_) => Err(io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_refuses_what_the_kernel_lacks_and_names_its_abi() {
        let refused =
            |kernel, network| plan(Mode::Strict, network, kernel).unwrap_err().to_string();
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
        let full = plan(Mode::Strict, Network::Deny, Ok(ABI::V7))
            .unwrap()
            .unwrap();
        assert_eq!(
            (full.abi, full.deny_network, full.scoped),
            (Some(ABI::V7), true, true)
        );
        assert!(full.warnings.is_empty());
    }

    #[test]
    fn best_effort_warns_and_applies_what_there_is() {
        let none = plan(
            Mode::BestEffort,
            Network::Deny,
            Err("it is built in but not enabled"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(none.abi, None);
        assert_eq!(none.warnings.len(), 1);
        let old = plan(Mode::BestEffort, Network::Deny, Ok(ABI::V1))
            .unwrap()
            .unwrap();
        assert_eq!(
            (old.abi, old.deny_network, old.scoped),
            (Some(ABI::V1), false, false)
        );
        assert_eq!(old.warnings.len(), 3, "{:?}", old.warnings);
    }

    #[test]
    fn off_is_off_and_network_deny_needs_the_sandbox() {
        assert_eq!(plan(Mode::Off, Network::Allow, Ok(ABI::V7)).unwrap(), None);
        assert!(matches!(
            plan(Mode::Off, Network::Deny, Ok(ABI::V7)),
            Err(Error::NetworkWithoutSandbox)
        ));
    }
}
