//! The state dir: overflow files and audit logs, written only through one directory
//! handle.
//!
//! The directory is opened once (at start-up, or at its first use if it could not be
//! opened then), without following a symlink at its last component, and every file is
//! created relative to that handle with `openat` and `O_NOFOLLOW`. Swapping the path
//! for a symlink later changes nothing, and a symlink, directory, FIFO, device or
//! hard-linked file where a log should be is refused: the server never writes through
//! a name a command may have planted.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reserve::{Reserved, Room};

mod reserve;

#[cfg(test)]
pub(crate) use reserve::reserve;

/// Mode of the files the server creates: the server's user only.
const FILE_MODE: libc::mode_t = 0o600;

/// Mode of the directories the server creates.
const DIR_MODE: u32 = 0o700;

/// The state dir of one server. Shared by every call.
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    handle: Mutex<Option<Arc<OwnedFd>>>,
    /// The group that may read the state dir and its files (a user whose commands run
    /// under a uid of their own): the dir is then mode 2750 and its files 0640, still
    /// the server's.
    readers: Option<u32>,
    /// The day's audit log, kept open: a command that changes its mode (or the state
    /// dir's) cannot stop the rows. Reopened when its name changes (a new UTC day) or
    /// when the name no longer leads to it. Room is reserved in it ahead of its rows
    /// (see [`reserve`]).
    log: Mutex<Option<HeldLog>>,
    /// Whether a changed mode was reported already (the state dir's, a log's).
    warned: [AtomicBool; 2],
    /// Whether the filesystem reserves room for the logs; false once it said it cannot.
    reserving: AtomicBool,
}

/// The log held open: its name, its file and the room reserved in it.
#[derive(Debug)]
pub struct HeldLog {
    name: String,
    log: Reserved,
}

impl StateDir {
    /// Opens `path` now, creating it (mode 0700) when missing. When it cannot be opened
    /// the reason is logged and each later use tries again.
    pub fn open(path: impl Into<PathBuf>) -> StateDir {
        StateDir::open_for(path, None)
    }

    /// Opens `path` as [`StateDir::open`] does; with `readers`, that group may read the
    /// dir and the files the server makes in it, and no more.
    pub fn open_for(path: impl Into<PathBuf>, readers: Option<u32>) -> StateDir {
        let state = StateDir {
            path: path.into(),
            handle: Mutex::new(None),
            readers,
            log: Mutex::new(None),
            warned: Default::default(),
            reserving: AtomicBool::new(true),
        };
        if let Err(e) = state.handle() {
            tracing::error!(dir = %state.path.display(), error = %e, "cannot open the state dir");
        }
        state
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory handle, opened on first success and kept for the server's life.
    pub fn handle(&self) -> io::Result<Arc<OwnedFd>> {
        let mut handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(fd) = &*handle {
            return Ok(fd.clone());
        }
        let fd = open_dir(&self.path)?;
        if let Some(group) = self.readers {
            // The group of what is made in it follows the dir's (set-group-ID).
            std::os::unix::fs::fchown(&fd, None, Some(group))?;
            fchmod(fd.as_fd(), self.dir_mode())?;
        }
        let fd = Arc::new(fd);
        *handle = Some(fd.clone());
        Ok(fd)
    }

    /// The mode the state dir keeps.
    pub fn dir_mode(&self) -> libc::mode_t {
        match self.readers {
            Some(_) => 0o2750,
            None => DIR_MODE as libc::mode_t,
        }
    }

    /// The mode the server's files in it keep.
    pub fn file_mode(&self) -> libc::mode_t {
        match self.readers {
            Some(_) => 0o640,
            None => FILE_MODE,
        }
    }

    /// Creates `name` in the state dir; fails with `AlreadyExists` when anything (a
    /// symlink included) is there already.
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        let dir = self.kept_handle()?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        openat(dir.as_fd(), name, flags, self.file_mode())
    }

    /// Opens `name` for appending, creating it when missing. Anything there but a
    /// regular file of this user with one link is refused and left as it is.
    pub fn append(&self, name: &str) -> io::Result<File> {
        let dir = self.handle()?;
        // Look before opening: opening a FIFO or a device can block or act.
        match statat(dir.as_fd(), name) {
            Ok(stat) => check_regular(name, &stat)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let flags =
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let file = openat(dir.as_fd(), name, flags, self.file_mode())?;
        check_regular(name, &fstat(file.as_fd())?)?;
        Ok(file)
    }

    /// Appends `line` to the log `name` with one `write`, through the log kept open
    /// ([`StateDir::open_log`]), into room reserved ahead of it. When the disk is full
    /// and that room is used up, nothing is written: the error says why.
    pub fn append_log(&self, name: &str, next: &str, line: &[u8]) -> io::Result<()> {
        let mut log = self.open_log(name, next)?;
        let held = log.as_mut().expect("opened");
        let size = fstat(held.log.file.as_fd())?.st_size.max(0) as u64;
        self.make_room(&mut held.log, size, line.len() as u64)?;
        let written = held.log.file.write(line)?;
        if written != line.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {written} of {} bytes", line.len()),
            ));
        }
        Ok(())
    }

    /// The log `name`, open for appending: the one kept open while `name` still leads
    /// to it, else opened anew ([`StateDir::append`]), with room reserved in it, and
    /// in the log `next` (the next day's, made now so that the day starts with room
    /// on a full disk). A mode of the state dir or the log that is not the server's
    /// own (a command of a server that is not root may change them) is restored, with
    /// a warning the first time.
    pub fn open_log(
        &self,
        name: &str,
        next: &str,
    ) -> io::Result<std::sync::MutexGuard<'_, Option<HeldLog>>> {
        let dir = self.kept_handle()?;
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let held = log
            .as_ref()
            .and_then(|held| still_named(dir.as_fd(), &held.name, name, &held.log.file));
        let held = match held {
            Some(held) => held,
            None => {
                *log = None;
                let file = self.append(name)?;
                let held = fstat(file.as_fd())?;
                let size = held.st_size.max(0) as u64;
                let mut reserved = Reserved { file, end: size };
                // Room for the rows to come; a full disk leaves what was reserved before.
                let _ = self.make_room(&mut reserved, size, 0);
                *log = Some(HeldLog {
                    name: name.to_owned(),
                    log: reserved,
                });
                self.prepare_log(next);
                held
            }
        };
        if let Some(open) = log.as_ref() {
            self.keep_mode(
                open.log.file.as_fd(),
                held.st_mode,
                &name,
                self.file_mode(),
                1,
            )?;
        }
        Ok(log)
    }

    /// Whether the log `name` is held open already and `name` still leads to it: a
    /// row can be written to it now.
    pub fn holds_log(&self, name: &str) -> bool {
        let Ok(dir) = self.handle() else {
            return false;
        };
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.as_ref().is_some_and(|held| {
            still_named(dir.as_fd(), &held.name, name, &held.log.file).is_some()
        })
    }

    /// Room for a row of `len` bytes in `log`, now `size` bytes long (see
    /// [`Reserved::room_for`]). A filesystem that cannot reserve room is said so once,
    /// and its rows are written as they come.
    fn make_room(&self, log: &mut Reserved, size: u64, len: u64) -> io::Result<()> {
        if !self.reserving.load(Ordering::Relaxed) {
            return Ok(());
        }
        match log.room_for(size, len) {
            Room::Kept => Ok(()),
            Room::Unsupported(e) => {
                self.cannot_reserve(&e);
                Ok(())
            }
            Room::Full(e) => Err(e),
        }
    }

    /// Makes the log `name` before its day, with a step of room reserved in it.
    fn prepare_log(&self, name: &str) {
        if !self.reserving.load(Ordering::Relaxed) {
            return;
        }
        let made = self.append(name).and_then(|file| {
            let size = fstat(file.as_fd())?.st_size.max(0) as u64;
            reserve::reserve(&file, size, reserve::STEP)
        });
        match made {
            Ok(()) => {}
            Err(e) if reserve::unsupported(&e) => self.cannot_reserve(&e),
            Err(e) => tracing::debug!(log = name, error = %e, "no room reserved ahead"),
        }
    }

    /// Gives back the room reserved past the end of the log `name`, a log no row
    /// goes to any more (of a day before yesterday: a row appended meanwhile would be
    /// cut). A name that is not a lone regular file of this user is left alone.
    pub fn release_room(&self, name: &str) -> io::Result<()> {
        let dir = self.handle()?;
        match statat(dir.as_fd(), name) {
            Ok(stat) => check_regular(name, &stat)?,
            Err(e) => return Err(e),
        }
        let flags = libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let file = openat(dir.as_fd(), name, flags, 0)?;
        let stat = fstat(file.as_fd())?;
        check_regular(name, &stat)?;
        reserve::release(&file, stat.st_size.max(0) as u64)
    }

    /// Says once that the state dir's filesystem cannot reserve room for the logs.
    fn cannot_reserve(&self, e: &io::Error) {
        if self.reserving.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                dir = %self.path.display(),
                error = %e,
                "the state dir's filesystem cannot reserve room for the audit log \
                 (fallocate); rows are written as they come, and a full disk refuses them"
            );
        }
    }

    /// The directory handle, once the state dir's mode is its own again (see
    /// [`StateDir::open_log`]).
    fn kept_handle(&self) -> io::Result<Arc<OwnedFd>> {
        let dir = self.handle()?;
        let found = fstat(dir.as_fd())?.st_mode;
        self.keep_mode(dir.as_fd(), found, &self.path.display(), self.dir_mode(), 0)?;
        Ok(dir)
    }

    /// Restores the mode of `fd`, `found` in its status, to `mode` when it changed,
    /// with a warning the first time (`which` names the warning: the dir's, the logs').
    fn keep_mode(
        &self,
        fd: BorrowedFd<'_>,
        found: libc::mode_t,
        shown: &dyn std::fmt::Display,
        mode: libc::mode_t,
        which: usize,
    ) -> io::Result<()> {
        let found = found & 0o7777;
        if found == mode {
            return Ok(());
        }
        if !self.warned[which].swap(true, Ordering::Relaxed) {
            tracing::warn!(
                path = %shown,
                found = format!("{found:o}"),
                restored = format!("{mode:o}"),
                "the mode of the server's own file was changed (by a command?); restored"
            );
        }
        fchmod(fd, mode)
    }

    /// The names in the state dir with what `lstat` says of each (a name removed
    /// meanwhile is left out).
    pub fn entries(&self) -> io::Result<Vec<(String, libc::stat)>> {
        let dir = self.handle()?;
        let mut names = Vec::new();
        for_each_name(dir.as_fd(), |name| names.push(name.to_owned()))?;
        Ok(names
            .into_iter()
            .filter_map(|name| statat(dir.as_fd(), &name).ok().map(|stat| (name, stat)))
            .collect())
    }

    /// Removes the file `name` from the state dir (never through a symlink: a symlink
    /// there is removed itself).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        let dir = self.handle()?;
        let c_name = c_name(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), c_name.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether a process holds a lock on the file `name` (a background job's output
    /// file while the job runs). A file that cannot be
    /// opened is not in use.
    pub fn in_use(&self, name: &str) -> bool {
        let Ok(dir) = self.handle() else {
            return false;
        };
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let Ok(file) = openat(dir.as_fd(), name, flags, 0) else {
            return false;
        };
        // SAFETY: flock on a descriptor we own; the lock goes with it.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
        locked != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
    }

    /// Gives the file `from` the new name `to` as well (a hard link, through the
    /// handle); fails with `AlreadyExists` when anything is at `to` already.
    pub fn link_new(&self, from: &str, to: &str) -> io::Result<()> {
        let dir = self.handle()?;
        let (c_from, c_to) = (c_name(from)?, c_name(to)?);
        let fd = dir.as_raw_fd();
        // SAFETY: a valid directory descriptor and NUL-terminated names; no symlink is
        // followed (no AT_SYMLINK_FOLLOW).
        if unsafe { libc::linkat(fd, c_from.as_ptr(), fd, c_to.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Makes (mode 0700) or opens the subdirectory `name` and returns its path, after
    /// checking through the handle that it is a directory of this user and not a symlink.
    pub fn subdir(&self, name: &str) -> io::Result<PathBuf> {
        let sub = self.make_subdir(name)?;
        check_owner(name, &fstat(sub.as_fd())?)?;
        Ok(self.path.join(name))
    }

    /// Makes or opens the subdirectory `name` as [`StateDir::subdir`] does, then gives
    /// it to `uid` and `gid`, mode 0700: a user's private HOME or TMPDIR. A symlink
    /// there is refused.
    pub fn subdir_of(&self, name: &str, uid: u32, gid: u32) -> io::Result<PathBuf> {
        let sub = self.make_subdir(name)?;
        std::os::unix::fs::fchown(&sub, Some(uid), Some(gid))?;
        fchmod(sub.as_fd(), DIR_MODE as libc::mode_t)?;
        Ok(self.path.join(name))
    }

    /// Makes (mode 0700) or opens the subdirectory `name`, never through a symlink.
    fn make_subdir(&self, name: &str) -> io::Result<File> {
        let dir = self.handle()?;
        let c_name = c_name(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        if unsafe { libc::mkdirat(dir.as_raw_fd(), c_name.as_ptr(), DIR_MODE) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(e);
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        openat(dir.as_fd(), name, flags, 0)
    }
}

/// Opens (creating when missing) the directory itself, refusing a symlink at its last
/// component and a directory that belongs to another user.
fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    // Missing parents are made mode 0711: a user whose commands run under a uid of
    // their own passes through them to their HOME and TMPDIR in the state dir.
    crate::users::make_parents(path)?;
    match std::fs::DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {}
        // A symlink at the last component: reported below, by the open.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path; the descriptor returned is ours.
    let fd = unsafe { libc::open(c_path.as_ptr(), flags) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        let symlink = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) if symlink => {
                io::Error::other("it is a symlink; the state dir must be a directory")
            }
            Some(libc::ENOTDIR) => io::Error::other("it is not a directory"),
            _ => e,
        });
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    check_owner(&path.display().to_string(), &fstat(fd.as_fd())?)?;
    Ok(fd)
}

/// Calls `each` with every name in the directory `dir` but `.` and `..`.
fn for_each_name(dir: BorrowedFd<'_>, mut each: impl FnMut(&str)) -> io::Result<()> {
    // A directory stream owns its descriptor: give it a duplicate.
    // SAFETY: the new descriptor is ours until fdopendir takes it.
    let fd = unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a directory descriptor that the stream now owns.
    let stream = unsafe { libc::fdopendir(fd) };
    if stream.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so the descriptor is still ours to close.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    // SAFETY: rewinding a valid stream: the duplicate shares the handle's offset.
    unsafe { libc::rewinddir(stream) };
    loop {
        // SAFETY: a valid stream; the entry lives until the next readdir.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
        if let Ok(name) = name.to_str()
            && name != "."
            && name != ".."
        {
            each(name);
        }
    }
    // SAFETY: closes the stream and its descriptor, once.
    unsafe { libc::closedir(stream) };
    Ok(())
}

fn c_name(name: &str) -> io::Result<std::ffi::CString> {
    if name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a state file name holds a slash",
        ));
    }
    std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))
}

fn openat(
    dir: BorrowedFd<'_>,
    name: &str,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<File> {
    let c_name = c_name(name)?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the descriptor
    // returned is ours.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c_name.as_ptr(),
            flags | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::other(format!("{name} is a symlink; refused"))
        } else {
            e
        });
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The status of the log held open as `open`, while it is the log `name` and `name`
/// in `dir` still leads to it (not moved, replaced or removed since).
fn still_named(dir: BorrowedFd<'_>, open: &str, name: &str, file: &File) -> Option<libc::stat> {
    if open != name {
        return None;
    }
    match (statat(dir, name), fstat(file.as_fd())) {
        (Ok(named), Ok(held)) if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino) => {
            Some(held)
        }
        _ => None,
    }
}

fn statat(dir: BorrowedFd<'_>, name: &str) -> io::Result<libc::stat> {
    let c_name = c_name(name)?;
    // SAFETY: zeroed memory is a valid `stat` for fstatat to fill.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name, and a `stat` to write.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c_name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat)
}

fn fchmod(fd: BorrowedFd<'_>, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    if unsafe { libc::fchmod(fd.as_raw_fd(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: zeroed memory is a valid `stat` for fstat to fill.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a `stat` to write.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat)
}

/// A regular file of this user with exactly one link: a hard link would let the
/// server's writes reach another name.
fn check_regular(name: &str, stat: &libc::stat) -> io::Result<()> {
    let refuse = |what: &str| Err(io::Error::other(format!("{name} is {what}; refused")));
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFLNK => return refuse("a symlink"),
        libc::S_IFDIR => return refuse("a directory"),
        _ => return refuse("not a regular file"),
    }
    if stat.st_nlink != 1 {
        return refuse("a file with more than one link");
    }
    check_owner(name, stat)
}

fn check_owner(name: &str, stat: &libc::stat) -> io::Result<()> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if stat.st_uid != me {
        return Err(io::Error::other(format!(
            "{name} belongs to uid {}, not to this server's uid {me}; refused",
            stat.st_uid
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    #[test]
    fn files_are_created_through_the_handle_even_after_the_path_is_swapped() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state");
        let state = StateDir::open(&path);
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::rename(&path, tmp.path().join("moved")).unwrap();
        symlink(&elsewhere, &path).unwrap();
        state
            .append("audit-x.tsv")
            .unwrap()
            .write_all(b"row\n")
            .unwrap();
        state.create_new("cmd-1.txt").unwrap();
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        let moved = tmp.path().join("moved");
        assert_eq!(std::fs::read(moved.join("audit-x.tsv")).unwrap(), b"row\n");
        assert!(moved.join("cmd-1.txt").is_file());
    }

    #[test]
    fn a_symlinked_state_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).unwrap();
        let link = tmp.path().join("link");
        symlink(&target, &link).unwrap();
        let state = StateDir::open(&link);
        let e = state.append("audit-x.tsv").unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }

    #[test]
    fn anything_but_a_lone_regular_file_is_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path());
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        symlink(&victim, tmp.path().join("sym.tsv")).unwrap();
        std::fs::hard_link(&victim, tmp.path().join("hard.tsv")).unwrap();
        std::fs::create_dir(tmp.path().join("dir.tsv")).unwrap();
        let fifo =
            std::ffi::CString::new(tmp.path().join("fifo.tsv").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for (name, why) in [
            ("sym.tsv", "symlink"),
            ("hard.tsv", "more than one link"),
            ("dir.tsv", "directory"),
            ("fifo.tsv", "not a regular file"),
        ] {
            let e = state.append(name).unwrap_err();
            assert!(e.to_string().contains(why), "{name}: {e}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let e = state.create_new("sym.tsv").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn entries_are_listed_and_removed_through_the_handle() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path());
        state
            .create_new("cmd-1.txt")
            .unwrap()
            .write_all(b"abc")
            .unwrap();
        state.create_new("cmd-2.txt").unwrap();
        let mut names: Vec<(String, i64)> = state
            .entries()
            .unwrap()
            .into_iter()
            .map(|(name, stat)| (name, stat.st_size))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [("cmd-1.txt".to_owned(), 3), ("cmd-2.txt".to_owned(), 0)]
        );
        state.remove("cmd-1.txt").unwrap();
        assert_eq!(state.entries().unwrap().len(), 1);
        assert_eq!(
            state.remove("cmd-1.txt").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn the_log_stays_open_and_follows_its_name_and_day() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path());
        let log = tmp.path().join("audit-1.tsv");
        state
            .append_log("audit-1.tsv", "audit-2.tsv", b"a\n")
            .unwrap();
        // Its mode taken away: the open log still takes rows, and gets its mode back.
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o000)).unwrap();
        state
            .append_log("audit-1.tsv", "audit-2.tsv", b"b\n")
            .unwrap();
        assert_eq!(log.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        // Moved away: the name is opened anew; a new day is a new file.
        std::fs::rename(&log, tmp.path().join("moved")).unwrap();
        state
            .append_log("audit-1.tsv", "audit-2.tsv", b"c\n")
            .unwrap();
        state
            .append_log("audit-2.tsv", "audit-3.tsv", b"d\n")
            .unwrap();
        let read = |name: &str| std::fs::read_to_string(tmp.path().join(name)).unwrap();
        assert_eq!(
            (read("moved"), read("audit-1.tsv"), read("audit-2.tsv")),
            ("a\nb\n".into(), "c\n".into(), "d\n".into())
        );
    }

    #[test]
    fn created_files_and_dirs_are_the_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("new/state");
        let state = StateDir::open(&path);
        state.create_new("cmd-1.txt").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o700);
        assert_eq!(mode(&path.join("cmd-1.txt")), 0o600);
        let sub = state.subdir("tmp").unwrap();
        assert_eq!(mode(&sub), 0o700);
        assert_eq!(state.subdir("tmp").unwrap(), sub);
        std::fs::write(path.join("file"), "").unwrap();
        assert!(state.subdir("file").is_err());
    }
}
