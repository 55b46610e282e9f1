//! The guard's speed on the bench's 128 KB shapes, one median per shape.
//!
//! Run with `cargo run --release --example guard_shapes [shape number] [runs]`.
//! With a shape number (1 to 8) only that shape runs, which suits a profiler.

use std::time::{Duration, Instant};

/// The bench's shapes, each 128 KB long: a name and the command.
fn shapes() -> Vec<(&'static str, String)> {
    const SIZE: usize = 128 * 1024;
    let fill = |unit: &str| unit.repeat(SIZE / unit.len() + 1)[..SIZE].to_owned();
    vec![
        ("chain", fill("echo a && ls -l | grep x; ")),
        ("quoted", format!("echo '{}'", fill("a;b|c&d "))),
        (
            "heredoc",
            format!("cat <<EOF\n{}\nEOF", fill("line $(date) `x` ${v:-y}\n")),
        ),
        ("substitution", fill("x=$(echo $((1 << 2)) \"$(true)\"); ")),
        (
            "case",
            fill("case $v in a|b) echo;; esac; [[ $x =~ ^(a|b)$ ]]; (( n <<= 1 )); "),
        ),
        ("glob", fill("/usr/bin/r[a-z]*{a,b} ")),
        ("word", fill("a")),
        ("arithmetic", fill("$((")),
    ]
}

/// The median of the samples.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let only: Option<usize> = args.next().and_then(|arg| arg.parse().ok());
    let runs: usize = args.next().and_then(|arg| arg.parse().ok()).unwrap_or(21);
    for (number, (name, command)) in shapes().iter().enumerate() {
        if only.is_some_and(|only| only != number + 1) {
            continue;
        }
        let samples = (0..runs)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(forge_bash::guard::check(command));
                started.elapsed()
            })
            .collect();
        let ms = median(samples).as_secs_f64() * 1000.0;
        eprintln!("{} {name:<13} {ms:7.3} ms", number + 1);
    }
}
