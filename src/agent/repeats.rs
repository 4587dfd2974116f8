//! Turns that cannot bring anything new. A small model at temperature 0 can ask for the same
//! read again and again, alone or in a cycle, or retry the same failing edit, until its turns
//! run out. A call whose result the model already has, with nothing changed since, would
//! return the same: a read's content, or a failed call's error. Such a turn is not run again
//! but answered with a note ([`REPEATED_CALL`]), and the second time the agent asks for the
//! answer instead ([`ANSWER_NOW_REQUEST`]).

use serde_json::Value;

use crate::provider::{Message, ToolCall};
use crate::tools::Toolset;

use super::calls;

/// The result of each call of a turn that asks only for results the model already has, with
/// nothing changed since.
pub(super) const REPEATED_CALL: &str = "not run again: you made exactly this call before, and \
     nothing has changed since, so its result (above) would be the same. Use it: answer the \
     question now in plain text, or do something different.";

/// What the model is asked when it repeats itself again after [`REPEATED_CALL`]: its answer,
/// with no tools on offer for that request.
pub(super) const ANSWER_NOW_REQUEST: &str = "You keep asking for tool results you already \
     have. No more tools: answer the original question now, in plain text, from the tool \
     results above.";

/// The calls whose results the model has, since the last call that may have changed something.
#[derive(Default)]
pub(crate) struct Repeats {
    known: Vec<(String, Value)>,
    strikes: u32,
    /// The calls of the turn being checked, with whether each only reads, for [`Repeats::ran`].
    turn: Vec<(String, Value, bool)>,
}

/// A turn whose every call the model already has the result of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// The run's first such turn: its calls are answered with [`REPEATED_CALL`].
    First,
    /// Another one: the model is asked for its answer ([`ANSWER_NOW_REQUEST`]).
    Again,
}

impl Repeats {
    /// Before a turn's calls run: whether every one of them is known, and whether the run has
    /// had such a turn before.
    pub(crate) fn check(&mut self, calls: &[ToolCall], toolset: &Toolset) -> Option<Repeat> {
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
            match self.strikes {
                1 => Repeat::First,
                _ => Repeat::Again,
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::{core_tools, runtime};

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn result(is_error: bool) -> Message {
        Message::ToolResult {
            call_id: "c".into(),
            name: "any".into(),
            output: String::new(),
            is_error,
            images: Vec::new(),
        }
    }

    const READ: (&str, &str) = ("read_file", r#"{"path": "a"}"#);
    const WRITE: (&str, &str) = ("write_file", r#"{"path": "a", "content": "x"}"#);

    /// Checks a turn of `calls` and says it ran with `results`; what the check said.
    fn turn(repeats: &mut Repeats, calls: &[(&str, &str)], failed: bool) -> Option<Repeat> {
        let toolset = core_tools(&runtime(), &std::env::temp_dir());
        let calls: Vec<ToolCall> = calls.iter().map(|(n, a)| call(n, a)).collect();
        let repeat = repeats.check(&calls, &toolset);
        repeats.ran(&vec![result(failed); calls.len()]);
        repeat
    }

    #[test]
    fn a_read_made_before_is_a_repeat_the_first_time_and_again_after() {
        let mut repeats = Repeats::default();
        assert_eq!(turn(&mut repeats, &[READ], false), None);
        // Spacing and key order do not make it another call.
        let same = ("read_file", r#"{ "path":"a" }"#);
        assert_eq!(turn(&mut repeats, &[same], false), Some(Repeat::First));
        assert_eq!(turn(&mut repeats, &[READ], false), Some(Repeat::Again));
    }

    #[test]
    fn a_turn_with_one_new_call_is_no_repeat() {
        let mut repeats = Repeats::default();
        turn(&mut repeats, &[READ], false);
        let other = ("read_file", r#"{"path": "b"}"#);
        assert_eq!(turn(&mut repeats, &[READ, other], false), None);
        assert_eq!(
            turn(&mut repeats, &[other, READ], false),
            Some(Repeat::First)
        );
    }

    #[test]
    fn a_write_that_succeeds_makes_every_known_result_stale_and_a_failed_one_is_known() {
        let mut repeats = Repeats::default();
        turn(&mut repeats, &[READ], false);
        assert_eq!(turn(&mut repeats, &[WRITE], false), None);
        assert_eq!(
            turn(&mut repeats, &[READ], false),
            None,
            "the file may have changed"
        );
        assert_eq!(turn(&mut repeats, &[WRITE], true), None);
        assert_eq!(turn(&mut repeats, &[WRITE], true), Some(Repeat::First));
    }
}
