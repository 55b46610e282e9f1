//! Which log files to read, opening one safely, and reading a state dir's rows.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use super::entry::{Entry, digits, shown};
use super::{Error, Query};

impl Query {
    /// The log files in `dir` to read, oldest first. In a listing, a name that starts
    /// with `audit-` but is not exactly `audit-YYYY-MM-DD.tsv` with a real date is
    /// reported to `err`, under `named` (how `dir` is shown), and skipped.
    fn files(&self, dir: &Path, named: &Path, err: &mut impl Write) -> Result<Vec<PathBuf>, Error> {
        let today = chrono::Utc::now().date_naive();
        if let (None, None, false) = (self.date, self.since, self.all) {
            return Ok(vec![log_path(dir, today)]);
        }
        if let Some(date) = self.date {
            return Ok(vec![log_path(dir, date)]);
        }
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Read {
            path: named.to_owned(),
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
                named.display(),
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
enum Log {
    Missing,
    /// A directory, a FIFO, a device…: never read.
    NotAFile,
    /// Only when strict: a symbolic link, not followed.
    Symlink,
    File(File),
}

/// Opens a log if it is a regular file, without blocking should it be a FIFO. A
/// symbolic link is followed, unless `strict`.
fn open_log(path: &Path, strict: bool) -> io::Result<Log> {
    let look = if strict {
        std::fs::symlink_metadata(path)
    } else {
        std::fs::metadata(path)
    };
    match look {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Log::Missing),
        Err(e) => return Err(e),
        Ok(meta) => {
            if let Some(refused) = refused(&meta) {
                return Ok(refused);
            }
        }
    }
    let nofollow = if strict { libc::O_NOFOLLOW } else { 0 };
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | nofollow)
        .open(path)
    {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Log::Missing),
        Err(e) if strict && e.raw_os_error() == Some(libc::ELOOP) => return Ok(Log::Symlink),
        opened => opened?,
    };
    // It may have been replaced between the two looks.
    Ok(refused(&file.metadata()?).unwrap_or(Log::File(file)))
}

/// Why a file cannot be read as a log, if it cannot.
fn refused(meta: &Metadata) -> Option<Log> {
    if meta.file_type().is_symlink() {
        Some(Log::Symlink)
    } else if !meta.is_file() {
        Some(Log::NotAFile)
    } else {
        None
    }
}

/// One state dir's rows that pass the query, read as they come: its files oldest
/// first, each from its first row to its last complete one, one file open at a time.
pub(super) struct Source {
    files: std::vec::IntoIter<PathBuf>,
    /// How the state dir is named on stderr: its path, or with `--users` the parent's
    /// joined with the user's name as [`shown`].
    named: PathBuf,
    /// With `--users`: a symbolic link is not followed, and a log with more than one
    /// hard link is named on stderr.
    strict: bool,
    capacity: usize,
    open: Option<Open>,
    line: Vec<u8>,
    /// With `--users`, the user's directory, held open: the paths read name it as
    /// `/proc/self/fd/N`, so that it cannot be swapped for a link meanwhile.
    _handle: Option<File>,
}

/// The file being read, as it is named on stderr, and its last line number.
struct Open {
    named: PathBuf,
    reader: BufReader<File>,
    number: u64,
}

impl Source {
    /// The logs of the state dir `dir`, named `named` on stderr. Odd names in it are
    /// reported to `err`; logs that do not exist are left out.
    pub(super) fn new(
        query: &Query,
        dir: &Path,
        named: PathBuf,
        handle: Option<File>,
        err: &mut impl Write,
    ) -> Result<Source, Error> {
        let mut files = query.files(dir, &named, err)?;
        files.retain(|path| path.symlink_metadata().is_ok());
        Ok(Source {
            files: files.into_iter(),
            named,
            strict: handle.is_some(),
            capacity: 256 * 1024,
            open: None,
            line: Vec::new(),
            _handle: handle,
        })
    }

    /// Whether there is no log to read.
    pub(super) fn is_empty(&self) -> bool {
        self.files.len() == 0 && self.open.is_none()
    }

    /// Reads with a buffer of this many bytes.
    pub(super) fn buffer(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// The next row that passes the query, if any is left. Malformed rows, and files
    /// that are not read, are reported to `err`.
    pub(super) fn next(
        &mut self,
        query: &Query,
        err: &mut impl Write,
    ) -> Result<Option<Entry>, Error> {
        loop {
            let Some(open) = self.open.as_mut() else {
                let Some(path) = self.files.next() else {
                    return Ok(None);
                };
                self.open = self.open(&path, err)?;
                continue;
            };
            self.line.clear();
            let read = open.reader.read_until(b'\n', &mut self.line);
            let n = read.map_err(|source| Error::Read {
                path: open.named.clone(),
                source,
            })?;
            // End of file, or a row still being written: skipped.
            if n == 0 || self.line.last() != Some(&b'\n') {
                self.open = None;
                continue;
            }
            open.number += 1;
            self.line.pop();
            let parsed = std::str::from_utf8(&self.line)
                .map_err(|_| "not UTF-8".to_owned())
                .and_then(Entry::parse);
            match parsed {
                Ok(row) if query.keeps(&row) => return Ok(Some(row)),
                Ok(_) => {}
                Err(why) => {
                    let _ = writeln!(
                        err,
                        "{}:{}: malformed row skipped: {why}",
                        open.named.display(),
                        open.number
                    );
                }
            }
        }
    }

    /// Opens the log at `path`; `None` if it is missing or reported and skipped.
    fn open(&self, path: &Path, err: &mut impl Write) -> Result<Option<Open>, Error> {
        let named = match path.file_name() {
            Some(name) => self.named.join(name),
            None => path.to_owned(),
        };
        let why = match open_log(path, self.strict) {
            Ok(Log::File(file)) => {
                self.links(&file, &named, err);
                let reader = BufReader::with_capacity(self.capacity, file);
                let number = 0;
                return Ok(Some(Open {
                    named,
                    reader,
                    number,
                }));
            }
            Ok(Log::Missing) => return Ok(None),
            Ok(Log::NotAFile) => "not a regular file",
            Ok(Log::Symlink) => "a symbolic link, not followed",
            Err(source) => {
                return Err(Error::Read {
                    path: named,
                    source,
                });
            }
        };
        let _ = writeln!(err, "{}: skipped: {why}", named.display());
        Ok(None)
    }

    /// When strict, warns of a log with more than one hard link: the server does not
    /// write to one, and its rows may be another user's log too. It is read all the same.
    fn links(&self, file: &File, named: &Path, err: &mut impl Write) {
        let links = file.metadata().map_or(1, |meta| meta.nlink());
        if self.strict && links > 1 {
            let _ = writeln!(
                err,
                "{}: read, but it has {links} hard links: its rows may be in another \
                 user's log too",
                named.display()
            );
        }
    }
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
