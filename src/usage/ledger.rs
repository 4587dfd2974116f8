//! What a run tree has spent, against the budget its caller set (`--max-tokens`,
//! `--max-cost-usd`) — and counted whether or not there is one: `run_end.usage` is the
//! tree's total either way.
//!
//! The budget covers the run and every specialist it launches. A specialist is handed what is
//! left ([`Ledger::allowance`]) as its own budget, so it stops itself, and it reports what it
//! has spent after every response to a private report file in the parent's run directory
//! ([`Ledger::publish`]); the parent reads those reports whenever it checks its budget and when
//! it ends, so its totals include what its specialists spent, running ones and ended ones.
//! A file rather than the child's stream-json: a small record the parent reads in
//! microseconds, however much the child printed.
//!
//! The report file is a log: each report is one JSON line appended in a single write, the
//! last whole line the newest (the counts are cumulative). The parent creates the file and
//! keeps it open, so it still reads a child's last report after the run directory is removed
//! at close — which stops the children first — and a line cut short by a child killed
//! mid-write is never taken for a report. (A report replaced by a rename, as before, was lost
//! with the directory unless a budget check had happened to read it first.)

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Prices, Usage, Usd};
use crate::sync::lock;
use std::collections::BTreeMap;

/// How much of a report file's end a parent reads at most: a report is a few hundred bytes, so
/// the newest whole one is always in it, however many a child wrote since the last read.
const REPORT_WINDOW: u64 = 16 * 1024;

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
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Spent {
    /// The run's own responses.
    pub(crate) own: Usage,
    /// The model that gave the run's last response, when it had one (with fallback models,
    /// not always the one it started with).
    pub(crate) model: Option<String>,
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

/// A specialist's report file, as its parent follows it.
#[derive(Debug)]
struct Child {
    /// The file, open since the parent created it.
    file: File,
    /// How far the file has been read: the end of the last whole line seen.
    read_to: u64,
    /// The newest report read.
    last: Report,
}

impl Child {
    /// Reads the reports appended since the last look and keeps the newest whole one. A read
    /// that fails, or finds no whole line, leaves the last report standing.
    fn catch_up(&mut self) {
        let Ok(size) = self.file.metadata().map(|meta| meta.len()) else {
            return;
        };
        if size <= self.read_to {
            return;
        }
        let from = self.read_to.max(size - REPORT_WINDOW.min(size));
        let mut bytes = vec![0; (size - from) as usize];
        if self.file.read_exact_at(&mut bytes, from).is_err() {
            return;
        }
        // Whole lines only: a window that starts later than the last read starts inside a
        // line, and the line still being written has no end yet.
        let first = if from > self.read_to {
            match bytes.iter().position(|b| *b == b'\n') {
                Some(newline) => newline + 1,
                None => return,
            }
        } else {
            0
        };
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n').map(|at| at + 1) else {
            return;
        };
        if end <= first {
            return;
        }
        self.read_to = from + end as u64;
        let newest = bytes[first..end - 1]
            .rsplit(|b| *b == b'\n')
            .next()
            .unwrap_or_default();
        if let Ok(report) = serde_json::from_slice(newest) {
            self.last = report;
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// The run's own responses, by the model that gave them: each is priced at its own.
    own: BTreeMap<String, Usage>,
    /// The model of the last response.
    last_model: Option<String>,
    children: Vec<Child>,
}

/// The spending of one run tree. See the module documentation.
#[derive(Debug)]
pub struct Ledger {
    limits: Limits,
    /// The `[prices]` table: each model's tokens cost what it says for that model.
    prices: Prices,
    /// Where this run reports its spending, when it is a specialist.
    report_to: Option<PathBuf>,
    /// The report file, opened at the first report.
    report: Mutex<Option<File>>,
    state: Mutex<State>,
}

impl Ledger {
    /// A ledger for a run with `limits`, its models priced by `prices`, reporting to its
    /// parent at `report_to` when it is a specialist.
    pub fn new(limits: Limits, prices: Prices, report_to: Option<PathBuf>) -> Self {
        Ledger {
            limits,
            prices,
            report_to,
            report: Mutex::new(None),
            state: Mutex::new(State::default()),
        }
    }

    /// Counts one of this run's responses, given by `model`.
    pub(crate) fn record(&self, model: &str, usage: Usage) {
        let mut state = lock(&self.state);
        state.own.entry(model.to_owned()).or_default().add(usage);
        state.last_model = Some(model.to_owned());
    }

    /// Creates the report file a specialist is told to write (0600, `path` must not exist)
    /// and follows the specialist's spending through it from now on, whether or not the run
    /// has a budget. The file stays open, so its reports are read even once it is removed.
    pub(crate) fn watch_child(&self, path: &Path) -> std::io::Result<()> {
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        lock(&self.state).children.push(Child {
            file,
            read_to: 0,
            last: Report::default(),
        });
        Ok(())
    }

    /// What the tree has spent, with the specialists' latest reports read.
    pub(crate) fn spent(&self) -> Spent {
        let mut state = lock(&self.state);
        let mut own = Usage::default();
        let mut own_cost = Some(0.0);
        for (model, usage) in &state.own {
            own.add(*usage);
            own_cost = match (own_cost, self.prices.of(model)) {
                (Some(cost), Some(price)) => Some(cost + price.cost(usage)),
                (cost, None) if usage.total() == 0 => cost,
                _ => None,
            };
        }
        let mut spent = Spent {
            own,
            model: state.last_model.clone(),
            children: Usage::default(),
            cost: own_cost,
        };
        for child in &mut state.children {
            child.catch_up();
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

    /// Tells the parent what this run has spent so far, when it is a specialist: appends one
    /// report line to the file the parent created, in one write (no fsync: the report
    /// matters only while the parent runs). A small local write, quick enough for the turn
    /// loop's thread.
    pub(crate) fn publish(&self) -> std::io::Result<()> {
        let Some(path) = &self.report_to else {
            return Ok(());
        };
        let spent = self.spent();
        let report = Report {
            usage: spent.total(),
            cost_usd: spent.cost,
        };
        let mut line = serde_json::to_vec(&report).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut opened = lock(&self.report);
        let file = match &mut *opened {
            Some(file) => file,
            None => opened.insert(open_report(path)?),
        };
        file.write_all(&line)
    }
}

/// Opens the report file the parent created, for appending: never creates one, never follows
/// a link, and refuses anything but a regular file (a FIFO opened without blocking fails).
fn open_report(path: &Path) -> std::io::Result<File> {
    let file = File::options()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table pricing each model at its price (a `[prices."MODEL"]` table's body).
    fn priced(models: &[(&str, &str)]) -> Prices {
        let table = models
            .iter()
            .map(|(model, price)| ((*model).to_owned(), toml::from_str(price).unwrap()))
            .collect();
        Prices::new(table).unwrap()
    }

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
        let parent = Ledger::new(limits, Prices::default(), None);
        parent.watch_child(&report).unwrap();
        parent.record("m", usage(300, 100));
        assert_eq!(parent.exceeded(), None);
        assert_eq!(parent.allowance().unwrap().tokens, Some(600));

        let child = Ledger::new(parent.allowance().unwrap(), Prices::default(), Some(report));
        child.record("m", usage(500, 50));
        child.publish().unwrap();
        let spent = parent.spent();
        assert_eq!(spent.children, usage(500, 50));
        assert_eq!(spent.total().total(), 950);
        assert_eq!(parent.exceeded(), None);
        child.record("m", usage(100, 0));
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
    fn a_childs_last_report_is_read_after_its_file_is_removed_without_a_budget() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("task-usage-0");
        let parent = Ledger::new(Limits::default(), Prices::default(), None);
        parent.watch_child(&report).unwrap();
        let child = Ledger::new(Limits::default(), Prices::default(), Some(report.clone()));
        child.record("m", usage(7000, 70));
        child.publish().unwrap();
        // The run directory goes at close, after the children ended; nothing read it before.
        std::fs::remove_file(&report).unwrap();
        assert_eq!(parent.spent().children, usage(7000, 70));
    }

    #[test]
    fn only_whole_report_lines_count_and_the_newest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("task-usage-0");
        let parent = Ledger::new(Limits::default(), Prices::default(), None);
        parent.watch_child(&report).unwrap();
        let child = Ledger::new(Limits::default(), Prices::default(), Some(report.clone()));
        // More reports than the window holds, all between two reads.
        for _ in 0..500 {
            child.record("m", usage(10, 1));
            child.publish().unwrap();
        }
        assert_eq!(parent.spent().children, usage(5000, 500));
        // A child killed in the middle of a write leaves half a line: the last whole one stands.
        let mut file = File::options().append(true).open(&report).unwrap();
        file.write_all(br#"{"usage":{"promptTokens":9"#).unwrap();
        assert_eq!(parent.spent().children, usage(5000, 500));
        // A file the parent did not create is not written to.
        let stray = Ledger::new(
            Limits::default(),
            Prices::default(),
            Some(dir.path().join("missing")),
        );
        stray.record("m", usage(1, 1));
        assert!(stray.publish().is_err());
        assert!(!dir.path().join("missing").exists());
    }

    #[test]
    fn the_cost_is_known_only_when_every_part_that_spent_has_a_price() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("task-usage-0");
        let parent = Ledger::new(
            Limits::default(),
            priced(&[("m", "input = 1.0\noutput = 2.0")]),
            None,
        );
        parent.record("m", usage(1_000_000, 500_000));
        assert_eq!(parent.spent().cost, Some(2.0));
        parent.watch_child(&report).unwrap();
        // A child that spent nothing yet leaves the cost known.
        assert_eq!(parent.spent().cost, Some(2.0));
        let unpriced = Ledger::new(Limits::default(), Prices::default(), Some(report));
        unpriced.record("m", usage(10, 10));
        unpriced.publish().unwrap();
        assert_eq!(parent.spent().cost, None);
    }

    #[test]
    fn each_models_tokens_are_priced_at_its_own_price() {
        let prices = priced(&[
            ("big", "input = 10.0\noutput = 10.0"),
            ("small", "input = 1.0\noutput = 1.0"),
        ]);
        let ledger = Ledger::new(Limits::default(), prices, None);
        ledger.record("big", usage(100_000, 0));
        ledger.record("small", usage(100_000, 0));
        let spent = ledger.spent();
        assert!((spent.cost.unwrap() - 1.1).abs() < 1e-9, "{spent:?}");
        assert_eq!(spent.own, usage(200_000, 0));
        assert_eq!(spent.model.as_deref(), Some("small"));
        // A model without a price that spent tokens leaves the cost unknown.
        ledger.record("unpriced", usage(1, 0));
        assert_eq!(ledger.spent().cost, None);
    }

    #[test]
    fn the_cost_budget_stops_the_run_and_leaves_children_the_rest() {
        let limits = Limits {
            tokens: None,
            cost: Some(Usd::parse("1").unwrap()),
        };
        let ledger = Ledger::new(limits, priced(&[("m", "input = 1.0\noutput = 1.0")]), None);
        ledger.record("m", usage(250_000, 0));
        assert_eq!(
            ledger.allowance().unwrap().cost,
            Some(Usd::parse("0.75").unwrap())
        );
        ledger.record("m", usage(800_000, 0));
        assert!(matches!(ledger.exceeded(), Some(Exceeded::Cost { .. })));
        assert!(ledger.allowance().is_err());
    }
}
