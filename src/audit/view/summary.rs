//! `--summary`: totals, percentiles, the slowest rows, the state dir on disk, and with
//! `--users` the same per user.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Write};
use std::path::Path;

use super::entry::{Entry, failed, shown_field};
use super::show::{Users, View};
use crate::exit::{BLOCKED, CANCELLED, KILLED, SHUTDOWN, TIMEOUT};

/// What the state dir holds on disk, for the summary: the budget at work.
#[derive(Debug, Default)]
pub(super) struct Disk {
    /// Every file under the state dir (the commands' temp dir included), symlinks
    /// not followed.
    bytes: u64,
    overflow_files: u64,
    overflow_bytes: u64,
}

impl Disk {
    /// What is under `root`; with `users`, `root` is the parent of the state dirs,
    /// whose overflow files are one level down.
    pub(super) fn of(root: &Path, users: bool) -> Disk {
        let mut disk = Disk::default();
        let mut dirs = vec![root.to_owned()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let state_dir = if users {
                dir.parent() == Some(root)
            } else {
                dir == root
            };
            for entry in entries.flatten() {
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                if meta.is_dir() {
                    dirs.push(entry.path());
                    continue;
                }
                disk.bytes += meta.len();
                let name = entry.file_name();
                let overflow = name
                    .to_str()
                    .is_some_and(crate::retention::is_overflow_name);
                if state_dir && overflow && meta.is_file() {
                    disk.overflow_files += 1;
                    disk.overflow_bytes += meta.len();
                }
            }
        }
        disk
    }
}

/// How many of the slowest commands the summary lists.
const SLOWEST: usize = 10;

/// The counts of some calls. `calls` = `ok` + `failed` + `blocked`; `timed_out`,
/// `cancelled`, `shut_down` and `killed` (exit 137: the memory limit's kills, and any
/// other SIGKILL of the shell) are parts of `failed`. Durations are counted per
/// distinct value: memory bounded by their number (a few hundred thousand at most, at
/// the 300 s timeout).
#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    ok: u64,
    failed: u64,
    blocked: u64,
    timed_out: u64,
    cancelled: u64,
    shut_down: u64,
    killed: u64,
    durations: BTreeMap<u64, u64>,
}

impl Tally {
    fn add(&mut self, exit: i32, ms: u64) {
        self.calls += 1;
        match exit {
            0 => self.ok += 1,
            BLOCKED => self.blocked += 1,
            exit => {
                debug_assert!(failed(exit));
                self.failed += 1;
            }
        }
        match exit {
            TIMEOUT => self.timed_out += 1,
            CANCELLED => self.cancelled += 1,
            SHUTDOWN => self.shut_down += 1,
            KILLED => self.killed += 1,
            _ => {}
        }
        *self.durations.entry(ms).or_default() += 1;
    }

    /// The smallest duration with at least `p` % of the calls at or below it.
    fn percentile(&self, p: u64) -> u64 {
        if self.calls == 0 {
            return 0;
        }
        let rank = (self.calls * p).div_ceil(100).max(1);
        let mut seen = 0;
        for (&ms, &count) in &self.durations {
            seen += count;
            if seen >= rank {
                return ms;
            }
        }
        0
    }

    fn max(&self) -> u64 {
        self.durations.keys().next_back().copied().unwrap_or(0)
    }
}

/// Totals, percentiles and the slowest rows, overall and with `--users` per user.
pub(super) struct Summary<'a, W: Write> {
    out: &'a mut W,
    disk: Disk,
    all: Tally,
    /// With `--users`: the users, and each one's tally, by source.
    users: Option<(Users, Vec<Tally>)>,
    /// The slowest rows; the heap gives the fastest of them first, to drop it.
    slowest: BinaryHeap<Reverse<Slow>>,
}

/// A row among the slowest: by duration, then the earlier row first.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Slow {
    ms: u64,
    earlier: Reverse<u64>,
    at: String,
    source: usize,
    command: String,
}

impl<'a, W: Write> Summary<'a, W> {
    pub(super) fn new(out: &'a mut W, disk: Disk, users: Option<Users>) -> Self {
        Summary {
            out,
            disk,
            all: Tally::default(),
            users: users.map(|users| {
                let tallies = users.names.iter().map(|_| Tally::default()).collect();
                (users, tallies)
            }),
            slowest: BinaryHeap::new(),
        }
    }
}

impl<W: Write> View for Summary<'_, W> {
    fn row(&mut self, source: usize, row: Entry) -> io::Result<()> {
        self.all.add(row.exit, row.ms);
        if let Some((_, tallies)) = &mut self.users {
            tallies[source].add(row.exit, row.ms);
        }
        self.slowest.push(Reverse(Slow {
            ms: row.ms,
            earlier: Reverse(self.all.calls),
            at: row.at,
            source,
            command: row.escaped,
        }));
        if self.slowest.len() > SLOWEST {
            self.slowest.pop();
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        let mut text = String::new();
        let mut line = |label: &str, value: u64| text.push_str(&format!("{label:<21}{value}\n"));
        let all = &self.all;
        line("calls", all.calls);
        line("ok", all.ok);
        line("failed", all.failed);
        line("blocked", all.blocked);
        line("timed out", all.timed_out);
        line("cancelled", all.cancelled);
        line("stopped at shutdown", all.shut_down);
        line("out of memory/killed", all.killed);
        line("state dir bytes", self.disk.bytes);
        line("overflow files", self.disk.overflow_files);
        line("overflow bytes", self.disk.overflow_bytes);
        text.push_str(&format!(
            "duration ms          p50 {}  p95 {}  max {}\n",
            all.percentile(50),
            all.percentile(95),
            all.max()
        ));
        self.slowest(&mut text);
        self.per_user(&mut text);
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}

impl<W: Write> Summary<'_, W> {
    /// `slowest:` and a line per row, slowest first: duration, time, with `--users` the
    /// user, and the command.
    fn slowest(&mut self, text: &mut String) {
        // Slowest first; `into_sorted_vec` of the reversed rows is exactly that.
        let slowest = std::mem::take(&mut self.slowest).into_sorted_vec();
        if !slowest.is_empty() {
            text.push_str("slowest:\n");
        }
        for Reverse(Slow {
            ms,
            at,
            source,
            command,
            ..
        }) in slowest
        {
            let command = shown_field(&command);
            match &self.users {
                Some((users, _)) => {
                    let (user, width) = (&users.shown[source], users.width);
                    text.push_str(&format!("  {ms:>8}  {at}  {user:<width$}  {command}\n"));
                }
                None => text.push_str(&format!("  {ms:>8}  {at}  {command}\n")),
            }
        }
    }

    /// With `--users`, `users:` and an aligned table of each user with calls: calls,
    /// ok, failed, blocked, and p50, p95 and max duration in ms.
    fn per_user(&self, text: &mut String) {
        const COLUMNS: [&str; 7] = ["calls", "ok", "failed", "blocked", "p50", "p95", "max"];
        let Some((users, tallies)) = &self.users else {
            return;
        };
        let rows: Vec<(&str, Vec<String>)> = (users.shown.iter().zip(tallies))
            .filter(|(_, tally)| tally.calls > 0)
            .map(|(user, t)| {
                let figures = [t.calls, t.ok, t.failed, t.blocked];
                let durations = [t.percentile(50), t.percentile(95), t.max()];
                let figures = figures.iter().chain(&durations).map(u64::to_string);
                (user.as_str(), figures.collect())
            })
            .collect();
        if rows.is_empty() {
            return;
        }
        let name = rows.iter().map(|(user, _)| user.chars().count());
        let name = name.max().unwrap_or(0).max("user".len());
        let widths = COLUMNS.map(|label| label.len());
        let widths: Vec<usize> = (0..COLUMNS.len())
            .map(|c| {
                rows.iter()
                    .map(|(_, f)| f[c].len())
                    .fold(widths[c], usize::max)
            })
            .collect();
        text.push_str("users:\n");
        let header = ("user", COLUMNS.map(str::to_owned).to_vec());
        for (user, figures) in std::iter::once(header).chain(rows) {
            text.push_str(&format!("  {user:<name$}"));
            for (figure, width) in figures.iter().zip(&widths) {
                text.push_str(&format!("  {figure:>width$}"));
            }
            text.push('\n');
        }
    }
}
