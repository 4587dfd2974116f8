//! The committed completions and man pages must match what the CLI definitions generate.

use std::path::Path;

const REGENERATE: &str = "cargo run -- __generate";

fn assert_same_tree(committed: &Path, fresh: &Path) {
    for entry in std::fs::read_dir(fresh).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let expected = std::fs::read(entry.path()).unwrap();
        let actual = std::fs::read(committed.join(&name)).unwrap_or_default();
        assert!(
            expected == actual,
            "{} is stale; regenerate with: {REGENERATE}",
            committed.join(&name).display()
        );
    }
}

#[test]
fn committed_completions_and_man_pages_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = tempfile::tempdir().unwrap();
    zero::generate::write_completions(&fresh.path().join("completions")).unwrap();
    zero::generate::write_man_pages(&fresh.path().join("man")).unwrap();
    assert_same_tree(&root.join("completions"), &fresh.path().join("completions"));
    assert_same_tree(&root.join("man"), &fresh.path().join("man"));
}
