//! Token accounting: what one response cost ([`Usage`]), what tokens cost in money (the
//! `[prices]` table of config.toml), and what a run and the specialists it launched have spent
//! against the budget the caller set ([`Ledger`]).
//!
//! A leaf: the provider reports usage, the agent loop records it and stops at the budget,
//! `tasks` hands a specialist what is left of it and reads back what the specialist spent.

mod ledger;
mod prices;

use std::fmt;

use serde::{Deserialize, Serialize};

pub(crate) use ledger::Spent;
pub use ledger::{Exceeded, Ledger, Limits};
pub use prices::Price;
pub use prices::Prices;

/// Token counts of one response, or a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    /// Tokens of input (prompt) the provider counted, cached ones included.
    pub prompt_tokens: u64,
    /// Tokens the model generated, reasoning included.
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those read from the provider's prompt cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    pub cached_input_tokens: u64,
    /// Of `prompt_tokens`, those written to the prompt cache (Anthropic
    /// `cache_creation_input_tokens`; OpenAI does not report it).
    pub cache_write_tokens: u64,
    /// Of `completion_tokens`, those spent reasoning (OpenAI
    /// `completion_tokens_details.reasoning_tokens`; Anthropic does not report it apart).
    pub reasoning_tokens: u64,
    /// Whether some of these counts are zero's estimate rather than the provider's: a stream
    /// cut off before the wire reported its usage still spent what it streamed (written only
    /// when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// Input plus output tokens: what `--max-tokens` counts.
    pub(crate) fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// Adds another response's counts to these.
    pub(crate) fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.estimated |= other.estimated;
    }
}

/// An amount of US dollars, kept in millionths so flags compare exactly and write back as
/// they were given (`--max-cost-usd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Usd {
    micros: u64,
}

impl Usd {
    /// The amount `dollars` stands for, rounded to a millionth of a dollar.
    pub(crate) fn from_dollars(dollars: f64) -> Usd {
        Usd {
            micros: (dollars.max(0.0) * 1e6).round() as u64,
        }
    }

    /// The amount in dollars.
    pub(crate) fn dollars(self) -> f64 {
        self.micros as f64 / 1e6
    }

    /// Parses a positive amount such as `0.50` or `12`, as `--max-cost-usd` takes it.
    pub(crate) fn parse(text: &str) -> Result<Usd, String> {
        let dollars: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not an amount of dollars (like 0.50 or 12)"))?;
        if !dollars.is_finite() || dollars <= 0.0 {
            return Err(format!("`{text}`: the amount must be more than 0"));
        }
        let amount = Usd::from_dollars(dollars);
        if amount.micros == 0 {
            return Err(format!(
                "`{text}`: the amount must be at least 0.000001 dollars"
            ));
        }
        Ok(amount)
    }
}

impl fmt::Display for Usd {
    /// The shortest decimal that parses back to the same amount.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.micros / 1_000_000;
        let fraction = self.micros % 1_000_000;
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{fraction:06}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_amounts_parse_and_write_back_exactly() {
        for text in ["12", "0.5", "0.000001", "3.14159"] {
            assert_eq!(Usd::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Usd::parse("0.50").unwrap().to_string(), "0.5");
        for bad in ["0", "-1", "nan", "inf", "abc", "", "0.0000001"] {
            assert!(Usd::parse(bad).is_err(), "{bad}");
        }
    }
}
