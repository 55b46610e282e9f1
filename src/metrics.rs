//! What the process has done and holds, counted where it happens, for Prometheus.
//!
//! Calls are counted where they end ([`call_ended`], from the server's audit row), so
//! that every transport counts alike; the gauges of running commands and background
//! jobs move where those start and end. Only the HTTP service shows them (`/metrics`),
//! adding what it alone knows (sessions, users) and the process's own memory and
//! descriptors, read from `/proc/self` at the scrape. Labels are bounded sets (the
//! outcome), never a user's name or a command: their number stays fixed, and a
//! scraper learns nothing of what anyone ran.
//!
//! The exposition is `prometheus-client`'s, the official Rust client, in the
//! Prometheus text format (0.0.4), which every Prometheus-compatible scraper reads.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The `Content-Type` of [`encode`]'s text.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// How a call ended, as `forge_bash_calls_total{outcome=...}` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The command exited 0.
    Ok,
    /// The command exited with another code, or could not be run.
    Failed,
    /// The rm guard refused it; nothing ran.
    Blocked,
    /// Stopped by its timeout.
    Timeout,
    /// Cancelled by the client, or by its session's end.
    Cancelled,
    /// Stopped because the server stopped.
    Stopped,
    /// Killed by its memory limit.
    OutOfMemory,
}

impl Outcome {
    /// Every outcome, each shown from the start (at 0): a scraper's rate of an outcome
    /// that never happened is 0, not missing.
    pub const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::Failed,
        Outcome::Blocked,
        Outcome::Timeout,
        Outcome::Cancelled,
        Outcome::Stopped,
        Outcome::OutOfMemory,
    ];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Blocked => "blocked",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Stopped => "stopped",
            Outcome::OutOfMemory => "out_of_memory",
        }
    }

    /// The outcome of a command that ran to `code` (its exit code; `ok` only for 0).
    pub fn of_code(code: i32) -> Outcome {
        if code == 0 {
            Outcome::Ok
        } else {
            Outcome::Failed
        }
    }
}

/// The upper bounds, in seconds, of the call duration histogram's buckets: from a
/// quick `ls` to the default 300 s timeout.
const DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 120.0, 300.0,
];

/// What the HTTP service knows at a scrape, besides what is counted here.
#[derive(Debug, Clone, Copy, Default)]
pub struct Service {
    /// Sessions open.
    pub sessions: usize,
    /// Users with a workspace open on this server.
    pub users: usize,
    /// The server is draining (SIGTERM): it takes no new session.
    pub draining: bool,
}

/// The process's metrics: one set, whatever serves.
struct Metrics {
    registry: Registry,
    /// One counter per [`Outcome`], in [`Outcome::ALL`]'s order.
    calls: Vec<Counter>,
    duration: Histogram,
    running: Gauge,
    background: Gauge,
    sessions: Gauge,
    users: Gauge,
    draining: Gauge,
    resident: Gauge,
    descriptors: Gauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let family = Family::<[(&'static str, &'static str); 1], Counter>::default();
        let calls = Outcome::ALL
            .iter()
            .map(|outcome| family.get_or_create_owned(&[("outcome", outcome.name())]))
            .collect();
        registry.register(
            "forge_bash_calls",
            "Calls of the run tool that ended, by outcome",
            family,
        );
        let duration = Histogram::new(DURATION_BUCKETS);
        registry.register(
            "forge_bash_call_duration_seconds",
            "How long calls that ran a command took, from their start to their answer",
            duration.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let gauge = Gauge::default();
            registry.register(name, help, gauge.clone());
            gauge
        };
        Metrics {
            calls,
            duration,
            running: gauge(
                &mut registry,
                "forge_bash_commands_running",
                "Commands running now, not counting calls waiting for their turn",
            ),
            background: gauge(
                &mut registry,
                "forge_bash_background_jobs",
                "Background jobs of answered calls whose output is still being kept",
            ),
            sessions: gauge(&mut registry, "forge_bash_sessions", "HTTP sessions open"),
            users: gauge(
                &mut registry,
                "forge_bash_users_known",
                "Users with a workspace open on this server",
            ),
            draining: gauge(
                &mut registry,
                "forge_bash_draining",
                "1 while the server drains after a stop signal (no new sessions), else 0",
            ),
            resident: gauge(
                &mut registry,
                "process_resident_memory_bytes",
                "Resident memory of the server process, in bytes",
            ),
            descriptors: gauge(
                &mut registry,
                "process_open_fds",
                "Open file descriptors of the server process",
            ),
            registry,
        }
    }
}

/// A call ended with `outcome`; `ran`: how long its command ran (`None` for a call
/// that never ran one, which the duration histogram leaves out).
pub fn call_ended(outcome: Outcome, ran: Option<Duration>) {
    let metrics = &*METRICS;
    let at = Outcome::ALL
        .iter()
        .position(|&o| o == outcome)
        .unwrap_or_default();
    metrics.calls[at].inc();
    if let Some(ran) = ran {
        metrics.duration.observe(ran.as_secs_f64());
    }
}

/// Counts a running command until it is dropped.
#[must_use = "the command counts as running while this lives"]
#[derive(Debug)]
pub struct Running(());

impl Running {
    pub fn start() -> Running {
        METRICS.running.inc();
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        METRICS.running.dec();
    }
}

/// Counts a background job whose output is kept, until it is dropped.
#[must_use = "the job counts while this lives"]
#[derive(Debug)]
pub struct BackgroundJob(());

impl BackgroundJob {
    pub fn start() -> BackgroundJob {
        METRICS.background.inc();
        BackgroundJob(())
    }
}

impl Drop for BackgroundJob {
    fn drop(&mut self) {
        METRICS.background.dec();
    }
}

/// Every metric in the Prometheus text format, with `service`'s figures and the
/// process's memory and descriptors as they are now.
pub fn encode(service: Service) -> String {
    let metrics = &*METRICS;
    let as_gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    metrics.sessions.set(as_gauge(service.sessions));
    metrics.users.set(as_gauge(service.users));
    metrics.draining.set(i64::from(service.draining));
    metrics.resident.set(resident_bytes().unwrap_or(0));
    metrics.descriptors.set(open_descriptors().unwrap_or(0));
    let mut text = String::new();
    // Writing to a String fails only when an encoder does, which a registry of these
    // metrics never does.
    if let Err(e) = prometheus_text::encode(&mut text, &metrics.registry) {
        tracing::warn!(error = %e, "cannot encode the metrics");
    }
    text
}

/// The process's resident memory: `/proc/self/statm`'s second field, in pages.
fn resident_bytes() -> Option<i64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: i64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(if page > 0 { page } else { 4096 }))
}

/// The process's open descriptors: the entries of `/proc/self/fd`, less the one the
/// listing itself holds open.
fn open_descriptors() -> Option<i64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?.count();
    i64::try_from(entries.saturating_sub(1)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the sample `name` (with its labels, as written) in `text`.
    fn sample(text: &str, name: &str) -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn calls_are_counted_by_outcome_and_every_outcome_is_shown() {
        let text = encode(Service::default());
        for outcome in Outcome::ALL {
            sample(
                &text,
                &format!("forge_bash_calls_total{{outcome=\"{}\"}}", outcome.name()),
            );
        }
        let before = sample(&text, "forge_bash_calls_total{outcome=\"timeout\"}");
        let count = sample(&text, "forge_bash_call_duration_seconds_count");
        call_ended(Outcome::Timeout, Some(Duration::from_millis(1500)));
        call_ended(Outcome::Blocked, None);
        let text = encode(Service {
            sessions: 3,
            users: 2,
            draining: true,
        });
        // Other tests of this binary may count calls at the same time: at least.
        assert!(sample(&text, "forge_bash_calls_total{outcome=\"timeout\"}") >= before + 1.0);
        assert!(sample(&text, "forge_bash_call_duration_seconds_count") >= count + 1.0);
        assert_eq!(sample(&text, "forge_bash_sessions"), 3.0);
        assert_eq!(sample(&text, "forge_bash_users_known"), 2.0);
        assert_eq!(sample(&text, "forge_bash_draining"), 1.0);
        assert!(sample(&text, "process_resident_memory_bytes") > 1e6);
        // Standard input, output and error at least.
        assert!(sample(&text, "process_open_fds") >= 3.0);
    }

    #[test]
    fn outcomes_of_exit_codes() {
        assert_eq!(Outcome::of_code(0), Outcome::Ok);
        assert_eq!(Outcome::of_code(1), Outcome::Failed);
        assert_eq!(Outcome::of_code(143), Outcome::Failed);
    }
}
