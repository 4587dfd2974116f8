//! What a server that is not an official or cloud API says about itself when asked: llama.cpp's
//! `GET /props` (`n_ctx`, `build_info`, `modalities.vision`), the OpenAI-style `GET /v1/models`
//! (vLLM's `max_model_len`, another server's `context_length`, `architecture.input_modalities`)
//! and a LiteLLM gateway's `GET /model/info` (`max_input_tokens`, `supports_vision`), as one
//! [`ServerReport`]: the model's window (which `provider::window` takes), whether the server is
//! llama.cpp (whose small models get the compact prompt) and whether the model takes images.
//! Official APIs are not asked: they serve none of these, and the table knows their models.

use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;

use super::MIN_CONTEXT_WINDOW;

/// How long one question to the server may take; a server that does not answer in this time
/// leaves the window to the table, and the run goes on.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The most of a probe's answer read: `/v1/models` lists can be long, never this long.
const PROBE_BODY_LIMIT: usize = 1024 * 1024;

/// What a server says about itself when asked (its `/props`, its model list): the window,
/// and whether it is llama.cpp, whose small models get the compact prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerReport {
    /// The model's context window, when the server reports one.
    pub window: Option<u32>,
    /// Whether the server identified itself as llama.cpp (its `/props` answered as llama.cpp's
    /// does, with `build_info` or `default_generation_settings`).
    pub llama_cpp: bool,
    /// Whether the model takes images, when the server says: llama.cpp's `/props`
    /// (`modalities.vision`, false unless it was started with a vision projector), else the
    /// model's entry in `/v1/models` (`architecture.input_modalities`, as OpenRouter-style
    /// servers list it) or a LiteLLM gateway's `/model/info` (`supports_vision`).
    pub vision: Option<bool>,
}

impl ServerReport {
    /// Why the model cannot see images, when its server says it cannot.
    pub fn cannot_see_images(&self) -> Option<&'static str> {
        (self.vision == Some(false)).then_some(
            "its server says the model takes no images (`modalities.vision` is false in its \
             `/props`: llama-server was started without a vision projector, `--mmproj`; or \
             its model list or model info says it takes no image input)",
        )
    }
}

/// Where to ask a server for its window: llama.cpp's `/props` at its root and the
/// OpenAI-style model list (vLLM's carries `max_model_len`), and a LiteLLM gateway's model
/// info.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Probes {
    props: Option<String>,
    models: Option<String>,
    model_info: Option<String>,
}

impl Probes {
    /// The probes of the server at `base_url`, whose OpenAI-style API is at `api_root`
    /// (`base_url` itself for the OpenAI wire, `{base_url}/v1` for Anthropic's); none for an
    /// official API (`official`).
    pub(crate) fn new(api_root: &str, official: bool) -> Probes {
        if official || on_a_cloud(api_root) {
            return Probes::default();
        }
        let api_root = api_root.trim_end_matches('/');
        let server_root = api_root.strip_suffix("/v1").unwrap_or(api_root);
        Probes {
            props: Some(format!("{server_root}/props")),
            models: Some(format!("{api_root}/models")),
            model_info: Some(format!("{server_root}/model/info")),
        }
    }

    /// What the server says about itself and `model`'s window: `/props` first (the running
    /// llama.cpp server's own setting), then the model list, then a gateway's model info.
    /// `/props` and the model list, which every local server answers one of, are asked at
    /// once (one round trip before the first request, not two); the gateway's info only when
    /// neither knows the window.
    pub(crate) async fn ask(&self, client: &reqwest::Client, model: &str) -> ServerReport {
        let props = async {
            let url = self.props.as_deref()?;
            get_json::<Props>(client, url).await
        };
        let models = async {
            let list: ModelList = get_json(client, self.models.as_deref()?).await?;
            list.data.into_iter().find(|entry| entry.id == model)
        };
        let model_info = async {
            let info: ModelInfo = get_json(client, self.model_info.as_deref()?).await?;
            info.limits_of(model)
        };
        let (props, entry) = tokio::join!(props, models);
        let llama_cpp = props.as_ref().is_some_and(|props| {
            props.build_info.is_some() || props.default_generation_settings.is_some()
        });
        let props_vision = props
            .as_ref()
            .and_then(|props| props.modalities.as_ref()?.vision);
        let props_window =
            props.and_then(|props| props.n_ctx.or(props.default_generation_settings?.n_ctx));
        // The first source that knows the window is the one taken; what the sources say of
        // images is taken in the same order.
        let listed = entry.as_ref().and_then(ModelEntry::vision);
        let (tokens, vision) = match (props_window, entry.and_then(|entry| entry.max_model_len)) {
            (Some(tokens), _) => (Some(tokens), props_vision),
            (None, Some(tokens)) => (Some(tokens), props_vision.or(listed)),
            (None, None) => {
                let limits = model_info.await;
                let gateway = limits.as_ref().and_then(|limits| limits.supports_vision);
                (
                    limits.and_then(|limits| limits.max_input_tokens),
                    props_vision.or(listed).or(gateway),
                )
            }
        };
        ServerReport {
            window: tokens.filter(|&tokens| tokens >= MIN_CONTEXT_WINDOW),
            llama_cpp,
            vision,
        }
    }
}

/// Hosted APIs that copy a wire but serve no `/props` and run no small model of the user's:
/// asking them would only cost a run a round trip (the table knows their models' windows).
const CLOUD_HOSTS: &[&str] = &[
    "api.openai.com",
    "api.anthropic.com",
    "openrouter.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.fireworks.ai",
    "api.deepseek.com",
    "api.mistral.ai",
    "api.x.ai",
    "generativelanguage.googleapis.com",
    "openai.azure.com",
];

/// Whether `url` is on one of [`CLOUD_HOSTS`] (or a subdomain of one).
fn on_a_cloud(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    CLOUD_HOSTS
        .iter()
        .any(|cloud| host == *cloud || host.ends_with(&format!(".{cloud}")))
}

#[derive(Deserialize)]
struct Props {
    n_ctx: Option<u32>,
    /// llama.cpp's build (`b4567-abcdef0`), any shape: only its presence is read.
    build_info: Option<serde::de::IgnoredAny>,
    default_generation_settings: Option<GenerationSettings>,
    /// What the model takes besides text (llama.cpp since its multimodal server).
    modalities: Option<Modalities>,
}

#[derive(Deserialize)]
struct Modalities {
    vision: Option<bool>,
}

#[derive(Deserialize)]
struct GenerationSettings {
    n_ctx: Option<u32>,
}

#[derive(Deserialize)]
struct ModelList {
    #[serde(default)]
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
    /// vLLM's `max_model_len`; LM Studio's, Together's and OpenRouter's `context_length`.
    #[serde(alias = "context_length", alias = "max_context_length")]
    max_model_len: Option<u32>,
    /// What the model takes and gives (OpenRouter's shape, copied by other servers).
    architecture: Option<Architecture>,
}

#[derive(Deserialize)]
struct Architecture {
    #[serde(default)]
    input_modalities: Vec<String>,
}

impl ModelEntry {
    /// Whether the model takes images, when its entry lists its input modalities.
    fn vision(&self) -> Option<bool> {
        let architecture = self.architecture.as_ref()?;
        (!architecture.input_modalities.is_empty())
            .then(|| architecture.input_modalities.iter().any(|m| m == "image"))
    }
}

/// A LiteLLM gateway's `GET /model/info`: each model group's name and what LiteLLM knows of
/// it (`max_input_tokens`, from its own table or the gateway's configuration).
#[derive(Deserialize)]
struct ModelInfo {
    #[serde(default)]
    data: Vec<ModelInfoEntry>,
}

#[derive(Deserialize)]
struct ModelInfoEntry {
    model_name: String,
    #[serde(default)]
    model_info: Option<ModelLimits>,
}

#[derive(Deserialize)]
struct ModelLimits {
    max_input_tokens: Option<u32>,
    /// Whether LiteLLM knows the model to take images.
    supports_vision: Option<bool>,
}

impl ModelInfo {
    /// What the gateway knows of `model`'s group (its input window, whether it takes
    /// images), when it has an entry for it.
    fn limits_of(self, model: &str) -> Option<ModelLimits> {
        self.data
            .into_iter()
            .find(|entry| entry.model_name == model)?
            .model_info
    }
}

/// `GET url` as JSON of type `T`, or `None` on any failure: a probe is a hint, never an error.
async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
) -> Option<T> {
    let read = async {
        let response = client.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            body.extend_from_slice(&chunk.ok()?);
            if body.len() > PROBE_BODY_LIMIT {
                return None;
            }
        }
        serde_json::from_slice(&body).ok()
    };
    tokio::time::timeout(PROBE_TIMEOUT, read).await.ok()?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_lists_and_a_gateways_model_info_give_the_window_in_their_own_words() {
        let list: ModelList = serde_json::from_str(
            r#"{"data": [{"id": "a", "max_model_len": 8192}, {"id": "b", "context_length": 4096}]}"#,
        )
        .unwrap();
        let windows: Vec<_> = list.data.iter().map(|entry| entry.max_model_len).collect();
        assert_eq!(windows, [Some(8192), Some(4096)]);
        let info = r#"{"data": [
            {"model_name": "other", "model_info": {"max_input_tokens": 200000}},
            {"model_name": "qwen-coder", "litellm_params": {"model": "openai/qwen"},
             "model_info": {"max_input_tokens": 16384, "max_tokens": 4096}}
        ]}"#;
        let parse = || serde_json::from_str::<ModelInfo>(info).unwrap();
        let window = |model: &str| parse().limits_of(model)?.max_input_tokens;
        assert_eq!(window("qwen-coder"), Some(16384));
        assert_eq!(window("missing"), None);
    }

    #[test]
    fn a_model_list_or_a_gateways_model_info_may_say_whether_the_model_takes_images() {
        let list: ModelList = serde_json::from_str(
            r#"{"data": [
                {"id": "a", "architecture": {"input_modalities": ["text", "image"]}},
                {"id": "b", "architecture": {"input_modalities": ["text"]}},
                {"id": "c"}
            ]}"#,
        )
        .unwrap();
        let vision: Vec<_> = list.data.iter().map(ModelEntry::vision).collect();
        assert_eq!(vision, [Some(true), Some(false), None]);
        let info: ModelInfo = serde_json::from_str(
            r#"{"data": [{"model_name": "m", "model_info": {"supports_vision": false}}]}"#,
        )
        .unwrap();
        assert_eq!(info.limits_of("m").unwrap().supports_vision, Some(false));
    }

    #[test]
    fn an_official_api_is_not_probed_and_a_server_is_asked_at_its_root() {
        assert_eq!(
            Probes::new("https://api.openai.com/v1", true),
            Probes::default()
        );
        for cloud in [
            "https://openrouter.ai/api/v1",
            "https://api.groq.com/openai/v1",
            "https://my-team.openai.azure.com/openai/v1",
        ] {
            assert_eq!(Probes::new(cloud, false), Probes::default(), "{cloud}");
        }
        let local = Probes::new("http://127.0.0.1:8080/v1/", false);
        assert_eq!(local.props.as_deref(), Some("http://127.0.0.1:8080/props"));
        assert_eq!(
            local.models.as_deref(),
            Some("http://127.0.0.1:8080/v1/models")
        );
        assert_eq!(
            local.model_info.as_deref(),
            Some("http://127.0.0.1:8080/model/info")
        );
    }
}
