//! `--provider local`: a model on this machine, with no key and no network.
//!
//! `scripts/local-model build` puts llama.cpp's `llama-server` and Qwen2.5-Coder GGUF files in a
//! cache ([`cache_dir`]); a run with the local provider starts that server itself
//! ([`LocalServer::start`]) as a service of the run's runtime, so it is confined and ended like
//! every command: under a guardian, tied to the lifeline (gone even when zero is SIGKILLed), its
//! network blocked. It serves on a Unix socket in the run's temporary directory, and the provider
//! speaks the OpenAI wire to it over that socket. A specialist of the run reuses its parent's
//! server (the socket is handed down in [`ZERO_LOCAL_SOCKET`]) rather than loading the model again.
//!
//! The chat template and the system prompt small models are given are settings measured by
//! `scripts/local-eval` (docs/LOCAL_MODEL.md): [`Template`] here, and the prompt style, which
//! any provider may use and `exec` reads (`tools::PromptStyle`, compact for this provider
//! unless `ZERO_LOCAL_PROMPT` or `--prompt-style` says otherwise).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::environ::names::ZERO_LOCAL_MODEL_CACHE;
use crate::environ::names::ZERO_LOCAL_TEMPLATE;
use crate::runtime::{
    Launch, Runtime, Service, ServiceNetwork, ServiceSpec, end_words, open_log, with_log_tail,
};

/// The chat template every local model runs with (see its header), unless [`Template::Stock`].
const TEMPLATE: &str = include_str!("qwen25-tools.jinja");

/// How long the server may take to load its model and answer `/health`. A 1.1 GB model loads
/// in seconds from the page cache and in well under a minute from a slow disk.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How often the server's health is asked while it starts.
const HEALTH_POLL: Duration = Duration::from_millis(100);

/// The context window the server is started with: room for the system prompt, the tool
/// schemas and several file reads, within what a 2-core machine processes in reasonable time.
const CONTEXT_TOKENS: u32 = 16384;

/// The longest path a Unix socket address holds (`sun_path`, less its terminating NUL).
const SOCKET_PATH_MAX: usize = 107;

/// A model `--provider local` can run: `--model local:0.5b` or `local:1.5b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LocalModel {
    /// Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (about 490 MB).
    Coder0_5b,
    /// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (about 1.1 GB).
    Coder1_5b,
}

impl LocalModel {
    /// Every local model, smallest first.
    const ALL: [LocalModel; 2] = [LocalModel::Coder0_5b, LocalModel::Coder1_5b];

    /// The model used when none is named, chosen by `scripts/local-eval`'s numbers
    /// (docs/LOCAL_MODEL.md). `scripts/local-model build` with no model builds this one.
    pub(crate) const DEFAULT: LocalModel = LocalModel::Coder1_5b;

    /// The size `scripts/local-model build` takes for this model.
    fn size(self) -> &'static str {
        match self {
            LocalModel::Coder0_5b => "0.5b",
            LocalModel::Coder1_5b => "1.5b",
        }
    }

    /// The model's name as `--model` takes it and `run_start` reports it: `local:<size>`.
    pub(crate) fn name(self) -> String {
        format!("local:{}", self.size())
    }

    /// The model `name` means, if it is one (`local:1.5b`; case and spaces ignored).
    pub(crate) fn parse(name: &str) -> Option<LocalModel> {
        let name = name.trim().to_ascii_lowercase();
        let size = name.strip_prefix("local:")?;
        LocalModel::ALL
            .into_iter()
            .find(|model| model.size() == size)
    }

    /// The names of every local model, for a message: `local:0.5b or local:1.5b`.
    pub(crate) fn names() -> String {
        let names: Vec<String> = LocalModel::ALL.iter().map(|model| model.name()).collect();
        names.join(" or ")
    }

    /// The GGUF file `scripts/local-model build` writes for this model.
    fn file(self) -> &'static str {
        match self {
            LocalModel::Coder0_5b => "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            LocalModel::Coder1_5b => "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        }
    }

    /// The one command that builds what this model needs.
    fn build_command(self) -> String {
        match self {
            model if model == LocalModel::DEFAULT => "scripts/local-model build".to_string(),
            model => format!("scripts/local-model build {}", model.size()),
        }
    }
}

/// Where the chat template's "answer now" hint goes, or llama.cpp's own template
/// (`ZERO_LOCAL_TEMPLATE`; see docs/LOCAL_MODEL.md for what each scores). Its words are clap's
/// names for the variants (`system-hint`, `answer-hint`, `stock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Template {
    /// zero's template, the hint in the system text.
    SystemHint,
    /// zero's template, the hint after the last tool response.
    AnswerHint,
    /// The model's own template and llama.cpp's tool-call grammar for it.
    Stock,
}

impl Template {
    /// The template used when `ZERO_LOCAL_TEMPLATE` names none.
    const DEFAULT: Template = Template::AnswerHint;

    /// The server's arguments for this template.
    fn server_args(self) -> Vec<OsString> {
        let hint = match self {
            Template::SystemHint => "system",
            Template::AnswerHint => "answer",
            Template::Stock => return Vec::new(),
        };
        vec![
            "--chat-template".into(),
            TEMPLATE.into(),
            "--chat-template-kwargs".into(),
            format!(r#"{{"zero_hint":"{hint}"}}"#).into(),
        ]
    }
}

/// The local provider's settings, from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocalSettings {
    /// The chat template.
    template: Template,
}

/// A setting variable whose value is not one of its words.
#[derive(Debug, thiserror::Error)]
#[error("{variable}={value:?} is not valid: use {choices}")]
pub(crate) struct InvalidSetting {
    variable: &'static str,
    value: String,
    choices: String,
}

impl LocalSettings {
    /// The settings `ZERO_LOCAL_TEMPLATE` in `env` chooses.
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, InvalidSetting> {
        Ok(LocalSettings {
            template: choice(env, ZERO_LOCAL_TEMPLATE, Template::DEFAULT)?,
        })
    }
}

/// The choice `variable` names (exactly one of its words), else `default` when it is unset or
/// empty (`exec` reads `ZERO_LOCAL_PROMPT` with it too).
pub(crate) fn choice<T: clap::ValueEnum>(
    env: &dyn Fn(&str) -> Option<String>,
    variable: &'static str,
    default: T,
) -> Result<T, InvalidSetting> {
    let Some(value) = env(variable).filter(|value| !value.trim().is_empty()) else {
        return Ok(default);
    };
    T::from_str(value.trim(), false).map_err(|_| InvalidSetting {
        variable,
        value,
        choices: T::value_variants()
            .iter()
            .filter_map(T::to_possible_value)
            .map(|choice| choice.get_name().to_owned())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The cache `scripts/local-model build` fills: `$ZERO_LOCAL_MODEL_CACHE`, else
/// `$XDG_CACHE_HOME/zero/local-model`, else `~/.cache/zero/local-model`.
fn cache_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(dir) = var(ZERO_LOCAL_MODEL_CACHE) {
        return Some(dir.into());
    }
    let lookup = |name: &str| env(name).map(std::ffi::OsString::from);
    Some(crate::environ::zero_dir(crate::environ::Base::Cache, &lookup)?.join("local-model"))
}

/// A running local model server, as the run holds it. Dropping it stops the server; the
/// runtime's close waits until it is over.
#[derive(Debug)]
pub(crate) struct LocalServer {
    /// The socket the server answers on.
    pub(crate) socket: PathBuf,
    service: Service,
}

impl LocalServer {
    /// Starts `model`'s server from the cache in `env` as a service of `runtime`, and returns
    /// once it answers `/health`: the model is loaded. Dropped half-way (the run was stopped),
    /// it stops the server it started. Fails with a message that says what to
    /// do when the build is missing, and with the end of the server's log when it exits or
    /// does not become ready within [`START_TIMEOUT`].
    pub(crate) async fn start(
        runtime: &Runtime,
        model: LocalModel,
        settings: LocalSettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<LocalServer, String> {
        let (server, weights) = installed(model, env)?;
        let temp = runtime
            .temp_dir()
            .await
            .map_err(|e| format!("cannot open the run directory: {e}"))?;
        let socket = temp.join("llama.sock");
        if socket.as_os_str().len() > SOCKET_PATH_MAX {
            return Err(format!(
                "the local server's socket path {} is longer than a Unix socket takes ({} \
                 bytes, at most {SOCKET_PATH_MAX}): set ZERO_HOME to a shorter directory",
                socket.display(),
                socket.as_os_str().len()
            ));
        }
        let log_path = temp.with_file_name("llama-server.log");
        let log = open_log(&log_path)
            .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
        let launch = Launch::program(
            server,
            server_args(&weights, &socket, settings),
            temp,
            vec![],
        );
        let (service, stream) = runtime
            .start_service(ServiceSpec {
                launch,
                network: ServiceNetwork::Blocked,
                log,
            })
            .await
            .map_err(|e| format!("cannot start llama-server: {e}"))?;
        // The server's stdout is the service's socket; read it so a chatty server never blocks.
        tokio::spawn(async move {
            let mut stream = stream;
            let _ = tokio::io::copy(&mut stream, &mut tokio::io::sink()).await;
        });
        let running = LocalServer { socket, service };
        running.until_healthy(&log_path).await?;
        Ok(running)
    }

    /// Waits until the server answers `/health` with 200, it ends, or [`START_TIMEOUT`]
    /// passes.
    async fn until_healthy(&self, log: &Path) -> Result<(), String> {
        let client = crate::http_client::builder()
            .unix_socket(self.socket.as_path())
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        let ready = async {
            loop {
                let answered = client.get("http://localhost/health").send().await;
                if answered.is_ok_and(|response| response.status().is_success()) {
                    return;
                }
                tokio::time::sleep(HEALTH_POLL).await;
            }
        };
        tokio::select! {
            ended = self.service.ended() => Err(with_log_tail(
                &format!("llama-server ended while loading the model{}", end_words(Some(ended))),
                Some(log),
            )),
            () = ready => Ok(()),
            () = tokio::time::sleep(START_TIMEOUT) => Err(with_log_tail(
                &format!("llama-server did not become ready within {} s", START_TIMEOUT.as_secs()),
                Some(log),
            )),
        }
    }
}

/// The server and `model`'s weights in the cache `env` names, or what to run to build them.
fn installed(
    model: LocalModel,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(PathBuf, PathBuf), String> {
    let cache = cache_dir(env).ok_or_else(|| {
        format!("no cache directory for the local model: set {ZERO_LOCAL_MODEL_CACHE} or HOME")
    })?;
    let server = cache.join("bin").join("llama-server");
    let weights = cache.join(model.file());
    for (path, what) in [(&server, "llama-server"), (&weights, "the model")] {
        if !path.is_file() {
            return Err(format!(
                "{} is not built ({what} is missing: {}); build it with `{}` in zero's source \
                 checkout",
                model.name(),
                path.display(),
                model.build_command()
            ));
        }
    }
    Ok((server, weights))
}

/// llama-server's arguments: the model, the socket, every core, one slot, greedy decoding
/// (the same answer for the same prompt), and no downloads.
fn server_args(weights: &Path, socket: &Path, settings: LocalSettings) -> Vec<OsString> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut args: Vec<OsString> = vec![
        "--model".into(),
        weights.into(),
        "--host".into(),
        socket.into(),
        "--threads".into(),
        threads.to_string().into(),
        "--ctx-size".into(),
        CONTEXT_TOKENS.to_string().into(),
        "--parallel".into(),
        "1".into(),
        "--jinja".into(),
        "--no-webui".into(),
        "--offline".into(),
        "--temp".into(),
        "0".into(),
        "--seed".into(),
        "42".into(),
    ];
    if has_amx() {
        // ggml's AMX path crashes while repacking these weights; the plain CPU path is sound.
        args.push("--no-repack".into());
    }
    args.extend(settings.template.server_args());
    args
}

/// Whether the CPU has Intel AMX tiles.
fn has_amx() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| info.contains(" amx_tile"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_round_trip_and_others_are_refused() {
        for model in LocalModel::ALL {
            assert_eq!(LocalModel::parse(&model.name()), Some(model));
        }
        assert_eq!(
            LocalModel::parse(" LOCAL:0.5B "),
            Some(LocalModel::Coder0_5b)
        );
        for name in ["local", "local:", "local:7b", "gpt-4.1", "0.5b"] {
            assert_eq!(LocalModel::parse(name), None, "{name}");
        }
        assert_eq!(LocalModel::names(), "local:0.5b or local:1.5b");
    }

    #[test]
    fn the_build_command_names_the_model_unless_it_is_the_default() {
        assert_eq!(
            LocalModel::DEFAULT.build_command(),
            "scripts/local-model build"
        );
        let other = LocalModel::ALL
            .into_iter()
            .find(|m| *m != LocalModel::DEFAULT)
            .unwrap();
        assert_eq!(
            other.build_command(),
            format!("scripts/local-model build {}", other.size())
        );
    }

    /// An environment of `pairs`, as the lookup the code under test takes.
    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        let vars: std::collections::HashMap<&str, &str> = pairs.iter().copied().collect();
        move |name| vars.get(name).map(|value| value.to_string())
    }

    #[test]
    fn the_cache_is_found_as_the_build_script_finds_it() {
        type Env<'a> = &'a [(&'a str, &'a str)];
        let cases: [(Env, Option<&str>); 5] = [
            (
                &[
                    (ZERO_LOCAL_MODEL_CACHE, "/c"),
                    ("XDG_CACHE_HOME", "/x"),
                    ("HOME", "/h"),
                ],
                Some("/c"),
            ),
            (
                &[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")],
                Some("/x/zero/local-model"),
            ),
            (&[("HOME", "/h")], Some("/h/.cache/zero/local-model")),
            (
                &[(ZERO_LOCAL_MODEL_CACHE, ""), ("HOME", "/h")],
                Some("/h/.cache/zero/local-model"),
            ),
            (&[], None),
        ];
        for (env, expected) in cases {
            assert_eq!(
                cache_dir(&env_of(env)),
                expected.map(PathBuf::from),
                "{env:?}"
            );
        }
    }

    #[test]
    fn settings_take_their_words_and_refuse_others() {
        let default = LocalSettings::from_env(&env_of(&[])).unwrap();
        assert_eq!(default.template, Template::DEFAULT);
        let chosen = LocalSettings::from_env(&env_of(&[
            ("ZERO_LOCAL_TEMPLATE", "stock"),
            ("ZERO_LOCAL_PROMPT", "full"),
        ]))
        .unwrap();
        assert_eq!(chosen.template, Template::Stock);
        let error = LocalSettings::from_env(&env_of(&[("ZERO_LOCAL_TEMPLATE", "fancy")]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            r#"ZERO_LOCAL_TEMPLATE="fancy" is not valid: use system-hint, answer-hint, stock"#
        );
    }

    #[test]
    fn the_template_is_passed_with_its_hint_placement_or_not_at_all() {
        let args = |template| {
            server_args(
                Path::new("/m.gguf"),
                Path::new("/s.sock"),
                LocalSettings { template },
            )
        };
        let stock = args(Template::Stock);
        assert!(!stock.iter().any(|arg| arg == "--chat-template"));
        let system = args(Template::SystemHint);
        let at = system
            .iter()
            .position(|arg| arg == "--chat-template")
            .unwrap();
        assert_eq!(system[at + 1], OsString::from(TEMPLATE));
        assert_eq!(system[at + 3], OsString::from(r#"{"zero_hint":"system"}"#));
        let host = system.iter().position(|arg| arg == "--host").unwrap();
        assert_eq!(system[host + 1], OsString::from("/s.sock"));
    }
}
