//! What a hostile-input test proves its effect with: a script that leaves a marker behind
//! when anything runs it, a directory outside every writable root to leave it in, and
//! making a planted script executable.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A shell script that creates `marker` when run.
pub fn marking_script(marker: &Path) -> String {
    format!("#!/bin/sh\ntouch '{}'\nexit 0\n", marker.display())
}

/// A directory outside every writable root that anyone may write (mode 777), so a program
/// run unconfined as `nobody` could leave a marker in it too.
pub fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o777);
    dir
}

/// Makes the file at `path` executable (mode 755).
pub fn make_executable(path: &Path) {
    set_mode(path, 0o755);
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
