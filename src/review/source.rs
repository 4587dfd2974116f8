//! What a review reads: the change named on the command line as a unified diff (from git,
//! through zero's own git door, or from stdin), bounded by [`MAX_DIFF_BYTES`] as it is read
//! (git is stopped past it), and where the new versions of its files are read from. A diff
//! against the working tree goes through a private view of the repository (see
//! `runtime::worktree::git::View`): no filter, textconv driver or fsmonitor a pull request's
//! `.gitattributes` or the repository's config names runs.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::findings::{DiffError, MAX_DIFF_BYTES};
use crate::runtime::worktree::git::{Bounded, GitError, View, git, git_bounded};

use super::Problem;

/// What to review, as the flags name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// `--base REF`, or the default base when `None`: the merge base of REF and HEAD, to the
    /// working tree.
    Base(Option<String>),
    /// `--commit SHA`: one commit against its first parent.
    Commit(String),
    /// `--uncommitted`: the working tree against HEAD.
    Uncommitted,
    /// `-`: a diff on stdin.
    Stdin,
}

/// Where the new version of a changed file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NewSide {
    /// The working tree under the repository's root.
    WorkingTree,
    /// This commit.
    Commit(String),
}

/// The change under review.
pub(super) struct Change {
    /// Its unified diff.
    pub(super) diff: String,
    /// The directory the diff's paths are relative to: the repository's root, or the
    /// workspace for a diff on stdin outside a repository.
    pub(super) root: PathBuf,
    /// Where its files' new versions are.
    pub(super) new_side: NewSide,
    /// What it is, in words, for the reviewer and the log ("the changes since …").
    pub(super) described: String,
}

/// The arguments every `git diff` of a review gets: no colour, no external diff driver or
/// text conversion the repository's configuration may name, and git's standard `a/`/`b/`
/// prefixes whatever `diff.noprefix` or `diff.mnemonicPrefix` say.
const DIFF_ARGS: [&str; 6] = [
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
];

impl Source {
    /// Reads the change from `workspace`.
    pub(super) fn read(&self, workspace: &Path) -> Result<Change, Problem> {
        if *self == Source::Stdin {
            return from_stdin(workspace);
        }
        let root = PathBuf::from(git(workspace, &["rev-parse", "--show-toplevel"]).map_err(
            |error| match error {
                GitError::Failed { .. } => Problem::usage(format!(
                    "{} is not in a git repository: give the diff to review on stdin \
                     (`zero review -`)",
                    workspace.display()
                )),
                other => Problem::usage(other.to_string()),
            },
        )?);
        let change = |diff, new_side, described| Change {
            diff,
            root: root.clone(),
            new_side,
            described,
        };
        match self {
            Source::Base(base) => {
                let base = match base {
                    Some(base) => base.clone(),
                    None => default_base(&root)?,
                };
                let merge_base = git(&root, &["merge-base", &base, "HEAD"]).map_err(|e| {
                    Problem::usage(format!("no merge base of `{base}` and HEAD: {e}"))
                })?;
                let diff = diff(&root, &[&merge_base])?;
                let described =
                    format!("the changes since the merge base of {base} and HEAD ({merge_base})");
                Ok(change(diff, NewSide::WorkingTree, described))
            }
            Source::Commit(commit) => {
                let sha = git(
                    &root,
                    &["rev-parse", "--verify", &format!("{commit}^{{commit}}")],
                )
                .map_err(|_| Problem::usage(format!("`{commit}` is not a commit")))?;
                let parent = git(&root, &["rev-parse", "--verify", "-q", &format!("{sha}^")])
                    // A root commit: everything it holds is new, as against the empty tree.
                    .or_else(|_| git(&root, &["hash-object", "-t", "tree", "/dev/null"]))
                    .map_err(|e| Problem::usage(e.to_string()))?;
                let diff = diff(&root, &[&parent, &sha])?;
                let described = format!("commit {sha}");
                Ok(change(diff, NewSide::Commit(sha), described))
            }
            Source::Uncommitted => {
                let diff = diff(&root, &["HEAD"])?;
                let described = "the uncommitted changes (staged and not) against HEAD".into();
                Ok(change(diff, NewSide::WorkingTree, described))
            }
            Source::Stdin => unreachable!("read above"),
        }
    }
}

/// The base when none is named: the branch's upstream, else `origin/HEAD`.
fn default_base(root: &Path) -> Result<String, Problem> {
    let upstream = [
        "rev-parse",
        "--abbrev-ref",
        "--symbolic-full-name",
        "@{upstream}",
    ];
    let origin = ["rev-parse", "--abbrev-ref", "origin/HEAD"];
    git(root, &upstream)
        .or_else(|_| git(root, &origin))
        .map_err(|_| {
            Problem::usage(
                "nothing names what to review: the branch has no upstream and the repository no \
                 origin/HEAD. Give --base REF (e.g. --base origin/main), --commit SHA, \
                 --uncommitted, or a diff on stdin (`zero review -`)"
                    .into(),
            )
        })
}

/// `git diff` of `revisions` in `root` (to the working tree when one revision is given),
/// read through a private view with a copy of the repository's index, bounded.
fn diff(root: &Path, revisions: &[&str]) -> Result<String, Problem> {
    let problem = |e: GitError| Problem::usage(e.to_string());
    // Named in the repository itself: the view has no refs of its own.
    let resolved = revisions
        .iter()
        .map(|revision| git(root, &["rev-parse", "--verify", revision]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(problem)?;
    let mut args: Vec<&str> = DIFF_ARGS.to_vec();
    args.extend(resolved.iter().map(String::as_str));
    args.push("--");
    let common = PathBuf::from(
        git(
            root,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .map_err(problem)?,
    );
    let own = PathBuf::from(git(root, &["rev-parse", "--absolute-git-dir"]).map_err(problem)?);
    let view = View::new(&common, &std::env::temp_dir()).map_err(problem)?;
    let index = view.index("review.index");
    // Staged files count as the working tree's; without an index, what HEAD holds.
    if std::fs::copy(own.join("index"), &index).is_err() {
        let head = git(root, &["rev-parse", "--verify", "HEAD^{tree}"]).map_err(problem)?;
        view.git(root, &index, &["read-tree", &head])
            .map_err(problem)?;
    }
    bounded(view.bounded(root, &index, &args, MAX_DIFF_BYTES))
}

/// What git printed, refused beyond [`MAX_DIFF_BYTES`] (git stopped there).
fn bounded(printed: Result<Bounded, GitError>) -> Result<String, Problem> {
    let printed = printed.map_err(|e| Problem::usage(e.to_string()))?;
    match printed.cut {
        true => Err(too_large(MAX_DIFF_BYTES + 1)),
        false => Ok(String::from_utf8_lossy(&printed.bytes).into_owned()),
    }
}

/// The diff on stdin, read up to one byte past the bound.
fn from_stdin(workspace: &Path) -> Result<Change, Problem> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_DIFF_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Problem::usage(format!("cannot read the diff from stdin: {e}")))?;
    if bytes.len() > MAX_DIFF_BYTES {
        return Err(too_large(bytes.len()));
    }
    let root = git(workspace, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace.to_path_buf());
    Ok(Change {
        diff: String::from_utf8_lossy(&bytes).into_owned(),
        root,
        new_side: NewSide::WorkingTree,
        described: "the diff given on stdin".into(),
    })
}

fn too_large(bytes: usize) -> Problem {
    Problem::usage(DiffError::TooLarge { bytes }.to_string())
}

impl Change {
    /// The new version of the changed file at `path` (relative to the root), at most `limit`
    /// bytes of it; `None` when it cannot be read or is not text.
    pub(super) fn new_version(&self, path: &str, limit: u64) -> Option<String> {
        let mut bytes = self.new_bytes(path, limit)?;
        bytes.truncate(limit as usize);
        text(bytes)
    }

    /// The whole new version of the changed file at `path`; `None` when it is larger than
    /// `limit` bytes, cannot be read or is not text.
    pub(super) fn whole_new_version(&self, path: &str, limit: u64) -> Option<String> {
        let bytes = self.new_bytes(path, limit)?;
        (bytes.len() as u64 <= limit).then_some(())?;
        text(bytes)
    }

    /// The new version's first `limit + 1` bytes (or fewer: all it has).
    fn new_bytes(&self, path: &str, limit: u64) -> Option<Vec<u8>> {
        match &self.new_side {
            NewSide::WorkingTree => {
                let (file, _) = crate::fsutil::open_beneath(&self.root, Path::new(path)).ok()?;
                let mut bytes = Vec::new();
                file.take(limit + 1).read_to_end(&mut bytes).ok()?;
                Some(bytes)
            }
            NewSide::Commit(sha) => git_bounded(
                &self.root,
                &["show", &format!("{sha}:{path}")],
                limit as usize + 1,
            )
            .ok()
            .map(|read| read.bytes),
        }
    }
}

/// `bytes` as text, unless they hold a NUL (a binary file).
fn text(bytes: Vec<u8>) -> Option<String> {
    (!bytes.contains(&0)).then(|| String::from_utf8_lossy(&bytes).into_owned())
}
