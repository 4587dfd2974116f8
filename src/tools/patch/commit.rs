//! Writing a planned patch to disk all-or-nothing.
//!
//! Every change is already computed when this runs; what can still fail is the operating
//! system (a full disk, a path component that is a file). Each file is replaced atomically, and
//! if one write fails, the changes made before it are undone from the originals kept in memory,
//! so the workspace ends as it was.

use std::fs::{self, Permissions};
use std::io;
use std::path::PathBuf;

use crate::fsutil;

/// One path a patch changes: what is there now, and what the patch leaves there.
#[derive(Debug)]
pub(super) struct Change {
    /// The resolved path.
    pub(crate) path: PathBuf,
    /// The path as the patch wrote it, for messages.
    pub(crate) shown: String,
    /// The file as it is now (`None`: it does not exist); restored on rollback.
    pub(crate) before: Option<Original>,
    /// The contents the patch leaves (`None`: the file is deleted).
    pub(crate) after: Option<Vec<u8>>,
    /// The mode for a file that does not exist yet (a moved file keeps its source's); `None`
    /// gives a new file the usual default. An existing file always keeps its own.
    pub(crate) mode: Option<Permissions>,
}

/// A file's contents and mode before the patch.
#[derive(Debug, Clone)]
pub(super) struct Original {
    /// The whole contents.
    pub(crate) bytes: Vec<u8>,
    /// The permission bits, restored along with the contents.
    pub(crate) permissions: Permissions,
}

/// A write that failed, and what undoing the earlier writes could not restore.
#[derive(Debug)]
pub(super) struct CommitError {
    /// The path whose write failed, as the patch wrote it.
    pub(crate) shown: String,
    /// Why the write failed.
    pub(crate) error: io::Error,
    /// Paths that could not be restored; empty when the rollback was complete.
    pub(crate) not_restored: Vec<(String, io::Error)>,
}

/// Applies `changes` in order; on the first failure, undoes the ones already applied.
pub(super) fn commit(changes: &[Change]) -> Result<(), CommitError> {
    let mut created_dirs = Vec::new();
    for (applied, change) in changes.iter().enumerate() {
        if let Err(error) = apply(change, &mut created_dirs) {
            return Err(CommitError {
                shown: change.shown.clone(),
                error,
                not_restored: rollback(&changes[..applied], &created_dirs),
            });
        }
    }
    Ok(())
}

/// Makes one change, recording any directories it had to create.
fn apply(change: &Change, created_dirs: &mut Vec<PathBuf>) -> io::Result<()> {
    let Some(bytes) = &change.after else {
        return fs::remove_file(&change.path);
    };
    if change.before.is_some() {
        return fsutil::write_atomic(&change.path, bytes);
    }
    created_dirs.extend(fsutil::create_parent_dirs(&change.path)?);
    match &change.mode {
        Some(mode) => fsutil::write_atomic_with_permissions(&change.path, bytes, mode.clone()),
        None => fsutil::write_atomic(&change.path, bytes),
    }
}

/// Restores every applied change, newest first, then removes the directories the patch
/// created; returns what could not be restored.
fn rollback(applied: &[Change], created_dirs: &[PathBuf]) -> Vec<(String, io::Error)> {
    let mut not_restored = Vec::new();
    for change in applied.iter().rev() {
        let restored = match &change.before {
            Some(original) => fsutil::write_atomic_with_permissions(
                &change.path,
                &original.bytes,
                original.permissions.clone(),
            ),
            None => fs::remove_file(&change.path),
        };
        if let Err(error) = restored {
            not_restored.push((change.shown.clone(), error));
        }
    }
    for dir in created_dirs.iter().rev() {
        // Only an empty directory is removed: one that holds something else was not ours alone.
        let _ = fs::remove_dir(dir);
    }
    not_restored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Workspace;
    use std::os::unix::fs::PermissionsExt;

    fn original(ws: &Workspace, rel: &str) -> Option<Original> {
        let path = ws.path(rel);
        Some(Original {
            bytes: fs::read(&path).unwrap(),
            permissions: fs::metadata(&path).unwrap().permissions(),
        })
    }

    fn change(ws: &Workspace, rel: &str, after: Option<&str>) -> Change {
        Change {
            path: ws.path(rel),
            shown: rel.to_string(),
            before: ws.exists(rel).then(|| original(ws, rel)).flatten(),
            after: after.map(|a| a.as_bytes().to_vec()),
            mode: None,
        }
    }

    #[test]
    fn a_failing_write_rolls_back_every_earlier_change() {
        let ws = Workspace::new();
        ws.write("a.txt", "original a\n");
        ws.write("c.sh", "original c\n");
        fs::set_permissions(ws.path("c.sh"), Permissions::from_mode(0o751)).unwrap();
        ws.write("blocker", "a file where a directory is needed");
        let changes = vec![
            change(&ws, "a.txt", Some("patched a\n")),
            change(&ws, "new/dir/b.txt", Some("added\n")),
            change(&ws, "c.sh", None),
            change(&ws, "blocker/x.txt", Some("cannot be written\n")),
        ];

        let err = commit(&changes).unwrap_err();

        assert_eq!(err.shown, "blocker/x.txt");
        assert!(err.not_restored.is_empty(), "{:?}", err.not_restored);
        assert_eq!(ws.read("a.txt"), b"original a\n");
        assert_eq!(ws.read("c.sh"), b"original c\n");
        let mode = fs::metadata(ws.path("c.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o751);
        assert!(!ws.exists("new"), "created directories are removed again");
        assert_eq!(ws.read("blocker"), b"a file where a directory is needed");
    }

    #[test]
    fn all_changes_land_when_nothing_fails() {
        let ws = Workspace::new();
        ws.write("a.txt", "a");
        ws.write("gone.txt", "g");
        let mut moved = change(&ws, "sub/moved.txt", Some("m"));
        moved.mode = Some(Permissions::from_mode(0o700));
        commit(&[
            change(&ws, "a.txt", Some("A")),
            change(&ws, "gone.txt", None),
            moved,
        ])
        .unwrap();
        assert_eq!(ws.read("a.txt"), b"A");
        assert!(!ws.exists("gone.txt"));
        let mode = fs::metadata(ws.path("sub/moved.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o700);
    }
}
