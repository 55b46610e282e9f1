//! A row of a log, read strictly, and text made safe for a terminal.

use std::borrow::Cow;
use std::fmt::Write as _;

use chrono::NaiveDate;

use crate::audit::{BACKGROUND, BadEscape, escape, unescape};
use crate::exit::BLOCKED;

/// One row of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The timestamp as written.
    pub at: String,
    /// The command as written (escaped), raw characters included.
    pub escaped: String,
    pub exit: i32,
    pub ms: u64,
    /// The call left a job running in the background (the fifth column).
    pub background: bool,
}

impl Entry {
    /// Parses one line (without its newline).
    pub fn parse(line: &str) -> Result<Entry, String> {
        let mut fields = line.split('\t');
        let (Some(at), Some(command), Some(exit), Some(ms), fifth, None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err("expected 4 tab-separated fields, or 5".to_owned());
        };
        let background = match fifth {
            None => false,
            Some(BACKGROUND) => true,
            Some(other) => return Err(format!("bad fifth field \"{}\"", shown(other))),
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
            background,
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
pub(super) fn unsafe_char(c: char) -> bool {
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
pub(super) fn shield(text: &str) -> Cow<'_, str> {
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
pub(super) fn shown_field(escaped: &str) -> Cow<'_, str> {
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
pub(super) fn failed(exit: i32) -> bool {
    exit != 0 && exit != BLOCKED
}

/// The number written by exactly these ASCII digits.
/// (At most 9 of them: the fields of a date and a time.)
pub(super) fn digits(text: &[u8]) -> Option<u32> {
    if text.is_empty() || text.len() > 9 {
        return None;
    }
    text.iter().try_fold(0, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
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
            background: bool,
        ) {
            let at = DateTime::<Utc>::from_timestamp(secs, ms * 1_000_000).unwrap();
            let line = crate::audit::Row { at, command: &command, code, ms: took.into(), background }.to_line();
            let row = Entry::parse(line.strip_suffix('\n').unwrap()).unwrap();
            proptest::prop_assert_eq!(row.background, background);
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
    fn canonical_integers() {
        for good in ["0", "7", "-1", "-2147483648", "124"] {
            assert!(canonical_integer(good, true), "{good}");
        }
        for bad in ["", "+7", " 7", "7 ", "07", "-0", "-07", "--1", "-", "0x7"] {
            assert!(!canonical_integer(bad, true), "{bad:?}");
        }
        assert!(!canonical_integer("-5", false));
    }
}
