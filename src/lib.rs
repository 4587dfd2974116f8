//! zero: a headless coding-agent CLI.
//!
//! `zero exec "prompt"` runs one agent job against a model endpoint, lets the model work through
//! tools, and exits with a code a script can act on. See `docs/ARCHITECTURE.md` for the design.
//!
//! The library is what the `zero` binary is made of; its public items are the ones the binary
//! and the integration tests use, everything else is `pub(crate)`.

#![warn(missing_docs)]
// A long function is a list of named steps: past 100 lines it is split, or an `allow` next to
// it says why not.
#![warn(clippy::too_many_lines)]

pub mod agent;
pub mod cassette;
pub mod cli;
mod command_pattern;
mod config_file;
pub mod environ;
pub mod exec;
pub mod exit;
pub mod findings;
mod front_matter;
mod fsutil;
pub mod generate;
pub mod hooks;
mod http_client;
pub mod image;
pub mod lifecycle;
mod local_model;
pub mod mcp;
pub mod operator;
pub mod output;
pub mod provider;
mod redact;
pub mod review;
pub mod rules;
pub mod runtime;
pub mod session;
mod skills;
pub mod structured;
mod sync;
pub mod tasks;
pub mod tools;
pub mod usage;
pub mod verify;
mod web;
