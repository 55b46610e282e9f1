//! Which log files to read, and opening one safely.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use super::entry::{digits, shown};
use super::{Error, Query};

impl Query {
    /// The log files to read, oldest first. In a listing, a name that starts with
    /// `audit-` but is not exactly `audit-YYYY-MM-DD.tsv` with a real date is reported to
    /// `err` and skipped.
    pub(super) fn files(&self, err: &mut impl Write) -> Result<Vec<PathBuf>, Error> {
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
pub(super) enum Log {
    Missing,
    /// A directory, a FIFO, a device…: never read.
    NotAFile,
    File(File),
}

/// Opens a log if it is a regular file (a symbolic link is followed), without
/// blocking should it be a FIFO.
pub(super) fn open_log(path: &Path) -> io::Result<Log> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names() {
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
    }
}
