//! Start-up environment injection from `/proc/1/environ`.
//!
//! In the container the server runs in, the platform's variables reach PID 1 but not
//! the MCP server that LibreChat spawns. Each variable that this process lacks is
//! added, so commands see them, unless a [`Filter`] keeps its name out (in LibreChat's
//! own container PID 1 is LibreChat, and its secrets are in that environment). The
//! server's own environment is never filtered. This runs in `main` before the tokio
//! runtime starts any thread, which is what makes `std::env::set_var` sound here.

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

/// Which names may be injected: globs with `*` (any run) and `?` (any one character).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// When not empty, only matching names are injected.
    pub include: Vec<String>,
    /// Matching names are never injected; wins over `include`.
    pub exclude: Vec<String>,
}

impl Filter {
    pub fn allows(&self, name: &str) -> bool {
        let matches = |globs: &[String]| globs.iter().any(|g| glob_match(g.trim(), name));
        !matches(&self.exclude) && (self.include.is_empty() || matches(&self.include))
    }
}

/// What the injection did, for the start-up log (counts only, never values).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    pub injected: usize,
    pub excluded: usize,
}

/// Adds the variables of [`SOURCE`] that this process lacks and `filter` allows.
/// Unreadable or absent: nothing happens.
///
/// # Safety
///
/// Must be called while the process has a single thread (before any runtime starts).
pub unsafe fn inject(filter: &Filter) -> Injected {
    let Ok(blob) = std::fs::read(SOURCE) else {
        return Injected::default();
    };
    let candidates = missing(parse(&blob), |key| std::env::var_os(key).is_some());
    let mut counts = Injected::default();
    for (key, value) in &candidates {
        if !filter.allows(&key.to_string_lossy()) {
            counts.excluded += 1;
            continue;
        }
        // SAFETY: the caller guarantees that no other thread exists yet.
        unsafe { std::env::set_var(key, value) };
        counts.injected += 1;
    }
    counts
}

/// `*` matches any run of characters, `?` any one; everything else itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    // Where the last `*` was, and the name position it is matching up to.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((at, matched)) => {
                    pi = at + 1;
                    ni = matched + 1;
                    star = Some((at, matched + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
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
    fn globs() {
        for (pattern, name) in [
            ("JWT_SECRET", "JWT_SECRET"),
            ("JWT_*", "JWT_REFRESH_SECRET"),
            ("*_API_KEY", "OPENAI_API_KEY"),
            ("OPENID_*", "OPENID_"),
            ("A?C", "ABC"),
            ("*", ""),
            ("*A*B*", "xxAyyBzz"),
        ] {
            assert!(glob_match(pattern, name), "{pattern} {name}");
        }
        for (pattern, name) in [
            ("JWT_SECRET", "JWT_SECRETS"),
            ("*_API_KEY", "API_KEY"),
            ("A?C", "AC"),
            ("OPENID_*", "OPENIDX"),
            ("", "A"),
        ] {
            assert!(!glob_match(pattern, name), "{pattern} {name}");
        }
    }

    #[test]
    fn exclude_wins_over_include() {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        let filter = Filter {
            include: strings(&["JWT_*", "KEEP"]),
            exclude: strings(&["JWT_REFRESH_*"]),
        };
        assert!(filter.allows("JWT_SECRET"));
        assert!(filter.allows("KEEP"));
        assert!(!filter.allows("JWT_REFRESH_SECRET"));
        assert!(!filter.allows("OTHER"));
        assert!(Filter::default().allows("ANYTHING"));
    }

    #[test]
    fn keeps_only_missing_keys_first_wins() {
        let parsed = pairs(&[("HOME", "/x"), ("NEW", "1"), ("NEW", "2"), ("OTHER", "3")]);
        let got = missing(parsed, |key| key == "HOME");
        assert_eq!(got, pairs(&[("NEW", "1"), ("OTHER", "3")]));
    }
}
