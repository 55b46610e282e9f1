//! forge-bash: an MCP server with one tool, `run(command)`, over stdio or Streamable
//! HTTP.
//!
//! # Layout
//!
//! A `run` call flows through these modules in this order:
//!
//! - [`guard`]: the rm guard. A chain parser refuses any command that would run `rm`;
//!   nothing of a refused chain runs.
//! - [`exec`]: Layer 1. `bash -c` in the workdir, in its own process group, with stdin
//!   at `/dev/null`, a timeout and an output cap. It streams both pipes through
//!   [`capture`], which keeps only what Layer 2 can show, finds the [`keylines`] of a
//!   long stream as it streams, and spills the whole of it to an [`overflow`] file.
//!   [`contain`] finds and kills every process of a call (cgroup, group, marker), and
//!   its watchdog does so when the server dies. With `--sandbox`, [`sandbox`] confines
//!   each command with Landlock. What a call's [`background`] job writes after the
//!   answer goes to a file in the state dir that the answer names.
//! - [`present`]: Layer 2. Binary guard, the overflow view (head, key lines, tail),
//!   stderr block and the `[exit:N | Xms]` footer, as one pure function. Output with
//!   escape sequences, CRs or backspaces is shown as [`render`] renders it, as a
//!   terminal would. Exit codes with a meaning of their own are in [`exit`].
//! - [`audit`]: one row per call in a daily TSV file.
//!
//! [`state`] is the state dir: overflow files and audit logs are created only through
//! its directory handle, never through a symlink; [`retention`] keeps it bounded.
//!
//! [`server`] ties them into an rmcp `ServerHandler`; [`stdio`] is its transport, so
//! that piped input is fully answered before exit, malformed lines get a JSON-RPC
//! error ([`check`] judges each message) and SIGTERM stops every running command
//! cleanly. A call's progress notifications carry the last line it wrote ([`tail`]).
//! [`backlog`] bounds what waits for a client that does not read. `http`
//! (the default `http` feature) serves the same server over Streamable HTTP, behind
//! a bearer token and the same checks, with a [`workspace`] per user; a root server
//! runs each user's commands under a uid of their own ([`users`]). [`metrics`] counts
//! calls where they end, for the HTTP service's `/metrics`.
//! [`config`] and [`environ`] are read once at start-up; [`unattended`] is what every
//! command's environment gets so that no editor, pager or prompt waits for a person.

pub mod audit;
pub mod background;
pub mod backlog;
pub mod capture;
pub mod check;
pub mod config;
pub mod contain;
pub mod descriptors;
pub mod environ;
pub mod exec;
pub mod exit;
pub mod guard;
#[cfg(feature = "http")]
pub mod http;
pub mod keylines;
pub mod metrics;
pub mod overflow;
pub mod present;
pub mod render;
pub mod retention;
pub mod sandbox;
pub mod server;
pub mod state;
pub mod stdio;
pub mod tail;
pub mod unattended;
pub mod users;
pub mod worker;
pub mod workspace;
