//! Background tasks still running when the model answers. The model is told once which ones,
//! and may wait for them, stop them or answer again; a second answer ends the run, and `exec`
//! stops what is left.

use crate::runtime::Runtime;

/// Whether the model has been told about tasks still running: it is told once a run.
#[derive(Debug, Default)]
pub(super) struct Reminder {
    told: bool,
}

impl Reminder {
    /// What the model is told about `tasks` still running as it answers, unless it was told
    /// before or none is.
    pub(super) async fn due(&mut self, tasks: &Runtime) -> Option<String> {
        if self.told {
            return None;
        }
        let running = tasks.running().await;
        if running.is_empty() {
            return None;
        }
        self.told = true;
        let ids: Vec<&str> = running.iter().map(|task| task.id.as_str()).collect();
        Some(notice(&ids))
    }
}

/// What the model is told when it answers while the background tasks `ids` still run.
fn notice(ids: &[&str]) -> String {
    let (count, verb) = match ids.len() {
        1 => ("1 background task is".to_string(), "it"),
        n => (format!("{n} background tasks are"), "them"),
    };
    format!(
        "{count} still running: {}. Wait for {verb} with TaskOutput (block=true), stop {verb} \
         with TaskStop, or answer again to finish (they will be stopped).",
        ids.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_every_task_and_what_to_do_about_them() {
        assert_eq!(
            notice(&["t1"]),
            "1 background task is still running: t1. Wait for it with TaskOutput (block=true), \
             stop it with TaskStop, or answer again to finish (they will be stopped)."
        );
        assert!(notice(&["t1", "t2"]).starts_with(
            "2 background tasks are still running: t1, t2. Wait for them with TaskOutput"
        ));
    }
}
