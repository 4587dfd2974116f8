//! `web_fetch` calls before the rules: the host of the call's `url` against the `domain:`
//! patterns (`domain`), and the addresses allow rules name exactly, which are the only
//! loopback, private or link-local ones a fetch may reach.

use std::net::IpAddr;

use serde_json::Value;

use super::domain::{DomainPattern, url_host};
use super::rule::{Effect, Pattern, Rule};
use super::{Judgement, RuleSet};
use crate::tools::ToolId;

impl RuleSet {
    /// The addresses `web_fetch` allow rules name exactly (`web_fetch(domain:127.0.0.1)`):
    /// the only loopback, private or link-local addresses a fetch may reach.
    pub(crate) fn named_addresses(&self) -> Vec<IpAddr> {
        self.rules
            .iter()
            .filter(|rule| rule.effect == Effect::Allow && rule.covers(ToolId::WebFetch))
            .filter_map(|rule| match &rule.pattern {
                Pattern::Domain(DomainPattern::Exactly(host)) => host.parse().ok(),
                _ => None,
            })
            .collect()
    }
}

impl Judgement<'_> {
    /// A `web_fetch` call: the host of its `url` must pass.
    pub(super) fn web_fetch(&mut self, args: &Value) -> Result<(), String> {
        let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
        let host = url_host(url).ok_or_else(|| {
            format!(
                "rules apply to web_fetch and `{url}` has no host to check them against; give \
                 an http or https URL"
            )
        })?;
        let tool = ToolId::WebFetch;
        self.decide(
            &|rule: &Rule| rule.covers(tool),
            tool.name(),
            &|rule: &Rule| match &rule.pattern {
                Pattern::Domain(pattern) => pattern.matches(&host),
                _ => true,
            },
            &format!("the host `{host}`"),
            Some(format!("web_fetch(domain:{host})")),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::rules::Verdict;
    use crate::rules::rule::Origin;

    fn set(allow: &[&str], deny: &[&str]) -> RuleSet {
        let rule = |text: &&str, effect| {
            Rule::parse(text, effect, Origin::Flag, Path::new("/ws"), None).unwrap()
        };
        let rules = allow
            .iter()
            .map(|text| rule(text, Effect::Allow))
            .chain(deny.iter().map(|text| rule(text, Effect::Deny)))
            .collect();
        RuleSet::new(rules, Path::new("/ws"))
    }

    fn allowed(set: &RuleSet, url: &str) -> bool {
        set.check("web_fetch", &json!({ "url": url })) == Verdict::Allow
    }

    #[test]
    fn both_syntaxes_cover_web_fetch_and_deny_wins() {
        let rules = set(
            &["WebFetch(domain:*.example.com)"],
            &["web_fetch(domain:bad.example.com)"],
        );
        assert!(allowed(&rules, "https://docs.example.com/a?b"));
        assert!(allowed(&rules, "HTTPS://DOCS.EXAMPLE.COM./"));
        assert!(!allowed(&rules, "https://bad.example.com/"));
        assert!(!allowed(&rules, "https://example.org/"));
        assert!(!allowed(&rules, "not a url"));
        let Verdict::Deny(denial) = rules.check("web_fetch", &json!({"url": "http://x.org/"}))
        else {
            panic!("allowed");
        };
        assert!(
            denial.reason.contains("--allow 'web_fetch(domain:x.org)'"),
            "{}",
            denial.reason
        );
        assert!(set(&[], &[]).check("web_fetch", &json!({})) == Verdict::Allow);
    }

    #[test]
    fn only_allow_rules_naming_an_address_exactly_name_it() {
        let rules = set(
            &[
                "web_fetch(domain:127.0.0.1)",
                "web_fetch(domain:[::1])",
                "web_fetch(domain:*)",
            ],
            &["web_fetch(domain:10.0.0.1)"],
        );
        let named: Vec<String> = rules
            .named_addresses()
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(named, ["127.0.0.1", "::1"]);
        assert!(
            set(&["web_fetch(domain:localhost)"], &[])
                .named_addresses()
                .is_empty()
        );
    }
}
