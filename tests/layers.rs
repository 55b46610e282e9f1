//! The house's floors: the modules of src/ import one another without a circle.
//!
//! Reads every `crate::<module>` path in src/ (the `use` lines and paths in code),
//! takes each file's top-level module (`src/guard/parse.rs` is `guard`), and fails on
//! any circle between two or more modules. It prints the floors: each module on the
//! floor above the highest one it imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules it names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let module = first.trim_end_matches(".rs").to_owned();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let names = graph.entry(module.clone()).or_default();
            for (at, _) in text.match_indices("crate::") {
                let rest = &text[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `crate::{a, b}`: each name of the group.
                if name.is_empty() && rest.starts_with('{') {
                    let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
                    for part in group.split(',') {
                        let part = part.trim().split("::").next().unwrap_or("").trim();
                        if !part.is_empty() && part != module {
                            names.insert(part.to_owned());
                        }
                    }
                } else if !name.is_empty() && name != module {
                    names.insert(name);
                }
            }
        }
    }
    graph
}

/// A circle through `from`, if there is one.
fn circle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == from) {
        let mut found = path[at..].to_vec();
        found.push(from.to_owned());
        return Some(found);
    }
    path.push(from.to_owned());
    for next in graph.get(from).into_iter().flatten() {
        if let Some(found) = circle(graph, next, path) {
            return Some(found);
        }
    }
    path.pop();
    None
}

fn floor(graph: &BTreeMap<String, BTreeSet<String>>, module: &str) -> usize {
    graph
        .get(module)
        .into_iter()
        .flatten()
        .map(|m| floor(graph, m) + 1)
        .max()
        .unwrap_or(0)
}

#[test]
fn modules_import_one_another_without_a_circle() {
    let graph = imports();
    assert!(graph.len() > 5, "{graph:?}");
    for module in graph.keys() {
        if let Some(found) = circle(&graph, module, &mut Vec::new()) {
            panic!("import circle: {}", found.join(" → "));
        }
    }
    let mut floors: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for module in graph.keys() {
        floors
            .entry(floor(&graph, module))
            .or_default()
            .push(module);
    }
    for (n, modules) in &floors {
        eprintln!("floor {n}: {}", modules.join(", "));
    }
}
