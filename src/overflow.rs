//! Overflow files: the full output of a stream too long to show whole, in the state
//! dir as `cmd-N.txt` (stdout) and `stderr-N.txt` (stderr), binary stdout as
//! `cmd-N.bin`, and what a background job writes after its call was answered, as
//! `cmd-N.bg.txt`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::state::StateDir;

/// How the name of a background job's output file ends: `cmd-N.bg.txt`.
pub const BACKGROUND_SUFFIX: &str = ".bg.txt";

/// Which stream a sink captures; stdout spills to `cmd-N.txt`, stderr to `stderr-N.txt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Hands out spill files that never overwrite an existing one.
///
/// N counts up from 1 per prefix; a name that exists (a restarted server, a second
/// server on the same state dir) is skipped by creating each file exclusively,
/// through the state dir's handle (see [`StateDir::create_new`]).
#[derive(Debug)]
pub struct Spiller {
    state: Arc<StateDir>,
    next_stdout: AtomicU64,
    next_stderr: AtomicU64,
    next_background: AtomicU64,
}

impl Spiller {
    pub fn new(state: Arc<StateDir>) -> Arc<Spiller> {
        Arc::new(Spiller {
            state,
            next_stdout: AtomicU64::new(1),
            next_stderr: AtomicU64::new(1),
            next_background: AtomicU64::new(1),
        })
    }

    pub fn dir(&self) -> &Path {
        self.state.path()
    }

    /// Removes an overflow file this spiller created, through the state dir's handle.
    pub fn discard(&self, path: &Path) {
        if let Some(name) = path.file_name().and_then(|n| n.to_str())
            && let Err(e) = self.state.remove(name)
        {
            tracing::debug!(file = name, error = %e, "overflow file not removed");
        }
    }

    /// Creates the next free `cmd-N.txt` or `stderr-N.txt`.
    pub fn create(&self, stream: Stream) -> io::Result<(File, PathBuf)> {
        let (prefix, counter) = match stream {
            Stream::Stdout => ("cmd", &self.next_stdout),
            Stream::Stderr => ("stderr", &self.next_stderr),
        };
        self.next_free(
            counter,
            |n| format!("{prefix}-{n}.txt"),
            |name| self.state.create_new(name),
        )
    }

    /// Creates the next free `cmd-N.bin`, for binary stdout (N counts with `cmd-N.txt`).
    pub fn create_binary(&self) -> io::Result<(File, PathBuf)> {
        self.next_free(&self.next_stdout, binary_name, |name| {
            self.state.create_new(name)
        })
    }

    /// Creates the next free `cmd-N.bg.txt`, for a background job's output.
    pub fn create_background(&self) -> io::Result<(File, PathBuf)> {
        self.next_free(
            &self.next_background,
            |n| format!("cmd-{n}{BACKGROUND_SUFFIX}"),
            |name| self.state.create_new(name),
        )
    }

    /// Renames the overflow file at `path` (still being written) to the next free
    /// `cmd-N.bin`: stdout that turned out binary after it spilled.
    pub fn rename_binary(&self, path: &Path) -> io::Result<PathBuf> {
        let from = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let ((), to) = self.next_free(&self.next_stdout, binary_name, |name| {
            self.state.link_new(from, name)
        })?;
        self.discard(path);
        Ok(to)
    }

    /// Tries `make` on the names `name(N)` for N from `counter` on, until one is free.
    fn next_free<T>(
        &self,
        counter: &AtomicU64,
        name: impl Fn(u64) -> String,
        make: impl Fn(&str) -> io::Result<T>,
    ) -> io::Result<(T, PathBuf)> {
        loop {
            let name = name(counter.fetch_add(1, Ordering::Relaxed));
            match make(&name) {
                Ok(made) => return Ok((made, self.dir().join(name))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

fn binary_name(n: u64) -> String {
    format!("cmd-{n}.bin")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spiller() -> (tempfile::TempDir, Arc<Spiller>) {
        let dir = tempfile::tempdir().unwrap();
        let spiller = Spiller::new(Arc::new(StateDir::open(dir.path())));
        (dir, spiller)
    }

    #[test]
    fn spill_names_skip_existing_files() {
        let (dir, spiller) = spiller();
        std::fs::write(dir.path().join("cmd-1.txt"), "old").unwrap();
        let (_, first) = spiller.create(Stream::Stdout).unwrap();
        let (_, second) = spiller.create(Stream::Stdout).unwrap();
        let (_, err) = spiller.create(Stream::Stderr).unwrap();
        assert_eq!(first, dir.path().join("cmd-2.txt"));
        assert_eq!(second, dir.path().join("cmd-3.txt"));
        assert_eq!(err, dir.path().join("stderr-1.txt"));
        let (_, background) = spiller.create_background().unwrap();
        assert_eq!(background, dir.path().join("cmd-1.bg.txt"));
        std::fs::write(dir.path().join("cmd-4.bin"), "old").unwrap();
        let (_, binary) = spiller.create_binary().unwrap();
        assert_eq!(binary, dir.path().join("cmd-5.bin"));
        let renamed = spiller.rename_binary(&second).unwrap();
        assert_eq!(renamed, dir.path().join("cmd-6.bin"));
        assert!(!second.exists() && renamed.exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-1.txt")).unwrap(),
            "old"
        );
    }
}
