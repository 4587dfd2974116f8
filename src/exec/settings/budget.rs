//! The run's budget: how many turns, until when, how many tokens and dollars, at which prices,
//! and where a specialist reports what it spent. What the ledger and the turn loop are built
//! with.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::cli::{ExecArgs, parse_timeout};
use crate::provider::ProviderConfig;
use crate::tasks::Parent;
use crate::usage::{Ledger, Limits, Prices, Usd};

use super::FileKeys;
use crate::exec::failure::Failure;

/// The default `--max-turns`.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 80;

/// What the run may spend.
pub(crate) struct BudgetSettings {
    /// `--max-turns`, or its default.
    pub(crate) max_turns: u32,
    /// When the run must end: `--timeout` (or `timeout` in config.toml) from now, or the
    /// launching run's deadline if that is sooner. Also in the workspace's policy.
    pub(crate) deadline: Option<SystemTime>,
    /// The token and cost budget (`--max-tokens`, `--max-cost-usd`, or config.toml's).
    pub(crate) limits: Limits,
    /// The `[prices]` table of config.toml.
    prices: Prices,
    /// Where this run reports its spending, when it is a specialist.
    usage_report: Option<PathBuf>,
}

impl BudgetSettings {
    /// The budget the flags and `keys` (config.toml's) give, never past `parent`'s deadline.
    /// The config file's errors come before a parent's.
    pub(super) fn resolve(
        args: &ExecArgs,
        keys: &mut FileKeys,
        parent: Option<&Parent>,
    ) -> Result<Self, Failure> {
        let deadline = deadline(args, keys.timeout.as_deref(), parent)?;
        let limits = limits(args, keys)?;
        let prices = Prices::new(std::mem::take(&mut keys.prices))
            .map_err(|e| Failure::config(format!("in config.toml: {e}")))?;
        let usage_report = match parent {
            Some(parent) => parent.usage_report().map_err(Failure::config)?,
            None => None,
        };
        Ok(BudgetSettings {
            max_turns: args.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            deadline,
            limits,
            prices,
            usage_report,
        })
    }

    /// The ledger the run tree's spending is counted in, against the budget, each model's
    /// tokens at its own price.
    pub(crate) fn ledger(&self) -> Ledger {
        Ledger::new(self.limits, self.prices.clone(), self.usage_report.clone())
    }

    /// `--max-cost-usd` needs the model's price; checked once the provider is known to be
    /// configured, so a run without one says that first.
    pub(crate) fn check_priced(&self, config: &ProviderConfig) -> Result<(), Failure> {
        // Every model of the chain may answer, so every one needs its price.
        let unpriced = std::iter::once(config)
            .chain(&config.fallbacks)
            .find(|config| self.prices.of(&config.model).is_none());
        match (self.limits.cost, unpriced) {
            (Some(limit), Some(config)) => Err(Failure::usage(format!(
                "--max-cost-usd {limit} needs the price of model `{model}`: add a \
                 [prices.\"{model}\"] table with `input` and `output` (US dollars per million \
                 tokens) to config.toml",
                model = config.model
            ))),
            _ => Ok(()),
        }
    }
}

/// The run's budget: each flag, else its key in the config file.
fn limits(args: &ExecArgs, keys: &FileKeys) -> Result<Limits, Failure> {
    let tokens = match (args.max_tokens, keys.max_tokens) {
        (Some(tokens), _) => Some(tokens),
        (None, Some(0)) => {
            return Err(Failure::config(
                "`max_tokens` in config.toml must be at least 1".into(),
            ));
        }
        (None, tokens) => tokens,
    };
    let cost = match (args.max_cost_usd, keys.max_cost_usd) {
        (Some(cost), _) => Some(cost),
        (None, Some(dollars)) => Some(
            Usd::parse(&dollars.to_string())
                .map_err(|e| Failure::config(format!("`max_cost_usd` in config.toml: {e}")))?,
        ),
        (None, None) => None,
    };
    Ok(Limits { tokens, cost })
}

/// The run's deadline: its own timeout from now (the flag, else the config file's `timeout`),
/// and never later than the launching run's.
fn deadline(
    args: &ExecArgs,
    file_timeout: Option<&str>,
    parent: Option<&Parent>,
) -> Result<Option<SystemTime>, Failure> {
    let timeout = match args.timeout {
        Some(timeout) => Some(timeout),
        None => file_timeout
            .map(|text| {
                parse_timeout(text)
                    .map_err(|e| Failure::config(format!("`timeout` in config.toml: {e}")))
            })
            .transpose()?,
    };
    let own = timeout.map(|timeout| SystemTime::now() + timeout);
    let inherited = parent.and_then(Parent::deadline);
    Ok(match (own, inherited) {
        (Some(own), Some(inherited)) => Some(own.min(inherited)),
        (own, inherited) => own.or(inherited),
    })
}
