//! `forge-bash audit`: the operator's view of what agents ran.
//!
//! It streams the daily TSV files a server writes (the one being written included: a
//! last line without its newline is skipped), keeps the rows that pass every filter,
//! and prints them as aligned columns, as JSON Lines, or as a summary. Memory does not
//! grow with the log: the summary counts durations per distinct millisecond value and
//! keeps only the ten slowest rows. Only regular files named exactly
//! `audit-YYYY-MM-DD.tsv`, with a real date, are read; anything else named `audit-…`
//! is reported on stderr and skipped.

mod entry;
mod logs;
mod show;

use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;

use chrono::NaiveDate;
use regex_lite::Regex;

use crate::exit::{BLOCKED, CANCELLED, TIMEOUT};
use entry::failed;
pub use entry::{Entry, shown};
use logs::{Log, open_log};
use show::{Disk, Json, Summary, Table, View};

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
