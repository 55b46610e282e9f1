//! The state dir stays bounded: old overflow files go, the ones a model was just told
//! to read stay, a full disk is not a failed call, and `forge-bash audit --summary`
//! shows the budget at work.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::support::{Options, PATIENCE, Server, eventually};

/// `count` overflow files of `bytes` each in `state`, `age` old.
fn old_overflows(state: &Path, count: usize, bytes: usize, age: Duration) {
    std::fs::create_dir_all(state).unwrap();
    for n in 1..=count {
        let path = state.join(format!("cmd-{n}.txt"));
        std::fs::write(&path, vec![b'x'; bytes]).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }
}

fn overflow_files(state: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cmd-") || n.starts_with("stderr-"))
        .collect();
    names.sort();
    names
}

/// The overflow file an answer names.
fn named(answer: &str) -> String {
    let at = answer.find("written to ").expect(answer) + "written to ".len();
    answer[at..].lines().next().unwrap().trim().to_owned()
}

#[test]
fn old_and_excess_overflow_files_go_and_the_named_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    old_overflows(&state, 40, 10_000, Duration::from_secs(3600));
    let mut server = Options::default()
        .state(&state)
        .arg("--overflow-retention-bytes")
        .arg("250000")
        .start();
    // At start-up: the oldest go until 250 KB hold (25 files of 10 KB).
    assert!(eventually(PATIENCE, || overflow_files(&state).len() == 25));
    assert!(!state.join("cmd-15.txt").exists() && state.join("cmd-16.txt").exists());
    // After each overflow: the file just named is never the one removed.
    for _ in 0..5 {
        let answer = server.run("seq 1 30000");
        let path = named(&answer);
        assert!(Path::new(&path).exists(), "{path} is gone");
    }
    assert!(server.run("echo still").starts_with("still\n"));
}

#[test]
fn a_budget_of_nothing_keeps_the_most_recent_twenty_and_expired_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    old_overflows(&state, 30, 100, Duration::from_secs(2 * 86_400));
    let _server = Options::default()
        .state(&state)
        .arg("--overflow-retention-days")
        .arg("1")
        .start();
    // Two days old with a one-day limit: all but the 20 most recent go.
    assert!(eventually(PATIENCE, || overflow_files(&state).len() == 20));
}

#[test]
fn two_servers_on_one_state_dir_never_remove_what_the_other_just_named() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    old_overflows(&state, 60, 1000, Duration::from_secs(3600));
    let start = || {
        Options::default()
            .state(&state)
            .arg("--overflow-retention-bytes")
            .arg("1")
            .start()
    };
    let (mut one, mut two): (Server, Server) = (start(), start());
    let mut named_by_one = Vec::new();
    for _ in 0..10 {
        named_by_one.push(named(&one.run("seq 1 30000")));
        let theirs = named(&two.run("seq 1 30000"));
        assert!(Path::new(&theirs).exists(), "{theirs} is gone");
        for path in &named_by_one {
            assert!(
                Path::new(path).exists(),
                "{path} was removed by the other server"
            );
        }
    }
    // Both pruned the same old files; neither fell over.
    assert!(eventually(PATIENCE, || overflow_files(&state).len() <= 40));
    assert!(one.run("echo one").starts_with("one\n"));
    assert!(two.run("echo two").starts_with("two\n"));
}

/// A burst of concurrent overflows: past the budget, only the files of the 20 newest
/// answers stay, however young the others are.
#[test]
fn the_budget_holds_in_a_burst() {
    const CALLS: usize = 25;
    const BYTES: u64 = 2_000_000;
    let budget = BYTES / 2;
    let mut server = Options::default()
        .arg("--overflow-retention-bytes")
        .arg(budget.to_string())
        .start();
    let ids: Vec<u64> = (0..CALLS)
        .map(|_| server.start_call(&format!("yes x | head -c {BYTES}")))
        .collect();
    let mut named_files = Vec::new();
    for id in ids {
        named_files.push(named(&crate::support::text(&server.response(id))));
    }
    let state = server.state.clone();
    let size = |names: &[String]| -> u64 {
        names
            .iter()
            .filter_map(|n| std::fs::metadata(state.join(n)).ok())
            .map(|m| m.len())
            .sum()
    };
    let bound = budget + 20 * BYTES;
    let within = eventually(Duration::from_secs(10), || {
        let files = overflow_files(&state);
        files.len() <= 20 && size(&files) <= bound
    });
    let files = overflow_files(&state);
    assert!(
        within,
        "{} files, {} bytes: {files:?}",
        files.len(),
        size(&files)
    );
    // A budget smaller than one file: exactly the 20 newest answers' files are left.
    assert_eq!(files.len(), 20, "{files:?}");
    let named_names: Vec<String> = named_files
        .iter()
        .map(|p| {
            Path::new(p)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(files.iter().all(|f| named_names.contains(f)), "{files:?}");
}

#[test]
fn audit_logs_stay_unless_their_retention_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let old = chrono::Utc::now().date_naive() - chrono::Duration::days(10);
    let log = state.join(format!("audit-{}.tsv", old.format("%Y-%m-%d")));
    std::fs::write(&log, "2020-01-01T00:00:00.000Z\tls\t0\t1\n").unwrap();
    let mut kept = Options::default().state(&state).start();
    assert!(kept.run("echo a").starts_with("a\n"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(log.exists(), "audit logs are the record");
    drop(kept);
    let mut pruning = Options::default()
        .state(&state)
        .arg("--audit-retention-days")
        .arg("3")
        .start();
    assert!(eventually(PATIENCE, || !log.exists()));
    assert!(pruning.run("echo b").starts_with("b\n"));
    assert_eq!(pruning.audit_rows().len(), 2, "today's log stays");
}

#[test]
fn the_summary_shows_the_state_dirs_size_and_overflow_files() {
    let mut server = Server::start(Options::default());
    server.run("seq 1 30000");
    server.run("seq 1 40000");
    let out = crate::support::binary()
        .args(["audit", "--summary", "--state-dir"])
        .arg(&server.state)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let bytes = |label: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(label)).expect(label);
        line[label.len()..].trim().parse().unwrap()
    };
    assert_eq!(bytes("overflow files"), 2, "{text}");
    let expected = 168_894 + 228_894;
    assert_eq!(bytes("overflow bytes"), expected, "{text}");
    assert!(bytes("state dir bytes") > expected, "{text}");
}

#[test]
fn a_full_disk_is_not_a_failed_call() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let mount = "mount -t tmpfs -o size=64k tmpfs \"$0\" && exec \"$@\"";
    let state_arg = state.display().to_string();
    let mut server = Options::default()
        .state(&state)
        .through(&["unshare", "-m", "sh", "-c", mount, &state_arg])
        .start();
    let answer = server.run("seq 1 40000");
    if server.stderr().contains("unshare:") {
        eprintln!("skipped: mount namespaces are refused here");
        return;
    }
    assert!(answer.starts_with("1\n2\n3\n"), "{answer}");
    assert!(answer.contains("could not be"), "{answer}");
    assert!(answer.contains("No space left on device"), "{answer}");
    assert!(answer.contains("[exit:0 |"), "{answer}");
    // The partial file was removed to give the room back; the server serves on and
    // its audit row was written.
    let answer = server.run("echo still serving");
    assert!(answer.starts_with("still serving\n"), "{answer}");
    // The state dir is the tmpfs in the server's mount namespace: look from inside.
    let answer = server.run(&format!(
        "cat {state_arg}/audit-*.tsv | grep -c 'seq 1 40000'; ls {state_arg}"
    ));
    assert!(answer.starts_with("1\n"), "{answer}");
    assert!(!answer.contains("cmd-"), "{answer}");
}
