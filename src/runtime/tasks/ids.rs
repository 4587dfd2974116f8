//! The ids zero gives runs, tasks and worktrees: each format is defined once, here, by the
//! function that makes fresh ids and the one parser that every id read back must pass — from
//! the command line, from the model, or from the data directory (file names, index lines,
//! records).
//!
//! The ids name files (`runs/<run_id>.lock`, `tasks/<task_id>.json`), so a name read from disk
//! is parsed, never trusted: a stray `runs/...lock` must not become the run id `..` and then
//! the path `runs/..`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::runtime::RuntimeError;

/// A task's id: `task_` and 12 lowercase hex digits. Checked before it is used in a path, so
/// an id typed by the model or the user, or read from disk, can never name a file outside the
/// tasks directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

const TASK_PREFIX: &str = "task_";
const TASK_HEX_DIGITS: usize = 12;

impl TaskId {
    /// A fresh random id (48 random bits: collisions are not a practical concern, and the
    /// output file is created exclusively, so one would fail the start rather than mix tasks).
    pub(crate) fn generate() -> Self {
        TaskId(format!(
            "{TASK_PREFIX}{:0width$x}",
            fastrand::u64(..1 << (4 * TASK_HEX_DIGITS)),
            width = TASK_HEX_DIGITS
        ))
    }

    /// Checks that `text` is exactly what `TaskId::generate` makes.
    pub(crate) fn parse(text: &str) -> Result<Self, RuntimeError> {
        let well_formed = text
            .strip_prefix(TASK_PREFIX)
            .is_some_and(|hex| is_lower_hex(hex, TASK_HEX_DIGITS));
        if well_formed {
            Ok(TaskId(text.to_string()))
        } else {
            Err(RuntimeError::MalformedId(text.to_string()))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A run's id: `run_`, the run's start time (UTC, `yyyymmddHHMMSS`), `_` and 6 lowercase hex
/// digits, so ids sort by start time. Like a [`TaskId`] it names files, so it is parsed
/// wherever it is read back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

const RUN_PREFIX: &str = "run_";
const RUN_TIME_FORMAT: &str = "%Y%m%d%H%M%S";
const RUN_TIME_DIGITS: usize = 14;
const RUN_HEX_DIGITS: usize = 6;

impl RunId {
    /// A fresh id for a run starting now.
    pub fn generate() -> Self {
        RunId(format!(
            "{RUN_PREFIX}{}_{:0width$x}",
            chrono::Utc::now().format(RUN_TIME_FORMAT),
            fastrand::u32(..1 << (4 * RUN_HEX_DIGITS)),
            width = RUN_HEX_DIGITS
        ))
    }

    /// Checks that `text` is shaped exactly like what [`RunId::generate`] makes.
    pub fn parse(text: &str) -> Result<Self, RuntimeError> {
        let well_formed = text
            .strip_prefix(RUN_PREFIX)
            .and_then(|rest| rest.split_once('_'))
            .is_some_and(|(time, hex)| {
                time.len() == RUN_TIME_DIGITS
                    && time.bytes().all(|b| b.is_ascii_digit())
                    && is_lower_hex(hex, RUN_HEX_DIGITS)
            });
        if well_formed {
            Ok(RunId(text.to_string()))
        } else {
            Err(RuntimeError::MalformedRunId(text.to_string()))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The longest name a worktree may have (it names a file, a directory and a branch).
pub(crate) const MAX_WORKTREE_NAME_LEN: usize = 64;

/// The prefix of a generated worktree name.
const WORKTREE_PREFIX: &str = "wt-";

/// The hex digits of a generated worktree name.
const WORKTREE_HEX_DIGITS: usize = 12;

/// A worktree's name: its record's file name, its directory's name, and its branch
/// `zero/<name>`. Checked before use, so a name typed by the user or read from disk can never
/// name a path outside the worktrees directory or an unusual git ref: 1 to 64 of ASCII letters,
/// digits, `-`, `_` and `.`, starting with a letter or digit, with no `..` and no `.lock`
/// ending.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorktreeName(String);

impl WorktreeName {
    /// A fresh name (`wt-` and 12 random lowercase hex digits), for a worktree the user did
    /// not name.
    pub fn generate() -> Self {
        WorktreeName(format!(
            "{WORKTREE_PREFIX}{:0width$x}",
            fastrand::u64(..1 << (4 * WORKTREE_HEX_DIGITS)),
            width = WORKTREE_HEX_DIGITS
        ))
    }

    /// Checks that `text` is a name zero may use as a file name and a branch component.
    pub fn parse(text: &str) -> Result<Self, RuntimeError> {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        let well_formed = (1..=MAX_WORKTREE_NAME_LEN).contains(&text.len())
            && text.bytes().all(allowed)
            && text.as_bytes()[0].is_ascii_alphanumeric()
            && !text.contains("..")
            && !text.ends_with(".lock")
            // A record is `<name>.json`: a worktree named so would be read as another's.
            && !text.ends_with(".json");
        if well_formed {
            Ok(WorktreeName(text.to_string()))
        } else {
            Err(RuntimeError::MalformedWorktreeName(text.to_string()))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The branch the worktree's work is committed to.
    pub fn branch(&self) -> String {
        format!("zero/{}", self.0)
    }
}

/// Whether `text` is exactly `digits` lowercase hex digits (the case zero writes).
fn is_lower_hex(text: &str, digits: usize) -> bool {
    text.len() == digits
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// How every id type is shown and (de)serialised: as its text, and only through its parser.
/// One definition, so the id types cannot drift apart.
macro_rules! id_conversions {
    ($id:ident) => {
        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        /// What deserialising checks: a record is read from disk, and its ids name files.
        impl TryFrom<String> for $id {
            type Error = RuntimeError;

            fn try_from(text: String) -> Result<Self, RuntimeError> {
                $id::parse(&text)
            }
        }

        impl From<$id> for String {
            fn from(id: $id) -> String {
                id.0
            }
        }
    };
}

id_conversions!(TaskId);
id_conversions!(RunId);
id_conversions!(WorktreeName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_checked_before_they_name_a_file() {
        let id = TaskId::generate();
        assert_eq!(TaskId::parse(id.as_str()).unwrap(), id);
        for bad in [
            "",
            "task_",
            "task_0123456789a",
            "task_0123456789abc",
            "task_0123456789AB",
            "task_../../etc/pa",
            "job_0123456789ab",
            "..",
        ] {
            assert!(
                matches!(TaskId::parse(bad), Err(RuntimeError::MalformedId(_))),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn run_ids_are_checked_before_they_name_a_file() {
        let id = RunId::generate();
        assert_eq!(RunId::parse(id.as_str()).unwrap(), id);
        assert!(RunId::parse("run_20260102030405_0a1b2c").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "run_",
            "run_dead",
            "run_20260102030405",
            "run_20260102030405_0a1b2",
            "run_20260102030405_0a1b2c3",
            "run_20260102030405_0A1B2C",
            "run_2026010203040_0a1b2c",
            "run_2026010203040x_0a1b2c",
            "run_20260102030405_0a1b2c/..",
            "../run_20260102030405_0a1b2c",
        ] {
            assert!(
                matches!(RunId::parse(bad), Err(RuntimeError::MalformedRunId(_))),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn names_are_checked_before_they_name_a_file_or_a_branch() {
        let name = WorktreeName::generate();
        assert_eq!(WorktreeName::parse(name.as_str()).unwrap(), name);
        assert_eq!(
            WorktreeName::parse("ci-7.a_b").unwrap().branch(),
            "zero/ci-7.a_b"
        );
        let too_long = "a".repeat(MAX_WORKTREE_NAME_LEN + 1);
        for bad in [
            "", ".", "..", "a..b", "-a", ".a", "_a", "a/b", "../x", "a b", "x.lock", "x.json", "é",
            &too_long,
        ] {
            assert!(
                matches!(
                    WorktreeName::parse(bad),
                    Err(RuntimeError::MalformedWorktreeName(_))
                ),
                "{bad:?} was accepted"
            );
        }
        assert!(serde_json::from_str::<WorktreeName>(r#""../../etc""#).is_err());
    }

    #[test]
    fn a_record_with_a_malformed_id_does_not_deserialise() {
        let read = |text: &str| serde_json::from_str::<TaskId>(text);
        assert!(read(r#""task_0123456789ab""#).is_ok());
        assert!(read(r#""../../home/me/thesis""#).is_err());
        assert!(serde_json::from_str::<RunId>(r#""..""#).is_err());
        assert_eq!(
            serde_json::to_string(&RunId::parse("run_20260102030405_0a1b2c").unwrap()).unwrap(),
            r#""run_20260102030405_0a1b2c""#
        );
    }
}
