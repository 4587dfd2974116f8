//! How a specialist shares its parent's cassette: the parent hands the child a [`Link`] in
//! its launch environment (`ZERO_CASSETTE`, read only in a specialist), naming the file, the
//! mode and the child's task tag. Tags are deterministic: the run itself is [`ROOT_TASK`],
//! the n-th specialist it launched is `n` (the order the `Task` calls launched them, which
//! replay reproduces because the calls come from the cassette).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The task tag of the run itself (a specialist's is the order it was launched in).
pub(crate) const ROOT_TASK: &str = "main";

/// Whether the run records its traffic or replays it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LinkMode {
    /// Append the child's exchanges to the parent's cassette.
    Record,
    /// Serve the child's exchanges from the cassette, compared exactly.
    Replay,
    /// Serve them compared on the conversation's shape only (`--replay-lenient`).
    ReplayLenient,
}

/// A cassette as a child gets it from its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Link {
    /// Record or replay, and how strictly.
    pub(crate) mode: LinkMode,
    /// The cassette, absolute (the child works in its own directory).
    pub(crate) path: PathBuf,
    /// The task tag this process records or replays under.
    pub(crate) task: String,
    /// Whether streaming timings are replayed (`--replay-timing`).
    pub(crate) timing: bool,
}

impl Link {
    /// The link of the `number`-th specialist this run launches (1-based).
    pub(crate) fn for_child(&self, number: u64) -> Link {
        Link {
            task: number.to_string(),
            ..self.clone()
        }
    }

    /// The link as the environment variable carries it.
    pub(crate) fn to_env(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The link an environment variable carried, or why it is not one.
    pub(crate) fn from_env(value: &str) -> Result<Link, String> {
        serde_json::from_str(value).map_err(|e| format!("not a cassette link: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_survives_the_environment_and_tags_children_by_launch_order() {
        let link = Link {
            mode: LinkMode::ReplayLenient,
            path: PathBuf::from("/ci/run.cassette"),
            task: ROOT_TASK.into(),
            timing: true,
        };
        let child = link.for_child(2);
        assert_eq!(child.task, "2");
        assert_eq!(Link::from_env(&child.to_env()).unwrap(), child);
        assert!(Link::from_env("{\"mode\":\"record\"}").is_err());
    }
}
