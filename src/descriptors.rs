//! The open-file budget (`RLIMIT_NOFILE`): what the server holds is kept within its
//! descriptor limit, so that the limit refuses new sessions (503) and never fails a
//! call of a session already in with `EMFILE`.
//!
//! The limit is shared by what the server holds at start, the commands running at once
//! ([`PER_COMMAND`] each), the connections that have not authenticated yet (the
//! strangers, a quarter of the limit at most) and the sessions ([`PER_SESSION`] each:
//! a connection, and its user's state dir and audit log). What is left once the rest
//! is set aside bounds the sessions held at once; at run time a new session is let in
//! only while the descriptors open leave that room.

use std::io;

/// Descriptors one running command may hold: its pipes, pidfd, cgroup files, its
/// spawning slot's, its overflow and tail files. One call measured 14.
pub const PER_COMMAND: usize = 16;

/// Descriptors one session may hold: the connection it talks on, and its user's state
/// dir and day's audit log (shared by the user's sessions). A user's cgroups keep no
/// file open between their calls.
pub const PER_SESSION: usize = 3;

/// Descriptors set aside beyond those counted: the logs, a retention pass, reading
/// `/proc`, the users' mapping file.
pub const SPARE: usize = 32;

/// The soft limit on open files now (1024 when it cannot be read).
pub fn soft_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit to write.
    match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX),
        _ => 1024,
    }
}

/// Descriptors this process has open now (not counting the one that reads them).
pub fn open_now() -> io::Result<usize> {
    let entries = std::fs::read_dir("/proc/self/fd")?.count();
    Ok(entries.saturating_sub(1))
}

/// Commands that may run at once within `limit`: `wanted`, or fewer when the limit
/// cannot hold them in half of what it leaves beyond [`SPARE`] and `held` (what is
/// open at start); never fewer than one.
pub fn commands_at_once(wanted: u32, limit: usize, held: usize) -> u32 {
    let room = limit.saturating_sub(held + SPARE) / 2 / PER_COMMAND;
    let room = u32::try_from(room).unwrap_or(u32::MAX).max(1);
    wanted.min(room)
}

/// The descriptors of one HTTP server: its limit and what is set aside in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// `RLIMIT_NOFILE`'s soft limit.
    pub limit: usize,
    /// Open when serving started.
    pub held: usize,
    /// Set aside for the commands that may run at once.
    pub commands: usize,
    /// Set aside for the connections that have not authenticated yet.
    pub strangers: usize,
}

/// A new session cannot be held within the descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the open-file limit (RLIMIT_NOFILE {limit}) is reached: {open} descriptors are open and {reserved} are kept for running commands and new connections"
)]
pub struct Full {
    pub limit: usize,
    pub open: usize,
    pub reserved: usize,
}

impl Budget {
    /// The budget of `limit` with `held` open now, `commands` running at once and
    /// `strangers` unauthenticated connections at most.
    pub fn new(limit: usize, held: usize, commands: usize, strangers: usize) -> Budget {
        Budget {
            limit,
            held,
            commands: commands * PER_COMMAND,
            strangers,
        }
    }

    /// Set aside for the commands, the strangers and [`SPARE`]: never a session's.
    pub fn reserved(&self) -> usize {
        self.commands + self.strangers + SPARE
    }

    /// The sessions the limit can hold at once.
    pub fn sessions(&self) -> usize {
        self.limit.saturating_sub(self.held + self.reserved()) / PER_SESSION
    }

    /// Whether one more session fits while `open` descriptors are open: what is open
    /// (the running commands', the strangers' included) plus what is set aside.
    pub fn admits_session(&self, open: usize) -> Result<(), Full> {
        if open + PER_SESSION + self.reserved() <= self.limit {
            return Ok(());
        }
        Err(Full {
            limit: self.limit,
            open,
            reserved: self.reserved(),
        })
    }

    /// Whether a connection just accepted as descriptor `fd` leaves the running
    /// commands their share and half the spare. Descriptors are numbered from the
    /// lowest free one, so `fd` open ones at least are below it.
    pub fn admits_connection(&self, fd: usize) -> bool {
        fd + self.commands + SPARE / 2 < self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_fewer_only_when_the_limit_cannot_hold_them() {
        assert_eq!(commands_at_once(64, 1 << 20, 20), 64);
        // (256 - 20 - 32) / 2 / 16 = 6.
        assert_eq!(commands_at_once(64, 256, 20), 6);
        assert_eq!(commands_at_once(4, 256, 20), 4);
        assert_eq!(commands_at_once(64, 40, 20), 1);
    }

    #[test]
    fn a_session_is_let_in_while_it_fits_beside_what_is_set_aside() {
        let budget = Budget::new(256, 20, 6, 64);
        assert_eq!(budget.reserved(), 6 * 16 + 64 + 32);
        assert_eq!(budget.sessions(), (256 - 20 - 192) / PER_SESSION);
        let last = 256 - 192 - PER_SESSION;
        assert_eq!(budget.admits_session(last), Ok(()));
        let full = budget.admits_session(last + 1).unwrap_err();
        assert_eq!((full.limit, full.open, full.reserved), (256, last + 1, 192));
        assert!(full.to_string().contains("RLIMIT_NOFILE 256"), "{full}");
        // Connections may use the strangers' share, never the commands'.
        assert!(budget.admits_connection(256 - 96 - 16 - 1));
        assert!(!budget.admits_connection(256 - 96 - 16));
    }
}
