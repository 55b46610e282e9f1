//! The table and JSON Lines, and the users' names they show.

use std::io::{self, Write};

use super::entry::{Entry, shield, shown, shown_field, unsafe_char};

/// A way of printing rows, each from a source (a state dir; with `--users`, a user's).
pub(super) trait View {
    fn row(&mut self, source: usize, row: Entry) -> io::Result<()>;
    fn end(&mut self) -> io::Result<()>;
}

/// With `--users`, the user of each source, by the source's index.
#[derive(Debug, Default)]
pub(super) struct Users {
    /// As the directories are named (bytes that are not UTF-8 as U+FFFD).
    pub(super) names: Vec<String>,
    /// As [`shown`], escaped like the commands: nothing a terminal could act on.
    pub(super) shown: Vec<String>,
    /// The widest shown name, and at least `user`.
    pub(super) width: usize,
}

impl Users {
    pub(super) fn new(names: Vec<String>) -> Users {
        let shown: Vec<String> = names.iter().map(|name| shown(name)).collect();
        let width = shown.iter().map(|name| name.chars().count()).max();
        Users {
            names,
            shown,
            width: width.unwrap_or(0).max("user".len()),
        }
    }
}

/// Aligned columns: `time  exit  ms  command`, the command as [`shown_field`]; with
/// `--users`, `time  user  exit  ms  command`, the user as [`shown`].
pub(super) struct Table<'a, W: Write> {
    out: &'a mut W,
    header: bool,
    users: Option<Users>,
}

impl<'a, W: Write> Table<'a, W> {
    pub(super) fn new(out: &'a mut W, users: Option<Users>) -> Self {
        Table {
            out,
            header: false,
            users,
        }
    }
}

impl<W: Write> View for Table<'_, W> {
    fn row(&mut self, source: usize, row: Entry) -> io::Result<()> {
        let (user, width) = match &self.users {
            Some(users) => (Some(users.shown[source].as_str()), users.width),
            None => (None, 0),
        };
        if !self.header {
            self.header = true;
            if user.is_some() {
                write!(self.out, "{:<24}  {:<width$}", "time", "user")?;
            } else {
                write!(self.out, "{:<24}", "time")?;
            }
            writeln!(self.out, "  {:>4}  {:>8}  command", "exit", "ms")?;
        }
        if let Some(user) = user {
            write!(self.out, "{:<24}  {user:<width$}", row.at)?;
        } else {
            write!(self.out, "{:<24}", row.at)?;
        }
        let command = shown_field(&row.escaped);
        writeln!(self.out, "  {:>4}  {:>8}  {command}", row.exit, row.ms)
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// JSON Lines with exactly `at`, `command` (unescaped), `exit` and `ms`, with
/// `--users` `user` (the directory's name), and `"background": true` for a call that
/// left a job running. Beyond what serde_json escapes, DEL, the
/// C1 controls, the line and paragraph separators and the bidirectional controls are
/// written as `\uhhhh`, so that every line splitter finds one row per line and a pager
/// shows them as text.
pub(super) struct Json<'a, W: Write> {
    out: &'a mut W,
    users: Option<Users>,
}

impl<'a, W: Write> Json<'a, W> {
    pub(super) fn new(out: &'a mut W, users: Option<Users>) -> Self {
        Json { out, users }
    }
}

impl<W: Write> View for Json<'_, W> {
    fn row(&mut self, source: usize, row: Entry) -> io::Result<()> {
        let command = row.command();
        let user = self.users.as_ref().map(|users| &users.names[source]);
        let inert = !command
            .chars()
            .chain(user.into_iter().flat_map(|user| user.chars()))
            .any(unsafe_char);
        let mut object = serde_json::json!({
            "at": row.at,
            "command": command,
            "exit": row.exit,
            "ms": row.ms,
        });
        if let Some(user) = user {
            object["user"] = user.as_str().into();
        }
        if row.background {
            object["background"] = true.into();
        }
        if inert {
            writeln!(self.out, "{object}")
        } else {
            writeln!(self.out, "{}", shield(&object.to_string()))
        }
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
