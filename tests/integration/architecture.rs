//! The module map in `docs/ARCHITECTURE.md` is the law of the code's shape: each top-level
//! module of `src/` may use only the modules its row names, rows are ordered so that every
//! arrow points down the table (which rules out an import circle), and every module has a row.
//! These tests read the table and every `crate::` path in `src/`, so an arrow the design does
//! not allow fails here rather than in a reviewer's head.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module-map table: each module's name and the modules it may use, top to bottom.
/// `None` means "everything" (the binary's `main.rs`).
fn module_map() -> Vec<(String, Option<BTreeSet<String>>)> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let section = doc
        .split("## Module map")
        .nth(1)
        .expect("docs/ARCHITECTURE.md has a module map");
    let rows: Vec<_> = section
        .lines()
        .skip_while(|line| !line.starts_with("| module |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            let name = cells[0].trim().trim_matches('`').to_string();
            let may_use = cells.last().unwrap().trim();
            let allowed = (may_use != "everything").then(|| backticked(may_use));
            (name, allowed)
        })
        .collect();
    assert!(rows.len() > 5, "the module map has rows: {rows:?}");
    rows
}

/// The `quoted` names in a table cell.
fn backticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each top-level module of the library, with the top-level modules its code names through
/// `crate::` paths (comments left out: a doc link is not a dependency).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        let mut used = BTreeSet::new();
        for file in rust_files(&path) {
            let text = std::fs::read_to_string(&file).unwrap();
            used.extend(crate_paths(&text).into_iter().filter(|m| *m != name));
        }
        modules.insert(name, used);
    }
    modules
}

fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return if path.extension().is_some_and(|e| e == "rs") {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        files.extend(rust_files(&entry.unwrap().path()));
    }
    files
}

/// The first segment of every `crate::` path in `source`: `crate::a::b` and each item of
/// `crate::{a, b::c}`.
fn crate_paths(source: &str) -> BTreeSet<String> {
    paths_after(source, "crate::")
}

/// The first segment after every `prefix` in `source` (comments left out), as
/// [`crate_paths`] reads `crate::`.
fn paths_after(source: &str, prefix: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c == '$' || c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            found.extend(group_heads(group));
        } else {
            found.insert(identifier(rest));
        }
    }
    found.remove("");
    found
}

/// The first segment of each item of a `{...}` use group, `group` starting after the `{`.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                heads.push(identifier(&group[at..]));
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The sibling files each file of a module directory names: `super::NAME` from a file beside
/// `NAME.rs`, and `crate::DIR::NAME` (keyed by path relative to `src/`).
fn sibling_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut edges = BTreeMap::new();
    for file in rust_files(&src) {
        let (Some(dir), Some(stem)) = (file.parent(), file.file_stem()) else {
            continue;
        };
        if stem == "mod" || stem == "lib" || stem == "main" || dir == src {
            continue;
        }
        let module = dir
            .strip_prefix(&src)
            .unwrap()
            .to_str()
            .unwrap()
            .replace('/', "::");
        let text = std::fs::read_to_string(&file).unwrap();
        let mut named = paths_after(&text, "super::");
        named.extend(paths_after(&text, &format!("crate::{module}::")));
        let siblings: BTreeSet<String> = named
            .into_iter()
            .filter(|name| {
                name != stem.to_str().unwrap() && dir.join(format!("{name}.rs")).is_file()
            })
            .map(|name| format!("{module}::{name}"))
            .collect();
        edges.insert(format!("{module}::{}", stem.to_str().unwrap()), siblings);
    }
    edges
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    let edges = sibling_imports();
    let mut circles = Vec::new();
    for (file, named) in &edges {
        for other in named {
            if file < other && edges.get(other).is_some_and(|back| back.contains(file)) {
                circles.push(format!("{file} <-> {other}"));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files that import each other: {circles:?}"
    );
}

#[test]
fn every_module_uses_only_what_its_row_allows() {
    let map: BTreeMap<_, _> = module_map().into_iter().collect();
    let mut wrong = Vec::new();
    for (module, used) in imports() {
        let Some(Some(allowed)) = map.get(&module) else {
            continue;
        };
        for target in used.difference(allowed) {
            wrong.push(format!("{module} → {target}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows docs/ARCHITECTURE.md's module map does not allow: {wrong:?}"
    );
}

#[test]
fn every_module_has_a_row_and_every_row_a_module() {
    let rows: BTreeSet<String> = module_map().into_iter().map(|(name, _)| name).collect();
    let mut modules: BTreeSet<String> = imports().into_keys().collect();
    modules.insert("main.rs".to_string());
    assert_eq!(rows, modules);
}

#[test]
fn every_arrow_in_the_table_points_down() {
    let rows = module_map();
    for (at, (module, allowed)) in rows.iter().enumerate() {
        let below: BTreeSet<String> = rows[at + 1..].iter().map(|(n, _)| n.clone()).collect();
        for target in allowed.iter().flatten() {
            assert!(
                below.contains(target),
                "{module} may use {target}, which is not below it in the table"
            );
        }
    }
}

#[test]
fn crate_paths_are_read_in_both_forms() {
    let source = "use crate::a::B;\nuse crate::{c, d::{E, F}, g};\n// crate::commented\n\
                  let x = crate::h::f(); pub(crate) fn y() {} $crate::i";
    let found: Vec<String> = crate_paths(source).into_iter().collect();
    assert_eq!(found, ["a", "c", "d", "g", "h"]);
}
