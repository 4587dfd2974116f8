//! Turns that cannot bring anything new. A small model at temperature 0 can ask for the same
//! read again and again, alone or in a cycle, or retry the same failing edit, until its turns
//! run out. A call whose result the model already has, with nothing changed since, would
//! return the same: a read's content, or a failed call's error. Such a turn is not run again
//! but answered with a note, and the second time the agent asks for the answer instead.

use serde_json::Value;

use crate::provider::{Message, ToolCall};
use crate::tools::Toolset;

use super::calls;

/// The calls whose results the model has, since the last call that may have changed something.
#[derive(Default)]
pub(crate) struct Repeats {
    known: Vec<(String, Value)>,
    strikes: u32,
    /// The calls of the turn being checked, with whether each only reads, for [`Repeats::ran`].
    turn: Vec<(String, Value, bool)>,
}

impl Repeats {
    /// Before a turn's calls run: when every one of them is known, how many such turns there
    /// have been, this one included.
    pub(crate) fn check(&mut self, calls: &[ToolCall], toolset: &Toolset) -> Option<u32> {
        self.turn = calls
            .iter()
            .map(|call| calls::identity(call, toolset))
            .collect();
        let all_known = !self.turn.is_empty()
            && self
                .turn
                .iter()
                .all(|(name, args, _)| self.known.iter().any(|(n, a)| n == name && a == args));
        all_known.then(|| {
            self.strikes += 1;
            self.strikes
        })
    }

    /// After the checked turn's calls ran, with their `results` in the same order: a call that
    /// may have changed something and succeeded makes everything known stale; otherwise the
    /// turn's reads and failed calls are known from now on.
    pub(crate) fn ran(&mut self, results: &[Message]) {
        let mut known = Vec::with_capacity(self.turn.len());
        let mut changed = false;
        for ((name, args, read), result) in std::mem::take(&mut self.turn).into_iter().zip(results)
        {
            let failed = matches!(result, Message::ToolResult { is_error: true, .. });
            if read || failed {
                known.push((name, args));
            } else {
                changed = true;
            }
        }
        if changed {
            self.known.clear();
        } else {
            self.known.extend(known);
        }
    }
}
