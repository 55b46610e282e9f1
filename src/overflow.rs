//! Overflow files: the full output of a stream too long to show whole, in the state
//! dir as `cmd-N.txt` (stdout) and `stderr-N.txt` (stderr).

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::retention::{GRACE, KEEP_RECENT, is_overflow_name};
use crate::state::StateDir;

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
///
/// It also knows which files retention must spare ([`Spiller::spares`]): the ones
/// named in its [`KEEP_RECENT`] newest answers, the ones its commands are still
/// writing, and the ones another server made in the last [`GRACE`].
#[derive(Debug)]
pub struct Spiller {
    state: Arc<StateDir>,
    next_stdout: AtomicU64,
    next_stderr: AtomicU64,
    files: Mutex<Files>,
}

/// The overflow files a spiller knows of.
#[derive(Debug, Default)]
struct Files {
    /// The files of the newest answers that named any, the newest first.
    answers: VecDeque<Vec<String>>,
    /// Every file this spiller made that is still there (as of the last pass).
    made: HashSet<String>,
    /// The files this spiller made that no answer has named yet: being written.
    unnamed: HashSet<String>,
}

impl Spiller {
    /// A spiller of `state`, which spares the [`KEEP_RECENT`] most recent overflow
    /// files already there as if its last answers had named them: a model may still
    /// read what a previous server (a restart) told it to.
    pub fn new(state: Arc<StateDir>) -> Arc<Spiller> {
        let mut existing: Vec<((i64, i64), String)> = state
            .entries()
            .unwrap_or_default()
            .into_iter()
            .filter(|(name, _)| is_overflow_name(name))
            .map(|(name, stat)| ((stat.st_mtime, stat.st_mtime_nsec), name))
            .collect();
        existing.sort_unstable_by(|a, b| b.cmp(a));
        let answers = existing
            .into_iter()
            .take(KEEP_RECENT)
            .map(|(_, name)| vec![name])
            .collect();
        Arc::new(Spiller {
            state,
            next_stdout: AtomicU64::new(1),
            next_stderr: AtomicU64::new(1),
            files: Mutex::new(Files {
                answers,
                ..Files::default()
            }),
        })
    }

    /// An answer named `names`: they join the newest answers' files, and are no
    /// longer being written.
    pub fn named(&self, names: &[String]) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        for name in names {
            files.unnamed.remove(name);
        }
        files.answers.push_front(names.to_vec());
        files.answers.truncate(KEEP_RECENT);
    }

    /// Whether retention must keep the overflow file `name`, `age` old.
    pub fn spares(&self, name: &str, age: Duration) -> bool {
        let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.answers.iter().flatten().any(|n| n == name)
            || files.unnamed.contains(name)
            || (age < GRACE && !files.made.contains(name))
    }

    /// The files it made that are still there, as far as it knows.
    pub fn made(&self) -> HashSet<String> {
        let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.made.clone()
    }

    /// Forgets the files it made that are gone: those of `before` (what [`made`]
    /// said when a pass started) that the pass did not find (`seen`); the ones it
    /// removed are forgotten by the next.
    ///
    /// [`made`]: Spiller::made
    pub fn forget_gone(&self, before: &HashSet<String>, seen: &HashSet<String>) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let gone = |name: &String| before.contains(name) && !seen.contains(name);
        files.made.retain(|name| !gone(name));
        files.unnamed.retain(|name| !gone(name));
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
        loop {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let name = format!("{prefix}-{n}.txt");
            match self.state.create_new(&name) {
                Ok(file) => {
                    let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
                    files.made.insert(name.clone());
                    files.unnamed.insert(name.clone());
                    return Ok((file, self.dir().join(name)));
                }
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
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-1.txt")).unwrap(),
            "old"
        );
    }
}
