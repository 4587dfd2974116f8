//! Cassettes: a run's model traffic recorded (`zero exec --record FILE`) and served back
//! (`zero exec --replay FILE`), so a pull request can test its prompt, rules, hooks and
//! checks without a model, and a failed CI run can be reproduced exactly.
//!
//! A cassette is JSON lines (`line`, docs/REPLAY.md, docs/cassette.schema.json): each process
//! of the run — the run itself and each specialist, tagged by its task (`Link`) — writes a
//! `start` line, then for every request a `request` line (its canonical form and hash,
//! `canonical`) and a `response` line (what came back, as the provider assembled it). The
//! recording sits at the provider boundary (`record`): it wraps the provider the run talks
//! to, so what is recorded is what the agent loop was given. Replay (`replay`) is a provider
//! too: it compares each request with the recorded one (`diff` says how they differ) and
//! serves the recorded response; everything else of the run — tools, rules, hooks, MCP
//! servers, checks — is real. `tape` reads and checks a cassette, `writer` appends to one,
//! `show` renders one as the text format would have printed the run.

mod canonical;
mod diff;
mod line;
mod link;
mod record;
mod replay;
mod show;
mod tape;
mod writer;

pub(crate) use canonical::Masks;
pub(crate) use link::{Link, LinkMode, ROOT_TASK};
pub(crate) use record::Recording;
pub(crate) use replay::{Matching, Replaying};
pub use show::{check, show};
pub(crate) use tape::Tape;
pub(crate) use writer::{Writer, check_target};

/// The version of the cassette format this zero writes and reads (`start.version`). A
/// change that an older reader would misread bumps it; docs/REPLAY.md keeps the history.
pub const VERSION: u32 = 1;
