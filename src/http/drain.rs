//! How the HTTP service stops: a first stop signal drains it, a second stops it.
//!
//! Draining, the service takes no new session (503, and `/readyz` answers 503 so that
//! a load balancer sends new users elsewhere), while the sessions it has go on: their
//! running calls finish, for up to `--shutdown-grace-secs`. Then, or at once on a
//! second signal, what still runs is stopped as without a grace (`ERROR: Server
//! shutting down; command stopped.`, exit 143). stdio has no drain: its one client
//! is the one that stops it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::server::Shared;

/// How the service is told to stop.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    /// Cancelled by the first stop signal: the drain starts.
    pub drain: CancellationToken,
    /// Cancelled by a second stop signal, or when the server must stop at once (its
    /// watchdog lost): what runs is stopped now.
    pub now: CancellationToken,
}

/// Resolves when the service must stop serving: at once on [`Stop::now`], or once
/// [`Stop::drain`] came and no call runs any more, or after `grace`. `draining` is
/// cancelled while it drains. A zero grace stops at the first signal.
pub(super) async fn until_stopped(
    stop: &Stop,
    grace: Duration,
    shared: &Shared,
    draining: &CancellationToken,
) {
    tokio::select! {
        () = stop.drain.cancelled() => {}
        () = stop.now.cancelled() => return,
    }
    if grace.is_zero() {
        return;
    }
    draining.cancel();
    tracing::info!(
        grace_secs = grace.as_secs_f64(),
        "stop signal: draining (no new sessions; running calls may finish)"
    );
    // Calls may still start in the sessions there are: the tracker counts them too,
    // and is empty only when none runs.
    shared.calls().close();
    tokio::select! {
        () = shared.calls().wait() => tracing::info!("drained: no call runs"),
        () = tokio::time::sleep(grace) => {
            tracing::info!("the drain's grace is over: stopping what still runs");
        }
        () = stop.now.cancelled() => tracing::info!("a second stop signal: stopping now"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;
    use std::sync::Arc;

    use crate::contain::Containment;

    fn shared() -> Arc<Shared> {
        let containment = Arc::new(Containment::without_watchdog());
        Shared::new(PathBuf::from("/bin/bash"), containment, 4)
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_waits_for_running_calls_within_the_grace() {
        let (shared, stop, draining) = (shared(), Stop::default(), CancellationToken::new());
        let call = shared.calls().token();
        let grace = Duration::from_secs(25);
        let stopped = until_stopped(&stop, grace, &shared, &draining);
        tokio::pin!(stopped);
        // Nothing until the signal.
        assert!(
            tokio::time::timeout(Duration::from_secs(60), &mut stopped)
                .await
                .is_err()
        );
        assert!(!draining.is_cancelled());
        stop.drain.cancel();
        let started = tokio::time::Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            drop(call);
        });
        stopped.await;
        assert!(draining.is_cancelled());
        assert_eq!(
            started.elapsed().as_secs(),
            3,
            "the call's end ends the drain"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_ends_at_its_grace_or_a_second_signal() {
        let (shared, draining) = (shared(), CancellationToken::new());
        let _call = shared.calls().token();
        let grace = Duration::from_secs(25);
        let stop = Stop::default();
        stop.drain.cancel();
        let started = tokio::time::Instant::now();
        until_stopped(&stop, grace, &shared, &draining).await;
        assert_eq!(started.elapsed(), grace);
        // A second signal after 2 s.
        let stop = Stop::default();
        stop.drain.cancel();
        let now = stop.now.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            now.cancel();
        });
        let started = tokio::time::Instant::now();
        until_stopped(&stop, grace, &shared, &CancellationToken::new()).await;
        assert_eq!(started.elapsed().as_secs(), 2);
        // No grace: the first signal stops, with no drain.
        let stop = Stop::default();
        stop.drain.cancel();
        let draining = CancellationToken::new();
        let started = tokio::time::Instant::now();
        until_stopped(&stop, Duration::ZERO, &shared, &draining).await;
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(!draining.is_cancelled());
    }
}
