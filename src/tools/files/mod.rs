//! The file tools: `read_file`, `write_file` and `edit_file`.
//!
//! Every path goes through [`ToolContext::resolve`](super::ToolContext::resolve) first, so
//! confinement is decided on the real target; every write goes through [`super::atomic`].

mod edit;
mod read;
mod write;

pub use edit::EditFile;
pub use read::ReadFile;
pub use write::WriteFile;
