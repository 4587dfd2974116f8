//! zero: a headless coding-agent CLI.
//!
//! `zero exec "prompt"` runs one agent job against a model endpoint, lets the model work through
//! tools, and exits with a code a script can act on. See `docs/ARCHITECTURE.md` for the design.

pub mod agent;
pub mod cli;
pub mod config_file;
pub mod exec;
pub mod exit;
pub mod fsutil;
pub mod generate;
pub mod lifecycle;
pub mod operator;
pub mod output;
pub mod provider;
pub mod redact;
pub mod runtime;
pub mod sync;
pub mod tasks;
pub mod tools;
