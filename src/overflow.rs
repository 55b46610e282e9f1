//! Overflow files: the full output of a stream too long to show whole, in the state
//! dir as `cmd-N.txt` (stdout) and `stderr-N.txt` (stderr), binary stdout as
//! `cmd-N.bin`, and what a background job writes after its call was answered, as
//! `cmd-N.bg.txt`.

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::state::StateDir;

/// How the name of a background job's output file ends: `cmd-N.bg.txt`.
pub const BACKGROUND_SUFFIX: &str = ".bg.txt";

/// Answers whose overflow files retention always keeps, whatever their size: a model
/// reads the file an answer named in its next few calls.
pub const KEEP_RECENT: usize = 20;

/// Overflow files another server on the same state dir made this recently are kept:
/// it may be about to name them in an answer.
pub const GRACE: Duration = Duration::from_secs(5);

/// `cmd-N.txt`, `cmd-N.bin`, `stderr-N.txt` or `cmd-N.bg.txt`.
pub fn is_overflow_name(name: &str) -> bool {
    let plain = (name.strip_prefix("cmd-"))
        .and_then(|rest| {
            rest.strip_suffix(".txt")
                .or_else(|| rest.strip_suffix(".bin"))
        })
        .or_else(|| name.strip_prefix("stderr-")?.strip_suffix(".txt"));
    numbered(plain) || is_background_name(name)
}

/// `cmd-N.bg.txt`: a background job's output.
pub fn is_background_name(name: &str) -> bool {
    let n = name
        .strip_prefix("cmd-")
        .and_then(|rest| rest.strip_suffix(BACKGROUND_SUFFIX));
    numbered(n)
}

/// The N of a name: ASCII digits, at least one.
fn numbered(n: Option<&str>) -> bool {
    n.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

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
    next_background: AtomicU64,
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
            next_background: AtomicU64::new(1),
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
    /// It is this spiller's, being written until an answer names it.
    pub fn create(&self, stream: Stream) -> io::Result<(File, PathBuf)> {
        let (prefix, counter) = match stream {
            Stream::Stdout => ("cmd", &self.next_stdout),
            Stream::Stderr => ("stderr", &self.next_stderr),
        };
        let made = self.next_free(
            counter,
            |n| format!("{prefix}-{n}.txt"),
            |name| self.state.create_new(name),
        )?;
        self.track(&made.1);
        Ok(made)
    }

    /// Creates the next free `cmd-N.bin`, for binary stdout (N counts with `cmd-N.txt`);
    /// this spiller's until an answer names it, as [`Spiller::create`]'s.
    pub fn create_binary(&self) -> io::Result<(File, PathBuf)> {
        let made = self.next_free(&self.next_stdout, binary_name, |name| {
            self.state.create_new(name)
        })?;
        self.track(&made.1);
        Ok(made)
    }

    /// Counts the file at `path` as made by this spiller and not yet named.
    fn track(&self, path: &Path) {
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
            files.made.insert(name.to_owned());
            files.unnamed.insert(name.to_owned());
        }
    }

    /// Creates the next free `cmd-N.bg.txt`, for a background job's output.
    pub fn create_background(&self) -> io::Result<(File, PathBuf)> {
        self.next_free(
            &self.next_background,
            |n| format!("cmd-{n}{BACKGROUND_SUFFIX}"),
            |name| self.state.create_new(name),
        )
    }

    /// Renames the overflow file at `path` (`cmd-N.txt`, still being written) to
    /// `cmd-N.bin`, or the next free `cmd-N.bin` when that one is taken: stdout that
    /// turned out binary after it spilled gets the name it would have had had the
    /// first read shown it binary.
    pub fn rename_binary(&self, path: &Path) -> io::Result<PathBuf> {
        let from = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let same = (from.strip_prefix("cmd-"))
            .and_then(|rest| rest.strip_suffix(".txt"))
            .map(|n| format!("cmd-{n}.bin"));
        let to = match same.map(|name| (self.state.link_new(from, &name), name)) {
            Some((Ok(()), name)) => self.dir().join(name),
            Some((Err(e), _)) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {
                self.next_free(&self.next_stdout, binary_name, |name| {
                    self.state.link_new(from, name)
                })?
                .1
            }
        };
        self.discard(path);
        self.track(&to);
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
        // A spilled cmd-N.txt that turns out binary keeps its N, unless it is taken.
        let renamed = spiller.rename_binary(&second).unwrap();
        assert_eq!(renamed, dir.path().join("cmd-3.bin"));
        assert!(!second.exists() && renamed.exists());
        let (_, third) = spiller.create(Stream::Stdout).unwrap();
        assert_eq!(third, dir.path().join("cmd-6.txt"));
        std::fs::write(dir.path().join("cmd-6.bin"), "old").unwrap();
        let renamed = spiller.rename_binary(&third).unwrap();
        assert_eq!(renamed, dir.path().join("cmd-7.bin"));
        assert!(!third.exists() && renamed.exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-1.txt")).unwrap(),
            "old"
        );
    }
}
