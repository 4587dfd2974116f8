//! Whether the run offers `web_fetch`, and where a fetch may go: only when the caller says so
//! (`--web-fetch`, `web_fetch = true` in config.toml, or any `web_fetch`/`WebFetch` allow
//! rule, which would mean nothing without it), at any `--auto` level; a specialist only when
//! its own flags say so, which its parent never writes.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::cli::ExecArgs;
use crate::config_file::ConfigFile;
use crate::rules::{Effect, RuleSet, Verdict};
use crate::tools::ToolId;
use crate::web::Gate;

use crate::exec::failure::Failure;

/// The `config.toml` keys this module owns.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FileKeys {
    web_fetch: Option<bool>,
}

/// Whether the flags, `file` (none of it in a `specialist`) and `rules` ask for `web_fetch`.
pub(super) fn offered(
    args: &ExecArgs,
    file: Option<&ConfigFile>,
    rules: &RuleSet,
    specialist: bool,
) -> Result<bool, Failure> {
    if args.web_fetch {
        return Ok(true);
    }
    if specialist {
        return Ok(false);
    }
    let keys: FileKeys = match file {
        Some(file) => file.keys().map_err(|e| Failure::config(e.to_string()))?,
        None => FileKeys::default(),
    };
    let ruled = rules
        .rules()
        .iter()
        .any(|rule| rule.effect == Effect::Allow && rule.covers(ToolId::WebFetch));
    Ok(keys.web_fetch.unwrap_or(false) || ruled)
}

/// Where the run's fetches may go: where `rules` let a URL through (asked again for every
/// redirect), and the addresses their allow rules name.
pub(crate) fn gate(rules: &RuleSet) -> Gate {
    let judge = rules.clone();
    Gate {
        admits: Arc::new(move |url| {
            match judge.check(ToolId::WebFetch.name(), &json!({ "url": url })) {
                Verdict::Allow => Ok(()),
                Verdict::Deny(denial) => Err(denial.reason),
            }
        }),
        named: rules.named_addresses(),
    }
}
