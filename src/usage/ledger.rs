//! What a run tree has spent, against the budget its caller set (`--max-tokens`,
//! `--max-cost-usd`).
//!
//! The budget covers the run and every specialist it launches. A specialist is handed what is
//! left ([`Ledger::allowance`]) as its own budget, so it stops itself, and it reports what it
//! has spent after every response to a private file in the parent's run directory
//! ([`Ledger::publish`]); the parent reads those reports whenever it checks its budget, so
//! its totals include what its specialists spent so far, running ones too. A file rather than
//! the child's stream-json: it is one small record, replaced atomically, that the parent
//! reads whole in microseconds, however much the child printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Price, Usage, Usd};
use crate::sync::lock;

/// The largest report a parent reads: a few hundred bytes are real, so anything longer is not
/// one and is not read without bound.
const REPORT_LIMIT: u64 = 16 * 1024;

/// The budget of a run: the most tokens (input plus output) and dollars it may spend,
/// specialists included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// `--max-tokens`.
    pub tokens: Option<u64>,
    /// `--max-cost-usd`.
    pub cost: Option<Usd>,
}

/// Which budget a run went past, and by how much.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Exceeded {
    /// The token budget: the limit and the tokens spent.
    Tokens {
        /// `--max-tokens`.
        limit: u64,
        /// What the run tree spent.
        spent: u64,
    },
    /// The cost budget: the limit and the dollars spent.
    Cost {
        /// `--max-cost-usd`.
        limit: Usd,
        /// What the run tree spent, in dollars.
        spent: f64,
    },
}

/// What a run tree has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Spent {
    /// The run's own responses.
    pub(crate) own: Usage,
    /// Its specialists' responses, as they last reported them.
    pub(crate) children: Usage,
    /// What it all cost, in dollars; `None` unless every part that spent tokens has a price.
    pub(crate) cost: Option<f64>,
}

impl Spent {
    /// The run's and its specialists' counts together.
    pub(crate) fn total(&self) -> Usage {
        let mut total = self.own;
        total.add(self.children);
        total
    }
}

/// What a specialist writes for its parent: everything it has spent so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    usage: Usage,
    cost_usd: Option<f64>,
}

/// A specialist's report file and what it said when last read.
#[derive(Debug)]
struct Child {
    report: PathBuf,
    last: Report,
}

#[derive(Debug, Default)]
struct State {
    own: Usage,
    children: Vec<Child>,
}

/// The spending of one run tree. See the module documentation.
#[derive(Debug)]
pub struct Ledger {
    limits: Limits,
    /// The price of this run's model, when the price table has one.
    price: Option<Price>,
    /// Where this run reports its spending, when it is a specialist.
    report_to: Option<PathBuf>,
    state: Mutex<State>,
}

impl Ledger {
    /// A ledger for a run with `limits`, its model priced at `price`, reporting to its parent
    /// at `report_to` when it is a specialist.
    pub fn new(limits: Limits, price: Option<Price>, report_to: Option<PathBuf>) -> Self {
        Ledger {
            limits,
            price,
            report_to,
            state: Mutex::new(State::default()),
        }
    }

    /// Counts one of this run's responses.
    pub(crate) fn record(&self, usage: Usage) {
        lock(&self.state).own.add(usage);
    }

    /// Follows a specialist's spending through the report file it was told to write.
    pub(crate) fn watch_child(&self, report: PathBuf) {
        lock(&self.state).children.push(Child {
            report,
            last: Report::default(),
        });
    }

    /// What the tree has spent, with the specialists' latest reports read.
    pub(crate) fn spent(&self) -> Spent {
        let mut state = lock(&self.state);
        let own = state.own;
        let own_cost = self.price.map(|price| price.cost(&own));
        let mut spent = Spent {
            own,
            children: Usage::default(),
            cost: own_cost.or((own.total() == 0).then_some(0.0)),
        };
        for child in &mut state.children {
            // A report not written yet, or gone with its run directory, leaves the last one.
            if let Some(report) = read_report(&child.report) {
                child.last = report;
            }
            spent.children.add(child.last.usage);
            spent.cost = match (spent.cost, child.last.cost_usd) {
                (Some(cost), Some(more)) => Some(cost + more),
                (cost, None) if child.last.usage.total() == 0 => cost,
                _ => None,
            };
        }
        spent
    }

    /// The budget the tree has gone past, if any.
    pub(crate) fn exceeded(&self) -> Option<Exceeded> {
        if self.limits == Limits::default() {
            return None;
        }
        let spent = self.spent();
        let tokens = spent.total().total();
        if let Some(limit) = self.limits.tokens
            && tokens > limit
        {
            return Some(Exceeded::Tokens {
                limit,
                spent: tokens,
            });
        }
        match (self.limits.cost, spent.cost) {
            (Some(limit), Some(cost)) if cost > limit.dollars() => {
                Some(Exceeded::Cost { limit, spent: cost })
            }
            _ => None,
        }
    }

    /// What is left of the budget, for a specialist to get as its own; `Err` names the budget
    /// that is spent, when nothing is left of one.
    pub(crate) fn allowance(&self) -> Result<Limits, String> {
        if self.limits == Limits::default() {
            return Ok(Limits::default());
        }
        let spent = self.spent();
        let tokens = match self.limits.tokens {
            Some(limit) => match limit.checked_sub(spent.total().total()) {
                Some(left) if left > 0 => Some(left),
                _ => return Err(format!("the token budget (--max-tokens {limit}) is spent")),
            },
            None => None,
        };
        let cost = match self.limits.cost {
            Some(limit) => {
                let left = Usd::from_dollars(limit.dollars() - spent.cost.unwrap_or(0.0));
                if left == Usd::from_dollars(0.0) {
                    return Err(format!("the cost budget (--max-cost-usd {limit}) is spent"));
                }
                Some(left)
            }
            None => None,
        };
        Ok(Limits { tokens, cost })
    }

    /// Tells the parent what this run has spent so far, when it is a specialist: replaces the
    /// report file atomically (no fsync: the report matters only while the parent runs). A
    /// small local file, so the write is quick enough for the turn loop's thread.
    pub(crate) fn publish(&self) -> std::io::Result<()> {
        let Some(path) = &self.report_to else {
            return Ok(());
        };
        let spent = self.spent();
        let report = Report {
            usage: spent.total(),
            cost_usd: spent.cost,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&serde_json::to_vec(&report).map_err(std::io::Error::other)?)?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// A specialist's last report, if it has written one that reads.
fn read_report(path: &Path) -> Option<Report> {
    let (bytes, _) = crate::fsutil::read_regular(path, REPORT_LIMIT).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            ..Usage::default()
        }
    }

    #[test]
    fn a_childs_report_counts_toward_the_parents_budget() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("task-usage-0");
        let limits = Limits {
            tokens: Some(1000),
            cost: None,
        };
        let parent = Ledger::new(limits, None, None);
        parent.watch_child(report.clone());
        parent.record(usage(300, 100));
        assert_eq!(parent.exceeded(), None);
        assert_eq!(parent.allowance().unwrap().tokens, Some(600));

        let child = Ledger::new(parent.allowance().unwrap(), None, Some(report));
        child.record(usage(500, 50));
        child.publish().unwrap();
        let spent = parent.spent();
        assert_eq!(spent.children, usage(500, 50));
        assert_eq!(spent.total().total(), 950);
        assert_eq!(parent.exceeded(), None);
        child.record(usage(100, 0));
        child.publish().unwrap();
        assert_eq!(
            parent.exceeded(),
            Some(Exceeded::Tokens {
                limit: 1000,
                spent: 1050
            })
        );
        assert!(
            parent
                .allowance()
                .unwrap_err()
                .contains("--max-tokens 1000")
        );
    }

    #[test]
    fn the_cost_is_known_only_when_every_part_that_spent_has_a_price() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("task-usage-0");
        let price: Price = toml::from_str("input = 1.0\noutput = 2.0").unwrap();
        let parent = Ledger::new(Limits::default(), Some(price), None);
        parent.record(usage(1_000_000, 500_000));
        assert_eq!(parent.spent().cost, Some(2.0));
        parent.watch_child(report.clone());
        // A child that spent nothing yet leaves the cost known.
        assert_eq!(parent.spent().cost, Some(2.0));
        let unpriced = Ledger::new(Limits::default(), None, Some(report));
        unpriced.record(usage(10, 10));
        unpriced.publish().unwrap();
        assert_eq!(parent.spent().cost, None);
    }

    #[test]
    fn the_cost_budget_stops_the_run_and_leaves_children_the_rest() {
        let price: Price = toml::from_str("input = 1.0\noutput = 1.0").unwrap();
        let limits = Limits {
            tokens: None,
            cost: Some(Usd::parse("1").unwrap()),
        };
        let ledger = Ledger::new(limits, Some(price), None);
        ledger.record(usage(250_000, 0));
        assert_eq!(
            ledger.allowance().unwrap().cost,
            Some(Usd::parse("0.75").unwrap())
        );
        ledger.record(usage(800_000, 0));
        assert!(matches!(ledger.exceeded(), Some(Exceeded::Cost { .. })));
        assert!(ledger.allowance().is_err());
    }
}
