//! The table, JSON Lines and the summary.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Write};
use std::path::Path;

use super::entry::{Entry, failed, shield, shown_field, unsafe_char};
use crate::exit::{BLOCKED, CANCELLED, SHUTDOWN, TIMEOUT};

/// A way of printing rows.
pub(super) trait View {
    fn row(&mut self, row: Entry) -> io::Result<()>;
    fn end(&mut self) -> io::Result<()>;
}

/// Aligned columns: `time  exit  ms  command`, the command as [`shown_field`].
pub(super) struct Table<'a, W: Write> {
    pub(super) out: &'a mut W,
    pub(super) header: bool,
}

impl<W: Write> View for Table<'_, W> {
    fn row(&mut self, row: Entry) -> io::Result<()> {
        if !self.header {
            self.header = true;
            writeln!(
                self.out,
                "{:<24}  {:>4}  {:>8}  command",
                "time", "exit", "ms"
            )?;
        }
        writeln!(
            self.out,
            "{:<24}  {:>4}  {:>8}  {}",
            row.at,
            row.exit,
            row.ms,
            shown_field(&row.escaped)
        )
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// JSON Lines with exactly `at`, `command` (unescaped), `exit` and `ms`. Beyond what
/// serde_json escapes, DEL, the C1 controls, the line and paragraph separators and the
/// bidirectional controls are written as `\uhhhh`, so that every line splitter finds
/// one row per line and a pager shows them as text.
pub(super) struct Json<'a, W: Write> {
    pub(super) out: &'a mut W,
}

impl<W: Write> View for Json<'_, W> {
    fn row(&mut self, row: Entry) -> io::Result<()> {
        let command = row.command();
        let inert = !command.chars().any(unsafe_char);
        let object = serde_json::json!({
            "at": row.at,
            "command": command,
            "exit": row.exit,
            "ms": row.ms,
        });
        if inert {
            writeln!(self.out, "{object}")
        } else {
            writeln!(self.out, "{}", shield(&object.to_string()))
        }
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

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
    pub(super) fn of(root: &Path) -> Disk {
        let mut disk = Disk::default();
        let mut dirs = vec![root.to_owned()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
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
                if dir == root && overflow && meta.is_file() {
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

/// Totals, percentiles and the slowest rows, in memory bounded by the number of
/// distinct durations (a few hundred thousand at most, at the 300 s timeout).
/// `calls` = `ok` + `failed` + `blocked`; `timed_out`, `cancelled` and `shut_down` are
/// parts of `failed`.
pub(super) struct Summary<'a, W: Write> {
    pub(super) out: &'a mut W,
    disk: Disk,
    calls: u64,
    ok: u64,
    failed: u64,
    blocked: u64,
    timed_out: u64,
    cancelled: u64,
    shut_down: u64,
    durations: BTreeMap<u64, u64>,
    /// The slowest rows; the heap gives the fastest of them first, to drop it.
    slowest: BinaryHeap<Reverse<Slow>>,
}

/// A row among the slowest: by duration, then the earlier row first.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Slow {
    ms: u64,
    earlier: Reverse<u64>,
    at: String,
    command: String,
}

impl<'a, W: Write> Summary<'a, W> {
    pub(super) fn new(out: &'a mut W, disk: Disk) -> Self {
        Summary {
            out,
            disk,
            calls: 0,
            ok: 0,
            failed: 0,
            blocked: 0,
            timed_out: 0,
            cancelled: 0,
            shut_down: 0,
            durations: BTreeMap::new(),
            slowest: BinaryHeap::new(),
        }
    }
}

impl<W: Write> View for Summary<'_, W> {
    fn row(&mut self, row: Entry) -> io::Result<()> {
        self.calls += 1;
        match row.exit {
            0 => self.ok += 1,
            BLOCKED => self.blocked += 1,
            exit => {
                debug_assert!(failed(exit));
                self.failed += 1;
            }
        }
        match row.exit {
            TIMEOUT => self.timed_out += 1,
            CANCELLED => self.cancelled += 1,
            SHUTDOWN => self.shut_down += 1,
            _ => {}
        }
        *self.durations.entry(row.ms).or_default() += 1;
        self.slowest.push(Reverse(Slow {
            ms: row.ms,
            earlier: Reverse(self.calls),
            at: row.at,
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
        line("calls", self.calls);
        line("ok", self.ok);
        line("failed", self.failed);
        line("blocked", self.blocked);
        line("timed out", self.timed_out);
        line("cancelled", self.cancelled);
        line("stopped at shutdown", self.shut_down);
        line("state dir bytes", self.disk.bytes);
        line("overflow files", self.disk.overflow_files);
        line("overflow bytes", self.disk.overflow_bytes);
        let max = self.durations.keys().next_back().copied().unwrap_or(0);
        text.push_str(&format!(
            "duration ms          p50 {}  p95 {}  max {max}\n",
            self.percentile(50),
            self.percentile(95)
        ));
        // Slowest first; `into_sorted_vec` of the reversed rows is exactly that.
        let slowest = std::mem::take(&mut self.slowest).into_sorted_vec();
        if !slowest.is_empty() {
            text.push_str("slowest:\n");
        }
        for Reverse(Slow {
            ms, at, command, ..
        }) in slowest
        {
            let command = shown_field(&command);
            text.push_str(&format!("  {ms:>8}  {at}  {command}\n"));
        }
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}

impl<W: Write> Summary<'_, W> {
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
}
