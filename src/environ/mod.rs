//! zero and its environment: where its directories are by the environment's rules (`dirs`,
//! the XDG base directory spec and `ZERO_HOME`, in one place for config, specialists, data and
//! cache), and the process's own initial environment cleared of secret values (`hide`).

mod dirs;
mod hide;
pub(crate) mod names;

pub(crate) use dirs::{Base, data_dir, home, zero_dir};
pub use hide::hide_secret_values;
