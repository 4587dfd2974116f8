//! The runtime's durable state of a run and its tasks: the ids zero writes and checks
//! (`ids`), the run's lease and directory (`run`), a task's record on disk (`record`), the
//! store of every record (`store`), a live task and its state machine (`task`), and the
//! reconciliation of runs whose owner died (`reconcile`).

pub(in crate::runtime) mod ids;
pub(in crate::runtime) mod reconcile;
pub(in crate::runtime) mod record;
pub(in crate::runtime) mod run;
pub(in crate::runtime) mod store;
pub(in crate::runtime) mod task;
