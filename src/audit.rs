//! The audit log: one TSV row per call, in a file per UTC day.
//!
//! `<state-dir>/audit-YYYY-MM-DD.tsv`, columns: timestamp, command, exit code,
//! duration in ms, and a fifth, [`BACKGROUND`], only in the row of a call that left a
//! job running. Each row is a single `write` to a file opened for appending, so
//! concurrent calls never interleave. The file is opened through the state dir's
//! handle and never through a symlink or a hard link (see [`StateDir::append`]), and
//! kept open: a command cannot stop the rows by changing a mode. A call whose day's
//! log cannot be opened is refused before it runs ([`ready`]); a write that fails
//! after the call ran is a warning on stderr that carries the row, and the call's
//! answer says so.
//!
//! A full disk does not take the rows: room is reserved in the day's log ahead of
//! them, and the next day's log is made with room in it when the day's is opened
//! (see [`StateDir::open_log`]).

use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Datelike, Timelike, Utc};

use crate::state::StateDir;

pub mod view;

/// The fifth column of the row of a call that left a job running in the background.
pub const BACKGROUND: &str = "background";

/// One call, as it is logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    pub at: DateTime<Utc>,
    pub command: &'a str,
    pub code: i32,
    pub ms: u128,
    /// The call was answered while a job it started still ran and wrote to its pipes.
    pub background: bool,
}

impl Row<'_> {
    /// The row as written, with its newline.
    pub fn to_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}{}\n",
            Timestamp(self.at),
            escape(self.command),
            self.code,
            self.ms,
            if self.background {
                format!("\t{BACKGROUND}")
            } else {
                String::new()
            }
        )
    }
}

/// A row's time, as `%Y-%m-%dT%H:%M:%S%.3fZ` (written out: chrono reads a format
/// string anew each time, on every call's path).
struct Timestamp(DateTime<Utc>);

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.0;
        // A leap second has a nanosecond count of a second or more.
        let (leap, nanos) = (
            at.nanosecond() / 1_000_000_000,
            at.nanosecond() % 1_000_000_000,
        );
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            at.year(),
            at.month(),
            at.day(),
            at.hour(),
            at.minute(),
            at.second() + leap,
            nanos / 1_000_000
        )
    }
}

/// The name of the day's log file.
pub fn file_name(at: DateTime<Utc>) -> String {
    format!(
        "audit-{:04}-{:02}-{:02}.tsv",
        at.year(),
        at.month(),
        at.day()
    )
}

/// The name of the next day's log file.
fn next_file_name(at: DateTime<Utc>) -> String {
    file_name(at.checked_add_days(chrono::Days::new(1)).unwrap_or(at))
}

/// The day's log file in `dir`.
pub fn path(dir: &Path, at: DateTime<Utc>) -> PathBuf {
    dir.join(file_name(at))
}

/// Appends `row` to its day's file in the state dir, which the state dir keeps open
/// (see [`StateDir::append_log`]).
pub fn append(state: &StateDir, row: &Row<'_>) -> io::Result<()> {
    let (name, next) = (file_name(row.at), next_file_name(row.at));
    state.append_log(&name, &next, row.to_line().as_bytes())
}

/// Whether a row could be written now: the day's log opens (or is open already).
/// A call whose row could not be written is not run.
pub fn ready(state: &StateDir) -> io::Result<()> {
    let now = Utc::now();
    let name = file_name(now);
    if state.holds_log(&name) {
        return Ok(());
    }
    state.open_log(&name, &next_file_name(now)).map(drop)
}

/// Appends `row`, or warns on stderr why it could not, with the row itself, so that
/// nothing is lost; the error is for the call's answer to say so too.
pub fn record(state: &StateDir, row: &Row<'_>) -> io::Result<()> {
    let written = append(state, row);
    if let Err(e) = &written {
        tracing::warn!(
            dir = %state.path().display(),
            error = %e,
            row = row.to_line().trim_end(),
            "audit row not written"
        );
    }
    written
}

/// Escapes a command so that a row stays one line for any line splitter (awk,
/// Python's `str.splitlines()`, JavaScript) and the command can be recovered exactly:
/// `\` → `\\`, tab → `\t`, newline → `\n`, CR → `\r`, every other C0 control
/// character and DEL → `\xHH`, and U+0085, U+2028, U+2029 → `\uHHHH`.
pub fn escape(command: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(command.len());
    for c in command.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0'..='\x1f' | '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            '\u{85}' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Why a field could not be unescaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad escape at byte {at}")]
pub struct BadEscape {
    pub at: usize,
}

/// The inverse of [`escape`].
pub fn unescape(field: &str) -> Result<String, BadEscape> {
    let mut out = String::with_capacity(field.len());
    let mut rest = field.char_indices();
    while let Some((at, c)) = rest.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let bad = BadEscape { at };
        let hex = |rest: &mut std::str::CharIndices<'_>, digits: usize| {
            let text: String = rest.by_ref().take(digits).map(|(_, c)| c).collect();
            (text.len() == digits)
                .then(|| u32::from_str_radix(&text, 16).ok())
                .flatten()
                .and_then(char::from_u32)
        };
        let decoded = match rest.next().map(|(_, c)| c) {
            Some('\\') => '\\',
            Some('t') => '\t',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('x') => hex(&mut rest, 2).ok_or(bad)?,
            Some('u') => hex(&mut rest, 4).ok_or(bad)?,
            _ => return Err(bad),
        };
        out.push(decoded);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 4, 26, 14, 32, 1).unwrap() + chrono::Duration::milliseconds(234)
    }

    #[test]
    fn row_format() {
        let row = Row {
            at: at(),
            command: "git pull origin dev",
            code: 0,
            ms: 536,
            background: false,
        };
        assert_eq!(
            row.to_line(),
            "2026-04-26T14:32:01.234Z\tgit pull origin dev\t0\t536\n"
        );
        let left_running = Row {
            command: "python3 -m http.server &",
            background: true,
            ..row
        };
        assert_eq!(
            left_running.to_line(),
            "2026-04-26T14:32:01.234Z\tpython3 -m http.server &\t0\t536\tbackground\n"
        );
    }

    #[test]
    fn escaping_is_reversible_and_one_line() {
        for command in [
            "a\tb",
            "a\nb",
            "a\r\nb",
            "back\\slash",
            "\\n literal",
            "x\\",
            "é\t✓",
        ] {
            let escaped = escape(command);
            assert!(!escaped.contains(['\t', '\n', '\r']), "{escaped:?}");
            assert_eq!(unescape(&escaped).unwrap(), command);
        }
        assert_eq!(escape("a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(
            escape("v\x0bf\x0cfs\x1c\x1d\x1e\x7f\u{85}\u{2028}\u{2029}\0"),
            "v\\x0bf\\x0cfs\\x1c\\x1d\\x1e\\x7f\\u0085\\u2028\\u2029\\x00"
        );
        for bad in ["\\", "a\\q", "\\x4", "\\xzz", "\\u12", "\\ud800"] {
            assert!(unescape(bad).is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn unescape_inverts_escape(command in "\\PC*|[\\x00-\\x20\\x7f\\u{85}\\u{2028}\\u{2029}\\\\a-z]{0,40}") {
            let escaped = escape(&command);
            // No line splitter finds a break in the field.
            proptest::prop_assert_eq!(escaped.lines().count(), usize::from(!escaped.is_empty()));
            let breaks = escaped.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'));
            proptest::prop_assert!(!breaks, "a line break survived in {:?}", escaped);
            proptest::prop_assert_eq!(unescape(&escaped).unwrap(), command);
        }
    }

    proptest::proptest! {
        /// The times written out by hand read as chrono's formats would have them.
        #[test]
        fn times_are_written_as_chrono_formats_them(secs in 0i64..253_402_300_799, nanos in 0u32..2_000_000_000) {
            let Some(at) = DateTime::<Utc>::from_timestamp(secs, nanos) else {
                return Ok(());
            };
            proptest::prop_assert_eq!(Timestamp(at).to_string(), at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
            proptest::prop_assert_eq!(file_name(at), format!("audit-{}.tsv", at.format("%Y-%m-%d")));
        }
    }

    #[test]
    fn daily_file_name_is_utc() {
        let dir = Path::new("/s");
        assert_eq!(path(dir, at()), Path::new("/s/audit-2026-04-26.tsv"));
    }

    #[test]
    fn append_creates_dir_and_appends() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new/state");
        let state = StateDir::open(&dir);
        append(
            &state,
            &Row {
                at: at(),
                command: "one",
                code: 0,
                ms: 1,
                background: false,
            },
        )
        .unwrap();
        append(
            &state,
            &Row {
                at: at(),
                command: "two",
                code: -1,
                ms: 0,
                background: false,
            },
        )
        .unwrap();
        let text = std::fs::read_to_string(path(&dir, at())).unwrap();
        assert_eq!(
            text,
            "2026-04-26T14:32:01.234Z\tone\t0\t1\n2026-04-26T14:32:01.234Z\ttwo\t-1\t0\n"
        );
    }

    #[test]
    fn unwritable_dir_is_an_error_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let state = StateDir::open(&file);
        assert!(
            append(
                &state,
                &Row {
                    at: at(),
                    command: "x",
                    code: 0,
                    ms: 0,
                    background: false
                }
            )
            .is_err()
        );
        let recorded = record(
            &state,
            &Row {
                at: at(),
                command: "x",
                code: 0,
                ms: 0,
                background: false,
            },
        );
        assert!(recorded.is_err());
    }
}
