//! Commands that run their arguments as a command or a script, as data.
//!
//! Each entry names the commands, the options that take a value (so that a value
//! such as `env -u rm` is never taken for the command), the options whose value is
//! a script, how many operands come before the command (`timeout 5`, `flock FILE`),
//! and what the rest of the words are. Also how a shell reads its options, and which
//! files a command reads are in sight (a `<(…)`, or stdin as `/dev/stdin`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use super::parse::Word;

/// How one wrapper command runs what it is given.
pub(super) struct Wrapper {
    pub names: &'static [&'static str],
    /// Short options that take a value, as the next word or attached (`-uX`).
    pub short: &'static str,
    /// Long options (without `--`) that take a value, as the next word or after `=`.
    pub long: &'static [&'static str],
    /// Options whose value is a shell script (`-c`, `--command`, `-S`).
    pub script: &'static [&'static str],
    /// Options may follow operands (GNU argument permutation): scripts are looked for
    /// in every word.
    pub permute: bool,
    /// Words after the options that come before the command.
    pub operands: usize,
    /// Options that make it look the command up instead of running it (`command -v`).
    pub lookup: &'static [&'static str],
    /// Given no command, it starts a shell that reads stdin (`su`, `chroot /`).
    pub bare_shell: bool,
    /// Options may follow the operands too: `setarch ARCH -R CMD`.
    pub late_options: bool,
    /// It wraps only in these subcommands (`npm exec`, `perf stat`), which
    /// may follow its options; its options are read again after them.
    pub sub: &'static [&'static str],
    /// Its script options take `env -S`'s escapes: `\_` is a space, `\c` ends it.
    pub escapes: bool,
    pub then: Then,
}

/// What follows a wrapper's options and operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    /// A command and its arguments.
    Command,
    /// A command when `-u USER` was given, else nothing: `runuser`.
    CommandWithUser,
    /// The rest, joined by spaces, is a script: `eval`, `watch`.
    Script,
    /// The first word is a script: `trap`, `sg`.
    FirstScript,
    /// Nothing runs but the scripts of options: `su`, `script`.
    Nothing,
    /// `sh`, `bash`, …: `-c SCRIPT`, or a script on stdin.
    Shell,
    /// `source FILE`, `. FILE`: a script on stdin when FILE is `/dev/stdin`.
    Source,
    /// `find … -exec CMD ;`.
    Find,
    /// `alias NAME=VALUE`: each value is a script.
    Alias,
    /// `parallel CMD ::: ARGS` or `parallel ::: CMDS`.
    Parallel,
}

const fn wrapper(names: &'static [&'static str], then: Then) -> Wrapper {
    Wrapper {
        names,
        short: "",
        long: &[],
        script: &[],
        permute: false,
        operands: 0,
        lookup: &[],
        bare_shell: false,
        late_options: false,
        sub: &[],
        escapes: false,
        then,
    }
}

/// The table. A name may be given with a path (`/usr/bin/time`); only its last
/// component is looked up.
pub(super) const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        short: "ugCDhprtUTR",
        long: &[
            "user",
            "group",
            "close-from",
            "chdir",
            "host",
            "prompt",
            "role",
            "type",
            "other-user",
            "command-timeout",
            "chroot",
        ],
        lookup: &["-l", "--list"],
        ..wrapper(&["sudo"], Then::Command)
    },
    Wrapper {
        short: "uC",
        ..wrapper(&["doas"], Then::Command)
    },
    Wrapper {
        short: "uCS",
        long: &["unset", "chdir", "split-string"],
        script: &["-S", "--split-string"],
        escapes: true,
        ..wrapper(&["env"], Then::Command)
    },
    Wrapper {
        lookup: &["-v", "-V"],
        ..wrapper(&["command"], Then::Command)
    },
    wrapper(&["builtin", "nohup", "setsid"], Then::Command),
    Wrapper {
        short: "a",
        ..wrapper(&["exec"], Then::Command)
    },
    Wrapper {
        short: "fo",
        long: &["format", "output"],
        ..wrapper(&["time"], Then::Command)
    },
    Wrapper {
        short: "n",
        long: &["adjustment"],
        ..wrapper(&["nice"], Then::Command)
    },
    Wrapper {
        short: "cnpPu",
        long: &["class", "classdata", "pid", "pgid", "uid"],
        ..wrapper(&["ionice"], Then::Command)
    },
    Wrapper {
        short: "ioe",
        long: &["input", "output", "error"],
        ..wrapper(&["stdbuf"], Then::Command)
    },
    Wrapper {
        short: "sk",
        long: &["signal", "kill-after"],
        operands: 1,
        ..wrapper(&["timeout"], Then::Command)
    },
    Wrapper {
        short: "adEILnPs",
        long: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-lines",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        ..wrapper(&["xargs"], Then::Command)
    },
    Wrapper {
        short: "wE",
        long: &["timeout", "wait", "conflict-exit-code"],
        script: &["-c", "--command"],
        operands: 1,
        ..wrapper(&["flock"], Then::Command)
    },
    Wrapper {
        operands: 1,
        ..wrapper(&["taskset"], Then::Command)
    },
    Wrapper {
        short: "TPD",
        long: &["sched-runtime", "sched-period", "sched-deadline"],
        operands: 1,
        ..wrapper(&["chrt"], Then::Command)
    },
    Wrapper {
        short: "po",
        long: &["pid", "output"],
        ..wrapper(&["prlimit"], Then::Command)
    },
    Wrapper {
        long: &[
            "reuid",
            "regid",
            "ruid",
            "euid",
            "rgid",
            "egid",
            "groups",
            "inh-caps",
            "ambient-caps",
            "bounding-set",
            "securebits",
            "pdeathsig",
            "selinux-label",
            "apparmor-profile",
            "landlock-access",
            "landlock-rule",
            "seccomp-filter",
        ],
        ..wrapper(&["setpriv"], Then::Command)
    },
    Wrapper {
        short: "ugGcsw",
        long: &[
            "user",
            "group",
            "supp-group",
            "command",
            "session-command",
            "shell",
            "whitelist-environment",
        ],
        script: &["-c", "--command", "--session-command"],
        permute: true,
        bare_shell: true,
        ..wrapper(&["runuser"], Then::CommandWithUser)
    },
    Wrapper {
        short: "gGcsw",
        long: &[
            "group",
            "supp-group",
            "command",
            "session-command",
            "shell",
            "whitelist-environment",
        ],
        script: &["-c", "--command", "--session-command"],
        permute: true,
        bare_shell: true,
        ..wrapper(&["su"], Then::Nothing)
    },
    Wrapper {
        script: &["-c"],
        operands: 1,
        bare_shell: true,
        ..wrapper(&["sg"], Then::FirstScript)
    },
    Wrapper {
        short: "cEIOBTmo",
        long: &[
            "command",
            "echo",
            "log-in",
            "log-out",
            "log-io",
            "log-timing",
            "logging-format",
            "output-limit",
        ],
        script: &["-c", "--command"],
        permute: true,
        bare_shell: true,
        ..wrapper(&["script"], Then::Nothing)
    },
    Wrapper {
        short: "abeEIoOpPsSuUX",
        long: &[
            "output",
            "attach",
            "user",
            "string-limit",
            "columns",
            "env",
            "summary-sort-by",
            "trace-path",
            "trace",
            "signal",
            "status",
            "inject",
            "fault",
            "read",
            "write",
            "abbrev",
            "verbose",
            "raw",
            "const-print-style",
        ],
        ..wrapper(&["strace"], Then::Command)
    },
    Wrapper {
        short: "aAeDFlnopsuwx",
        long: &["output", "library", "indent", "align"],
        ..wrapper(&["ltrace"], Then::Command)
    },
    Wrapper {
        short: "SGRw",
        long: &[
            "setuid",
            "setgid",
            "root",
            "wd",
            "propagation",
            "map-user",
            "map-group",
            "map-users",
            "map-groups",
            "setgroups",
            "monotonic",
            "boottime",
        ],
        bare_shell: true,
        ..wrapper(&["unshare"], Then::Command)
    },
    Wrapper {
        short: "aEOPt",
        ..wrapper(&["ssh-agent"], Then::Command)
    },
    Wrapper {
        short: "tSG",
        long: &["target", "setuid", "setgid"],
        bare_shell: true,
        ..wrapper(&["nsenter"], Then::Command)
    },
    Wrapper {
        long: &["userspec", "groups"],
        operands: 1,
        bare_shell: true,
        ..wrapper(&["chroot"], Then::Command)
    },
    Wrapper {
        operands: 1,
        late_options: true,
        bare_shell: true,
        lookup: &["--list"],
        ..wrapper(&["setarch"], Then::Command)
    },
    Wrapper {
        bare_shell: true,
        ..wrapper(
            &["linux32", "linux64", "i386", "x86_64", "uname26"],
            Then::Command,
        )
    },
    Wrapper {
        short: "lsib",
        long: &["lib", "faked"],
        bare_shell: true,
        ..wrapper(&["fakeroot"], Then::Command)
    },
    Wrapper {
        long: &["config-file", "dbus-daemon"],
        ..wrapper(&["dbus-run-session"], Then::Command)
    },
    // Init processes of containers (tini is the image's PID 1).
    Wrapper {
        short: "pe",
        ..wrapper(&["tini"], Then::Command)
    },
    Wrapper {
        short: "r",
        long: &["rewrite"],
        ..wrapper(&["dumb-init"], Then::Command)
    },
    // Valgrind's options take their values after `=` only.
    wrapper(&["valgrind"], Then::Command),
    Wrapper {
        short: "eGxrptoCIDMcFmu",
        long: &[
            "event",
            "field-separator",
            "repeat",
            "pid",
            "tid",
            "cgroup",
            "output",
            "cpu",
            "interval-print",
            "delay",
            "metrics",
            "log-fd",
            "count",
            "freq",
            "mmap-pages",
            "uid",
            "call-graph",
        ],
        script: &["--pre", "--post"],
        sub: &["stat", "record", "trace"],
        ..wrapper(&["perf"], Then::Command)
    },
    Wrapper {
        short: "p",
        long: &["package"],
        script: &["-c", "--call"],
        ..wrapper(&["npx"], Then::Command)
    },
    Wrapper {
        short: "p",
        long: &["package"],
        script: &["-c", "--call"],
        sub: &["exec", "x"],
        ..wrapper(&["npm"], Then::Command)
    },
    wrapper(&["busybox", "toybox"], Then::Command),
    // The dynamic loader runs the program it is given, by any of its names (see
    // [`is_loader`]); `--list` and `--verify` only load it.
    Wrapper {
        long: &[
            "library-path",
            "glibc-hwcaps-prepend",
            "glibc-hwcaps-mask",
            "inhibit-rpath",
            "audit",
            "preload",
            "argv0",
        ],
        lookup: &[
            "--list",
            "--verify",
            "--list-tunables",
            "--list-diagnostics",
            "--help",
            "--version",
        ],
        ..wrapper(&[LOADER], Then::Command)
    },
    Wrapper {
        short: "nqs",
        long: &["interval", "equexit", "shotsdir"],
        ..wrapper(&["watch"], Then::Script)
    },
    Wrapper {
        short: "aCdEIjLnNPsS",
        long: &[
            "jobs",
            "sshlogin",
            "sshloginfile",
            "arg-file",
            "delimiter",
            "colsep",
            "tagstring",
            "results",
            "joblog",
            "timeout",
            "workdir",
            "tmpdir",
            "retries",
            "memfree",
            "load",
            "delay",
            "basefile",
            "max-args",
            "max-replace-args",
            "max-lines",
            "max-procs",
            "max-chars",
            "env",
            "return",
            "transferfile",
            "halt",
            "termseq",
        ],
        lookup: &["--dry-run", "--dryrun"],
        ..wrapper(&["parallel"], Then::Parallel)
    },
    wrapper(&["eval"], Then::Script),
    wrapper(&["trap"], Then::FirstScript),
    wrapper(&["alias"], Then::Alias),
    wrapper(
        &["sh", "bash", "dash", "zsh", "ksh", "mksh", "rbash", "ash"],
        Then::Shell,
    ),
    wrapper(&["source", "."], Then::Source),
    wrapper(&["find"], Then::Find),
];

/// The name the table knows the dynamic loader by.
const LOADER: &str = "ld.so";

/// The dynamic loader, as a path names it: `ld.so`, `ld-linux-x86-64.so.2`,
/// `ld-linux.so.2`, `ld64.so.2`, `ld-musl-x86_64.so.1`, `ld-2.31.so`.
fn is_loader(name: &str) -> bool {
    name.starts_with("ld") && name.contains(".so")
}

/// The length of the longest name of the table (`dbus-run-session`).
pub(super) const LONGEST_NAME: usize = 16;

/// The entry for a command name (its last path component). Most commands are no
/// wrapper: a map answers that at once (the first entry of a name wins).
pub(super) fn find(name: &str) -> Option<&'static Wrapper> {
    type ByName = HashMap<&'static str, &'static Wrapper, BuildHasherDefault<NameHasher>>;
    static BY_NAME: LazyLock<ByName> = LazyLock::new(|| {
        let mut by_name = ByName::default();
        for wrapper in WRAPPERS {
            for name in wrapper.names {
                by_name.entry(*name).or_insert(wrapper);
            }
        }
        by_name
    });
    if is_loader(name) {
        return BY_NAME.get(LOADER).copied();
    }
    // No name of the table is longer: a long word is not hashed at all, and nor is
    // one whose shape no name of the table has.
    if name.len() > LONGEST_NAME || !NAMES.may_hold(name) {
        return None;
    }
    BY_NAME.get(name).copied()
}

/// The shapes of the table's names: most words have a shape no name has, and
/// [`find`] tells them apart without hashing them.
const NAMES: Shapes = Shapes::of_table(false);

/// Names by their shapes (length, first and last byte, folded to 1024 values), one
/// bit a shape: a name whose shape has no bit is none of them, told without
/// comparing it to any.
pub(super) struct Shapes([u64; 16]);

impl Shapes {
    /// No name at all.
    pub(super) const EMPTY: Shapes = Shapes([0; 16]);

    /// The names of the table; with `readers`, only of the entries that read a
    /// script (shells, `source`) or start a shell given no command.
    pub(super) const fn of_table(readers: bool) -> Shapes {
        let mut shapes = Shapes::EMPTY;
        let mut k = 0;
        while k < WRAPPERS.len() {
            let wrapper = &WRAPPERS[k];
            if !readers || matches!(wrapper.then, Then::Shell | Then::Source) || wrapper.bare_shell
            {
                shapes = shapes.and(wrapper.names);
            }
            k += 1;
        }
        shapes
    }

    /// These names too.
    pub(super) const fn and(mut self, names: &[&str]) -> Shapes {
        let mut n = 0;
        while n < names.len() {
            let shape = shape(names[n].as_bytes());
            self.0[shape / 64] |= 1 << (shape % 64);
            n += 1;
        }
        self
    }

    /// False when `name` is none of the names.
    pub(super) fn may_hold(&self, name: &str) -> bool {
        let shape = shape(name.as_bytes());
        self.0[shape / 64] & (1 << (shape % 64)) != 0
    }
}

/// A name's shape: its length and its first and last bytes, folded to 1024 values.
const fn shape(name: &[u8]) -> usize {
    let [first, ..] = name else {
        return 0;
    };
    let last = name[name.len() - 1];
    ((*first as usize * 31 + last as usize) * 7 + name.len()) % 1024
}

/// A hash for the map of names, which the judge asks for nearly every word: a
/// multiply and a rotation a byte. The map is never added to after it is built,
/// so a key chosen to collide only costs its own lookup.
#[derive(Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What the options of a wrapper said.
#[derive(Debug, Default)]
pub(super) struct Options {
    /// Words taken by the options, `--` included.
    pub len: usize,
    /// Values of script options.
    pub scripts: Vec<String>,
    /// Option names given (`-u`, `--user`).
    pub given: Vec<String>,
    /// An option the table does not know to take a value is followed by `rm` or a
    /// path to it, or by a number and rm: were it to take one, rm might still be the
    /// command (`timeout -v rm`, `su -l rm`, `unshare --bogus 10 rm`); it fails
    /// closed.
    pub unknown_before_rm: bool,
}

/// `rm` or a path ending in `/rm`.
pub(super) fn spells_rm(text: &str) -> bool {
    text == "rm" || text.ends_with("/rm")
}

/// Reads the options at the start of `words`. With `permute`, reads on past
/// operands (to find script options anywhere) but `len` still ends at the first.
pub(super) fn options(spec: &Wrapper, words: &[&str]) -> Options {
    let mut found = Options::default();
    let mut i = 0;
    let mut first_operand = None;
    while let Some(&word) = words.get(i) {
        i += 1;
        if word == "--" {
            break;
        }
        let next = words.get(i).copied();
        // Were the option to take a value the table does not know, rm would come
        // after it: `--monotonic 10 rm`.
        let rm_after = next.is_some_and(spells_rm)
            || next.is_some_and(is_number) && words.get(i + 1).is_some_and(|w| spells_rm(w));
        if let Some(long) = word.strip_prefix("--").filter(|l| !l.is_empty()) {
            i += found.long(spec, long, next, rm_after);
            continue;
        }
        if word.len() > 1 && word.starts_with('-') {
            i += found.short(spec, word, next, rm_after);
            continue;
        }
        // An operand.
        first_operand.get_or_insert(i - 1);
        if !spec.permute {
            break;
        }
    }
    found.len = first_operand.unwrap_or(i).min(words.len());
    found
}

impl Options {
    /// `--name` or `--name=value`, after its `--`; a value may also be the `next`
    /// word, and rm may come after it (`rm_after`). Returns how many words after the
    /// option's own it took.
    fn long(&mut self, spec: &Wrapper, long: &str, next: Option<&str>, rm_after: bool) -> usize {
        let (name, attached) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (long, None),
        };
        let flag = format!("--{name}");
        let is_script = spec.script.contains(&flag.as_str());
        let (value, taken) = match attached {
            Some(value) => (Some(value), 0),
            None if is_script || spec.long.contains(&name) => (next, 1),
            None => {
                self.unknown_before_rm |= rm_after;
                (None, 0)
            }
        };
        if let (true, Some(value)) = (is_script, value) {
            self.scripts.push(script_value(spec, value));
        }
        self.given.push(flag);
        taken
    }

    /// Short options, `-abc`: the first that takes a value takes the rest of the
    /// word, or the `next` word. Returns how many words after this one it took.
    fn short(&mut self, spec: &Wrapper, word: &str, next: Option<&str>, rm_after: bool) -> usize {
        for (at, c) in word.char_indices().skip(1) {
            let flag = format!("-{c}");
            let is_script = spec.script.contains(&flag.as_str());
            self.given.push(flag);
            if is_script || spec.short.contains(c) {
                let attached = &word[at + c.len_utf8()..];
                let (value, taken) = if attached.is_empty() {
                    (next, 1)
                } else {
                    (Some(attached), 0)
                };
                if let (true, Some(value)) = (is_script, value) {
                    self.scripts.push(script_value(spec, value));
                }
                return taken;
            }
        }
        self.unknown_before_rm |= rm_after;
        0
    }
}

/// A number, as an option's value may be: `10`, `-5`, `1.5`, `30s`, `0x1f`.
fn is_number(text: &str) -> bool {
    let digits = text.trim_start_matches(['-', '+']);
    digits.starts_with(|c: char| c.is_ascii_digit())
        && digits
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.')
}

/// The script an option's value is: for `env -S`, with its escapes read. `\_` is a
/// space (outside quotes it splits words); `\t`, `\n`, `\v`, `\f` and `\r` are those
/// characters, within a word; `\c` ends the string; the other escapes (and all of
/// them in single quotes) mean what they mean to a shell.
fn script_value(spec: &Wrapper, value: &str) -> String {
    if !spec.escapes {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    let mut quote = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' || quote == Some('\'') {
            match (quote, c) {
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                _ => {}
            }
            out.push(c);
            continue;
        }
        let within = match chars.next() {
            Some('_') => {
                out.push(' ');
                continue;
            }
            Some('t') => '\t',
            Some('n') => '\n',
            Some('v') => '\x0b',
            Some('f') => '\x0c',
            Some('r') => '\r',
            Some('c') | None => break,
            Some(other) => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        // A character within a word, as a shell reads it: quoted.
        if quote.is_some() {
            out.push(within);
        } else {
            out.extend(['\'', within, '\'']);
        }
    }
    out
}

/// Files that are the reader's stdin: `bash /dev/stdin <<< …`.
pub(super) const STDIN_FILES: &[&str] = &["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

/// The text of a file a command reads, when it is in sight: what a `<(…)` in its
/// word prints (`fed`), or the command's stdin when the file is `/dev/stdin`. A
/// file's content is out of reach.
pub(super) fn in_sight<'a>(
    file: &str,
    fed: Option<&'a str>,
    stdin: Option<&'a str>,
) -> Option<&'a str> {
    fed.or_else(|| stdin.filter(|_| STDIN_FILES.contains(&file)))
}

/// The text of the file a word names, when it is in sight.
pub(super) fn file_in_sight<'a>(word: &'a Word, stdin: Option<&'a str>) -> Option<&'a str> {
    in_sight(&word.text, word.fed.as_deref(), stdin)
}

/// Where a shell's commands come from.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ShellInput<'a> {
    /// `-c SCRIPT` (a missing script is empty), and where the words it is given
    /// start (`$0`, then `$1`, …).
    Script(&'a str, usize),
    /// No script file: stdin (`bash <<< …`, `sh -s <<EOF`).
    Stdin,
    /// A script file, the argument at this index: out of reach unless its text is
    /// in sight (`bash <(echo …)`).
    File(usize),
    /// `-n`, `-o noexec`: it reads commands and runs none.
    NoExec,
}

/// Reads a shell's options: `-c`, `-ec`, `-o NAME`, `+o NAME`, `-O NAME`, `--norc`,
/// `--rcfile FILE`, `-s`, `--`.
pub(super) fn shell_input<'a>(args: &[&'a str]) -> ShellInput<'a> {
    let mut i = 0;
    let mut command = false;
    let mut from_stdin = false;
    let mut noexec = false;
    let mut interactive = false;
    while let Some(&arg) = args.get(i) {
        if arg == "--" || arg == "-" {
            i += 1;
            break;
        }
        if arg == "-o" && args.get(i + 1) == Some(&"noexec") {
            noexec = true;
        }
        if ["-o", "+o", "-O", "+O", "--rcfile", "--init-file"].contains(&arg) {
            i += 2;
            continue;
        }
        if arg.starts_with("--") {
            i += 1;
            continue;
        }
        let flags = match arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) {
            Some(flags) if !flags.is_empty() => flags,
            _ => break,
        };
        command |= arg.starts_with('-') && flags.contains('c');
        from_stdin |= flags.contains('s');
        interactive |= arg.starts_with('-') && flags.contains('i');
        // The last of `-n` and `+n` wins; an interactive shell ignores it.
        if flags.contains('n') {
            noexec = arg.starts_with('-');
        }
        i += if flags.ends_with(['o', 'O']) { 2 } else { 1 };
    }
    if noexec && !interactive {
        ShellInput::NoExec
    } else if command {
        ShellInput::Script(args.get(i).copied().unwrap_or(""), i + 1)
    } else if i < args.len() && !from_stdin && !STDIN_FILES.contains(&args[i]) {
        ShellInput::File(i)
    } else {
        ShellInput::Stdin
    }
}
