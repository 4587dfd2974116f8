//! The model's plan: `update_plan` sends each new plan over a channel while its call runs; the
//! loop takes them after the turn's calls, reports each (a `plan` event) and keeps the newest,
//! which a compacted conversation carries on.

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::tools::PlanStep;

/// The plan as the model last set it, and the channel its updates arrive on.
pub(super) struct Plan {
    current: Vec<PlanStep>,
    updates: UnboundedReceiver<Vec<PlanStep>>,
}

impl Plan {
    /// An empty plan, and the sender the run's tool context hands to `update_plan`.
    pub(super) fn new() -> (Plan, UnboundedSender<Vec<PlanStep>>) {
        let (sender, updates) = unbounded_channel();
        let plan = Plan {
            current: Vec::new(),
            updates,
        };
        (plan, sender)
    }

    /// The updates sent since the last call, oldest first; the newest becomes the current plan.
    pub(super) fn take_updates(&mut self) -> Vec<Vec<PlanStep>> {
        let mut updates = Vec::new();
        while let Ok(steps) = self.updates.try_recv() {
            self.current.clone_from(&steps);
            updates.push(steps);
        }
        updates
    }

    /// The plan as the model last set it (empty until it does).
    pub(super) fn current(&self) -> &[PlanStep] {
        &self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::StepStatus;

    fn step(text: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            step: text.into(),
            status,
        }
    }

    #[test]
    fn every_update_is_taken_in_order_and_the_newest_is_the_plan() {
        let (mut plan, sender) = Plan::new();
        assert!(plan.take_updates().is_empty());
        assert!(plan.current().is_empty());
        let first = vec![step("read", StepStatus::InProgress)];
        let second = vec![
            step("read", StepStatus::Completed),
            step("fix", StepStatus::InProgress),
        ];
        sender.send(first.clone()).unwrap();
        sender.send(second.clone()).unwrap();
        assert_eq!(plan.take_updates(), [first, second.clone()]);
        assert_eq!(plan.current(), second);
        // Taken once: the plan stays as it was until the next update.
        assert!(plan.take_updates().is_empty());
        assert_eq!(plan.current(), second);
    }
}
