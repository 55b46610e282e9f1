//! The exit codes that mean something of their own, in answers and in the audit log.
//! Every other code is the command's.

/// Refused by the rm guard; nothing ran.
pub const BLOCKED: i32 = -1;

/// The command could not be run (a missing workdir, a failed spawn).
pub const FAILURE: i32 = 1;

/// Stopped by its timeout, as `timeout(1)` reports it.
pub const TIMEOUT: i32 = 124;

/// Cancelled by the client (128 + SIGINT, as for Ctrl-C).
pub const CANCELLED: i32 = 130;

/// Killed by SIGKILL (128 + 9): how the memory limit (`--max-memory`) ends a command,
/// whose answer then says so.
pub const KILLED: i32 = 137;

/// Stopped because the server shuts down (128 + SIGTERM).
pub const SHUTDOWN: i32 = 143;
