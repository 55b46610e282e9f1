//! Overflow files: the full output of a stream too long to show whole, in the state
//! dir as `cmd-N.txt` (stdout) and `stderr-N.txt` (stderr); and what a background job
//! writes after its call was answered, as `cmd-N.bg.txt`.

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
        match stream {
            Stream::Stdout => self.create_next("cmd-", ".txt", &self.next_stdout),
            Stream::Stderr => self.create_next("stderr-", ".txt", &self.next_stderr),
        }
    }

    /// Creates the next free `cmd-N.bg.txt`, for a background job's output.
    pub fn create_background(&self) -> io::Result<(File, PathBuf)> {
        self.create_next("cmd-", BACKGROUND_SUFFIX, &self.next_background)
    }

    fn create_next(
        &self,
        prefix: &str,
        suffix: &str,
        counter: &AtomicU64,
    ) -> io::Result<(File, PathBuf)> {
        loop {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let name = format!("{prefix}{n}{suffix}");
            match self.state.create_new(&name) {
                Ok(file) => return Ok((file, self.dir().join(name))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
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
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-1.txt")).unwrap(),
            "old"
        );
    }
}
