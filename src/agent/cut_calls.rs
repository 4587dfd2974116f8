//! Calls cut at the output token limit and never made again. The last call of a response that
//! reached `--max-output-tokens` gets an error result (its arguments may be incomplete), and
//! the model is expected to make it again; one it never makes again is work that did not
//! happen, which `--strict` fails the run for. A call counts as made again once a later turn
//! calls the same tool in full.

use crate::provider::ToolCall;

use super::calls::Cut;

/// The tools of the cut calls not made again yet, in the order they were cut.
#[derive(Debug, Default)]
pub(super) struct CutCalls {
    pending: Vec<String>,
}

impl CutCalls {
    /// Takes in a turn of `calls`, the last of them cut when the response was `cut` at the
    /// output limit: each whole call makes a cut call of its tool good, and the cut one waits
    /// for a call of its own.
    pub(super) fn turn(&mut self, calls: &[ToolCall], cut: Option<Cut>) {
        let (whole, cut_call) = match (cut, calls.split_last()) {
            (Some(Cut::OutputLimit), Some((last, whole))) => (whole, Some(last)),
            _ => (calls, None),
        };
        self.pending
            .retain(|tool| !whole.iter().any(|call| &call.name == tool));
        if let Some(call) = cut_call {
            self.pending.push(call.name.clone());
        }
    }

    /// The tools of the cut calls the model never made again.
    pub(super) fn never_made_again(self) -> Vec<String> {
        self.pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Loop;

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: format!("call_{name}"),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn a_cut_call_stays_pending_until_its_tool_is_called_in_full() {
        let mut cuts = CutCalls::default();
        cuts.turn(
            &[call("read_file"), call("write_file")],
            Some(Cut::OutputLimit),
        );
        cuts.turn(&[call("bash")], None);
        // A loop's cut is not the output limit: the call is the model's own to judge.
        cuts.turn(&[call("edit_file")], Some(Cut::Loop(Loop { period: 8 })));
        cuts.turn(&[call("grep"), call("bash")], Some(Cut::OutputLimit));
        assert_eq!(cuts.pending, ["write_file", "bash"]);
        cuts.turn(&[call("write_file")], None);
        assert_eq!(cuts.never_made_again(), ["bash"]);
    }
}
