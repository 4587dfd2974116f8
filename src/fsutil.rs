//! File-system helpers shared by every module that writes files, so there is one door for
//! durable writes.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Replaces `path` with `bytes` atomically and durably: a reader sees the old content or the
/// new, never a mix, and after a crash the new content is either fully there or not at all.
///
/// The bytes go to a temporary file in the same directory (so the rename cannot cross file
/// systems), which is fsynced, renamed over `path`, and then the directory is fsynced so the
/// rename itself survives a power loss. The temporary file is removed if anything fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_content_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["record.json"]);
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_partial_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent").join("record.json");
        assert!(write_atomic(&path, b"x").is_err());
        assert!(!path.exists());
    }
}
