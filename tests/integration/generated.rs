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

/// The flags of `zero exec` that `zero review` refuses, each as given and as its man page would
/// write it (roff escapes each `-`).
const REFUSED_BY_REVIEW: [(&[&str], &str); 11] = [
    (&["-o", "json"], r"\fB\-o\fR"),
    (&["-i", "stream-json"], r"\fB\-i\fR"),
    (&["--output-schema", "s.json"], r"\fB\-\-output\-schema\fR"),
    (&["--verify", "cargo test"], r"\fB\-\-verify\fR"),
    (&["--verify-timeout", "1m"], r"\fB\-\-verify\-timeout\fR"),
    (&["--verify-retries", "1"], r"\fB\-\-verify\-retries\fR"),
    (&["--worktree"], r"\fB\-\-worktree\fR"),
    (
        &["--skip-permissions-unsafe"],
        r"\fB\-\-skip\-permissions\-unsafe\fR",
    ),
    (&["--list-tools"], r"\fB\-\-list\-tools\fR"),
    (&["--list-specialists"], r"\fB\-\-list\-specialists\fR"),
    (&["--list-skills"], r"\fB\-\-list\-skills\fR"),
];

#[test]
fn zero_reviews_man_page_and_help_list_no_flag_it_refuses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("man/zero-review.1")).unwrap();
    let help = crate::support::zero::zero()
        .args(["review", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("--fail-on"), "{help}");
    let workspace = tempfile::tempdir().unwrap();
    for (argv, in_roff) in REFUSED_BY_REVIEW {
        assert!(!page.contains(in_roff), "man/zero-review.1 lists {argv:?}");
        let long = argv[0];
        assert!(
            !help
                .lines()
                .any(|line| line.trim_start().starts_with(long)
                    || line.contains(&format!(", {long}"))),
            "`zero review --help` lists {long}:\n{help}"
        );
        let refused = crate::support::zero::zero()
            .arg("review")
            .args(argv)
            .current_dir(workspace.path())
            .output()
            .unwrap();
        assert_eq!(refused.status.code(), Some(2), "{argv:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("zero review does not take"),
            "{argv:?}: {stderr}"
        );
    }
}
