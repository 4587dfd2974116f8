//! The file tools: `read_file`, `write_file` and `edit_file`.
//!
//! Every path goes through [`ToolContext::resolve`](super::ToolContext::resolve) first, so
//! confinement is decided on the real target; every read opens a regular file only
//! ([`crate::fsutil::open_regular`]), and every write goes through
//! [`crate::fsutil::write_atomic`].

mod edit;
mod read;
mod write;

pub(crate) use edit::EditFile;
pub(crate) use read::ReadFile;
pub(crate) use write::WriteFile;
