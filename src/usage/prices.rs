//! The price table of `config.toml`: what a model's tokens cost, in US dollars per million.
//!
//! ```toml
//! [prices."gpt-4.1-mini"]
//! input = 0.40
//! cached_input = 0.10
//! output = 1.60
//! ```
//!
//! Prices are the user's to state: they change, differ by contract, and a table built into
//! zero would be wrong without anyone noticing.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Usage;

/// What one model's tokens cost, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens not read from the prompt cache.
    input: f64,
    /// Input tokens read from the prompt cache (default: `input`).
    cached_input: Option<f64>,
    /// Input tokens written to the prompt cache (default: `input`).
    cache_write: Option<f64>,
    /// Output tokens, reasoning included.
    output: f64,
}

impl Price {
    /// What `usage` cost, in dollars.
    pub(crate) fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens;
        let written = usage.cache_write_tokens;
        let fresh = usage.prompt_tokens.saturating_sub(cached + written);
        let per_token = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
        per_token(fresh, self.input)
            + per_token(cached, self.cached_input.unwrap_or(self.input))
            + per_token(written, self.cache_write.unwrap_or(self.input))
            + per_token(usage.completion_tokens, self.output)
    }

    fn check(&self, model: &str) -> Result<(), String> {
        let all = [
            Some(self.input),
            self.cached_input,
            self.cache_write,
            Some(self.output),
        ];
        if all.into_iter().flatten().all(|p| p.is_finite() && p >= 0.0) {
            Ok(())
        } else {
            Err(format!(
                "[prices.\"{model}\"]: prices must be numbers of dollars, 0 or more"
            ))
        }
    }
}

/// The `[prices]` table: model name to price.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    by_model: BTreeMap<String, Price>,
}

impl Prices {
    /// The table as `config.toml` gave it (`[prices."MODEL"]`), each price checked.
    pub(crate) fn new(by_model: BTreeMap<String, Price>) -> Result<Prices, String> {
        for (model, price) in &by_model {
            price.check(model)?;
        }
        Ok(Prices { by_model })
    }

    /// The price of `model`, if the table has one.
    pub(crate) fn of(&self, model: &str) -> Option<Price> {
        self.by_model.get(model).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Keys {
        prices: BTreeMap<String, Price>,
    }

    fn table(text: &str) -> Result<Prices, String> {
        let keys: Keys = toml::from_str(text).map_err(|e| e.to_string())?;
        Prices::new(keys.prices)
    }

    #[test]
    fn cached_and_written_input_are_priced_apart_from_fresh_input() {
        let prices = table(
            "[prices.\"m\"]\ninput = 2.0\ncached_input = 0.5\ncache_write = 2.5\noutput = 8.0\n",
        )
        .unwrap();
        let usage = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 100_000,
            cached_input_tokens: 600_000,
            cache_write_tokens: 200_000,
            reasoning_tokens: 0,
            estimated: false,
        };
        // 200k fresh × 2 + 600k cached × 0.5 + 200k written × 2.5 + 100k out × 8, per million.
        let cost = prices.of("m").unwrap().cost(&usage);
        assert!((cost - (0.4 + 0.3 + 0.5 + 0.8)).abs() < 1e-9, "{cost}");
        assert_eq!(prices.of("other"), None);
    }

    #[test]
    fn cache_prices_default_to_the_input_price() {
        let prices = table("[prices.m]\ninput = 1.0\noutput = 1.0\n").unwrap();
        let usage = Usage {
            prompt_tokens: 1_000_000,
            cached_input_tokens: 500_000,
            ..Usage::default()
        };
        assert!((prices.of("m").unwrap().cost(&usage) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_misspelt_key_or_a_negative_price_is_an_error() {
        assert!(table("[prices.m]\ninptu = 1.0\noutput = 1.0\n").is_err());
        assert!(table("[prices.m]\ninput = 1.0\n").is_err());
        let negative = table("[prices.m]\ninput = -1.0\noutput = 1.0\n").unwrap_err();
        assert!(negative.contains("[prices.\"m\"]"), "{negative}");
    }
}
