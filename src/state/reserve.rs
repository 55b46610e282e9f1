//! Room kept for the audit log ahead of need, so that a full disk does not take its
//! rows.
//!
//! The blocks past a log's end are allocated with `fallocate(FALLOC_FL_KEEP_SIZE)`:
//! its size, and so what a reader sees, stays the rows written, while the blocks are
//! the log's and no other file can take them. A row appended into them needs no free
//! space. The log keeps at least [`STEP`] / 2 reserved past its rows: a step more
//! when less is left.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// How much is reserved at a time: about 10,000 rows of a short command, or some
/// dozens of a command that writes a file through a here-document.
pub const STEP: u64 = 1 << 20;

/// The log's file and the end of the room reserved in it, as far as this server knows.
#[derive(Debug)]
pub struct Reserved {
    pub file: File,
    pub end: u64,
}

/// What [`Reserved::room_for`] found.
#[derive(Debug)]
pub enum Room {
    /// The row lands in reserved room (or it was reserved now).
    Kept,
    /// The filesystem cannot reserve room (`EOPNOTSUPP`: ramfs, some network and FUSE
    /// filesystems); the row is written as it comes.
    Unsupported(io::Error),
    /// The row does not fit: the room reserved is used up and the disk is full (or a
    /// quota or file size limit is reached).
    Full(io::Error),
}

impl Reserved {
    /// Room for a row of `len` bytes appended to the log, now `size` bytes long; a step
    /// more is reserved when less than half a step would be left past it.
    pub fn room_for(&mut self, size: u64, len: u64) -> Room {
        let need = size.saturating_add(len);
        if self.end >= need.saturating_add(STEP / 2) {
            return Room::Kept;
        }
        let e = match reserve(&self.file, size, len.saturating_add(STEP)) {
            Ok(()) => {
                self.end = self.end.max(need.saturating_add(STEP));
                return Room::Kept;
            }
            Err(e) if unsupported(&e) => return Room::Unsupported(e),
            Err(e) => e,
        };
        // A full disk: what is left of the room reserved, else room for this row alone.
        if self.end >= need {
            return Room::Kept;
        }
        match reserve(&self.file, size, len) {
            Ok(()) => {
                self.end = need;
                Room::Kept
            }
            // The write would fail, or stop part way through the row.
            Err(row) if no_room(&row) => Room::Full(e),
            // Anything else (an immutable file, an I/O error): the write says.
            Err(_) => Room::Kept,
        }
    }
}

/// Reserves `len` bytes of `file` from `offset`, without changing its size.
pub fn reserve(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let too_far = || io::Error::new(io::ErrorKind::InvalidInput, "offset out of range");
    let offset = libc::off_t::try_from(offset).map_err(|_| too_far())?;
    let len = libc::off_t::try_from(len).map_err(|_| too_far())?;
    if len == 0 {
        return Ok(());
    }
    loop {
        // SAFETY: a valid descriptor; KEEP_SIZE changes no byte a reader sees.
        let rc =
            unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Gives back the room reserved past `size`, the end of `file`: truncating a file to
/// its own size frees the blocks past its end (ext4, tmpfs).
pub fn release(file: &File, size: u64) -> io::Result<()> {
    file.set_len(size)
}

/// Whether `e` says there is no room for the bytes asked: a full disk, a quota, a
/// file size limit.
fn no_room(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG)
    )
}

/// Whether `e` says the filesystem cannot reserve room at all.
pub fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::ENOSYS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn room_is_reserved_a_step_ahead_without_changing_the_size() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("log");
        std::fs::write(&path, b"row\n").unwrap();
        let mut reserved = Reserved {
            file: File::options().append(true).open(&path).unwrap(),
            end: 4,
        };
        match reserved.room_for(4, 100) {
            Room::Kept => {}
            Room::Unsupported(e) => {
                eprintln!("skipped: this filesystem cannot reserve room ({e})");
                return;
            }
            Room::Full(e) => panic!("{e}"),
        }
        assert_eq!(reserved.end, 104 + STEP);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), 4, "the size is the rows'");
        assert!(
            meta.blocks() * 512 >= 104 + STEP,
            "{} blocks",
            meta.blocks()
        );
        // Within the room kept: no new reservation is needed.
        let end = reserved.end;
        assert!(matches!(reserved.room_for(104, 100), Room::Kept));
        assert_eq!(reserved.end, end);
        // Less than half a step left past the row: a step more.
        assert!(matches!(reserved.room_for(STEP, 100), Room::Kept));
        assert_eq!(reserved.end, 2 * STEP + 100);
        assert_eq!(std::fs::read(&path).unwrap(), b"row\n");
        // Given back: the rows stay, the room goes.
        release(&reserved.file, 4).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert!(meta.blocks() * 512 <= 64 * 1024, "{} blocks", meta.blocks());
        assert_eq!(std::fs::read(&path).unwrap(), b"row\n");
    }
}
