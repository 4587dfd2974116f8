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
//! loopback, private or link-local one (`web_fetch`, `RuleSet::named_addresses`).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_the_host_exactly_below_it_or_all() {
        let exact = DomainPattern::parse("domain:Docs.RS.").unwrap();
        assert!(exact.matches("docs.rs") && !exact.matches("xdocs.rs"));
        assert!(!exact.matches("a.docs.rs"));
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
        assert_eq!(url_host("https://[::1]:8/x").as_deref(), Some("::1"));
        assert_eq!(url_host("no url"), None);
    }
}
