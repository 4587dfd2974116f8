//! Plumbing shared by the tools that touch the filesystem: running blocking work off the async
//! workers, honouring cancellation inside long walks, and turning io errors into messages that
//! tell the model what to do next.
//!
//! Every tool that opens a file the model named opens it through
//! [`crate::fsutil::open_regular`] (or [`crate::fsutil::read_regular`]), so a FIFO, a socket
//! or a device is refused instead of blocking the call forever; [`open_failure`] is how such a
//! refusal reads.

use std::io;

use tokio_util::sync::CancellationToken;

use super::ToolError;
use crate::fsutil::{OpenError, Special};

/// Most bytes of a file that `edit_file` and `apply_patch` read: each holds the whole file and
/// its new version in memory, and a text file a model edits by quoting is far smaller.
pub(super) const EDIT_LIMIT: u64 = 32 * 1024 * 1024;

/// Runs filesystem work on tokio's blocking pool, so a slow disk or a big walk never stalls the
/// async workers that drive the model stream and the other tools.
pub(super) async fn run_blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(ToolError::Failed(format!(
            "the tool stopped unexpectedly: {e}"
        )))
    })
}

/// Fails with [`ToolError::Cancelled`] once the run is stopping; called between the steps of a
/// walk so a cancelled search ends promptly instead of finishing a large tree.
pub(super) fn check_cancelled(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(ToolError::Cancelled)
    } else {
        Ok(())
    }
}

/// Describes an io error on `shown` (the path as the model wrote it), adding a hint for the
/// kinds a model can do something about.
pub(super) fn io_failure(shown: &str, error: &io::Error) -> ToolError {
    let hint = match error.kind() {
        io::ErrorKind::NotFound => "; check the path (glob or list_directory can show what exists)",
        io::ErrorKind::NotADirectory => "; a component of the path is a file, not a directory",
        io::ErrorKind::IsADirectory => {
            "; give the path of a file (list_directory shows a directory)"
        }
        io::ErrorKind::PermissionDenied => "; the file's permissions do not allow this",
        _ => "",
    };
    ToolError::Failed(format!("`{shown}`: {error}{hint}"))
}

/// Describes why `shown` (the path as the model wrote it) could not be opened as a regular file:
/// the type it is instead, the limit it exceeds, or the io error with its hint.
pub(super) fn open_failure(shown: &str, error: &OpenError) -> ToolError {
    match error {
        OpenError::Io(error) => io_failure(shown, error),
        OpenError::NotRegular(Special::Directory) => ToolError::Failed(format!(
            "`{shown}` is a directory, not a regular file; give the path of a file \
             (list_directory shows what a directory contains)"
        )),
        OpenError::NotRegular(kind) => ToolError::Failed(format!(
            "`{shown}` is {kind}, not a regular file; file tools read and write regular files \
             only"
        )),
        OpenError::TooLarge(limit) => ToolError::Failed(format!(
            "`{shown}` is larger than {} MiB, the most a file tool edits; change it with a \
             command instead",
            limit / (1024 * 1024)
        )),
    }
}
