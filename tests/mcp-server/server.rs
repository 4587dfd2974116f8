//! The MCP server zero's tests and benchmark start: built on `rmcp`'s server side, over stdio
//! or streamable HTTP on 127.0.0.1, with tools that answer, hang, crash and describe
//! themselves as tests need. Built by `cargo test` as the example
//! `mcp-test-server`; not part of zero.
//!
//! Usage: `mcp-test-server [--hang-initialize] [--record FILE] [--http PORT_FILE]
//! [--tool NAME]...`
//!
//! - `--hang-initialize`: never answer `initialize`.
//! - `--record FILE`: append a line for every call started (`call NAME`) and every
//!   cancellation notice (`cancelled REASON`), and `pid N` at start.
//! - `--http PORT_FILE`: serve on 127.0.0.1 (port 0), writing the URL to PORT_FILE.
//! - `--tool NAME`: list one more tool, NAME, which answers with its own name.
//!
//! Tools: `echo` (read-only: returns its `text`), `env` (returns the variable `name`),
//! `slow` (waits until cancelled), `crash` (the process exits mid-call), `picture` (returns
//! an image and a text), `connect` (opens a TCP connection to `addr`), `big` (returns a text
//! of `bytes` bytes, a message too large for a client to take whole when that is over 16 MiB).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

#[derive(Clone)]
struct TestServer {
    hang_initialize: bool,
    record: Option<PathBuf>,
    extra_tools: Vec<String>,
}

impl TestServer {
    fn record(&self, line: &str) {
        // Where the sandbox refuses the write (a run at --auto low), nothing is recorded.
        if let Some(path) = &self.record
            && let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}

fn result(value: serde_json::Value) -> Result<CallToolResponse, ErrorData> {
    let result: CallToolResult = serde_json::from_value(value).expect("a valid result");
    Ok(CallToolResponse::Complete(result))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.hang_initialize {
            std::future::pending::<()>().await;
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let object =
            |properties: serde_json::Value| json!({"type": "object", "properties": properties});
        let extra = self.extra_tools.iter().map(|name| {
            json!({"name": name, "description": "Answers with its name.",
                   "inputSchema": object(json!({}))})
        });
        let mut list = json!([
            {"name": "echo", "description": "Returns its text.",
             "inputSchema": object(json!({"text": {"type": "string"}})),
             "annotations": {"readOnlyHint": true}},
            {"name": "env", "description": "Returns an environment variable.",
             "inputSchema": object(json!({"name": {"type": "string"}}))},
            {"name": "slow", "description": "Waits until cancelled.",
             "inputSchema": object(json!({}))},
            {"name": "crash", "description": "Exits mid-call.",
             "inputSchema": object(json!({}))},
            {"name": "picture", "description": "Returns a picture.",
             "inputSchema": object(json!({}))},
            {"name": "connect", "description": "Opens a TCP connection to `addr`.",
             "inputSchema": object(json!({"addr": {"type": "string"}}))},
            {"name": "big", "description": "Returns `bytes` bytes of text.",
             "inputSchema": object(json!({"bytes": {"type": "integer"}}))},
        ]);
        list.as_array_mut().expect("an array").extend(extra);
        Ok(serde_json::from_value(json!({ "tools": list })).expect("a valid tool list"))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.record(&format!("call {}", request.name));
        let argument = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|args| args.get(name))
                .and_then(|value| value.as_str())
                .unwrap_or_default()
                .to_string()
        };
        match request.name.as_ref() {
            "echo" => result(json!({"content": [{"type": "text", "text": argument("text")}]})),
            "env" => {
                let value = std::env::var(argument("name")).unwrap_or_else(|_| "<unset>".into());
                result(json!({"content": [{"type": "text", "text": value}]}))
            }
            "slow" => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            "crash" => std::process::exit(3),
            "picture" => result(json!({"content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "text", "text": "a picture"},
            ]})),
            "big" => {
                let bytes = request
                    .arguments
                    .as_ref()
                    .and_then(|args| args.get("bytes"))
                    .and_then(|value| value.as_u64())
                    .unwrap_or_default();
                let text = "x".repeat(usize::try_from(bytes).expect("a size"));
                result(json!({"content": [{"type": "text", "text": text}]}))
            }
            "connect" => {
                let outcome = match std::net::TcpStream::connect(argument("addr")) {
                    Ok(_) => "connected".to_string(),
                    Err(error) => format!("refused: {error}"),
                };
                result(json!({"content": [{"type": "text", "text": outcome}]}))
            }
            other if self.extra_tools.iter().any(|name| name == other) => {
                result(json!({"content": [{"type": "text", "text": other}]}))
            }
            other => result(json!({
                "content": [{"type": "text", "text": format!("no tool {other}")}],
                "isError": true
            })),
        }
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.record(&format!(
            "cancelled {}",
            notification.reason.unwrap_or_default()
        ));
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut server = TestServer {
        hang_initialize: false,
        record: None,
        extra_tools: Vec::new(),
    };
    let mut http = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--hang-initialize" => server.hang_initialize = true,
            "--record" => server.record = args.next().map(PathBuf::from),
            "--http" => http = args.next().map(PathBuf::from),
            "--tool" => server.extra_tools.extend(args.next()),
            other => panic!("unknown argument {other}"),
        }
    }
    server.record(&format!("pid {}", std::process::id()));
    eprintln!("mcp-test-server: started");
    match http {
        None => {
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .expect("the server starts");
            let _ = running.waiting().await;
            // The protocol's notices are handled on tasks of their own: let them finish.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Some(port_file) => {
            let service = StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a port on 127.0.0.1");
            let url = format!(
                "http://127.0.0.1:{}/mcp",
                listener.local_addr().expect("an address").port()
            );
            let partial = port_file.with_extension("partial");
            std::fs::write(&partial, url).expect("the port file is written");
            std::fs::rename(&partial, &port_file).expect("the port file is placed");
            axum::serve(listener, router)
                .await
                .expect("the server runs");
        }
    }
}
