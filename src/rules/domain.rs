//! `web_fetch` rules: `web_fetch(domain:docs.rs)`, Claude Code's `WebFetch(domain:docs.rs)`.
//!
//! | pattern | matches the URL's host |
//! |---|---|
//! | `domain:docs.rs` | `docs.rs` exactly (any case, a trailing dot ignored) |
//! | `domain:*.rust-lang.org` | every subdomain of `rust-lang.org`, not `rust-lang.org` itself |
//! | `domain:*` | every host |
//! | `domain:127.0.0.1`, `domain:[::1]` | that address, written in the URL as it is |
//!
//! A host is read as the URL standard reads it (lowercased, an IDN in punycode, an IPv6
//! literal without its brackets), the same way for the rule and for the call. A rule that
//! names an address exactly is also what lets `web_fetch` reach that address when it is a
//! loopback, private or link-local one ([`RuleSet::named_addresses`]).

use std::net::IpAddr;

use serde_json::Value;

use super::rule::{Effect, Pattern, Rule};
use super::{Judgement, RuleSet};
use crate::tools::ToolId;

/// A `domain:` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DomainPattern {
    /// `domain:*`: every host.
    Every,
    /// `domain:*.HOST`: every subdomain of the host.
    Below(String),
    /// `domain:HOST`: the host.
    Exactly(String),
}

impl DomainPattern {
    /// Parses a rule's pattern, `domain:…`; the error says what is wrong.
    pub(crate) fn parse(argument: &str) -> Result<DomainPattern, String> {
        let Some(domain) = argument.trim().strip_prefix("domain:") else {
            return Err("a web_fetch pattern is domain:HOST, domain:*.HOST or domain:*".into());
        };
        let domain = domain.trim();
        if domain == "*" {
            return Ok(DomainPattern::Every);
        }
        let (below, host) = match domain.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, domain),
        };
        let host = normal_host(host).ok_or_else(|| format!("`{domain}` is not a host name"))?;
        Ok(match below {
            true => DomainPattern::Below(host),
            false => DomainPattern::Exactly(host),
        })
    }

    /// Whether the host `host` (as [`url_host`] gives it) matches.
    pub(crate) fn matches(&self, host: &str) -> bool {
        match self {
            DomainPattern::Every => true,
            DomainPattern::Exactly(wanted) => host == wanted,
            DomainPattern::Below(parent) => host
                .strip_suffix(parent.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        }
    }
}

/// `host` as the URL standard reads a URL's host, or `None` when it is not one.
fn normal_host(host: &str) -> Option<String> {
    if host.is_empty() || host.contains(['/', '?', '#', '@', '*']) {
        return None;
    }
    url::Url::parse(&format!("http://{host}/"))
        .ok()
        .as_ref()
        .and_then(host_of)
}

/// The host of `url` as the rules compare it: an address without brackets, a name without a
/// trailing dot.
fn host_of(url: &url::Url) -> Option<String> {
    match url.host()? {
        url::Host::Domain(name) => Some(name.trim_end_matches('.').to_string()),
        url::Host::Ipv4(address) => Some(address.to_string()),
        url::Host::Ipv6(address) => Some(address.to_string()),
    }
}

/// The host of the URL `text`, as the rules compare it.
pub(crate) fn url_host(text: &str) -> Option<String> {
    host_of(&url::Url::parse(text).ok()?)
}

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
    fn patterns_match_the_host_exactly_below_it_or_all() {
        let exact = DomainPattern::parse("domain:Docs.RS.").unwrap();
        assert!(
            exact.matches("docs.rs") && !exact.matches("xdocs.rs") && !exact.matches("a.docs.rs")
        );
        let below = DomainPattern::parse("domain:*.rust-lang.org").unwrap();
        assert!(below.matches("doc.rust-lang.org") && below.matches("a.b.rust-lang.org"));
        assert!(!below.matches("rust-lang.org") && !below.matches("evilrust-lang.org"));
        assert!(
            DomainPattern::parse("domain:*")
                .unwrap()
                .matches("anything")
        );
        assert_eq!(
            DomainPattern::parse("domain:[::1]").unwrap(),
            DomainPattern::Exactly("::1".into())
        );
        for bad in [
            "docs.rs",
            "domain:",
            "domain:a/b",
            "domain:*x.org",
            "domain:u@h",
        ] {
            assert!(DomainPattern::parse(bad).is_err(), "{bad}");
        }
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
