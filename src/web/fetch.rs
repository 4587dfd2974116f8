//! One fetch: a GET of an `http` or `https` URL, zero's own request (not a command's), its
//! redirects followed here, at most [`MAX_REDIRECTS`], each target checked again as the
//! first URL was.
//!
//! Every hop, in order: the URL's scheme (http, https) and no credentials in it; the caller's
//! rules (`Gate::admits`); the host resolved once, and every address it resolves to checked
//! ([`super::address::forbidden`], unless an allow rule names the address); then a client
//! that connects to exactly the addresses checked (`resolve_to_addrs`, no proxy, no redirect
//! of its own) sends the request. Nothing but zero's user agent and an `Accept` goes with it:
//! no cookie store, no `Authorization`, none of the provider's headers (a client of its own).
//! The body is read up to a bound, and a body that says it is not text is not read at all.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use url::Url;

use super::Gate;
use super::address::{forbidden, is_named};
use super::page::{self, Kind};
use crate::tools::ToolError;

/// The most redirects followed.
pub(super) const MAX_REDIRECTS: usize = 5;

/// The most bytes of a body read; the rest is not fetched.
pub(super) const BODY_LIMIT: usize = 5 * 1024 * 1024;

/// The longest a connection takes to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What `Accept` asks for: pages and text.
const ACCEPTED: &str = "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5";

/// A page fetched.
#[derive(Debug)]
pub(super) struct Fetched {
    /// The URL the page came from, after redirects.
    pub(super) url: Url,
    /// How many redirects led there.
    pub(super) redirects: usize,
    /// Its `Content-Type`, if it had one.
    pub(super) content_type: Option<String>,
    /// How its body is read.
    pub(super) kind: Kind,
    /// The body, at most [`BODY_LIMIT`] bytes of it.
    pub(super) body: Vec<u8>,
    /// Whether the body went on past the bound.
    pub(super) cut: bool,
}

/// Fetches `url` through `gate`, following redirects; the error is the model's to read.
pub(super) async fn fetch(url: Url, gate: &Gate) -> Result<Fetched, ToolError> {
    let mut url = url;
    for redirects in 0..=MAX_REDIRECTS {
        check(&url, gate)?;
        let addresses = resolve(&url, gate).await?;
        let response = request(&url, &addresses).await?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let location = location.to_str().unwrap_or_default();
            url = url.join(location).map_err(|error| {
                ToolError::Failed(format!(
                    "{url} redirects to `{location}`, not a URL: {error}"
                ))
            })?;
            continue;
        }
        if !status.is_success() {
            return Err(ToolError::Failed(format!("{url} answered HTTP {status}")));
        }
        return read(url, redirects, response).await;
    }
    Err(ToolError::Failed(format!(
        "more than {MAX_REDIRECTS} redirects; the last one led to {url}"
    )))
}

/// The URL's scheme and credentials, then the caller's rules.
fn check(url: &Url, gate: &Gate) -> Result<(), ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::Denied(format!(
            "web_fetch fetches http and https URLs only, not {url}"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::Denied(
            "web_fetch sends no credentials; give the URL without a user name or password".into(),
        ));
    }
    (gate.admits)(url.as_str()).map_err(ToolError::Denied)
}

/// The addresses the URL's host resolves to, once, each checked.
async fn resolve(url: &Url, gate: &Gate) -> Result<Vec<SocketAddr>, ToolError> {
    let host = url
        .host_str()
        .ok_or_else(|| ToolError::InvalidArguments(format!("{url} has no host")))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let literal = bare.parse::<IpAddr>().ok();
    let addresses: Vec<SocketAddr> = match literal {
        Some(address) => vec![SocketAddr::new(address, port)],
        None => tokio::net::lookup_host((host, port))
            .await
            .map_err(|error| ToolError::Failed(format!("cannot resolve {host}: {error}")))?
            .collect(),
    };
    if addresses.is_empty() {
        return Err(ToolError::Failed(format!("{host} resolves to no address")));
    }
    // A rule names an address, never a name: only a URL that spells the address out may reach
    // a loopback, private or link-local one, so no DNS answer (a rebinding name, `localhost`)
    // can lead a fetch there, whatever names the domain rules allow.
    let spelled = |ip: IpAddr| literal.is_some() && is_named(ip, &gate.named);
    for address in &addresses {
        let ip = address.ip();
        if let Some(what) = forbidden(ip).filter(|_| !spelled(ip)) {
            let found = match literal {
                Some(_) => format!("{ip} is {what}"),
                None => format!("{host} resolves to {ip}, {what}"),
            };
            return Err(ToolError::Denied(format!(
                "{found}; web_fetch reaches such an address only when an allow rule names it, \
                 e.g. --allow 'web_fetch(domain:{ip})'"
            )));
        }
    }
    Ok(addresses)
}

/// Sends the GET to exactly `addresses`: no proxy, no redirect followed, zero's user agent.
async fn request(url: &Url, addresses: &[SocketAddr]) -> Result<reqwest::Response, ToolError> {
    let mut builder = crate::http_client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT);
    if let Some(url::Host::Domain(name)) = url.host() {
        builder = builder.resolve_to_addrs(name, addresses);
    }
    let client = builder
        .build()
        .map_err(|error| ToolError::Failed(format!("cannot make the request: {error}")))?;
    client
        .get(url.as_str())
        .header(ACCEPT, ACCEPTED)
        .send()
        .await
        .map_err(|error| ToolError::Failed(format!("cannot fetch {url}: {}", chain(&error))))
}

/// Reads the body of a successful `response` from `url`, up to [`BODY_LIMIT`]; one whose type
/// or bytes are not text is refused.
async fn read(
    url: Url,
    redirects: usize,
    mut response: reqwest::Response,
) -> Result<Fetched, ToolError> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let binary = |what: &str| {
        ToolError::Failed(format!(
            "{url} is {what}, not text; web_fetch returns pages and text only"
        ))
    };
    let declared = page::declared(content_type.as_deref()).map_err(|kind| binary(&kind))?;
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| ToolError::Failed(format!("reading {url}: {}", chain(&error))))?
    {
        let room = BODY_LIMIT - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            cut = true;
            break;
        }
    }
    let kind = page::sniffed(declared, &body).ok_or_else(|| binary("binary"))?;
    Ok(Fetched {
        url,
        redirects,
        content_type,
        kind,
        body,
        cut,
    })
}

/// An error with its causes, which reqwest keeps apart (`error sending request` alone says
/// nothing of the refused connection behind it).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(&format!(": {inner}"));
        cause = inner.source();
    }
    text
}
