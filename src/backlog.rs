//! Bytes of answers queued for one client and not yet written: the flow-control state
//! that a transport owns and the server waits on.
//!
//! A transport counts what it queues and what it writes; it attaches its `Backlog` to
//! every request it hands to rmcp (as a request extension, which rmcp passes to the
//! handler's `RequestContext`), and a finished call waits for [`Backlog::room`] before
//! it answers. A client that stops reading thus stops the server from piling up
//! answers, without the server knowing which transport it serves.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Bytes of answers waiting to be written past which input is not read and finished
/// calls wait: a client that stops reading costs the server at most this much, plus
/// one answer per running call.
pub const BACKLOG_BYTES: usize = 4 * 1024 * 1024;

/// Bytes queued for the client and not yet written, shared by everything that queues
/// lines and by the calls that wait for room.
#[derive(Debug, Default)]
pub struct Backlog {
    bytes: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    /// `n` more bytes are queued.
    pub fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// `n` bytes were written (or dropped).
    pub fn remove(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::Relaxed);
        self.drained.notify_waiters();
    }

    /// Bytes waiting to be written.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Waits until the backlog is below [`BACKLOG_BYTES`].
    pub async fn room(&self) {
        self.until(|bytes| bytes < BACKLOG_BYTES).await;
    }

    /// Waits until everything queued has been written.
    pub async fn empty(&self) {
        self.until(|bytes| bytes == 0).await;
    }

    async fn until(&self, done: impl Fn(usize) -> bool) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if done(self.bytes()) {
                return;
            }
            drained.await;
        }
    }
}
