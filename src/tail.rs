//! The last line a running command wrote, for its progress notifications.
//!
//! The call's pipe readers hand each chunk to a [`Tail`] as well as to their capture;
//! it keeps the last [`KEPT`] bytes of each stream and which stream wrote last. The
//! progress ticker renders those of the stream that wrote last with
//! `present::last_line`.

use std::sync::Mutex;

use crate::capture::Stream;

/// Bytes kept of each stream: a few lines of a progress bar redrawn with CRs, or of a
/// line of text, are enough to render the last one.
pub const KEPT: usize = 4096;

/// The last bytes each stream of one call wrote.
#[derive(Debug, Default)]
pub struct Tail {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The stream that wrote last, `None` before either did.
    last: Option<Stream>,
}

impl Tail {
    /// Takes what `stream` just wrote.
    pub fn push(&self, stream: Stream, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.last = Some(stream);
        let kept = match stream {
            Stream::Stdout => &mut inner.stdout,
            Stream::Stderr => &mut inner.stderr,
        };
        let chunk = &chunk[chunk.len().saturating_sub(KEPT)..];
        let over = (kept.len() + chunk.len()).saturating_sub(KEPT);
        kept.drain(..over);
        kept.extend_from_slice(chunk);
    }

    /// The last bytes of the stream that wrote last; `None` before either did.
    pub fn last(&self) -> Option<Vec<u8>> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        Some(match inner.last? {
            Stream::Stdout => inner.stdout.clone(),
            Stream::Stderr => inner.stderr.clone(),
        })
    }
}
