//! Every environment variable zero reads, or hands to the processes it starts, by name: one
//! list, so a name is spelt once and a reader can see all of zero's environment in one place.
//! Tests may spell names out; the code uses these.

/// The provider: `openai`, `anthropic` or `local` (beats config.toml's `provider`).
pub(crate) const ZERO_PROVIDER: &str = "ZERO_PROVIDER";
/// The model (beats config.toml's `model`).
pub(crate) const ZERO_MODEL: &str = "ZERO_MODEL";
/// The endpoint (beats `OPENAI_BASE_URL`/`ANTHROPIC_BASE_URL` and config.toml's `base_url`).
pub(crate) const ZERO_BASE_URL: &str = "ZERO_BASE_URL";
/// The provider key (beats `OPENAI_API_KEY`/`ANTHROPIC_API_KEY` and config.toml's `api_key`).
pub(crate) const ZERO_API_KEY: &str = "ZERO_API_KEY";
/// The output cap of one response.
pub(crate) const ZERO_MAX_OUTPUT_TOKENS: &str = "ZERO_MAX_OUTPUT_TOKENS";
/// OpenAI's conventional key variable.
pub(crate) const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// OpenAI's conventional endpoint variable.
pub(crate) const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
/// Anthropic's conventional key variable.
pub(crate) const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// Anthropic's conventional endpoint variable.
pub(crate) const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";

/// The environment variables that carry a provider key. No command zero starts receives them,
/// their values are redacted from everything zero writes, and none is ever expanded into an
/// MCP server's configuration.
pub(crate) const KEY_VARIABLES: [&str; 3] = [ZERO_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY];

/// GitHub Actions' token for the repository, when a workflow hands it to a step's environment.
pub(crate) const GITHUB_TOKEN: &str = "GITHUB_TOKEN";
/// GitLab CI's job token.
pub(crate) const CI_JOB_TOKEN: &str = "CI_JOB_TOKEN";
/// The Actions runner's token for its own services (cache, artifacts).
pub(crate) const ACTIONS_RUNTIME_TOKEN: &str = "ACTIONS_RUNTIME_TOKEN";
/// The Actions runner's token for requesting an OIDC token (`id-token: write`).
pub(crate) const ACTIONS_ID_TOKEN_REQUEST_TOKEN: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

/// The CI systems' own token variables: their values are redacted from everything zero
/// writes, like the key variables' (commands lose them below `--auto high` as they lose every
/// secret-looking name, [`looks_secret`]).
pub(crate) const CI_TOKEN_VARIABLES: [&str; 4] = [
    GITHUB_TOKEN,
    CI_JOB_TOKEN,
    ACTIONS_RUNTIME_TOKEN,
    ACTIONS_ID_TOKEN_REQUEST_TOKEN,
];

/// Names the private file (0600, in the parent run's directory) through which a parent run
/// hands its key to a specialist child; the child reads and removes it at start. Withheld from
/// commands like the key variables themselves.
pub(crate) const ZERO_HANDED_KEY_FILE: &str = "ZERO_HANDED_KEY_FILE";
/// Names the private file (in the parent run's directory) a specialist reports its spending
/// to, for the parent's count. Withheld from commands too: a command that could write the
/// report could hide what its run spent.
pub(crate) const ZERO_USAGE_REPORT_FILE: &str = "ZERO_USAGE_REPORT_FILE";
/// The cassette a parent run hands a specialist (`cassette::Link` as JSON: the file, record
/// or replay, the child's task tag), read only in a specialist. Withheld from commands: a
/// command has no business appending to the run's recording.
pub(crate) const ZERO_CASSETTE: &str = "ZERO_CASSETTE";
/// Marks a `zero exec` as a specialist child and names the run that launched it.
pub(crate) const ZERO_PARENT_RUN: &str = "ZERO_PARENT_RUN";
/// The launching run's deadline, as milliseconds since the Unix epoch.
pub(crate) const ZERO_DEADLINE_UNIX_MS: &str = "ZERO_DEADLINE_UNIX_MS";
/// The descriptor a child inherited the lifeline on.
pub(crate) const ZERO_LIFELINE_FD: &str = "ZERO_LIFELINE_FD";
/// The local model server's socket, which a specialist child reuses.
pub(crate) const ZERO_LOCAL_SOCKET: &str = "ZERO_LOCAL_SOCKET";

/// zero's data directory (beats `XDG_DATA_HOME`).
pub(crate) const ZERO_HOME: &str = "ZERO_HOME";
/// The local model's cache (beats `XDG_CACHE_HOME`).
pub(crate) const ZERO_LOCAL_MODEL_CACHE: &str = "ZERO_LOCAL_MODEL_CACHE";
/// The local model's chat template (`zero` or `stock`).
pub(crate) const ZERO_LOCAL_TEMPLATE: &str = "ZERO_LOCAL_TEMPLATE";
/// The local model's prompt style (`compact` or `full`).
pub(crate) const ZERO_LOCAL_PROMPT: &str = "ZERO_LOCAL_PROMPT";
/// How many background tasks may run at once.
pub(crate) const ZERO_MAX_BACKGROUND_TASKS: &str = "ZERO_MAX_BACKGROUND_TASKS";
/// The grace between SIGTERM and SIGKILL when a command is stopped.
pub(crate) const ZERO_KILL_GRACE_MS: &str = "ZERO_KILL_GRACE_MS";

/// The HTTP driver's connect timeout.
pub(crate) const ZERO_CONNECT_TIMEOUT_MS: &str = "ZERO_CONNECT_TIMEOUT_MS";
/// How long the first byte of a response may take.
pub(crate) const ZERO_FIRST_BYTE_TIMEOUT_MS: &str = "ZERO_FIRST_BYTE_TIMEOUT_MS";
/// How long a stream may stay silent mid-response.
pub(crate) const ZERO_STREAM_IDLE_TIMEOUT_MS: &str = "ZERO_STREAM_IDLE_TIMEOUT_MS";
/// How many attempts a request gets.
pub(crate) const ZERO_MAX_ATTEMPTS: &str = "ZERO_MAX_ATTEMPTS";
/// The first retry's base wait.
pub(crate) const ZERO_RETRY_BASE_MS: &str = "ZERO_RETRY_BASE_MS";
/// The longest wait between attempts.
pub(crate) const ZERO_RETRY_MAX_WAIT_MS: &str = "ZERO_RETRY_MAX_WAIT_MS";
/// The silence after which a `waiting` notice is given (0: never).
pub(crate) const ZERO_WAIT_NOTICE_MS: &str = "ZERO_WAIT_NOTICE_MS";

/// The XDG config base directory.
pub(crate) const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// The XDG data base directory.
pub(crate) const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
/// The XDG cache base directory.
pub(crate) const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
/// The user's home directory.
pub(crate) const HOME: &str = "HOME";
/// A command's temporary directory, which zero sets to the run's own below `--auto high`.
pub(crate) const TMPDIR: &str = "TMPDIR";
/// Turns colour off in text output (<https://no-color.org>).
pub(crate) const NO_COLOR: &str = "NO_COLOR";

/// The words whose presence in a variable's name (any case) says it holds a secret.
const SECRET_WORDS: [&str; 5] = ["KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"];

/// Whether a variable's name says it holds a secret.
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_are_matched_without_regard_to_case() {
        for name in [
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "DbPassword",
            "GCP_CREDENTIALS",
            "keyring",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "TERM", "LANG", "CARGO_HOME"] {
            assert!(!looks_secret(name), "{name}");
        }
    }
}
