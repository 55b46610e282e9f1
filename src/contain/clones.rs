//! The server's clones in flight.
//!
//! Between its clone and `execve`, a child holds a copy of every descriptor the server
//! had open when it was cloned: among them, the pipes of calls being started at that
//! moment on other threads (close-on-exec closes them only at the child's `execve`).
//! On a busy machine the child may wait a long while for a processor in between, and
//! a call whose shell has exited would find its pipes still held, as if it had left a
//! process running. So each clone is counted from before it is made until its child
//! executed its program or exited, and a call can wait for every clone that may hold
//! its pipes ([`Mark::passed`]).

use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

static CLONES: LazyLock<Clones> = LazyLock::new(Clones::default);

/// What `oldest` holds when no clone is in flight.
const NONE: u64 = u64::MAX;

struct Clones {
    state: Mutex<State>,
    /// The number of the oldest clone in flight, or [`NONE`].
    oldest: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    next: u64,
    in_flight: BTreeSet<u64>,
}

impl Default for Clones {
    fn default() -> Clones {
        Clones {
            state: Mutex::new(State::default()),
            oldest: watch::Sender::new(NONE),
        }
    }
}

impl Clones {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin(&self) -> InFlight<'_> {
        let mut state = self.state();
        let number = state.next;
        state.next += 1;
        state.in_flight.insert(number);
        if state.in_flight.len() == 1 {
            self.oldest.send_replace(number);
        }
        InFlight {
            clones: self,
            number,
        }
    }

    fn mark(&self) -> Mark<'_> {
        Mark {
            clones: self,
            next: self.state().next,
        }
    }
}

/// A clone counted in flight until this is dropped: once its child executed its
/// program or exited (or it was never made).
pub struct InFlight<'a> {
    clones: &'a Clones,
    number: u64,
}

/// Counts a clone about to be made.
pub fn begin() -> InFlight<'static> {
    CLONES.begin()
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.clones.state();
        state.in_flight.remove(&self.number);
        let oldest = state.in_flight.first().copied().unwrap_or(NONE);
        self.clones
            .oldest
            .send_if_modified(|was| std::mem::replace(was, oldest) != oldest);
    }
}

/// A point in the sequence of clones: those begun before it may have copied the
/// descriptors the server had open then.
#[derive(Clone, Copy)]
pub struct Mark<'a> {
    clones: &'a Clones,
    next: u64,
}

impl std::fmt::Debug for Mark<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Mark").field(&self.next).finish()
    }
}

/// The point now: taken once a call's own ends of its pipes are closed in the server,
/// every clone that may hold a copy of them was begun before it.
pub fn mark() -> Mark<'static> {
    CLONES.mark()
}

/// How long after a clone's start ended its child may still hold the descriptors: the
/// kernel lets the cloning thread go on once the child has its new program's memory,
/// a moment before the child closes its close-on-exec descriptors.
const CLOSING: Duration = Duration::from_millis(50);

impl Mark<'_> {
    /// Resolves once every clone begun before the mark has ended and closed what it
    /// held: at once when none was left in flight.
    pub async fn passed(self) {
        let next = self.next;
        let mut oldest = self.clones.oldest.subscribe();
        if *oldest.borrow_and_update() >= next {
            return;
        }
        let _ = oldest.wait_for(|&oldest| oldest >= next).await;
        tokio::time::sleep(CLOSING).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Waker};

    fn done(future: &mut std::pin::Pin<Box<impl Future<Output = ()>>>) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        future.as_mut().poll(&mut context).is_ready()
    }

    #[tokio::test]
    async fn a_mark_passes_once_every_clone_begun_before_it_ended_and_no_later_one_counts() {
        // A registry of its own: the process's is shared with tests that spawn.
        let clones = Clones::default();
        let first = clones.begin();
        let second = clones.begin();
        let mark = clones.mark();
        let later = clones.begin();
        let passed = mark.passed();
        tokio::pin!(passed);
        let soon = Duration::from_millis(200);
        assert!(tokio::time::timeout(soon, &mut passed).await.is_err());
        drop(second);
        assert!(
            tokio::time::timeout(soon, &mut passed).await.is_err(),
            "the first clone is still in flight"
        );
        drop(first);
        assert!(
            tokio::time::timeout(Duration::from_secs(5), &mut passed)
                .await
                .is_ok(),
            "only a clone begun after the mark is left"
        );
        drop(later);
        // A mark with nothing in flight before it has passed already, at once.
        assert!(done(&mut Box::pin(clones.mark().passed())));
    }
}
