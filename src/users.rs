//! Users kept apart by the kernel: a uid of their own for each user of a root server.
//!
//! A root server that knows its users (`{user}` paths over HTTP, `--user` over stdio)
//! runs each user's commands under a uid and gid of their own, taken from
//! `--user-uids`. The mapping lives in one file (`--user-uids-file`) shared by every
//! server on the host: per-user stdio servers start concurrently, so the file is locked
//! (`flock`) while a uid is looked up or given out. A user keeps their uid for as long
//! as the file lives; no uid is ever given to two users, nor one that `/etc/passwd`
//! names; a full range refuses the new user. Without users, `--run-as` gives every
//! command one uid.

use std::fmt;
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Mode of the directories and files this module makes: root's, readable by all (the
/// mapping is no secret), written only by root.
const MAP_MODE: u32 = 0o644;

/// The placeholder of a per-user path: the user's name (`X-User-ID` over HTTP, `--user`
/// over stdio).
pub const USER: &str = "{user}";

/// A user name as a session may give it (`X-User-ID`, `--user`): 1 to 64 of
/// `A-Z a-z 0-9 . _ -`, and not `.` or `..`, so that it is always one directory name
/// of its own.
pub fn valid_user(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && name != "."
        && name != ".."
}

/// A uid and a gid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
}

impl std::str::FromStr for Ids {
    type Err = String;

    /// `UID[:GID]`; without a gid, the gid is the uid. Root (0) is refused.
    fn from_str(s: &str) -> Result<Ids, String> {
        let number = |text: &str| match text.trim().parse::<u32>() {
            Ok(0) => Err("0 is root; give an unprivileged id".to_owned()),
            Ok(id) if id < u32::MAX => Ok(id),
            _ => Err(format!("{text:?} is not a uid or gid (expected UID[:GID])")),
        };
        let (uid, gid) = match s.split_once(':') {
            Some((uid, gid)) => (number(uid)?, number(gid)?),
            None => (number(s)?, number(s)?),
        };
        Ok(Ids { uid, gid })
    }
}

/// `--user-uids`: the uids given to users, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub first: u32,
    pub last: u32,
}

impl std::str::FromStr for Range {
    type Err = String;

    fn from_str(s: &str) -> Result<Range, String> {
        let bad = || format!("{s:?} is not a uid range (expected FIRST-LAST, such as 70000-99999)");
        let (first, last) = s.split_once('-').ok_or_else(bad)?;
        let (first, last) = (
            first.trim().parse::<u32>().map_err(|_| bad())?,
            last.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if first == 0 || first > last || last == u32::MAX {
            return Err(bad());
        }
        Ok(Range { first, last })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// Why a user has no uid.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "user {user}: every uid of --user-uids {range} is taken (see {file}); widen the range to serve more users"
    )]
    Full {
        user: String,
        range: Range,
        file: String,
    },
    #[error(
        "user {user}: uid {uid} of --user-uids {range} is not mapped in this user namespace (see /proc/self/uid_map); give --user-uids a range inside it"
    )]
    Unmapped {
        user: String,
        uid: u32,
        range: Range,
    },
    #[error("--user-uids-file {file}: {source}")]
    File { file: String, source: io::Error },
    #[error("--user-uids-file {file}: line {line} is not `NAME UID`; fix or remove it")]
    Malformed { file: String, line: usize },
    #[error(
        "--user-uids-file {file}: uid {uid} is given to both {first} and {second}; fix the file"
    )]
    Shared {
        file: String,
        uid: u32,
        first: String,
        second: String,
    },
    #[error(
        "--user-uids-file {file}: it must be a file of the server's user, writable by it alone (owner {owner}, mode {mode:o})"
    )]
    Unsafe { file: String, owner: u32, mode: u32 },
}

/// The uid of `user` in the mapping file `file`: theirs already, or the lowest free
/// one of `range` (not one `/etc/passwd` or `/etc/group` names), recorded before it is
/// returned. The file is locked meanwhile.
pub fn uid_of(file: &Path, range: Range, user: &str) -> Result<u32, Error> {
    let shown = || file.display().to_string();
    let io_error = |source| Error::File {
        file: shown(),
        source,
    };
    let mut map = open_locked(file)?;
    let mut text = String::new();
    map.rewind().map_err(io_error)?;
    map.read_to_string(&mut text).map_err(io_error)?;
    let entries = parse(&text).map_err(|line| Error::Malformed {
        file: shown(),
        line,
    })?;
    let owners = owners(&entries, file)?;
    if let Some((_, uid)) = entries.iter().find(|(name, _)| *name == user) {
        return Ok(*uid);
    }
    let accounts = accounts();
    let free = (range.first..=range.last)
        .find(|uid| !owners.contains_key(uid) && !accounts.contains(uid))
        .ok_or_else(|| Error::Full {
            user: user.to_owned(),
            range,
            file: shown(),
        })?;
    let mut line = format!("{user} {free}\n");
    if !text.is_empty() && !text.ends_with('\n') {
        line.insert(0, '\n');
    }
    if !mapped(free) {
        return Err(Error::Unmapped {
            user: user.to_owned(),
            uid: free,
            range,
        });
    }
    map.write_all(line.as_bytes()).map_err(io_error)?;
    map.sync_data().map_err(io_error)?;
    tracing::info!(user, uid = free, file = %file.display(), "a user's uid");
    Ok(free)
}

/// `forge-bash users`: the mapping's users, or one freed.
#[derive(Debug, Clone, clap::Args)]
pub struct Admin {
    /// Free NAME's uid, so that a new user may get it: refused while a process runs
    /// under it, or while NAME's workdir or state dir exists (remove or archive them
    /// first: a user given the uid later would own them).
    #[arg(long, value_name = "NAME")]
    pub remove: Option<String>,

    /// The mapping file.
    #[arg(
        long,
        env = "FORGE_BASH_USER_UIDS_FILE",
        value_name = "PATH",
        default_value = "/etc/forge-bash/uids"
    )]
    pub user_uids_file: PathBuf,

    /// The servers' per-user workdir (with `{user}`): where a user's files are.
    #[arg(long, env = "FORGE_BASH_WORKDIR", value_name = "PATH")]
    pub workdir: Option<PathBuf>,

    /// The servers' per-user state dir (with `{user}`): its audit logs say when a
    /// user was last seen.
    #[arg(long, env = "FORGE_BASH_STATE_DIR", value_name = "PATH")]
    pub state_dir: Option<PathBuf>,
}

/// Why `forge-bash users` did nothing.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(transparent)]
    Map(#[from] Error),
    #[error("--remove {0}: no such user in the mapping")]
    Unknown(String),
    #[error(
        "--remove needs --workdir and --state-dir with {{user}} (or FORGE_BASH_WORKDIR and FORGE_BASH_STATE_DIR), to check that the user has no files left"
    )]
    NoTemplates,
    #[error(
        "--remove {user}: process {pid} runs as their uid {uid} (a live session or job); end it first"
    )]
    Running { user: String, uid: u32, pid: u32 },
    #[error(
        "--remove {user}: {path} exists (uid {uid}'s files); remove or archive it first, since a user given uid {uid} later would own it"
    )]
    Files {
        user: String,
        uid: u32,
        path: String,
    },
    #[error("{0}")]
    Write(io::Error),
}

impl Admin {
    fn path_of(template: &Option<PathBuf>, user: &str) -> Option<PathBuf> {
        let text = template.as_ref()?.to_string_lossy().into_owned();
        text.contains(USER)
            .then(|| PathBuf::from(text.replace(USER, user)))
    }

    /// Lists `NAME UID LAST-SEEN` (the newest audit log of the user's state dir, UTC),
    /// or frees `--remove`'s name; writes what it did to `out`.
    pub fn run(&self, out: &mut impl Write) -> Result<(), AdminError> {
        let file = &self.user_uids_file;
        if let Some(user) = &self.remove {
            let uid = self.remove(user)?;
            writeln!(out, "removed {user} (uid {uid}) from {}", file.display())
                .map_err(AdminError::Write)?;
            return Ok(());
        }
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(Error::File {
                    file: file.display().to_string(),
                    source,
                }
                .into());
            }
        };
        let entries = parse(&text).map_err(|line| Error::Malformed {
            file: file.display().to_string(),
            line,
        })?;
        let mut table = format!("{:<24} {:>10}  LAST SEEN (UTC)\n", "NAME", "UID");
        for (name, uid) in entries {
            let seen = match Admin::path_of(&self.state_dir, name) {
                None => "-".to_owned(),
                Some(dir) => last_seen(&dir),
            };
            table.push_str(&format!("{name:<24} {uid:>10}  {seen}\n"));
        }
        out.write_all(table.as_bytes()).map_err(AdminError::Write)
    }

    /// Frees `user`'s uid, the mapping locked meanwhile; the uid it had.
    fn remove(&self, user: &str) -> Result<u32, AdminError> {
        let file = &self.user_uids_file;
        let io_error = |source| Error::File {
            file: file.display().to_string(),
            source,
        };
        if !file.exists() {
            return Err(AdminError::Unknown(user.to_owned()));
        }
        let (Some(workdir), Some(state_dir)) = (
            Admin::path_of(&self.workdir, user),
            Admin::path_of(&self.state_dir, user),
        ) else {
            return Err(AdminError::NoTemplates);
        };
        let mut map = open_locked(file)?;
        let mut text = String::new();
        map.rewind().map_err(io_error)?;
        map.read_to_string(&mut text).map_err(io_error)?;
        let entries = parse(&text).map_err(|line| Error::Malformed {
            file: file.display().to_string(),
            line,
        })?;
        let Some(&(_, uid)) = entries.iter().find(|(name, _)| *name == user) else {
            return Err(AdminError::Unknown(user.to_owned()));
        };
        if let Some(pid) = process_of(uid) {
            let user = user.to_owned();
            return Err(AdminError::Running { user, uid, pid });
        }
        for path in [&workdir, &state_dir] {
            if std::fs::symlink_metadata(path).is_ok() {
                let (user, path) = (user.to_owned(), path.display().to_string());
                return Err(AdminError::Files { user, uid, path });
            }
        }
        let kept: String = entries
            .iter()
            .filter(|(name, _)| *name != user)
            .map(|(name, uid)| format!("{name} {uid}\n"))
            .collect();
        map.set_len(0).map_err(io_error)?;
        map.write_all(kept.as_bytes()).map_err(io_error)?;
        map.sync_data().map_err(io_error)?;
        tracing::info!(user, uid, file = %file.display(), "a user's uid freed");
        Ok(uid)
    }
}

/// When the user of state dir `dir` last ran a command: the newest of its audit logs
/// (each call writes a row), `never` without one.
fn last_seen(dir: &Path) -> String {
    let newest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("audit-"))
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max();
    match newest {
        Some(time) => chrono::DateTime::<chrono::Utc>::from(time)
            .format("%Y-%m-%d %H:%M")
            .to_string(),
        None => "never".to_owned(),
    }
}

/// A live process (not a zombie) whose real or effective uid is `uid`, if any.
fn process_of(uid: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            if status.lines().any(|l| l.starts_with("State:\tZ")) {
                return None;
            }
            let line = status.lines().find(|l| l.starts_with("Uid:"))?;
            let mut ids = line
                .split_whitespace()
                .skip(1)
                .filter_map(|n| n.parse::<u32>().ok());
            ids.by_ref().take(2).any(|id| id == uid).then_some(pid)
        })
}

/// The mapping file, opened (made, with its directory, when missing), checked to be
/// the server's alone, and locked until it is closed.
fn open_locked(file: &Path) -> Result<std::fs::File, Error> {
    let io_error = |source| Error::File {
        file: file.display().to_string(),
        source,
    };
    if let Some(dir) = file.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(io_error)?;
    }
    let map = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(MAP_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(file)
        .map_err(io_error)?;
    let meta = map.metadata().map_err(io_error)?;
    if meta.uid() != euid() || meta.mode() & 0o022 != 0 || !meta.is_file() {
        return Err(Error::Unsafe {
            file: file.display().to_string(),
            owner: meta.uid(),
            mode: meta.mode() & 0o7777,
        });
    }
    // SAFETY: flock on a descriptor this function owns; released when it is closed.
    if unsafe { libc::flock(map.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io_error(io::Error::last_os_error()));
    }
    Ok(map)
}

/// The user of each uid in the mapping's `entries`; two users of one uid refuse it.
fn owners<'a>(
    entries: &[(&'a str, u32)],
    file: &Path,
) -> Result<std::collections::HashMap<u32, &'a str>, Error> {
    let mut owners = std::collections::HashMap::new();
    for (name, uid) in entries {
        if let Some(first) = owners.insert(*uid, *name)
            && first != *name
        {
            return Err(Error::Shared {
                file: file.display().to_string(),
                uid: *uid,
                first: first.to_owned(),
                second: (*name).to_owned(),
            });
        }
    }
    Ok(owners)
}

/// The `NAME UID` lines of a mapping file (blank lines skipped), or the number of the
/// first line that is not one.
fn parse(text: &str) -> Result<Vec<(&str, u32)>, usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            let mut words = line.split_whitespace();
            match (
                words.next(),
                words.next().map(str::parse::<u32>),
                words.next(),
            ) {
                (Some(name), Some(Ok(uid)), None) if valid_user(name) => Ok((name, uid)),
                _ => Err(n + 1),
            }
        })
        .collect()
}

/// Whether `uid` exists in this process's user namespace (a container may map only
/// some): a command cannot run as one that does not. Where the map cannot be read,
/// every uid counts as mapped.
fn mapped(uid: u32) -> bool {
    let Ok(map) = std::fs::read_to_string("/proc/self/uid_map") else {
        return true;
    };
    map.lines().any(|line| {
        let numbers: Vec<u64> = line.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        matches!(numbers[..], [inside, _, count] if (inside..inside + count).contains(&u64::from(uid)))
    })
}

/// The uids of `/etc/passwd` and the gids of `/etc/group`: never given to a user (a
/// user's gid is their uid).
fn accounts() -> std::collections::HashSet<u32> {
    ["/etc/passwd", "/etc/group"]
        .into_iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            text.lines()
                .filter_map(|line| line.split(':').nth(2)?.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The uids and gids commands run under when they are not the server's: a root
/// server's users (each a uid of `--user-uids`, its gid the same number, no
/// supplementary groups), or `--run-as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Others {
    Users(Range),
    RunAs(Ids),
}

impl Others {
    /// Whether `uid` is one of theirs.
    pub fn has_uid(&self, uid: u32) -> bool {
        match self {
            Others::Users(range) => (range.first..=range.last).contains(&uid),
            Others::RunAs(ids) => ids.uid == uid,
        }
    }

    /// Whether `gid` is one of their groups.
    pub fn has_gid(&self, gid: u32) -> bool {
        match self {
            Others::Users(range) => (range.first..=range.last).contains(&gid),
            Others::RunAs(ids) => ids.gid == gid,
        }
    }

    /// Whether the mode bits of `meta` give them `bit` (4 read, 2 write): as others,
    /// as the file's group, or as its owner.
    pub fn may(&self, meta: &std::fs::Metadata, bit: u32) -> bool {
        let mode = meta.mode();
        mode & bit != 0
            || (self.has_gid(meta.gid()) && mode & (bit << 3) != 0)
            || (self.has_uid(meta.uid()) && mode & (bit << 6) != 0)
    }

    /// The first existing directory on `path` (resolved where it exists) through which
    /// they could put something of theirs where `path` is: one they may write, unless
    /// it is sticky and what it holds on the way exists and is not theirs. Its
    /// missing part counts as theirs to make.
    pub fn could_replace(&self, path: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
        let real = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        let mut child = std::fs::symlink_metadata(&real).ok();
        for dir in real.ancestors().skip(1) {
            let Ok(meta) = std::fs::metadata(dir) else {
                child = None;
                continue;
            };
            let shielded =
                meta.mode() & 0o1000 != 0 && child.as_ref().is_some_and(|c| !self.has_uid(c.uid()));
            if (self.may(&meta, 0o2) || self.has_uid(meta.uid())) && !shielded {
                return Some((dir.to_owned(), meta));
            }
            child = Some(meta);
        }
        None
    }
}

impl fmt::Display for Others {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Others::Users(range) => write!(f, "the users' uids (--user-uids {range})"),
            Others::RunAs(ids) => write!(f, "uid {}:{} (--run-as)", ids.uid, ids.gid),
        }
    }
}

/// Why a directory on a user's path is in the way.
#[derive(Debug, thiserror::Error)]
#[error(
    "{dir}: uid {uid} cannot enter it (owner {owner}, mode {mode:o}), so its commands could not reach {path}; give it o+x (chmod o+x), or choose a path under directories all may enter"
)]
pub struct Untraversable {
    pub dir: PathBuf,
    pub path: PathBuf,
    pub uid: u32,
    pub owner: u32,
    pub mode: u32,
}

/// Checks that `ids` may enter every existing ancestor of `path` (the user has no
/// supplementary groups, so only the owner, its own gid and the others' bits count).
pub fn check_traversable(path: &Path, ids: Ids) -> Result<(), Untraversable> {
    for dir in path.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        let mode = meta.mode();
        let enters = if meta.uid() == ids.uid {
            mode & 0o100 != 0
        } else if meta.gid() == ids.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !enters {
            return Err(Untraversable {
                dir: dir.to_owned(),
                path: path.to_owned(),
                uid: ids.uid,
                owner: meta.uid(),
                mode: mode & 0o7777,
            });
        }
    }
    Ok(())
}

/// Makes `dir` for `ids`, mode 0700, or takes it over when it exists (a directory,
/// not a symlink): owner and mode are set through a handle on it. Missing parents are
/// made mode 0711: users may pass through, not list.
pub fn own_dir(dir: &Path, ids: Ids) -> io::Result<()> {
    make_parents(dir)?;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)?;
    std::os::unix::fs::fchown(&handle, Some(ids.uid), Some(ids.gid))?;
    handle.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(())
}

/// Makes the missing parents of `path`, mode 0711: users may pass through them to
/// their own directories, not list them.
pub fn make_parents(path: &Path) -> io::Result<()> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(parent)
    {
        // Something that is not a directory is in the way: not a name already taken,
        // which callers that create files under it would try again after.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", parent.display()),
        )),
        made => made,
    }
}

/// What a command runs as, and the variables that go with it: its own `HOME` and
/// `TMPDIR`, and `USER`/`LOGNAME` when it has a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub ids: Ids,
    pub env: Vec<(&'static str, String)>,
}

/// Gives the workdir back its mode and owner before a command runs, when a command
/// changed them (`chmod 000` of another user's workdir, where one uid serves all
/// under the sandbox, or of one's own): a uid's own is theirs, mode 0700; any other
/// keeps its mode with its owner's `rwx`. Logged each time. Through a handle on the
/// directory itself (`O_PATH`, which mode 000 does not refuse), never a symlink in
/// its place.
pub fn keep_workdir(workdir: &Path, identity: Option<&Identity>) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;
    let Ok(dir) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(workdir)
    else {
        return;
    };
    let Ok(meta) = dir.metadata() else {
        return;
    };
    let found = meta.mode() & 0o7777;
    let (mode, ids) = match identity {
        Some(identity) => (0o700, Some(identity.ids)),
        None => (found | 0o700, None),
    };
    let owned = ids.is_none_or(|ids| meta.uid() == ids.uid && meta.gid() == ids.gid);
    if found == mode && owned {
        return;
    }
    // The handle's own name: chmod and chown through it reach that directory alone.
    let handle = format!("/proc/self/fd/{}", dir.as_raw_fd());
    let chowned = match ids {
        Some(ids) if !owned => std::os::unix::fs::chown(&handle, Some(ids.uid), Some(ids.gid)),
        _ => Ok(()),
    };
    let result =
        chowned.and_then(|()| std::fs::set_permissions(&handle, PermissionsExt::from_mode(mode)));
    tracing::warn!(
        workdir = %workdir.display(),
        found = format!("{found:o}"),
        owner = meta.uid(),
        group = meta.gid(),
        restored = format!("{mode:o}"),
        uid = ids.map_or(meta.uid(), |ids| ids.uid),
        error = result.err().map(|e| e.to_string()),
        "the workdir's mode or owner was changed (by a command?); restored"
    );
}

/// The euid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_ranges_parse() {
        assert_eq!(
            "1234".parse::<Ids>(),
            Ok(Ids {
                uid: 1234,
                gid: 1234
            })
        );
        assert_eq!("1234:99".parse::<Ids>(), Ok(Ids { uid: 1234, gid: 99 }));
        for bad in ["", "0", "0:5", "5:0", "x", "5:", "-1", "4294967295"] {
            assert!(bad.parse::<Ids>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "70000-99999".parse::<Range>(),
            Ok(Range {
                first: 70000,
                last: 99999
            })
        );
        for bad in ["", "5", "0-5", "9-5", "a-b", "5-"] {
            assert!(bad.parse::<Range>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn uids_are_given_once_each_kept_and_never_shared_even_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("etc/uids");
        let range = Range {
            first: 4_000_000,
            last: 4_000_015,
        };
        // Sixteen users asking at once, from threads with a descriptor each.
        let uids: Vec<u32> = std::thread::scope(|scope| {
            let asking: Vec<_> = (0..16)
                .map(|n| {
                    let file = &file;
                    scope.spawn(move || uid_of(file, range, &format!("user{n}")).unwrap())
                })
                .collect();
            asking.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let distinct: std::collections::HashSet<u32> = uids.iter().copied().collect();
        assert_eq!(distinct.len(), 16, "{uids:?}");
        assert!(
            uids.iter()
                .all(|uid| (range.first..=range.last).contains(uid))
        );
        // Asked again, each keeps theirs; a seventeenth finds the range full.
        for (n, uid) in uids.iter().enumerate() {
            assert_eq!(uid_of(&file, range, &format!("user{n}")).unwrap(), *uid);
        }
        let e = uid_of(&file, range, "late").unwrap_err().to_string();
        assert!(
            e.starts_with("user late: every uid of --user-uids 4000000-4000015 is taken"),
            "{e}"
        );
        // A mapping that gives one uid twice is refused, not served.
        std::fs::write(&file, "a 4000000\nb 4000000\n").unwrap();
        let e = uid_of(&file, range, "a").unwrap_err().to_string();
        assert!(e.contains("uid 4000000 is given to both a and b"), "{e}");
        // So is one others may write.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = uid_of(&file, range, "a").unwrap_err().to_string();
        assert!(e.contains("writable by it alone"), "{e}");
    }

    #[test]
    fn what_other_uids_may_read_and_replace() {
        use std::os::unix::fs::{PermissionsExt, chown};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let set = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let users = Others::Users(Range {
            first: 4_100_000,
            last: 4_100_009,
        });
        let may_read = || users.may(&std::fs::metadata(&file).unwrap(), 0o4);
        set(&file, 0o644);
        assert!(may_read());
        set(&file, 0o640);
        assert!(!may_read());
        if euid() == 0 {
            // Group-readable, in a group of the range.
            chown(&file, None, Some(4_100_003)).unwrap();
            assert!(may_read());
            // A sticky world-writable parent shields what is not theirs, not the rest.
            set(dir.path(), 0o1777);
            assert!(users.could_replace(&file).is_none());
            assert!(users.could_replace(&dir.path().join("missing")).is_some());
            chown(&file, Some(4_100_001), None).unwrap();
            assert!(users.could_replace(&file).is_some());
            set(dir.path(), 0o777);
            chown(&file, Some(0), None).unwrap();
            let (found, _) = users.could_replace(&file).unwrap();
            assert_eq!(found, dir.path().canonicalize().unwrap());
        }
    }

    #[test]
    fn mapping_lines_are_checked() {
        assert_eq!(
            parse("alice 70000\n\nbob 70001\n"),
            Ok(vec![("alice", 70000), ("bob", 70001)])
        );
        assert_eq!(parse("alice 70000\nbob\n"), Err(2));
        assert_eq!(parse("../x 70000\n"), Err(1));
        assert_eq!(parse("alice 70000 extra\n"), Err(1));
    }
}
