//! Responses caught in a loop. The provider cuts a response that repeats one span of its prose
//! or reasoning over and over (`provider::repetition`); the turn goes on with one copy of the
//! span and a note to the model. A model that loops again as soon as it is told would spend
//! every turn that way (80 requests, nearly two million tokens, before `--max-turns`), so
//! [`MAX_IN_A_ROW`] cuts in a row end the run ([`LoopCuts`]).

use crate::provider::{LOOP_WINDOW, Loop};

/// How many responses in a row may be cut for looping before the run ends: the first is told
/// and gets another chance, so does the second; a third shows the note is not heard.
pub(super) const MAX_IN_A_ROW: u32 = 3;

/// What the model is told after a response of its that was cut for repeating itself.
pub(super) const NOTE: &str = "Your last response repeated the same text over and over, so it \
     was cut. Do not repeat it: call a tool to make progress, or give your final answer.";

/// The text kept of a looping response that had none (it looped in its reasoning).
pub(super) const PLACEHOLDER: &str = "(this response repeated itself and was cut)";

/// How many responses in a row were cut for looping. A response that did not loop starts the
/// count over: the model got out of it.
#[derive(Debug, Default)]
pub(super) struct LoopCuts {
    in_a_row: u32,
}

impl LoopCuts {
    /// Counts a response cut for looping; `true` once it is the [`MAX_IN_A_ROW`]th in a row.
    pub(super) fn cut(&mut self) -> bool {
        self.in_a_row += 1;
        self.in_a_row >= MAX_IN_A_ROW
    }

    /// A response that did not loop: the next cut is the first again.
    pub(super) fn reset(&mut self) {
        self.in_a_row = 0;
    }
}

/// The warning of a response cut because it repeated itself (see `provider::repetition`): the
/// turn goes on as after a response the output limit cut.
pub(super) fn warning(found: Loop) -> String {
    format!(
        "the response was cut: it repeated the same {} bytes over and over (at least {} KiB of \
         one span), so the model is in a loop",
        found.period,
        LOOP_WINDOW / 1024
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_cut_in_a_row_ends_and_a_response_between_starts_over() {
        let mut cuts = LoopCuts::default();
        assert!(!cuts.cut());
        assert!(!cuts.cut());
        cuts.reset();
        assert!(!cuts.cut());
        assert!(!cuts.cut());
        assert!(cuts.cut());
    }
}
