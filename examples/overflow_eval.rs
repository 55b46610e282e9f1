//! What the model is shown of the corpus of real logs (tests/corpus/logs): the share
//! of ground-truth items shown, the verdicts shown, the failing runs that look clean
//! and the answers' sizes, now and before. `cargo run --example overflow_eval`, or
//! `cargo run --example overflow_eval -- NAME` to print the answer of the cases whose
//! name contains NAME.

#[path = "../tests/corpus/eval.rs"]
mod eval;

use std::io::Write;

fn main() {
    let filter = std::env::args().nth(1);
    let report = eval::evaluate();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "| case | items shown | verdict | bytes | lines | looks clean |"
    )
    .unwrap();
    writeln!(out, "|---|---|---|---|---|---|").unwrap();
    for (name, seen, _) in &report.cases {
        let verdict = match seen.verdict_shown {
            Some(true) => "shown",
            Some(false) => "MISSING",
            None => "—",
        };
        writeln!(
            out,
            "| {name} | {}/{} | {verdict} | {} | {} | {} |",
            seen.items_shown,
            seen.items,
            seen.bytes,
            seen.lines,
            if seen.looks_clean { "YES" } else { "" }
        )
        .unwrap();
    }
    writeln!(out, "\n{}", report.table()).unwrap();
    for case in eval::load() {
        let Some((_, _, answer)) = report.cases.iter().find(|(n, _, _)| *n == case.name) else {
            continue;
        };
        for item in case.items.iter().filter(|i| !answer.contains(i.as_str())) {
            writeln!(out, "{}: not shown: {item}", case.name).unwrap();
        }
    }
    if let Some(filter) = filter {
        for (name, _, answer) in report.cases.iter().filter(|(n, _, _)| n.contains(&filter)) {
            writeln!(out, "\n===== {name}\n{answer}").unwrap();
        }
    }
}
