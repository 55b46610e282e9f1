//! End-to-end tests: each spawns the built `forge-bash` binary with its own temporary
//! workdir and state dir and speaks JSON-RPC over its stdin/stdout.

mod support;

// Identity, handshake, piped input and concurrency.
mod protocol;
// The protocol in process over a duplex, with paused time where it helps.
mod in_process;
// Malformed and hostile input.
mod bad_input;
// Flags, environment variables, --help and --version.
mod config;
// /proc/1/environ injection and its filters, with a fake PID 1.
mod environ;
// Layer 1: workdir, stdin, timeout, process groups, background children, exit codes.
mod execution;
// Nothing waits for a person: editors, vim and git prompts end at once.
mod unattended;
// --yield-after: a long call answers early; the rest goes to a file.
mod yield_after;
// Containment: escapees, cap after the answer, server death, concurrency limit.
mod containment;
// What commands consume: memory per user, the out-of-memory answer, oom_score_adj.
mod limits;
// Layer 2 through the real binary: the spec's examples, overflow files, binary output.
mod presentation;
// The answer is a function of the bytes, not of how reads cut them.
mod chunking;
// The rm guard end to end: a blocked chain runs nothing.
mod guard;
// Bash is the judge: the guard against a recorder bind-mounted over rm.
mod guard_oracle;
// The audit log.
mod audit;
// The state dir stays bounded: overflow and audit retention, a full disk.
mod retention;
// `forge-bash audit`, the operator's view.
mod audit_view;
// Cancellation, shutdown, progress and leaks.
mod lifecycle;
// Nothing a command does reaches past its call: state dir, device nodes, pipes.
mod integrity;
// The Landlock sandbox: writes, network, signals, refusals.
mod sandbox;
// Two users of one LibreChat: workspaces, reads, network by port, processes.
mod librechat;
// Streamable HTTP: the token, the checks, a workspace per user, sessions that end.
#[cfg(feature = "http")]
mod http;
// The service at scale: idle users released, the descriptor limit.
#[cfg(feature = "http")]
mod scale;
// The service's probes, metrics and drain on SIGTERM.
#[cfg(feature = "http")]
mod service;
// Three replicas behind a real nginx serving deploy/nginx.conf.
#[cfg(feature = "http")]
mod nginx;
// The Dockerfile's stages and the deploy/ files, without a Docker daemon.
#[cfg(feature = "http")]
mod deploy;
// The Kubernetes base: it parses, and speaks the binary's flags, variables and paths.
#[cfg(feature = "http")]
mod kubernetes;
// The modules of src/ import one another without a circle.
mod layers;
// The README's registration blocks and the LibreChat example.
mod docs;
// The static binary in a root with no glibc, no bash and no /proc, as a plain user.
mod static_binary;
