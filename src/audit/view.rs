//! `forge-bash audit`: the operator's view of what agents ran.
//!
//! It streams the daily TSV files a server writes (the one being written included: a
//! last line without its newline is skipped), keeps the rows that pass every filter,
//! and prints them as aligned columns, as JSON Lines, or as a summary. Memory does not
//! grow with the log: the summary counts durations per distinct millisecond value and
//! keeps only the ten slowest rows. Only regular files named exactly
//! `audit-YYYY-MM-DD.tsv`, with a real date, are read; anything else named `audit-…`
//! is reported on stderr and skipped.
//!
//! With `--users`, the state dir is a parent and each subdirectory one user's state
//! dir: every user's rows are merged by timestamp, a row at a time from each user, and
//! shown with the user's name.

mod entry;
mod logs;
mod show;
mod summary;
mod users;

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::path::PathBuf;

use chrono::NaiveDate;
use regex::Regex;

use crate::exit::{BLOCKED, CANCELLED, TIMEOUT};
use entry::failed;
pub use entry::{Entry, shown};
use logs::Source;
use show::{Json, Table, View};
use summary::{Disk, Summary};

/// The rows to show and how to show them.
#[derive(Debug, Clone, clap::Args)]
pub struct Query {
    /// Directory of the audit logs (with `--users`, of the users' state dirs).
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

    /// Only calls answered while a job they started still ran in the background
    /// (`--json` gives these rows `"background": true`).
    #[arg(long)]
    pub background: bool,

    /// Only calls that took at least this many milliseconds.
    #[arg(long, value_name = "MS")]
    pub slow: Option<u64>,

    /// Only commands (unescaped) that match this regular expression.
    #[arg(long, value_name = "REGEX", value_parser = parse_regex)]
    pub grep: Option<Regex>,

    /// The state dir is a parent of state dirs, one per user, each named by its user
    /// (a symbolic link is not followed): rows of all users in time order, with the
    /// user's name in the table, in JSON Lines and per user in the summary.
    #[arg(long)]
    pub users: bool,

    /// JSON Lines: one object per row with `at`, `command`, `exit` and `ms`, with
    /// `--users` `user`, and `"background": true` for a call that left a job running.
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

impl Query {
    fn keeps(&self, row: &Entry) -> bool {
        (!self.blocked || row.exit == BLOCKED)
            && (!self.failed || failed(row.exit))
            && (!self.timed_out || row.exit == TIMEOUT)
            && (!self.cancelled || row.exit == CANCELLED)
            && (!self.background || row.background)
            && self.slow.is_none_or(|slow| row.ms >= slow)
            && self
                .grep
                .as_ref()
                .is_none_or(|re| re.is_match(&row.command()))
    }
}

/// Runs the query, writing to `out` and reporting malformed rows and skipped files to
/// `err`.
pub fn run(query: &Query, out: &mut impl Write, err: &mut impl Write) -> Result<(), Error> {
    let dir = &query.state_dir;
    if !dir.is_dir() {
        return Err(Error::NoStateDir(dir.clone()));
    }
    let (sources, users) = if query.users {
        let (sources, users) = users::sources(query, dir, err)?;
        (sources, Some(users))
    } else {
        (vec![Source::new(query, dir, dir.clone(), None, err)?], None)
    };
    let mut view: Box<dyn View + '_> = if query.summary {
        Box::new(Summary::new(out, Disk::of(dir, query.users), users))
    } else if query.json {
        Box::new(Json::new(out, users))
    } else {
        Box::new(Table::new(out, users))
    };
    merge(query, sources, view.as_mut(), err)?;
    view.end().map_err(Error::Write)
}

/// Shows the rows of every source in time order, as their timestamps sort (the same
/// time: the source first in `sources` first), and those of one source in the order
/// they are read. Each source's logs are in time order already: this holds only one
/// row per source.
fn merge(
    query: &Query,
    mut sources: Vec<Source>,
    view: &mut dyn View,
    err: &mut impl Write,
) -> Result<(), Error> {
    let mut next = BinaryHeap::with_capacity(sources.len());
    for (source, rows) in sources.iter_mut().enumerate() {
        if let Some(row) = rows.next(query, err)? {
            next.push(Reverse(Next { row, source }));
        }
    }
    while let Some(Reverse(Next { row, source })) = next.pop() {
        view.row(source, row).map_err(Error::Write)?;
        if let Some(row) = sources[source].next(query, err)? {
            next.push(Reverse(Next { row, source }));
        }
    }
    Ok(())
}

/// A source's next row, ordered by its timestamp, then by the source.
struct Next {
    row: Entry,
    source: usize,
}

impl Next {
    fn key(&self) -> (&str, usize) {
        (&self.row.at, self.source)
    }
}

impl Ord for Next {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Next {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Next {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Next {}
