//! Background jobs keep their output: when a call is answered while processes of the
//! call still hold its stdout or stderr (`server &`), what they write from then on goes
//! to a file in the state dir, `cmd-N.bg.txt`, and the answer names it.
//!
//! The file holds the bytes as the job wrote them, stdout and stderr in the order they
//! arrive, as a terminal would have shown them; a later call that reads it renders them
//! like any output. It holds at most the output cap: past it every process of the call
//! is stopped. When the job is stopped by the server (the cap, the server stopping, its
//! HTTP session ending), the file ends with a line saying why; a job that ends by
//! itself, or is killed from a later call, leaves the file as it wrote it. While the
//! file is written its writer holds a lock on it, so that no retention pass removes
//! it (see [`crate::retention`]).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::contain::{Call, Stopping, Told};
use crate::overflow::Spiller;

/// What the answer says of a job it leaves running: the line before the footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Background {
    /// The call's process group (its shell's pid): `kill -- -PGID` stops it.
    pub pgid: i32,
    /// The file its output goes to, or why there is none.
    pub file: Result<PathBuf, String>,
    /// The call was answered early (`--yield-after`): the line names a wait of at most
    /// this many seconds.
    pub wait_secs: Option<u64>,
}

impl Background {
    /// The line the answer shows before its footer.
    pub fn line(&self) -> String {
        let pgid = self.pgid;
        let goes = match &self.file {
            Ok(path) => format!("its output goes to {}", path.display()),
            Err(why) => format!("its output is not kept ({why})"),
        };
        let wait = match (&self.file, self.wait_secs) {
            (Ok(path), Some(secs)) => format!(
                "wait for it with: timeout {secs} tail -n +1 --pid={pgid} -f {}; ",
                path.display()
            ),
            _ => String::new(),
        };
        format!(
            "[still running in the background (process group {pgid}); {goes} — {wait}stop it with: kill -- -{pgid}]"
        )
    }
}

/// A command that is only `kill` of process groups, as the answer's line names it:
/// `kill [-SIGNAL | -s SIGNAL | -n NUMBER] [--] -PGID...`. Under the sandbox, the server
/// carries it out when every group is one of its jobs: the command's own `kill` could
/// not reach another call's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    pub signal: libc::c_int,
    pub groups: Vec<libc::pid_t>,
}

impl Kill {
    /// The request `command` makes, or `None` when it is anything more than a `kill`
    /// of groups (quotes, expansions, other commands, a pid that is not a group).
    pub fn parse(command: &str) -> Option<Kill> {
        let mut words = command.split_ascii_whitespace().peekable();
        if words.next()? != "kill" {
            return None;
        }
        let mut signal = None;
        match *words.peek()? {
            "-s" | "-n" => {
                words.next();
                signal = Some(signal_number(words.next()?)?);
            }
            "--" => {}
            word => {
                signal = Some(signal_number(word.strip_prefix('-')?)?);
                words.next();
            }
        }
        let dashes = words.peek() == Some(&"--");
        if dashes {
            words.next();
        } else if signal.is_none() {
            return None;
        }
        let groups = words
            .map(|word| {
                let id = word.strip_prefix('-')?;
                (id.bytes().all(|b| b.is_ascii_digit()) && !id.starts_with('0'))
                    .then(|| id.parse::<libc::pid_t>().ok())
                    .flatten()
            })
            .collect::<Option<Vec<_>>>()?;
        (!groups.is_empty()).then_some(Kill {
            signal: signal.unwrap_or(libc::SIGTERM),
            groups,
        })
    }
}

/// The number of a signal named as bash's `kill` takes it: `TERM`, `SIGTERM`, `15`.
fn signal_number(name: &str) -> Option<libc::c_int> {
    if let Ok(number) = name.parse::<libc::c_int>() {
        return (0..=64).contains(&number).then_some(number);
    }
    let name = name.to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    let number = match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ABRT" => libc::SIGABRT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "TSTP" => libc::SIGTSTP,
        "WINCH" => libc::SIGWINCH,
        _ => return None,
    };
    Some(number)
}

/// Why the server stopped a job; the last line of its file says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The file reached the output cap (in bytes); the call's processes were stopped.
    Capped(u64),
    /// The server, or the call's session, stopped.
    Stopped(Stopping),
    /// A call answered early ended: its exit code and duration, as an answer's footer
    /// shows them; `timed_out` names its timeout in seconds when that ended it.
    Ended {
        code: i32,
        ms: u128,
        timed_out: Option<u64>,
    },
}

impl End {
    /// The line written at the end of the file.
    pub fn line(self) -> String {
        let why = match self {
            End::Ended {
                code,
                ms,
                timed_out,
            } => {
                let timed_out = timed_out
                    .map(|secs| format!("ERROR: Command timed out after {secs} s.\n"))
                    .unwrap_or_default();
                return format!("{timed_out}[exit:{code} | {ms}ms]\n");
            }
            End::Capped(cap) => format!(
                "output limit of {cap} bytes reached; every process of the call was stopped"
            ),
            End::Stopped(Stopping::Server { kept: false }) => {
                "the server stopped; every process of the call was stopped".to_owned()
            }
            End::Stopped(Stopping::Server { kept: true }) => {
                "the server stopped; what the job writes from here on is not kept".to_owned()
            }
            End::Stopped(Stopping::Session) => {
                "the session ended; every process of the call was stopped".to_owned()
            }
        };
        format!("[forge-bash: {why}]\n")
    }
}

/// The output file of one call's background job, written by the call's pipe readers.
#[derive(Debug)]
pub struct Log {
    path: PathBuf,
    cap: u64,
    call: Arc<Call>,
    file: Mutex<Writer>,
    /// Counted in `forge_bash_background_jobs` while the job's output is read.
    _counted: crate::metrics::BackgroundJob,
}

#[derive(Debug)]
struct Writer {
    /// `None` once the log ended (or could not be written): what comes after is read
    /// and dropped.
    file: Option<File>,
    /// Bytes the job wrote, kept or not: past the cap, the call is stopped.
    received: u64,
    last: Option<u8>,
}

impl Log {
    /// Creates the next `cmd-N.bg.txt` for `call`, locked while it is written; `cap`
    /// is the output cap.
    pub fn create(spiller: &Spiller, call: &Arc<Call>, cap: u64) -> io::Result<Arc<Log>> {
        let (file, path) = spiller.create_background()?;
        // SAFETY: flock on a descriptor we own; the lock goes with it.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            spiller.discard(&path);
            return Err(e);
        }
        let log = Arc::new(Log {
            path,
            cap,
            call: call.clone(),
            file: Mutex::new(Writer {
                file: Some(file),
                received: 0,
                last: None,
            }),
            _counted: crate::metrics::BackgroundJob::start(),
        });
        let told = Arc::downgrade(&log);
        call.tell(told);
        Ok(log)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends what a pipe gave. Past the cap, the rest is dropped, the file ends, and
    /// every process of the call is stopped (once).
    pub fn write(&self, chunk: &[u8]) {
        let mut writer = lock(&self.file);
        let before = writer.received;
        writer.received = before.saturating_add(chunk.len() as u64);
        if writer.received <= self.cap {
            writer.put(chunk);
            return;
        }
        if before > self.cap {
            return;
        }
        writer.put(&chunk[..(self.cap - before) as usize]);
        writer.end(End::Capped(self.cap));
        drop(writer);
        tracing::info!(
            cap = self.cap,
            "a background job passed the output cap; stopping the call's processes"
        );
        if let Err(e) = self.call.kill() {
            tracing::warn!(error = %e, "cannot kill the command's processes");
        }
    }

    /// The server stops the job: the file ends with a line saying why. Only the first
    /// end writes.
    pub fn end(&self, why: End) {
        lock(&self.file).end(why);
    }

    /// Writes the line of `why` (the shell of a call answered early ended), and keeps
    /// the file for what processes of the call that still hold its pipes write.
    pub fn note(&self, why: End) {
        lock(&self.file).line(why);
    }
}

impl Told for Log {
    fn stopping(&self, why: Stopping) {
        self.end(End::Stopped(why));
    }
}

impl Writer {
    fn put(&mut self, bytes: &[u8]) {
        let Some(file) = &mut self.file else {
            return;
        };
        if bytes.is_empty() {
            return;
        }
        if let Err(e) = file.write_all(bytes) {
            // A full disk: the file stays as it is; the job goes on.
            tracing::warn!(error = %e, "cannot write a background job's output");
            self.file = None;
            return;
        }
        self.last = bytes.last().copied();
    }

    fn end(&mut self, why: End) {
        self.line(why);
        self.file = None;
    }

    fn line(&mut self, why: End) {
        if self.file.is_none() {
            return;
        }
        if self.last.is_some_and(|b| b != b'\n') {
            self.put(b"\n");
        }
        self.put(why.line().as_bytes());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contain::Containment;
    use crate::state::StateDir;

    #[test]
    fn a_kill_of_groups_is_read_as_bash_reads_it() {
        let kill = |signal, groups: &[i32]| {
            Some(Kill {
                signal,
                groups: groups.to_vec(),
            })
        };
        assert_eq!(Kill::parse("kill -- -4242"), kill(libc::SIGTERM, &[4242]));
        assert_eq!(
            Kill::parse(" kill  --  -4242 -77 "),
            kill(libc::SIGTERM, &[4242, 77])
        );
        assert_eq!(Kill::parse("kill -9 -4242"), kill(libc::SIGKILL, &[4242]));
        assert_eq!(
            Kill::parse("kill -KILL -- -4242"),
            kill(libc::SIGKILL, &[4242])
        );
        assert_eq!(
            Kill::parse("kill -s int -4242"),
            kill(libc::SIGINT, &[4242])
        );
        assert_eq!(Kill::parse("kill -n 0 -- -4242"), kill(0, &[4242]));
        assert_eq!(
            Kill::parse("kill -SIGSTOP -- -4242"),
            kill(libc::SIGSTOP, &[4242])
        );
        for not_only_groups in [
            "kill -4242",
            "kill 4242",
            "kill -- 4242",
            "kill -- -4242 4243",
            "kill -- -0",
            "kill -- -04242",
            "kill -- -1; echo",
            "kill -- -$PGID",
            "kill -- '-4242'",
            "kill -BOGUS -- -4242",
            "kill -99 -- -4242",
            "kill --",
            "kill",
            "killall -- -4242",
            "sudo kill -- -4242",
        ] {
            assert_eq!(Kill::parse(not_only_groups), None, "{not_only_groups}");
        }
    }

    fn log(cap: u64) -> (tempfile::TempDir, Arc<Log>) {
        let dir = tempfile::tempdir().unwrap();
        let spiller = Spiller::new(Arc::new(StateDir::open(dir.path())));
        let call = Arc::new(Containment::without_watchdog()).call();
        let log = Log::create(&spiller, &call, cap).unwrap();
        (dir, log)
    }

    #[test]
    fn the_file_holds_the_bytes_and_ends_once_with_why() {
        let (dir, log) = log(1000);
        assert_eq!(log.path(), dir.path().join("cmd-1.bg.txt"));
        log.write(b"\x1b[31mred\x1b[0m\n");
        log.write(b"no newline");
        log.stopping(Stopping::Session);
        log.stopping(Stopping::Server { kept: false });
        log.write(b"after");
        assert_eq!(
            std::fs::read(log.path()).unwrap(),
            b"\x1b[31mred\x1b[0m\nno newline\n[forge-bash: the session ended; every process of the call was stopped]\n"
        );
    }

    #[test]
    fn the_cap_bounds_what_the_file_receives() {
        let (_dir, log) = log(10);
        log.write(b"0123456");
        log.write(b"789abc");
        log.write(b"more");
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap(),
            "0123456789\n[forge-bash: output limit of 10 bytes reached; every process of the call was stopped]\n"
        );
    }

    #[test]
    fn the_file_is_locked_while_written() {
        let (dir, log) = log(10);
        let state = StateDir::open(dir.path());
        assert!(state.in_use("cmd-1.bg.txt"));
        log.end(End::Capped(10));
        assert!(!state.in_use("cmd-1.bg.txt"));
        assert!(!state.in_use("missing.txt"));
    }

    #[test]
    fn a_call_answered_early_notes_its_end_and_keeps_the_file() {
        let (_dir, log) = log(1000);
        log.write(b"b");
        log.note(End::Ended {
            code: 124,
            ms: 3007,
            timed_out: Some(3),
        });
        log.write(b"from a job still holding the pipe\n");
        log.note(End::Ended {
            code: 0,
            ms: 6003,
            timed_out: None,
        });
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap(),
            "b\nERROR: Command timed out after 3 s.\n[exit:124 | 3007ms]\nfrom a job still holding the pipe\n[exit:0 | 6003ms]\n"
        );
        let line = Background {
            pgid: 42,
            file: Ok(PathBuf::from("/s/cmd-1.bg.txt")),
            wait_secs: Some(45),
        }
        .line();
        assert_eq!(
            line,
            "[still running in the background (process group 42); its output goes to /s/cmd-1.bg.txt — wait for it with: timeout 45 tail -n +1 --pid=42 -f /s/cmd-1.bg.txt; stop it with: kill -- -42]"
        );
    }

    #[test]
    fn the_line_names_the_file_and_the_group() {
        let line = Background {
            pgid: 4242,
            file: Ok(PathBuf::from("/tmp/forge-bash/cmd-7.bg.txt")),
            wait_secs: None,
        }
        .line();
        assert_eq!(
            line,
            "[still running in the background (process group 4242); its output goes to /tmp/forge-bash/cmd-7.bg.txt — stop it with: kill -- -4242]"
        );
        let unkept = Background {
            pgid: 7,
            file: Err("/s: No space left on device".to_owned()),
            wait_secs: None,
        };
        assert_eq!(
            unkept.line(),
            "[still running in the background (process group 7); its output is not kept (/s: No space left on device) — stop it with: kill -- -7]"
        );
    }
}
