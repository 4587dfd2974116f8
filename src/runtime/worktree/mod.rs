//! Worktrees, for `--worktree` runs and isolated specialists: the durable record, its one
//! transition function, the run's worktree lease and the reconciliation of dead runs'
//! worktrees (`record`); a worktree made, committed and removed (`checkout`); and zero's own
//! `git` (`git`), the one door through which zero runs git for its bookkeeping.

pub(in crate::runtime) mod checkout;
pub(crate) mod git;
pub(in crate::runtime) mod record;
