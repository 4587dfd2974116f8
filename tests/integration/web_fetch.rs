//! `web_fetch` through the real binary, against a small HTTP server on 127.0.0.1 that a rule
//! names explicitly (`web_fetch(domain:127.0.0.1)`): a page converted to Markdown, redirects
//! to a denied domain and to the cloud metadata address refused before anything connects, a
//! name that resolves to loopback refused without a rule, a 50 MB body cut at the bound, a
//! server that never answers timed out, a binary body refused, and a request that carries
//! zero's user agent and none of the provider's key, cookies or headers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, stream_of, tool_outputs, zero_std_with};

/// The rule that lets a fetch reach the test's server.
const LOCAL: &str = "--allow=web_fetch(domain:127.0.0.1)";

/// The provider key every run here has, which a page may hold but the model must not see.
const KEY: &str = "sk-zero-test-key-0123456789abcdef";

/// One request the site received: its path and headers (names lowercased).
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
}

/// A tiny HTTP/1.1 server on 127.0.0.1, one thread, one request per connection, answering by
/// path (see [`answer`]).
struct Site {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Site {
    fn start() -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let recorded = Arc::clone(&recorded);
                std::thread::spawn(move || serve(stream, port, &recorded));
            }
        });
        Site { port, seen }
    }

    /// The URL of `path` on this site.
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The requests received so far.
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads one request from `stream`, records it, and answers it.
fn serve(mut stream: TcpStream, port: u16, recorded: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim_end().is_empty() {
            break;
        }
        let (name, value) = header.trim_end().split_once(':').unwrap_or((&header, ""));
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    recorded.lock().unwrap().push(Seen {
        path: path.clone(),
        headers,
    });
    answer(&path, port, &mut stream, &mut reader);
}

/// Writes a response with `status`, `headers` and `body`; a client that went away is fine.
fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// The site's pages.
fn answer(path: &str, port: u16, stream: &mut TcpStream, reader: &mut BufReader<TcpStream>) {
    let html = [("Content-Type", "text/html; charset=utf-8")];
    match path {
        "/page" => respond(
            stream,
            "200 OK",
            &html,
            b"<html><head><script>tracker()</script></head><body><h1>Docs</h1>\
              <p>Read <a href=\"/guide\">the guide</a>.</p></body></html>",
        ),
        "/to-denied" => respond(
            stream,
            "302 Found",
            &[("Location", "http://denied.test/x")],
            b"",
        ),
        "/to-metadata" => respond(
            stream,
            "301 Moved Permanently",
            &[("Location", "http://169.254.169.254/latest/meta-data/")],
            b"",
        ),
        "/leak" => respond(
            stream,
            "200 OK",
            &[("Content-Type", "text/plain")],
            format!("the key is {KEY}.").as_bytes(),
        ),
        "/binary" => respond(
            stream,
            "200 OK",
            &[("Content-Type", "image/png")],
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        ),
        "/big" => {
            // 50 MB announced and sent until the reader stops taking it.
            let total = 50 * 1024 * 1024;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {total}\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
            let chunk = vec![b'a'; 64 * 1024];
            for _ in 0..total / chunk.len() {
                if stream.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
        "/never" => {
            // Holds the connection, answering nothing, until the client closes it.
            let _ = reader.read(&mut [0; 1]);
        }
        hop if hop.starts_with("/hop/") => {
            let n: usize = hop["/hop/".len()..].parse().unwrap();
            match n {
                6 => respond(
                    stream,
                    "200 OK",
                    &[("Content-Type", "text/plain")],
                    b"arrived",
                ),
                _ => {
                    let next = format!("http://127.0.0.1:{port}/hop/{}", n + 1);
                    respond(stream, "302 Found", &[("Location", &next)], b"");
                }
            }
        }
        _ => respond(stream, "404 Not Found", &[], b"no such page"),
    }
}

/// A run whose model fetches `url` (with `args` added to the call) under `flags`, then
/// answers; the tool's output and the run's events.
fn fetch(url: &str, args: Value, flags: &[&str]) -> (String, Vec<Value>) {
    let mut call = json!({ "url": url });
    for (key, value) in args.as_object().unwrap() {
        call[key] = value.clone();
    }
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("web_fetch", call))
            .reply(Reply::text("done")),
    );
    let workspace = tempfile::tempdir().unwrap();
    let output = zero_std_with(&server, Wire::OpenAi)
        .env("ZERO_API_KEY", KEY)
        .args(["exec", "-o", "stream-json", "-C"])
        .arg(workspace.path())
        .args(flags)
        .arg("go")
        .output()
        .unwrap();
    let (code, events) = stream_of(&output);
    assert_eq!(code, 0, "{events:?}");
    let outputs = tool_outputs(&events);
    assert_eq!(outputs.len(), 1, "{events:?}");
    (outputs[0].clone(), events)
}

#[test]
fn a_page_comes_back_as_markdown_with_zeros_user_agent_and_nothing_of_the_provider() {
    let site = Site::start();
    let (output, events) = fetch(&site.url("/page"), json!({}), &[LOCAL]);
    assert!(
        output.starts_with(&format!("URL: {}\n", site.url("/page"))),
        "{output}"
    );
    assert!(output.contains("(converted to Markdown)"), "{output}");
    assert!(
        output.contains("# Docs") && output.contains("[the guide](/guide)"),
        "{output}"
    );
    assert!(!output.contains("tracker"), "{output}");
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(call["sideEffect"], "read");
    let seen = site.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let header = |name: &str| {
        seen[0]
            .headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let agent = header("user-agent").unwrap();
    assert_eq!(agent, format!("zero/{}", env!("CARGO_PKG_VERSION")));
    for absent in [
        "authorization",
        "cookie",
        "x-api-key",
        "openai-organization",
    ] {
        assert_eq!(header(absent), None, "{absent}: {seen:?}");
    }
    let all = format!("{seen:?}");
    assert!(!all.contains("sk-zero-test-key"), "{all}");
}

#[test]
fn web_fetch_is_offered_only_when_the_caller_asks() {
    let workspace = tempfile::tempdir().unwrap();
    let tools = |flags: &[&str]| {
        let output = crate::support::zero::zero_std()
            .args(["exec", "--list-tools", "-C"])
            .arg(workspace.path())
            .args(flags)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).contains("web_fetch ")
    };
    assert!(!tools(&[]));
    assert!(tools(&["--web-fetch"]));
    assert!(tools(&["--allow", "WebFetch(domain:docs.rs)"]));
    assert!(!tools(&["--deny", "web_fetch(domain:docs.rs)"]));
}

#[test]
fn a_redirect_to_a_denied_domain_is_refused() {
    let site = Site::start();
    let flags = [LOCAL, "--deny=WebFetch(domain:denied.test)"];
    let (output, _) = fetch(&site.url("/to-denied"), json!({}), &flags);
    assert!(output.contains("denied.test"), "{output}");
    assert!(output.contains("permission denied"), "{output}");
    // Only the first hop reached anything.
    assert_eq!(site.seen().len(), 1);
}

#[test]
fn a_redirect_to_the_metadata_address_is_refused_even_when_rules_allow_every_domain() {
    let site = Site::start();
    let flags = [LOCAL, "--allow=web_fetch(domain:*)"];
    let (output, _) = fetch(&site.url("/to-metadata"), json!({}), &flags);
    assert!(
        output.contains("169.254.169.254 is a link-local address"),
        "{output}"
    );
}

#[test]
fn a_name_resolving_to_loopback_is_refused_without_a_rule_naming_the_address() {
    let site = Site::start();
    let url = format!("http://localhost:{}/page", site.port);
    let (output, _) = fetch(&url, json!({}), &["--web-fetch"]);
    assert!(output.contains("localhost resolves to"), "{output}");
    assert!(output.contains("a loopback address"), "{output}");
    assert!(
        site.seen().is_empty(),
        "nothing may connect: {:?}",
        site.seen()
    );
    // The address named by a rule reaches the same page.
    let (named, _) = fetch(&site.url("/page"), json!({}), &["--web-fetch", LOCAL]);
    assert!(named.contains("# Docs"), "{named}");
}

/// A rule names an address, not a name: with the loopback address named and the name allowed
/// as a domain, a URL spelling the name (what a rebinding DNS answer looks like) still does not
/// reach the address.
#[test]
fn a_named_address_is_reached_only_by_a_url_that_spells_it() {
    let site = Site::start();
    let url = format!("http://localhost:{}/page", site.port);
    let flags = [LOCAL, "--allow", "web_fetch(domain:localhost)"];
    let (output, _) = fetch(&url, json!({}), &flags);
    assert!(
        output.contains("localhost resolves to") && output.contains("a loopback address"),
        "{output}"
    );
    assert!(
        site.seen().is_empty(),
        "nothing may connect: {:?}",
        site.seen()
    );
}

#[test]
fn redirects_are_followed_at_most_five_times() {
    let site = Site::start();
    let (five, _) = fetch(&site.url("/hop/1"), json!({}), &[LOCAL]);
    assert!(
        five.contains("(after 5 redirects, at most 5)") && five.ends_with("arrived"),
        "{five}"
    );
    let paths: Vec<String> = site.seen().into_iter().map(|seen| seen.path).collect();
    assert_eq!(
        paths,
        (1..=6).map(|n| format!("/hop/{n}")).collect::<Vec<_>>()
    );
    let (six, _) = fetch(&site.url("/hop/0"), json!({}), &[LOCAL]);
    assert!(six.contains("more than 5 redirects"), "{six}");
}

#[test]
fn a_50_mb_body_is_cut_at_the_bound() {
    let site = Site::start();
    let (output, _) = fetch(&site.url("/big"), json!({}), &[LOCAL]);
    assert!(
        output.contains("[cut: web_fetch reads at most 5242880 bytes"),
        "{output:.300}"
    );
    assert!(output.len() < 200 * 1024, "{} bytes", output.len());
}

#[test]
fn a_server_that_never_answers_is_timed_out() {
    let site = Site::start();
    let started = std::time::Instant::now();
    let (output, _) = fetch(&site.url("/never"), json!({"timeout": 1}), &[LOCAL]);
    assert!(output.contains("did not answer within 1s"), "{output}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn a_page_is_redacted_like_every_tool_result() {
    let site = Site::start();
    let (output, events) = fetch(&site.url("/leak"), json!({}), &[LOCAL]);
    assert!(output.contains("the key is "), "{output}");
    assert!(!output.contains(KEY), "{output}");
    assert!(!format!("{events:?}").contains(KEY));
}

#[test]
fn a_binary_body_is_refused() {
    let site = Site::start();
    let (output, _) = fetch(&site.url("/binary"), json!({}), &[LOCAL]);
    assert!(output.contains("is image/png, not text"), "{output}");
    assert!(!output.contains("PNG"), "{output}");
}
