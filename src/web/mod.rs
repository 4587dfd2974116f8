//! `web_fetch`: one web page, fetched by zero itself and given to the model as text.
//!
//! It is offered only when the caller asks for it (`exec`: `--web-fetch`, `web_fetch = true`
//! in config.toml, or a `web_fetch`/`WebFetch` allow rule), at any `--auto` level: it reads,
//! and what it may reach is bounded by the caller's domain rules and by where it never goes
//! (`address`: the machine and its networks, unless an allow rule names the address). The
//! request is zero's own (`fetch`, through `http_client`), so it carries no key, cookie or
//! header of the provider's, and its redirects are followed and checked here; the body, bounded
//! in bytes and time, becomes text (`page`: HTML as Markdown, binary refused), cut to
//! [`TEXT_LIMIT`], and is redacted as every tool result is (the registry's `Toolset`).

mod address;
mod entity;
mod fetch;
mod html;
mod markdown;
mod page;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::text::prefix_at_boundary;
use crate::tools::{
    Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args,
};
use fetch::{BODY_LIMIT, Fetched, MAX_REDIRECTS};
use page::Kind;

/// The most text of a page the model gets, in bytes.
const TEXT_LIMIT: usize = 100 * 1024;

/// The time a fetch may take, redirects and body included, unless the call asks for less or
/// more (within [`TIMEOUT`]).
const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// The `timeout` argument, in seconds.
const TIMEOUT: Bounded<u64> = Bounded {
    name: "timeout",
    min: 1,
    max: Some(120),
};

/// Whether the caller's rules let a URL be fetched: checked for the first URL and again for
/// every redirect's target.
pub(crate) type Admits = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// What the caller decides about where a fetch may go.
#[derive(Clone)]
pub(crate) struct Gate {
    /// The rules' decision on a URL (`Err`: why not).
    pub(crate) admits: Admits,
    /// The addresses allow rules name exactly: the only loopback, private or link-local ones
    /// a fetch may reach.
    pub(crate) named: Vec<IpAddr>,
}

/// The `web_fetch` tool.
pub(crate) struct WebFetch {
    gate: Gate,
}

impl WebFetch {
    /// The tool, fetching where `gate` lets it.
    pub(crate) fn new(gate: Gate) -> Self {
        WebFetch { gate }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    url: String,
    timeout: Option<u64>,
}

#[async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &'static str {
        ToolId::WebFetch.name()
    }

    fn description(&self) -> &'static str {
        "Fetch one web page (an http or https URL, GET) and read it as text: HTML comes back \
         as Markdown, other text as it is; images and other binary files are refused. Up to \
         5 redirects are followed. Use it for documentation and references the task needs; \
         the caller's rules decide which sites may be fetched."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The page's URL (http or https)."},
                "timeout": TIMEOUT.schema("Seconds the fetch may take (default 30).")
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::WebFetch.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: FetchArgs = parse_args(args)?;
        let url = url::Url::parse(args.url.trim()).map_err(|error| {
            ToolError::InvalidArguments(format!("`{}` is not a URL: {error}", args.url))
        })?;
        let secs = TIMEOUT.check(args.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS))?;
        let limit = ctx
            .policy
            .time_left()
            .map_or(Duration::from_secs(secs), |left| {
                left.min(Duration::from_secs(secs))
            });
        let fetched = tokio::select! {
            fetched = tokio::time::timeout(limit, fetch::fetch(url.clone(), &self.gate)) => fetched,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let fetched = fetched.map_err(|_| {
            ToolError::Failed(format!(
                "{url} did not answer within {}",
                humantime::format_duration(limit)
            ))
        })??;
        let text = tokio::task::spawn_blocking(move || described(fetched))
            .await
            .map_err(|error| ToolError::Failed(format!("converting the page failed: {error}")))?;
        Ok(text)
    }
}

/// The result for a fetched page: where it came from and as what, then its text, cut at
/// [`TEXT_LIMIT`] with a note before it (as the body was at [`BODY_LIMIT`]).
fn described(fetched: Fetched) -> String {
    let text = page::text(fetched.kind, &fetched.body);
    let mut head = format!("URL: {}\n", fetched.url);
    if fetched.redirects > 0 {
        head.push_str(&format!(
            "(after {} redirect{}, at most {MAX_REDIRECTS})\n",
            fetched.redirects,
            if fetched.redirects == 1 { "" } else { "s" }
        ));
    }
    let shown = fetched.content_type.as_deref().unwrap_or("not given");
    head.push_str(&format!("Content-Type: {shown}"));
    if fetched.kind == Kind::Html {
        head.push_str(" (converted to Markdown)");
    }
    head.push('\n');
    let kept = prefix_at_boundary(&text, TEXT_LIMIT);
    // Said first, where a result cut again for the model's window still shows it.
    if fetched.cut || kept.len() < text.len() {
        head.push_str(&format!(
            "[cut: web_fetch reads at most {BODY_LIMIT} bytes of a page and returns at most \
             {TEXT_LIMIT} bytes of its text; this is the beginning]\n"
        ));
    }
    head.push('\n');
    head + kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetched(kind: Kind, body: &[u8], cut: bool) -> Fetched {
        Fetched {
            url: url::Url::parse("https://docs.example/a").unwrap(),
            redirects: 2,
            content_type: Some("text/html".into()),
            kind,
            body: body.to_vec(),
            cut,
        }
    }

    #[test]
    fn a_page_says_where_it_came_from_and_as_what() {
        let text = described(fetched(Kind::Html, b"<h1>Docs</h1>", false));
        assert_eq!(
            text,
            "URL: https://docs.example/a\n(after 2 redirects, at most 5)\nContent-Type: \
             text/html (converted to Markdown)\n\n# Docs"
        );
    }

    #[test]
    fn a_long_page_is_cut_with_a_note() {
        let text = described(fetched(Kind::Text, &vec![b'a'; TEXT_LIMIT * 2], false));
        assert!(text.len() < TEXT_LIMIT + 400, "{}", text.len());
        assert!(
            text.contains("bytes of its text; this is the beginning]\n\naaa"),
            "{text:.300}"
        );
        let bounded = described(fetched(Kind::Text, b"short", true));
        assert!(bounded.contains("[cut: "), "{bounded}");
    }
}
