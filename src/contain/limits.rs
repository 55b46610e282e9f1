//! What one user's commands may consume: memory (`--max-memory`) and processor
//! (`--max-cpu`), and how they run below the server (a lower cpu weight, `nice`, the
//! best-effort IO class at its lowest level, `oom_score_adj` 1000).

use std::path::Path;

/// The nice level of every command: below the server's own threads.
pub const NICE: libc::c_int = 10;

/// The IO priority of every command: best-effort class (2), lowest level (7).
pub const IOPRIO: libc::c_int = (2 << 13) | 7;

/// The `oom_score_adj` of every command: the kernel's OOM killer takes it first.
pub const OOM_SCORE_ADJ: &str = "1000";

/// The weight of all commands together against the server's own cgroup (cgroup v1
/// `cpu.shares`; the server's threads weigh 1024 each): below the server.
pub const COMMANDS_SHARES: u32 = 512;

/// The weight of each user's commands among users: equal for all.
pub const USER_SHARES: u32 = 1024;

/// The cgroup v2 weights: all commands against the server, and each user.
pub const COMMANDS_WEIGHT: u32 = 50;
pub const USER_WEIGHT: u32 = 100;

/// The period of `--max-cpu`'s quota, in microseconds.
pub const CPU_PERIOD_US: u64 = 100_000;

/// What one user's commands may consume.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Bytes all of one user's commands may hold at once; `None`: no bound.
    pub memory: Option<u64>,
    /// Cores one user's commands may use at once; `None`: no bound.
    pub cpu: Option<f64>,
}

impl Limits {
    /// `--max-memory` and `--max-cpu` as given: no memory flag takes the default (half
    /// of what the server may use), `0` is no bound.
    pub fn new(memory: Option<Size>, cpu: Option<f64>) -> Limits {
        let memory = match memory {
            None => default_memory(),
            Some(Size(0)) => None,
            Some(Size(n)) => Some(n),
        };
        Limits {
            memory,
            cpu: cpu.filter(|c| *c > 0.0),
        }
    }

    /// `--max-cpu` as a cgroup quota per [`CPU_PERIOD_US`], in microseconds.
    pub fn cpu_quota_us(&self) -> Option<u64> {
        // A thousandth of a core at least, as the kernel wants 1 ms.
        self.cpu
            .map(|cores| ((cores * CPU_PERIOD_US as f64) as u64).max(1_000))
    }
}

/// A size in bytes: digits, optionally followed by `K`, `M` or `G` (powers of 1024,
/// an optional `B` or `iB` after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl std::str::FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Size, String> {
        let t = s.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (number, unit) = t.split_at(digits);
        let bad = || format!("{s:?}: a size is bytes, or a number with K, M or G (e.g. 512M, 2G)");
        let n: u64 = number.parse().map_err(|_| bad())?;
        let shift = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            _ => return Err(bad()),
        };
        n.checked_mul(1 << shift).map(Size).ok_or_else(bad)
    }
}

/// `268435456` → `256 MiB`, `1073741824` → `1 GiB`.
pub fn human(n: u64) -> String {
    const KIB: u64 = 1024;
    for (unit, size) in [("GiB", KIB * KIB * KIB), ("MiB", KIB * KIB), ("KiB", KIB)] {
        if n >= size && n.is_multiple_of(size) && (size > KIB || n < KIB * KIB) {
            return format!("{} {unit}", n / size);
        }
    }
    if n >= KIB * KIB {
        let (unit, size) = if n >= KIB * KIB * KIB {
            ("GiB", KIB * KIB * KIB)
        } else {
            ("MiB", KIB * KIB)
        };
        return format!("{:.1} {unit}", n as f64 / size as f64);
    }
    format!("{n} bytes")
}

/// Half of the memory the server may use: its memory cgroup's limit, else the
/// machine's memory.
pub fn default_memory() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = own_memory_limit(&own).or_else(mem_total)?;
    Some(limit / 2)
}

/// The limit of the server's memory cgroup (v1 `memory.limit_in_bytes`, or v2
/// `memory.max`), where it is below the machine's memory.
fn own_memory_limit(own: &str) -> Option<u64> {
    let total = mem_total().unwrap_or(u64::MAX);
    let read =
        |path: &Path| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        let file = if controllers.split(',').any(|c| c == "memory") {
            Path::new("/sys/fs/cgroup/memory")
                .join(path)
                .join("memory.limit_in_bytes")
        } else if controllers.is_empty() {
            Path::new("/sys/fs/cgroup").join(path).join("memory.max")
        } else {
            continue;
        };
        if let Some(limit) = read(&file).filter(|&l| l < total) {
            return Some(limit);
        }
    }
    None
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_or_without_a_unit() {
        assert_eq!("256M".parse(), Ok(Size(256 << 20)));
        assert_eq!("1g".parse(), Ok(Size(1 << 30)));
        assert_eq!("512KiB".parse(), Ok(Size(512 << 10)));
        assert_eq!("4096".parse(), Ok(Size(4096)));
        assert_eq!("0".parse(), Ok(Size(0)));
        for bad in ["", "M", "12T", "-1", "1.5G", "99999999999999999999G"] {
            assert!(bad.parse::<Size>().is_err(), "{bad:?} was read");
        }
    }

    #[test]
    fn sizes_are_shown_in_binary_units() {
        assert_eq!(human(256 << 20), "256 MiB");
        assert_eq!(human(1 << 30), "1 GiB");
        assert_eq!(human(300 << 10), "300 KiB");
        assert_eq!(human(1000), "1000 bytes");
        assert_eq!(human(12_341_892 << 10), "11.8 GiB");
        assert_eq!(human((1 << 20) + (1 << 19)), "1.5 MiB");
    }

    #[test]
    fn zero_is_no_bound_and_none_is_half_of_what_the_server_may_use() {
        assert_eq!(Limits::new(Some(Size(0)), None).memory, None);
        assert_eq!(Limits::new(Some(Size(5 << 20)), None).memory, Some(5 << 20));
        let default = Limits::new(None, None).memory.expect("a default");
        assert!(default <= mem_total().unwrap() / 2);
        assert_eq!(Limits::new(None, Some(1.5)).cpu_quota_us(), Some(150_000));
    }
}
