//! One MCP server, connected: started (a stdio server through the runtime, as a service; an
//! HTTP server over its URL), initialized, its tools listed — all within its start-up time —
//! and then called, each call bounded by its tool timeout and cancelled by the protocol's
//! notice when the run stops.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, RequestId, ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, Transport};
use super::stdio::{self, Bounded};
use crate::redact::Secrets;
use crate::runtime::{
    Launch, Runtime, Service, ServiceNetwork, ServiceSpec, end_words, open_log, with_log_tail,
};

/// How long a stdio server whose stdin closed may take to exit on its own before it is
/// stopped (TERM, grace, KILL), as the protocol's shutdown asks.
const EXIT_ON_EOF: Duration = Duration::from_millis(500);

/// An initialized connection's service loop.
type Client = RunningService<RoleClient, ClientConfig>;

/// A server that is up: its tools listed, ready for calls.
pub(crate) struct Connected {
    /// The server's configuration.
    pub(crate) config: ServerConfig,
    /// Its tools, as it listed them.
    pub(crate) tools: Vec<Tool>,
    /// The connection, for calls.
    peer: Peer<RoleClient>,
    /// The calls sent and not yet answered or cancelled: a call the agent loop dropped (the
    /// run stopping) is still here, and [`Connected::close`] sends its cancellation notice.
    in_flight: std::sync::Mutex<Vec<RequestId>>,
    /// The connection's service loop, until [`Connected::close`] ends it.
    running: tokio::sync::Mutex<Option<Client>>,
    /// The process of a stdio server.
    process: Option<Service>,
    /// Its stderr log, for messages about its end.
    log: Option<PathBuf>,
    /// What a stdio server says, read through the pump that drops messages too large.
    stdout: Option<Bounded>,
    /// Whether the last call could not reach the server (the request not sent, the
    /// connection refused or closed): how an HTTP server that went away is seen, since no
    /// process of its own ends. A call that reaches it again clears it.
    unreachable: AtomicBool,
}

/// How one call ended, when it did not give a result.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The run is stopping; the server was told.
    Cancelled,
    /// The call took longer than the server's tool timeout; the server was told.
    TimedOut,
    /// The server's answer was a message of `size` bytes, over [`MAX_MESSAGE`]: it was
    /// dropped, the connection goes on, and the server was told the call is over.
    TooLarge {
        /// The message's size in bytes.
        size: u64,
    },
    /// The server failed the call, or is gone.
    Failed(String),
}

/// Where one server runs: the run's runtime, the workspace and the directory for its log.
pub(crate) struct Place<'a> {
    /// The runtime stdio servers are started through.
    pub(crate) runtime: &'a Runtime,
    /// The workspace: a stdio server's working directory unless its entry names another.
    pub(crate) workspace: &'a Path,
    /// Where a stdio server's stderr log goes (the run directory; `None` when the run has
    /// no stdio server).
    pub(crate) log_dir: Option<&'a Path>,
    /// What zero's own environment holds, for `${VAR}`.
    pub(crate) var: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// The run's secrets, which the values a server's entry must keep hidden join.
    pub(crate) secrets: &'a Secrets,
}

impl Connected {
    /// Starts `config`'s server and lists its tools. Not bounded by itself: the caller
    /// bounds it by the server's start-up time, and dropping the future stops what it
    /// started.
    pub(crate) async fn start(config: ServerConfig, place: &Place<'_>) -> Result<Self, String> {
        let (transport, secrets) = config.expanded(place.var).map_err(|e| e.to_string())?;
        for secret in &secrets {
            place.secrets.add(secret);
        }
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("zero", env!("CARGO_PKG_VERSION")),
        );
        let (client, process, log, stdout) = match transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let launch = Launch::program(
                    command.into(),
                    args.into_iter().map(OsString::from).collect(),
                    match cwd {
                        Some(dir) => place.workspace.join(dir),
                        None => place.workspace.to_path_buf(),
                    },
                    env.into_iter()
                        .map(|(name, value)| (name.into(), value.into()))
                        .collect(),
                );
                let (client, process, log, stdout) =
                    start_stdio(&config, launch, info, place).await?;
                (client, Some(process), Some(log), Some(stdout))
            }
            Transport::Http { url, headers } => {
                (start_http(url, headers, info).await?, None, None, None)
            }
        };
        let tools = client.peer().list_all_tools().await.map_err(|error| {
            with_log_tail(
                &format!("it did not list its tools: {error}"),
                log.as_deref(),
            )
        })?;
        Ok(Connected {
            config,
            tools,
            peer: client.peer().clone(),
            in_flight: std::sync::Mutex::new(Vec::new()),
            running: tokio::sync::Mutex::new(Some(client)),
            process,
            log,
            stdout,
            unreachable: AtomicBool::new(false),
        })
    }

    /// Calls `tool` with `arguments`, within the server's tool timeout. When `cancel` fires
    /// or the time is up, the server gets the protocol's cancellation notice before this
    /// returns.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let since = self.stdout.as_ref().map(Bounded::mark);
        let mut handle = self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| self.unreached(Some(&error)))?;
        let id = handle.id.clone();
        crate::sync::lock(&self.in_flight).push(id.clone());
        let too_large = async {
            match (&self.stdout, since) {
                (Some(stdout), Some(since)) => stdout.answer_to(&id, since).await,
                _ => std::future::pending().await,
            }
        };
        let (reason, error) = tokio::select! {
            response = &mut handle.rx => {
                self.settled(&id);
                return match response {
                    Ok(Ok(ServerResult::CallToolResult(result))) => {
                        self.unreachable.store(false, Ordering::Relaxed);
                        Ok(result)
                    }
                    Ok(Ok(_)) => Err(CallError::Failed(
                        "the server answered the call with something other than a tool result"
                            .into(),
                    )),
                    Ok(Err(
                        error @ (ServiceError::TransportSend(_) | ServiceError::TransportClosed),
                    )) => Err(self.unreached(Some(&error))),
                    Ok(Err(error)) => Err(CallError::Failed(self.gone(&error.to_string()))),
                    Err(_) => Err(self.unreached(None)),
                };
            }
            size = too_large => ("its result was too large", CallError::TooLarge { size }),
            () = cancel.cancelled() => ("the run is stopping", CallError::Cancelled),
            () = tokio::time::sleep(self.config.tool_timeout) => {
                ("the call took too long", CallError::TimedOut)
            }
        };
        let _ = handle.cancel(Some(reason.to_string())).await;
        self.settled(&id);
        Err(error)
    }

    /// `id` needs no cancellation notice any more.
    fn settled(&self, id: &RequestId) {
        crate::sync::lock(&self.in_flight).retain(|call| call != id);
    }

    /// Whether the server went away: a stdio server's process has ended, the connection's
    /// service loop is over, or (an HTTP server) the last call could not reach it.
    pub(crate) fn is_gone(&self) -> bool {
        let ended = self
            .process
            .as_ref()
            .and_then(Service::termination)
            .is_some();
        ended || self.peer.is_transport_closed() || self.unreachable.load(Ordering::Relaxed)
    }

    /// A call that did not reach the server (`error`, or the connection closing when `None`):
    /// noted, and failed saying so in the words of the error's first cause (rmcp's own
    /// message names its types).
    fn unreached(&self, error: Option<&dyn std::error::Error>) -> CallError {
        self.unreachable.store(true, Ordering::Relaxed);
        let why = error.map_or_else(|| "the connection closed".to_string(), first_cause);
        match self.process {
            Some(_) => CallError::Failed(self.gone(&why)),
            None => CallError::Failed(format!(
                "MCP server `{}` cannot be reached ({why}); its tools fail until it answers again",
                self.config.name
            )),
        }
    }

    /// What a failed call says: `what` went wrong, and when the server's process has ended,
    /// how, with the end of its log.
    fn gone(&self, what: &str) -> String {
        match self.process.as_ref().and_then(Service::termination) {
            Some(ended) => with_log_tail(
                &format!(
                    "MCP server `{}` is gone{}; its tools cannot be called any more",
                    self.config.name,
                    end_words(Some(ended))
                ),
                self.log.as_deref(),
            ),
            None => format!("MCP server `{}`: {what}", self.config.name),
        }
    }

    /// Ends the connection — the calls still in flight get their cancellation notices, a
    /// stdio server's stdin closes, then its process is stopped (TERM, grace, KILL) — and
    /// waits until its process is over.
    pub(crate) async fn close(&self) {
        let unanswered = std::mem::take(&mut *crate::sync::lock(&self.in_flight));
        for id in unanswered {
            let notice =
                CancelledNotificationParam::new(Some(id), Some("the run is stopping".into()));
            let _ = self.peer.notify_cancelled(notice).await;
        }
        if let Some(mut running) = self.running.lock().await.take() {
            let _ = running.close().await;
        }
        if let Some(process) = &self.process {
            // The protocol's shutdown: stdin closed, a moment to exit, then the signals.
            let _ = tokio::time::timeout(EXIT_ON_EOF, process.ended()).await;
            process.stop();
            process.ended().await;
        }
    }
}

/// Starts a stdio server's process through the runtime, its stderr appended to a private
/// log in the run directory, and initializes the connection over its stdin and its stdout
/// (read through the pump that keeps too large a message from being lost without a word).
async fn start_stdio(
    config: &ServerConfig,
    launch: Launch,
    info: ClientConfig,
    place: &Place<'_>,
) -> Result<(Client, Service, PathBuf, Bounded), String> {
    let log = place
        .log_dir
        .ok_or("no directory for its log")?
        .join(format!("mcp-{}.log", config.name));
    let file =
        open_log(&log).map_err(|e| format!("cannot create its log {}: {e}", log.display()))?;
    let (process, stream) = place
        .runtime
        .start_service(ServiceSpec {
            launch,
            network: match config.network {
                true => ServiceNetwork::Open,
                false => ServiceNetwork::AsCommands,
            },
            log: file,
        })
        .await
        .map_err(|e| e.to_string())?;
    let (read, write) = stream.into_split();
    let (read, stdout) = stdio::bounded(read);
    match info.serve((read, write)).await {
        Ok(client) => Ok((client, process, log, stdout)),
        Err(error) => {
            let ended = end_words(process.termination());
            Err(with_log_tail(
                &format!("it did not initialize: {error}{ended}"),
                Some(&log),
            ))
        }
    }
}

/// Connects to a streamable HTTP server at `url`, `headers` sent with every request.
/// The innermost cause of `error`: `Connection refused (os error 111)` rather than the
/// transport's wrapping of it.
fn first_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// How often a call's broken response stream is resumed before the call fails: three times,
/// 0.25, 0.5 and 1 s apart. rmcp's default resumes forever, so a server that died mid-call
/// held the call until its tool timeout (two minutes) instead of failing it in about two
/// seconds.
fn resume_policy() -> ExponentialBackoff {
    let mut policy = ExponentialBackoff::default();
    policy.max_times = Some(3);
    policy.base_duration = Duration::from_millis(250);
    policy.max_delay = Some(Duration::from_secs(1));
    policy
}

async fn start_http(
    url: String,
    headers: BTreeMap<String, String>,
    info: ClientConfig,
) -> Result<Client, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` is not a valid header name"))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|_| format!("the value of header `{name}` is not valid"))?;
        custom.insert(header, value);
    }
    let http = crate::http_client::builder()
        .build()
        .map_err(|e| format!("cannot build its HTTP client: {e}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    config.retry_config = Arc::new(resume_policy());
    let transport = StreamableHttpClientTransport::with_client(http, config);
    info.serve(transport)
        .await
        .map_err(|e| format!("it did not initialize: {e}"))
}
