//! zero's integration tests: one test binary, one module per area (the layout ripgrep's
//! `tests/` uses). One crate means `support` is compiled once and every helper in it is used by
//! some test — an unused one is a warning, so helpers cannot drift apart unnoticed.
//!
//! `cargo test --locked` runs them all; `cargo test --test integration <module>::` runs one
//! area (for example `lifecycle::`). The tests against a real local model are `#[ignore]`d:
//! `cargo test --test integration -- --ignored local_model::` once `scripts/local-model build`
//! has filled the cache.

mod support;

mod agent;
mod architecture;
mod background;
mod budget;
mod caching;
mod cassette;
mod ci_doc;
mod cli;
mod compaction;
mod config_keys;
mod containment;
mod estimated_usage;
mod exec;
mod exec_rules;
mod extreme_values;
mod fallback;
mod file_paths;
mod generated;
mod git_metadata;
mod guardian_reach;
mod hooks;
mod hostile_names;
mod images;
mod inert_text;
mod isolated_specialists;
mod lifecycle;
mod local_model;
mod local_provider;
mod mcp;
mod output_limit;
mod own_git;
mod provider;
mod reasoning;
mod reconcile;
mod repeats;
mod replay;
mod review;
mod review_action;
mod rules;
mod rules_differential;
mod runtime;
mod sandbox;
mod secrets;
mod sessions;
mod skills;
mod small_models;
mod special_files;
mod specialist_results;
mod specialists;
mod stalled_output;
mod startup_order;
mod stream_json_fixtures;
mod structured;
mod task_tools;
mod tasks;
mod tasks_cli;
mod timeout;
mod verify;
mod waiting;
mod warm_guardians;
mod web_fetch;
mod window;
mod worktrees;
mod xdg;
