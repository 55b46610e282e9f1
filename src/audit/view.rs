//! `forge-bash audit`: the operator's view of what agents ran.
//!
//! It streams the daily TSV files a server writes (the one being written included: a
//! last line without its newline is skipped), keeps the rows that pass every filter,
//! and prints them as aligned columns, as JSON Lines, or as a summary. Memory does not
//! grow with the log: the summary counts durations per distinct millisecond value and
//! keeps only the ten slowest rows. Only regular files named exactly
//! `audit-YYYY-MM-DD.tsv`, with a real date, are read; anything else named `audit-…`
//! is reported on stderr and skipped.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use regex_lite::Regex;

use super::{BadEscape, escape, unescape};
use crate::exit::{BLOCKED, CANCELLED, SHUTDOWN, TIMEOUT};

/// The rows to show and how to show them.
#[derive(Debug, Clone, clap::Args)]
pub struct Query {
    /// Directory of the audit logs.
    #[arg(long, env = "FORGE_BASH_STATE_DIR", default_value = "/tmp/forge-bash")]
    pub state_dir: PathBuf,

    /// One day's log (UTC); the default is today's.
    #[arg(long, value_name = "YYYY-MM-DD", group = "when")]
    pub date: Option<NaiveDate>,

    /// Every log from this day (UTC) on.
    #[arg(long, value_name = "YYYY-MM-DD", group = "when")]
    pub since: Option<NaiveDate>,

    /// Every log.
    #[arg(long, group = "when")]
    pub all: bool,

    /// Only calls the rm guard refused (exit -1).
    #[arg(long)]
    pub blocked: bool,

    /// Only failed calls: any non-zero exit but -1, timeouts (124), cancellations (130)
    /// and shutdowns (143) included; `--summary` counts `failed` the same way.
    #[arg(long)]
    pub failed: bool,

    /// Only calls stopped by their timeout (exit 124).
    #[arg(long)]
    pub timed_out: bool,

    /// Only calls cancelled by the client (exit 130).
    #[arg(long)]
    pub cancelled: bool,

    /// Only calls that took at least this many milliseconds.
    #[arg(long, value_name = "MS")]
    pub slow: Option<u64>,

    /// Only commands (unescaped) that match this regular expression.
    #[arg(long, value_name = "REGEX", value_parser = parse_regex)]
    pub grep: Option<Regex>,

    /// JSON Lines: one object per row with `at`, `command`, `exit` and `ms`.
    #[arg(long, conflicts_with = "summary")]
    pub json: bool,

    /// Totals, duration percentiles and the ten slowest commands. Calls are ok (exit 0),
    /// failed (as `--failed` selects them) or blocked; timed out, cancelled and stopped
    /// at shutdown count some of the failed ones again.
    #[arg(long)]
    pub summary: bool,
}

fn parse_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| e.to_string())
}

/// Why the view could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("state dir {0} does not exist")]
    NoStateDir(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write the output: {0}")]
    Write(io::Error),
}

/// One row of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The timestamp as written.
    pub at: String,
    /// The command as written (escaped), raw characters included.
    pub escaped: String,
    pub exit: i32,
    pub ms: u64,
}

impl Entry {
    /// Parses one line (without its newline).
    pub fn parse(line: &str) -> Result<Entry, String> {
        let mut fields = line.split('\t');
        let (Some(at), Some(command), Some(exit), Some(ms), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err("expected 4 tab-separated fields".to_owned());
        };
        if !valid_timestamp(at) {
            return Err(format!("bad timestamp \"{}\"", shown(at)));
        }
        // Only what the writer's `Display` of an i32 and of a duration produces.
        let exit = Some(exit)
            .filter(|exit| canonical_integer(exit, true))
            .and_then(|exit| exit.parse().ok())
            .ok_or_else(|| format!("bad exit code \"{}\"", shown(exit)))?;
        let ms = Some(ms)
            .filter(|ms| canonical_integer(ms, false))
            .and_then(|ms| ms.parse().ok())
            .ok_or_else(|| format!("bad duration \"{}\"", shown(ms)))?;
        unescape(command)
            .map_err(|BadEscape { at }| format!("bad escape in the command at byte {at}"))?;
        Ok(Entry {
            at: at.to_owned(),
            escaped: command.to_owned(),
            exit,
            ms,
        })
    }

    /// The command exactly as it was run.
    pub fn command(&self) -> String {
        unescape(&self.escaped).unwrap_or_default()
    }
}

/// Whether a terminal, a pager or a line splitter could act on `c`: the C0 and C1
/// controls, DEL, the line and paragraph separators, and the bidirectional controls
/// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
fn unsafe_char(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f'
            | '\x7f'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `text` with each [`unsafe_char`] written as `\uhhhh`, an escape that both
/// [`unescape`] and JSON read back as the character.
fn shield(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A command field as the table shows it: as the log holds it if it holds nothing a
/// terminal could act on (the writer's rows), else [`shown`] from the command.
fn shown_field(escaped: &str) -> Cow<'_, str> {
    if escaped.chars().any(unsafe_char) {
        Cow::Owned(shown(&unescape(escaped).unwrap_or_default()))
    } else {
        Cow::Borrowed(escaped)
    }
}

/// Text as the operator's terminal gets it: escaped as in the log, and with every
/// character a terminal could act on as `\uhhhh`. [`unescape`] gives `text` back.
pub fn shown(text: &str) -> String {
    shield(&escape(text)).into_owned()
}

/// Exactly what the writer produces: `2026-04-26T14:32:01.234Z`, a real day and time
/// of day (no leap second: the clock the writer reads never gives one).
fn valid_timestamp(at: &str) -> bool {
    let b = at.as_bytes();
    let shape = b.len() == 24
        && b[23] == b'Z'
        && [4, 7].iter().all(|&i| b[i] == b'-')
        && b[10] == b'T'
        && [13, 16].iter().all(|&i| b[i] == b':')
        && b[19] == b'.';
    if !shape {
        return false;
    }
    let field = |from: usize, to: usize| digits(&b[from..to]);
    let (Some(year), Some(month), Some(day), Some(h), Some(m), Some(s), Some(ms)) = (
        field(0, 4),
        field(5, 7),
        field(8, 10),
        field(11, 13),
        field(14, 16),
        field(17, 19),
        field(20, 23),
    ) else {
        return false;
    };
    i32::try_from(year)
        .ok()
        .and_then(|year| NaiveDate::from_ymd_opt(year, month, day))
        .is_some()
        && h < 24
        && m < 60
        && s < 60
        && ms < 1000
}

/// Whether `field` is an integer as `Display` writes it: ASCII digits, no leading zero
/// but in `0` itself, and a `-` only if `signed` and before a non-zero number. No `+`,
/// no spaces.
fn canonical_integer(field: &str, signed: bool) -> bool {
    let magnitude = match field.strip_prefix('-') {
        Some(rest) if signed && rest != "0" => rest,
        Some(_) => return false,
        None => field,
    };
    let b = magnitude.as_bytes();
    !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b == b"0" || b[0] != b'0')
}

/// What "failed" means, in `--failed` and in `--summary` alike: a non-zero exit other
/// than a block. A timeout, a cancellation or a shutdown is a failure too; a command's
/// own exit 124, 130 or 143 cannot be told apart from them in the log anyway.
fn failed(exit: i32) -> bool {
    exit != 0 && exit != BLOCKED
}

impl Query {
    fn keeps(&self, row: &Entry) -> bool {
        (!self.blocked || row.exit == BLOCKED)
            && (!self.failed || failed(row.exit))
            && (!self.timed_out || row.exit == TIMEOUT)
            && (!self.cancelled || row.exit == CANCELLED)
            && self.slow.is_none_or(|slow| row.ms >= slow)
            && self
                .grep
                .as_ref()
                .is_none_or(|re| re.is_match(&row.command()))
    }

    /// The log files to read, oldest first. In a listing, a name that starts with
    /// `audit-` but is not exactly `audit-YYYY-MM-DD.tsv` with a real date is reported to
    /// `err` and skipped.
    fn files(&self, err: &mut impl Write) -> Result<Vec<PathBuf>, Error> {
        let dir = &self.state_dir;
        if !dir.is_dir() {
            return Err(Error::NoStateDir(dir.clone()));
        }
        let today = chrono::Utc::now().date_naive();
        if let (None, None, false) = (self.date, self.since, self.all) {
            return Ok(vec![log_path(dir, today)]);
        }
        if let Some(date) = self.date {
            return Ok(vec![log_path(dir, date)]);
        }
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Read {
            path: dir.clone(),
            source,
        })?;
        let mut files: Vec<(NaiveDate, PathBuf)> = Vec::new();
        let mut odd = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.as_bytes().starts_with(b"audit-") {
                continue;
            }
            match name.to_str().and_then(log_date) {
                Some(date) if self.since.is_none_or(|since| date >= since) => {
                    files.push((date, entry.path()));
                }
                Some(_) => {}
                None => odd.push(name.to_string_lossy().into_owned()),
            }
        }
        odd.sort();
        for name in odd {
            let _ = writeln!(
                err,
                "{}/{}: skipped: not named audit-YYYY-MM-DD.tsv",
                dir.display(),
                shown(&name)
            );
        }
        files.sort();
        Ok(files.into_iter().map(|(_, path)| path).collect())
    }
}

/// The number written by exactly these ASCII digits.
/// (At most 9 of them: the fields of a date and a time.)
fn digits(text: &[u8]) -> Option<u32> {
    if text.is_empty() || text.len() > 9 {
        return None;
    }
    text.iter().try_fold(0, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

/// The day of a log named exactly `audit-YYYY-MM-DD.tsv`, if that day exists.
fn log_date(name: &str) -> Option<NaiveDate> {
    let day = name
        .strip_prefix("audit-")?
        .strip_suffix(".tsv")?
        .as_bytes();
    if day.len() != 10 || day[4] != b'-' || day[7] != b'-' {
        return None;
    }
    let year = i32::try_from(digits(&day[..4])?).ok()?;
    NaiveDate::from_ymd_opt(year, digits(&day[5..7])?, digits(&day[8..])?)
}

fn log_path(dir: &Path, date: NaiveDate) -> PathBuf {
    dir.join(format!("audit-{}.tsv", date.format("%Y-%m-%d")))
}

/// A log file, opened.
enum Log {
    Missing,
    /// A directory, a FIFO, a device…: never read.
    NotAFile,
    File(File),
}

/// Opens a log if it is a regular file (a symbolic link is followed), without
/// blocking should it be a FIFO.
fn open_log(path: &Path) -> io::Result<Log> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Log::Missing),
        Err(e) => return Err(e),
        Ok(meta) if !meta.is_file() => return Ok(Log::NotAFile),
        Ok(_) => {}
    }
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Log::Missing),
        opened => opened?,
    };
    // It may have been replaced between the two looks.
    Ok(if file.metadata()?.is_file() {
        Log::File(file)
    } else {
        Log::NotAFile
    })
}

/// Runs the query, writing to `out` and reporting malformed rows to `err`.
pub fn run(query: &Query, out: &mut impl Write, err: &mut impl Write) -> Result<(), Error> {
    let mut view: Box<dyn View + '_> = if query.summary {
        Box::new(Summary::new(out, Disk::of(&query.state_dir)))
    } else if query.json {
        Box::new(Json { out })
    } else {
        Box::new(Table { out, header: false })
    };
    for path in query.files(err)? {
        let file = match open_log(&path) {
            Ok(Log::File(file)) => file,
            Ok(Log::Missing) => continue,
            Ok(Log::NotAFile) => {
                let _ = writeln!(err, "{}: skipped: not a regular file", path.display());
                continue;
            }
            Err(source) => return Err(Error::Read { path, source }),
        };
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|source| Error::Read {
                    path: path.clone(),
                    source,
                })?;
            // End of file, or a row still being written: skipped.
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            number += 1;
            line.pop();
            let parsed = std::str::from_utf8(&line)
                .map_err(|_| "not UTF-8".to_owned())
                .and_then(Entry::parse);
            match parsed {
                Ok(row) if query.keeps(&row) => view.row(row).map_err(Error::Write)?,
                Ok(_) => {}
                Err(why) => {
                    let _ = writeln!(
                        err,
                        "{}:{number}: malformed row skipped: {why}",
                        path.display()
                    );
                }
            }
        }
    }
    view.end().map_err(Error::Write)
}

/// A way of printing rows.
trait View {
    fn row(&mut self, row: Entry) -> io::Result<()>;
    fn end(&mut self) -> io::Result<()>;
}

/// Aligned columns: `time  exit  ms  command`, the command as [`shown_field`].
struct Table<'a, W: Write> {
    out: &'a mut W,
    header: bool,
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
struct Json<'a, W: Write> {
    out: &'a mut W,
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
struct Disk {
    /// Every file under the state dir (the commands' temp dir included), symlinks
    /// not followed.
    bytes: u64,
    overflow_files: u64,
    overflow_bytes: u64,
}

impl Disk {
    fn of(root: &Path) -> Disk {
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
struct Summary<'a, W: Write> {
    out: &'a mut W,
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
    fn new(out: &'a mut W, disk: Disk) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    proptest::proptest! {
        /// The strict reader accepts every row the writer can write, exactly.
        #[test]
        fn every_written_row_parses_back(
            secs in 0i64..=253_402_300_799,
            ms in 0u32..1000,
            code: i32,
            took: u64,
            command in "\\PC*",
        ) {
            let at = DateTime::<Utc>::from_timestamp(secs, ms * 1_000_000).unwrap();
            let line = crate::audit::Row { at, command: &command, code, ms: took.into() }.to_line();
            let row = Entry::parse(line.strip_suffix('\n').unwrap()).unwrap();
            proptest::prop_assert_eq!(row.exit, code);
            proptest::prop_assert_eq!(row.ms, took);
            proptest::prop_assert_eq!(row.command(), command);
        }

        /// What the terminal gets holds nothing it could act on, and unescapes back.
        #[test]
        fn shown_is_inert_and_reversible(text in "\\PC*|[\\x00-\\x20\\x7f-\\u{a0}\\u{61c}\\u{200e}\\u{200f}\\u{2028}-\\u{202e}\\u{2066}-\\u{2069}\\\\a-z]{0,40}") {
            let shown = shown(&text);
            let raw: Vec<char> = shown.chars().filter(|&c| unsafe_char(c) || c.is_control()).collect();
            proptest::prop_assert!(raw.is_empty(), "{:?} in {:?}", raw, shown);
            proptest::prop_assert_eq!(unescape(&shown).unwrap(), text);
        }
    }

    #[test]
    fn log_names_and_integers() {
        assert_eq!(
            log_date("audit-2024-02-29.tsv"),
            NaiveDate::from_ymd_opt(2024, 2, 29)
        );
        for odd in [
            "audit-2026-1-3.tsv",
            "audit-+2026-01-04.tsv",
            "audit-2026-13-40.tsv",
            "audit-2025-02-29.tsv",
            "audit-2026-01-04.tsv.bak",
            "audit-2026-01-04",
        ] {
            assert_eq!(log_date(odd), None, "{odd}");
        }
        for good in ["0", "7", "-1", "-2147483648", "124"] {
            assert!(canonical_integer(good, true), "{good}");
        }
        for bad in ["", "+7", " 7", "7 ", "07", "-0", "-07", "--1", "-", "0x7"] {
            assert!(!canonical_integer(bad, true), "{bad:?}");
        }
        assert!(!canonical_integer("-5", false));
    }
}
