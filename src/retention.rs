//! The state dir stays bounded: old overflow files are removed, and audit logs too
//! when the operator asks for it.
//!
//! After each overflow, at start-up and every hour, the oldest `cmd-N.txt`,
//! `cmd-N.bin` (binary output), `stderr-N.txt` and `cmd-N.bg.txt` are removed until those left are within the byte
//! budget and none is older than the age limit. Only some are kept whatever their
//! size, as the server's overflow spiller says: the files named in its
//! [`KEEP_RECENT`] newest answers (at start-up, the most recent files there), the ones
//! its running commands are still writing, and the ones another server on the same
//! state dir made in the last [`GRACE`] (it may be about to name them); and the output
//! file of a background job still running (its writer holds a lock on it, whichever
//! server on the state dir that is). Everything else past the budget goes at once, in
//! a burst too. A file another server removed first is simply gone. Audit logs are the
//! record: they are kept unless `--audit-retention-days` is set.

use std::time::{Duration, SystemTime};

use chrono::{NaiveDate, Utc};

use crate::state::StateDir;

pub use crate::overflow::{GRACE, KEEP_RECENT, is_background_name, is_overflow_name};

/// What the state dir may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Bytes of overflow files kept, beyond the ones always kept.
    pub overflow_bytes: u64,
    /// Overflow files older than this are removed.
    pub overflow_age: Duration,
    /// Audit logs of days older than this many are removed; `None` keeps them all.
    pub audit_days: Option<u64>,
}

/// What one pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub files: u64,
    pub bytes: u64,
    pub audit_logs: u64,
}

/// An overflow file, as a pass sees it.
#[derive(Debug)]
struct Overflow {
    name: String,
    bytes: u64,
    age: Duration,
}

/// One pass over the state dir at `now`; an overflow file (its name and age) that
/// `spared` holds is never removed.
pub fn prune(
    state: &StateDir,
    retention: &Retention,
    spared: &mut dyn FnMut(&str, Duration) -> bool,
    now: SystemTime,
) -> Pruned {
    let entries = match state.entries() {
        Ok(entries) => entries,
        Err(e) => {
            tracing::debug!(error = %e, "state dir not listed for retention");
            return Pruned::default();
        }
    };
    let mut overflows = Vec::new();
    let mut audit_logs = Vec::new();
    for (name, stat) in entries {
        if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
            continue;
        }
        if is_overflow_name(&name) {
            let modified = SystemTime::UNIX_EPOCH
                + Duration::new(stat.st_mtime.max(0) as u64, stat.st_mtime_nsec as u32);
            let age = now.duration_since(modified).unwrap_or_default();
            let bytes = stat.st_size.max(0) as u64;
            overflows.push(Overflow { name, bytes, age });
        } else if let Some(day) = audit_day(&name) {
            audit_logs.push((name, day, reserved_past_end(&stat)));
        }
    }
    let mut pruned = prune_overflows(state, retention, spared, overflows);
    let today = Utc::now().date_naive();
    for (name, day, reserved) in audit_logs {
        let age = today.signed_duration_since(day).num_days();
        if retention.audit_days.is_some_and(|days| age > days as i64) {
            if remove(state, &name) {
                pruned.audit_logs += 1;
            }
        } else if reserved && age >= 2 {
            // No row goes to it any more (yesterday's may still get a late one).
            if let Err(e) = state.release_room(&name) {
                tracing::debug!(log = name, error = %e, "room past an old log not given back");
            }
        }
    }
    if pruned != Pruned::default() {
        tracing::info!(
            files = pruned.files,
            bytes = pruned.bytes,
            audit_logs = pruned.audit_logs,
            "state dir pruned"
        );
    }
    pruned
}

/// Removes the oldest overflow files that are not kept, until both limits hold.
fn prune_overflows(
    state: &StateDir,
    retention: &Retention,
    spared: &mut dyn FnMut(&str, Duration) -> bool,
    mut files: Vec<Overflow>,
) -> Pruned {
    // Oldest first.
    files.sort_by_key(|f| std::cmp::Reverse(f.age));
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    let mut pruned = Pruned::default();
    for file in &files {
        let kept = spared(&file.name, file.age);
        let due = file.age > retention.overflow_age || total > retention.overflow_bytes;
        if kept || !due || (is_background_name(&file.name) && state.in_use(&file.name)) {
            continue;
        }
        if remove(state, &file.name) {
            pruned.files += 1;
            pruned.bytes += file.bytes;
        }
        total -= file.bytes;
    }
    pruned
}

/// Removes `name`; false when it was gone already or could not be removed.
fn remove(state: &StateDir, name: &str) -> bool {
    match state.remove(name) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            tracing::warn!(file = name, error = %e, "cannot remove an old state file");
            false
        }
    }
}

/// Whether a file has room reserved past its end (see [`crate::state`]): more than
/// 64 KiB past the block of its last byte.
fn reserved_past_end(stat: &libc::stat) -> bool {
    let allocated = stat.st_blocks.max(0) as u64 * 512;
    let used = (stat.st_size.max(0) as u64).next_multiple_of(4096);
    allocated > used + 64 * 1024
}

/// The day of `audit-YYYY-MM-DD.tsv`.
fn audit_day(name: &str) -> Option<NaiveDate> {
    let date = name.strip_prefix("audit-")?.strip_suffix(".tsv")?;
    (date.len() == 10)
        .then(|| NaiveDate::parse_from_str(date, "%Y-%m-%d").ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state dir with `count` overflow files of `bytes` each, the first the oldest,
    /// one second apart, ending `newest_age` ago.
    fn state_with(
        count: usize,
        bytes: usize,
        newest_age: Duration,
    ) -> (tempfile::TempDir, StateDir) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(dir.path());
        let now = SystemTime::now();
        for n in 1..=count {
            let path = dir.path().join(format!("cmd-{n}.txt"));
            std::fs::write(&path, vec![b'x'; bytes]).unwrap();
            let age = newest_age + Duration::from_secs((count - n) as u64);
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(now - age).unwrap();
        }
        (dir, state)
    }

    fn left(dir: &tempfile::TempDir) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_by_key(|n| n[4..n.len() - 4].parse::<u32>().unwrap_or(0));
        names
    }

    fn retention(bytes: u64) -> Retention {
        Retention {
            overflow_bytes: bytes,
            overflow_age: Duration::from_secs(7 * 86_400),
            audit_days: None,
        }
    }

    fn nothing(_: &str, _: Duration) -> bool {
        false
    }

    #[test]
    fn the_oldest_go_until_the_budget_holds_and_the_spared_stay() {
        let (dir, state) = state_with(30, 1000, Duration::from_secs(3600));
        let pruned = prune(&state, &retention(25_000), &mut nothing, SystemTime::now());
        assert_eq!((pruned.files, pruned.bytes), (5, 5000));
        assert_eq!(left(&dir).first().unwrap(), "cmd-6.txt");
        // A budget of nothing keeps only what is spared, however recent the rest.
        let newest: Vec<String> = (11..=30).map(|n| format!("cmd-{n}.txt")).collect();
        let mut spared = |name: &str, _: Duration| newest.iter().any(|n| n == name);
        prune(&state, &retention(0), &mut spared, SystemTime::now());
        assert_eq!(left(&dir), newest);
        prune(&state, &retention(0), &mut nothing, SystemTime::now());
        assert!(left(&dir).is_empty());
    }

    #[test]
    fn the_spared_are_asked_with_each_files_age() {
        let (dir, state) = state_with(25, 1000, Duration::from_secs(3600));
        let mut ages = Vec::new();
        let mut spared = |name: &str, age: Duration| {
            ages.push(age);
            name == "cmd-1.txt"
        };
        prune(&state, &retention(0), &mut spared, SystemTime::now());
        assert_eq!(left(&dir), ["cmd-1.txt"]);
        assert!(
            ages.iter().all(|age| *age >= Duration::from_secs(3599)),
            "{ages:?}"
        );
    }

    #[test]
    fn the_file_of_a_running_job_stays() {
        use std::os::fd::AsRawFd;
        let (dir, state) = state_with(25, 1000, Duration::from_secs(3600));
        let path = dir.path().join("cmd-1.bg.txt");
        std::fs::write(&path, "old").unwrap();
        let writer = std::fs::File::options().append(true).open(&path).unwrap();
        writer
            .set_modified(SystemTime::now() - Duration::from_secs(8 * 86_400))
            .unwrap();
        // SAFETY: flock on a descriptor this test owns, as the job's writer holds it.
        assert_eq!(unsafe { libc::flock(writer.as_raw_fd(), libc::LOCK_EX) }, 0);
        prune(&state, &retention(0), &mut nothing, SystemTime::now());
        assert!(path.exists());
        assert_eq!(left(&dir).len(), 1);
        // The job is over: its file goes like any other.
        drop(writer);
        prune(&state, &retention(0), &mut nothing, SystemTime::now());
        assert!(!path.exists());
        assert!(left(&dir).is_empty());
    }

    #[test]
    fn expired_files_go_whatever_the_budget() {
        let (dir, state) = state_with(25, 10, Duration::from_secs(8 * 86_400));
        let pruned = prune(
            &state,
            &retention(u64::MAX),
            &mut nothing,
            SystemTime::now(),
        );
        assert_eq!(pruned.files, 25);
        assert!(left(&dir).is_empty());
    }

    #[test]
    fn audit_logs_stay_unless_a_retention_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(dir.path());
        let today = Utc::now().date_naive();
        for days in [0, 1, 2, 10] {
            let day = today - chrono::Duration::days(days);
            std::fs::write(
                dir.path()
                    .join(format!("audit-{}.tsv", day.format("%Y-%m-%d"))),
                "",
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("audit-notes.tsv"), "").unwrap();
        prune(&state, &retention(0), &mut nothing, SystemTime::now());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
        let keep_two = Retention {
            audit_days: Some(1),
            ..retention(0)
        };
        let pruned = prune(&state, &keep_two, &mut nothing, SystemTime::now());
        assert_eq!(pruned.audit_logs, 2);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn the_room_past_an_old_log_is_given_back_and_the_recent_ones_keep_theirs() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(dir.path());
        let today = Utc::now().date_naive();
        let name = |days: i64| {
            let day = today - chrono::Duration::days(days);
            format!("audit-{}.tsv", day.format("%Y-%m-%d"))
        };
        for days in [-1, 0, 1, 2, 10] {
            let path = dir.path().join(name(days));
            std::fs::write(&path, "row\n").unwrap();
            let file = std::fs::File::options().append(true).open(&path).unwrap();
            if let Err(e) = crate::state::reserve(&file, 4, 1 << 20) {
                eprintln!("skipped: this filesystem cannot reserve room ({e})");
                return;
            }
        }
        prune(&state, &retention(0), &mut nothing, SystemTime::now());
        for days in [-1, 0, 1, 2, 10] {
            let path = dir.path().join(name(days));
            let room = std::fs::metadata(&path).unwrap().blocks() * 512;
            assert_eq!(std::fs::read(&path).unwrap(), b"row\n");
            let given_back = days >= 2;
            assert_eq!(
                room < 64 * 1024,
                given_back,
                "{days} days old: {room} bytes"
            );
        }
    }

    #[test]
    fn names() {
        for yes in ["cmd-1.txt", "stderr-42.txt", "cmd-7.bg.txt", "cmd-7.bin"] {
            assert!(is_overflow_name(yes), "{yes}");
        }
        for no in [
            "cmd-.txt",
            "cmd-1.txt.bak",
            "cmd-x.txt",
            "audit-2026-01-01.tsv",
            "cmd-1",
            "cmd-.bg.txt",
            "stderr-1.bg.txt",
            "cmd-1.bg.txt.bak",
            "stderr-1.bin",
        ] {
            assert!(!is_overflow_name(no), "{no}");
        }
    }
}
