//! `--users`: the state dir is a parent, and each of its subdirectories is one user's
//! state dir, named by the user.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::entry::shown;
use super::logs::Source;
use super::show::Users;
use super::{Error, Query};

/// The read buffers of all the users together, unless each gets the least.
const BUFFERS: usize = 1024 * 1024;
/// The least read buffer of a user, and the most.
const BUFFER: (usize, usize) = (16 * 1024, 256 * 1024);

/// The logs of every user in `parent` that has any, by name, and the users' names. Each
/// user's directory is opened once, without following a symbolic link, and read
/// through that handle, so that it cannot be swapped for a link meanwhile; its logs
/// are read only if the server could have written them (see `open_log`).
pub(super) fn sources(
    query: &Query,
    parent: &Path,
    err: &mut impl Write,
) -> Result<(Vec<Source>, Users), Error> {
    let mut sources = Vec::new();
    let mut names = Vec::new();
    for (name, handle) in find(parent, err)? {
        let dir = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
        let named = parent.join(shown(&name));
        let source = Source::new(query, &dir, named, Some(handle), err)?;
        if !source.is_empty() {
            sources.push(source);
            names.push(name);
        }
    }
    let each = (BUFFERS / sources.len().max(1)).clamp(BUFFER.0, BUFFER.1);
    for source in &mut sources {
        source.buffer(each);
    }
    Ok((sources, Users::new(names)))
}

/// The users' directories in `parent`, by name, each with its name (bytes that are not
/// UTF-8 as U+FFFD) and opened. A symbolic link is reported and not followed, anything
/// else that is not a directory is no user.
fn find(parent: &Path, err: &mut impl Write) -> Result<Vec<(String, File)>, Error> {
    let entries = std::fs::read_dir(parent).map_err(|source| Error::Read {
        path: parent.to_owned(),
        source,
    })?;
    let mut dirs = Vec::new();
    let mut links = Vec::new();
    let mut logs_here = false;
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        if kind.is_dir() {
            dirs.push(name);
        } else if kind.is_symlink() {
            links.push(name);
        } else {
            logs_here |= name.as_bytes().starts_with(b"audit-");
        }
    }
    if logs_here {
        let _ = writeln!(
            err,
            "{}: its own audit-* files are not read: with --users, each subdirectory is \
             one user's state dir",
            parent.display()
        );
    }
    links.sort();
    for name in links {
        let named = parent.join(shown(&name.to_string_lossy()));
        let _ = writeln!(
            err,
            "{}: skipped: a symbolic link, not followed",
            named.display()
        );
    }
    dirs.sort();
    open_users(parent, dirs, err)
}

/// Opens the users' directories `dirs` in `parent`; one that cannot be opened is named
/// on stderr and skipped, unless descriptors run out.
fn open_users(
    parent: &Path,
    dirs: Vec<OsString>,
    err: &mut impl Write,
) -> Result<Vec<(String, File)>, Error> {
    // Each user's directory, and then its log of the moment, are open at once.
    allow_open_files(2 * dirs.len() as u64 + 64);
    let mut users = Vec::new();
    for name in dirs {
        let text = name.to_string_lossy().into_owned();
        let named = parent.join(shown(&text));
        match open_dir(&parent.join(&name)) {
            Ok(handle) => users.push((text, handle)),
            // Not this user's doing: no user is left out without failing.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                return Err(Error::Read {
                    path: named,
                    source: e,
                });
            }
            Err(e) => {
                let _ = writeln!(err, "{}: skipped: {e}", named.display());
            }
        }
    }
    Ok(users)
}

/// Opens a directory, never through a symbolic link.
fn open_dir(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Lifts the soft limit on open files towards `wanted`, as far as the hard limit lets.
fn allow_open_files(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for the kernel to fill, then to read.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= wanted {
            return;
        }
        limit.rlim_cur = wanted.min(limit.rlim_max);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
}
