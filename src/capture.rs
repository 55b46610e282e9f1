//! Streaming capture of one output stream, in bounded memory.
//!
//! Layer 1 pushes chunks as they arrive; only what Layer 2 can show is kept in memory
//! (the head; the key lines, the last lines and the line count of a
//! [`crate::keylines::Digest`]), the counts Layer 2 decides by are kept as
//! numbers, and once a stream is past what Layer 2 shows whole, everything is
//! streamed into an overflow file ([`crate::overflow`]; `cmd-N.txt` for stdout,
//! `stderr-N.txt` for stderr). Memory per stream stays near [`HEAD_BYTES`] plus the
//! digest's bounds, whatever the command writes.
//!
//! What a stream leaves behind depends on its bytes and its end, not on where the reads
//! of the pipe cut it: the text held back from the digest is a function of the text so
//! far, and rendering starts at the first byte a terminal acts on, not at the read that
//! brought it.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crate::keylines::{Digest, Summary};
pub use crate::overflow::{Spiller, Stream};
use crate::render::{Keep, ROWS, Released, Rendered, Renderer};

/// Most bytes of plain text held back from the digest (see [`Sink::hold`]).
const HOLD_BYTES: usize = 64 * 1024;

/// Most bytes of stdout that Layer 2 shows (the seed's 50 KB).
pub const SHOW_BYTES: usize = 51_200;

/// Most lines of stdout that Layer 2 shows.
pub const SHOW_LINES: usize = 200;

/// Bytes kept from the start of a stream: what Layer 2 shows, plus a partial UTF-8
/// character (at most 3 more bytes) so the cut decodes the same as the whole would.
pub const HEAD_BYTES: usize = SHOW_BYTES + 4;

/// Bytes looked at by the control-character rule of the binary guard.
pub const BINARY_SAMPLE: usize = 1024;

/// Where the full output went once it was too long to show whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spill {
    /// The whole captured stream is in this file.
    Written(PathBuf),
    /// The file could not be created or written; the message says why.
    Failed(String),
}

/// What a stream left behind: the parts Layer 2 shows and the numbers it decides by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first [`HEAD_BYTES`] bytes (all of them when the stream is shorter).
    pub head: Vec<u8>,
    /// The key lines and the last lines of the text shown (rendered, when it is), with
    /// its line count; empty for binary output.
    pub summary: Summary,
    /// Bytes captured (at most the cap).
    pub total_bytes: u64,
    /// Lines captured: `\n` ends a line, and a last line without one still counts.
    pub lines: u64,
    /// Newlines captured.
    pub newlines: u64,
    /// Stdout only: a NUL byte anywhere, or too many control bytes at the start. The
    /// bytes are then in a `cmd-N.bin` (the spill), not shown.
    pub binary: bool,
    /// The stream reached the output cap; what came after was not kept.
    pub capped: bool,
    /// The spill file, once the stream was longer than Layer 2 shows whole.
    pub spill: Option<Spill>,
    /// What a terminal would show, when the stream held an escape sequence, a CR or a
    /// backspace; `None` for plain text, which shows as it is.
    pub rendered: Option<Rendered>,
}

impl Captured {
    /// Captures a whole byte string at once, as Layer 1 would have streamed it.
    pub fn from_bytes(stream: Stream, bytes: &[u8], cap: u64, spiller: &Arc<Spiller>) -> Captured {
        let mut sink = Sink::new(stream, cap, spiller.clone());
        sink.push(bytes);
        sink.finish()
    }

    /// More than Layer 2 shows whole: over [`SHOW_LINES`] lines or [`SHOW_BYTES`] bytes
    /// of the text shown (the rendered text, when there is one).
    pub fn overflows(&self) -> bool {
        let (bytes, lines) = match &self.rendered {
            Some(rendered) => (rendered.bytes, rendered.lines),
            None => (self.total_bytes, self.lines),
        };
        bytes > SHOW_BYTES as u64 || lines > SHOW_LINES as u64
    }

    /// Past what Layer 2 shows whole, counted on the raw bytes: the spill file holds
    /// the raw stream from then on.
    fn raw_overflows(&self) -> bool {
        self.total_bytes > SHOW_BYTES as u64 || self.lines > SHOW_LINES as u64
    }

    /// Deletes the spill file, when its content will never be named to anybody.
    pub fn discard_spill(&mut self) {
        if let Some(Spill::Written(path)) = self.spill.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The binary guard's control-byte rule: more than 10% of `sample` are control bytes
/// (0–31 other than TAB, LF, VT, FF, CR, SO, SI, and the backspace and ESC a terminal
/// renders).
///
/// Like ripgrep's binary detection this is a heuristic: a text file in UTF-16 may be
/// called binary, and binary data that happens to look like text past its first
/// kilobyte without a NUL is not caught.
pub fn mostly_control(sample: &[u8]) -> bool {
    let control = sample
        .iter()
        .filter(|&&b| b < 32 && !matches!(b, b'\t' | b'\n' | 0x0b..=0x0f | 0x08 | 0x1b))
        .count();
    control * 10 > sample.len()
}

/// Receives one stream's chunks; see the module docs.
#[derive(Debug)]
pub struct Sink {
    stream: Stream,
    cap: u64,
    spiller: Arc<Spiller>,
    out: Captured,
    digest: Digest,
    /// The last lines of plain text, not yet given to the digest (see [`Sink::hold`]),
    /// and their `\n`s.
    held: Vec<u8>,
    held_newlines: usize,
    /// The line being written is longer than [`HOLD_BYTES`]: it goes to the digest
    /// up to its end.
    releasing: bool,
    file: Option<File>,
    last_byte: Option<u8>,
    /// Started at the first ESC, CR or backspace; plain text is never rendered.
    renderer: Option<Renderer>,
}

impl Sink {
    pub fn new(stream: Stream, cap: u64, spiller: Arc<Spiller>) -> Sink {
        Sink {
            stream,
            cap,
            spiller,
            out: Captured::default(),
            digest: Digest::new(),
            held: Vec::new(),
            held_newlines: 0,
            releasing: false,
            file: None,
            last_byte: None,
            renderer: None,
        }
    }

    /// True once the stream went past the cap: the caller stops the command.
    pub fn capped(&self) -> bool {
        self.out.capped
    }

    /// Takes one chunk. Bytes past the cap are dropped and mark the stream capped.
    pub fn push(&mut self, chunk: &[u8]) {
        let room = self.cap.saturating_sub(self.out.total_bytes);
        let chunk = if chunk.len() as u64 > room {
            self.out.capped = true;
            &chunk[..room as usize]
        } else {
            chunk
        };
        if chunk.is_empty() {
            return;
        }
        let was_binary = self.out.binary;
        self.count(chunk);
        if self.out.binary {
            // Binary output is not shown but kept, byte for byte, in `cmd-N.bin`.
            if !was_binary {
                self.renderer = None;
                self.digest = Digest::new();
                self.held = Vec::new();
                self.keep_binary();
            }
            self.write(chunk);
            self.keep_head(chunk);
            return;
        }
        self.spill(chunk);
        self.keep_head(chunk);
        let mut chunk = chunk;
        if self.renderer.is_none() {
            // Rendering starts at the first ESC, CR or backspace, not at the read that
            // brought it: the text before it is held as any plain text is.
            let Some(at) = memchr::memchr3(0x1b, b'\r', 0x08, chunk) else {
                self.hold(chunk);
                return;
            };
            self.hold(&chunk[..at]);
            self.start_rendering(self.out.total_bytes - (chunk.len() - at) as u64);
            chunk = &chunk[at..];
        }
        if let Some(renderer) = &mut self.renderer {
            renderer.push(chunk);
            self.digest.push(renderer.take_lines().as_bytes());
        }
    }

    /// Updates the counts, and the binary verdict of stdout.
    fn count(&mut self, chunk: &[u8]) {
        if self.stream == Stream::Stdout && !self.out.binary {
            self.out.binary = memchr::memchr(0, chunk).is_some() || self.sample_is_control(chunk);
        }
        self.out.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.out.total_bytes += chunk.len() as u64;
        self.last_byte = chunk.last().copied();
        self.out.lines = self.out.newlines + u64::from(self.last_byte != Some(b'\n'));
    }

    /// Writes `chunk` to the spill file, creating it (with everything before, which is
    /// still in the head) once the stream is too long to show whole.
    fn spill(&mut self, chunk: &[u8]) {
        if self.out.spill.is_none() && self.out.raw_overflows() {
            let created = self.spiller.create(self.stream);
            self.out.spill = Some(self.start_file(created));
        }
        self.write(chunk);
    }

    /// Binary stdout: what came before it goes to a `cmd-N.bin`, where the rest
    /// follows; an overflow file already written becomes that file.
    fn keep_binary(&mut self) {
        self.out.spill = Some(match self.out.spill.take() {
            Some(Spill::Written(path)) => match self.spiller.rename_binary(&path) {
                Ok(renamed) => Spill::Written(renamed),
                Err(e) => {
                    self.file = None;
                    self.spiller.discard(&path);
                    Spill::Failed(format!("{}: {e}", path.display()))
                }
            },
            Some(failed) => failed,
            // Not spilled yet: the head holds everything so far.
            None => {
                let created = self.spiller.create_binary();
                self.start_file(created)
            }
        });
    }

    /// A file just created: it gets the head (everything so far) and what follows.
    fn start_file(&mut self, created: std::io::Result<(File, PathBuf)>) -> Spill {
        match created {
            Ok((mut file, path)) => match file.write_all(&self.out.head) {
                Ok(()) => {
                    self.file = Some(file);
                    Spill::Written(path)
                }
                Err(e) => {
                    self.spiller.discard(&path);
                    Spill::Failed(format!("{}: {e}", path.display()))
                }
            },
            Err(e) => Spill::Failed(format!("{}: {e}", self.spiller.dir().display())),
        }
    }

    /// Appends `chunk` to the file, if there is one; a write that fails removes it.
    fn write(&mut self, chunk: &[u8]) {
        if let Some(file) = &mut self.file
            && let Err(e) = file.write_all(chunk)
        {
            // A part of the output would mislead, and a full disk needs the room back.
            self.file = None;
            if let Some(Spill::Written(path)) = &self.out.spill {
                self.spiller.discard(path);
                let why = format!("{}: {e}", path.display());
                self.out.spill = Some(Spill::Failed(why));
            }
        }
    }

    /// Ends the stream and hands over what Layer 2 needs.
    pub fn finish(mut self) -> Captured {
        if self.stream == Stream::Stdout
            && !self.out.binary
            && self.out.head.len() < BINARY_SAMPLE
            && mostly_control(&self.out.head)
        {
            self.out.binary = true;
            self.renderer = None;
            self.keep_binary();
        }
        if let Some(renderer) = &mut self.renderer {
            self.out.rendered = Some(renderer.finish());
            self.digest.push(renderer.take_lines().as_bytes());
        } else {
            self.digest.push(&self.held);
        }
        if !self.out.binary {
            self.out.summary = std::mem::take(&mut self.digest).finish();
        }
        if !self.out.binary && self.out.rendered.is_some() && !self.out.overflows() {
            // Rendered, it fits: the raw bytes were only long because of redraws. Binary
            // output keeps its file, whatever a renderer made of the bytes before it.
            self.file = None;
            self.out.discard_spill();
        }
        self.out
    }

    /// The first ESC, CR or backspace, `at` bytes into the stream: from here on the
    /// stream is rendered too, starting from what was kept of the plain text before it.
    /// The lines held back are rendered, so that cursor movement can still reach them;
    /// the digest has the text before them.
    fn start_rendering(&mut self, at: u64) {
        let (mut held, partial_len) = self.digest.take_partial();
        let lost = partial_len - held.len();
        held.append(&mut self.held);
        self.held_newlines = 0;
        self.releasing = false;
        let released = at as usize - held.len() - lost;
        self.renderer = Some(Renderer::resume(
            Keep { head: HEAD_BYTES },
            &self.out.head,
            Released {
                bytes: released as u64,
                lines: self.digest.lines(),
            },
            &held,
            lost > 0,
        ));
        if let Some(renderer) = &mut self.renderer {
            renderer.watch(crate::keylines::is_key);
        }
    }

    /// Plain text: the last lines are held back from the digest, since a cursor
    /// movement that starts rendering may still redraw them; the rest goes to the
    /// digest. What is held is a function of the text so far, however it was read:
    /// the longest end of it that starts a line, holds fewer than [`ROWS`] `\n`s and
    /// at most [`HOLD_BYTES`] bytes; nothing when the line being written is longer.
    fn hold(&mut self, chunk: &[u8]) {
        let rows = usize::from(ROWS);
        let mut chunk = chunk;
        if self.releasing {
            // The rest of a line too long to hold, up to its end.
            let Some(end) = memchr::memchr(b'\n', chunk) else {
                self.digest.push(chunk);
                return;
            };
            self.digest.push(&chunk[..=end]);
            self.releasing = false;
            chunk = &chunk[end + 1..];
        }
        let (split, found) = back_newlines(chunk, rows);
        if found == rows && chunk.len() - split - 1 <= HOLD_BYTES {
            // The chunk alone holds the lines to hold back: no copy of the rest.
            self.digest.push(&self.held);
            self.digest.push(&chunk[..=split]);
            self.held.clear();
            self.held.extend_from_slice(&chunk[split + 1..]);
            self.held_newlines = rows - 1;
            return;
        }
        self.held.extend_from_slice(chunk);
        self.held_newlines += if found < rows {
            found
        } else {
            memchr::memchr_iter(b'\n', chunk).count()
        };
        // Fewer than ROWS `\n`s: the held text starts after the oldest ones.
        let mut release = 0;
        if self.held_newlines >= rows {
            let extra = self.held_newlines - (rows - 1);
            release = memchr::memchr_iter(b'\n', &self.held)
                .nth(extra - 1)
                .map_or(self.held.len(), |i| i + 1);
            self.held_newlines = rows - 1;
        }
        // At most HOLD_BYTES: it starts at the first line start that leaves no more.
        if self.held.len() - release > HOLD_BYTES {
            let from = self.held.len() - HOLD_BYTES;
            release = match memchr::memchr(b'\n', &self.held[from - 1..]) {
                Some(i) => from + i,
                None => {
                    self.releasing = true;
                    self.held.len()
                }
            };
            self.held_newlines = memchr::memchr_iter(b'\n', &self.held[release..]).count();
        }
        if release > 0 {
            self.digest.push(&self.held[..release]);
            self.held.drain(..release);
        }
    }

    fn sample_is_control(&self, chunk: &[u8]) -> bool {
        let have = self.out.head.len().min(BINARY_SAMPLE);
        if have == BINARY_SAMPLE {
            return false;
        }
        let take = chunk.len().min(BINARY_SAMPLE - have);
        let mut sample = self.out.head[..have].to_vec();
        sample.extend_from_slice(&chunk[..take]);
        // Judge only on the full sample, or at the end of a shorter stream (below).
        sample.len() == BINARY_SAMPLE && mostly_control(&sample)
    }

    fn keep_head(&mut self, chunk: &[u8]) {
        let room = HEAD_BYTES.saturating_sub(self.out.head.len());
        self.out
            .head
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

/// Where the last `rows` lines of `chunk` would start, counting `\n`s back from its
/// end: the offset of the `\n` before them, and how many were found (fewer than
/// `rows` when the chunk has fewer).
fn back_newlines(chunk: &[u8], rows: usize) -> (usize, usize) {
    let mut split = chunk.len();
    let mut found = 0;
    while found < rows {
        match memchr::memrchr(b'\n', &chunk[..split]) {
            Some(i) => {
                split = i;
                found += 1;
            }
            None => break,
        }
    }
    (split, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spiller() -> (tempfile::TempDir, Arc<Spiller>) {
        let dir = tempfile::tempdir().unwrap();
        let spiller = Spiller::new(Arc::new(crate::state::StateDir::open(dir.path())));
        (dir, spiller)
    }

    #[test]
    fn cap_boundary() {
        let (_dir, spiller) = spiller();
        let exact = Captured::from_bytes(Stream::Stdout, &[b'a'; 100], 100, &spiller);
        assert!(!exact.capped);
        assert_eq!(exact.total_bytes, 100);
        let over = Captured::from_bytes(Stream::Stdout, &[b'a'; 101], 100, &spiller);
        assert!(over.capped);
        assert_eq!(over.total_bytes, 100);
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let (_dir, spiller) = spiller();
        let data: Vec<u8> = (0..30_000u32)
            .flat_map(|n| format!("line {n}\n").into_bytes())
            .collect();
        let whole = Captured::from_bytes(Stream::Stderr, &data, u64::MAX, &spiller);
        for chunk in [1, 7, 4096, 65_536] {
            let mut sink = Sink::new(Stream::Stderr, u64::MAX, spiller.clone());
            for piece in data.chunks(chunk) {
                sink.push(piece);
            }
            let got = sink.finish();
            assert_eq!(got.head, whole.head);
            assert_eq!(got.summary, whole.summary, "chunk {chunk}");
            assert!(got.summary.tail.ends_with("line 29999\n"));
            assert_eq!(got.summary.lines, 30_000);
            assert_eq!(
                (got.lines, got.newlines, got.total_bytes),
                (30_000, 30_000, data.len() as u64)
            );
            let Some(Spill::Written(path)) = &got.spill else {
                panic!("no spill")
            };
            assert_eq!(std::fs::read(path).unwrap(), data);
        }
    }

    #[test]
    fn memory_is_bounded() {
        let (_dir, spiller) = spiller();
        let mut sink = Sink::new(Stream::Stdout, u64::MAX, spiller);
        let chunk = vec![b'x'; 65_536];
        for _ in 0..200 {
            sink.push(&chunk);
        }
        let got = sink.finish();
        assert_eq!(got.head.len(), HEAD_BYTES);
        assert!(got.summary.tail.len() <= crate::keylines::TAIL_KEEP);
        assert_eq!(got.total_bytes, 200 * 65_536);
    }
}
