//! Start-up environment injection from `/proc/1/environ`.
//!
//! In the container the server runs in, the platform's variables reach PID 1 but not
//! the MCP server that LibreChat spawns. Each variable that this process lacks is
//! added, so commands see them. This runs in `main` before the tokio runtime starts
//! any thread, which is what makes `std::env::set_var` sound here.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// Where the platform's environment is read from.
pub const SOURCE: &str = "/proc/1/environ";

/// Parses a NUL-separated `KEY=VALUE` blob. Entries without `=` or with an empty key
/// are skipped; a value may hold `=`.
pub fn parse(blob: &[u8]) -> Vec<(OsString, OsString)> {
    blob.split(|&b| b == 0)
        .filter_map(|entry| {
            let eq = entry.iter().position(|&b| b == b'=')?;
            if eq == 0 {
                return None;
            }
            let key = OsStr::from_bytes(&entry[..eq]).to_owned();
            let value = OsStr::from_bytes(&entry[eq + 1..]).to_owned();
            Some((key, value))
        })
        .collect()
}

/// The entries of `parsed` whose key `present` does not know, in order, first wins.
pub fn missing(
    parsed: Vec<(OsString, OsString)>,
    present: impl Fn(&OsStr) -> bool,
) -> Vec<(OsString, OsString)> {
    let mut seen = std::collections::HashSet::new();
    parsed
        .into_iter()
        .filter(|(key, _)| !present(key) && seen.insert(key.clone()))
        .collect()
}

/// Adds the variables of [`SOURCE`] that this process lacks. Unreadable or absent:
/// nothing happens.
///
/// # Safety
///
/// Must be called while the process has a single thread (before any runtime starts).
pub unsafe fn inject() -> usize {
    let Ok(blob) = std::fs::read(SOURCE) else {
        return 0;
    };
    let added = missing(parse(&blob), |key| std::env::var_os(key).is_some());
    for (key, value) in &added {
        // SAFETY: the caller guarantees that no other thread exists yet.
        unsafe { std::env::set_var(key, value) };
    }
    added.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn parses_a_sample_blob() {
        let blob = b"PATH=/usr/bin\0HOME=/root\0EMPTY=\0EQ=a=b\0NOEQ\0=nokey\0\0RAILWAY_ENV=prod\0";
        assert_eq!(
            parse(blob),
            pairs(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/root"),
                ("EMPTY", ""),
                ("EQ", "a=b"),
                ("RAILWAY_ENV", "prod"),
            ])
        );
    }

    #[test]
    fn empty_blob_gives_nothing() {
        assert!(parse(b"").is_empty());
    }

    #[test]
    fn keeps_only_missing_keys_first_wins() {
        let parsed = pairs(&[("HOME", "/x"), ("NEW", "1"), ("NEW", "2"), ("OTHER", "3")]);
        let got = missing(parsed, |key| key == "HOME");
        assert_eq!(got, pairs(&[("NEW", "1"), ("OTHER", "3")]));
    }
}
