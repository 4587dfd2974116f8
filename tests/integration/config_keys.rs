//! The keys of `config.toml`: one zero does not read (a typo) is warned about, naming the
//! closest key it knows, in every output format and before an error it may explain; every key
//! some part of zero reads passes without a word. Through the real binary.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{Wire, assert_stream_contract, events, types, zero_std, zero_std_with};

/// A config directory (for `XDG_CONFIG_HOME`) whose `zero/config.toml` holds `text`, and the
/// file's path.
fn config_with(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("zero/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

/// The warnings about `modle` and `timout` in `file`, as zero words them.
fn typo_warnings(file: &Path) -> [String; 2] {
    let file = file.display();
    [
        format!("unknown key `modle` in {file} ignored (the closest known key is `model`)"),
        format!("unknown key `timout` in {file} ignored (the closest known key is `timeout`)"),
    ]
}

#[test]
fn a_typo_in_config_toml_is_warned_with_the_closest_known_key_in_every_format() {
    let (config, file) = config_with("modle = \"other\"\ntimout = \"5m\"\n");
    let expected = typo_warnings(&file);
    for format in ["text", "json", "stream-json"] {
        let server = FakeModel::start(Script::new().reply(Reply::text("done")));
        let output = zero_std_with(&server, Wire::OpenAi)
            .env("XDG_CONFIG_HOME", config.path())
            .args(["exec", "-o", format, "go"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{format}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        for warning in &expected {
            assert_eq!(
                stderr
                    .matches(&format!("zero: warning: {warning}\n"))
                    .count(),
                1,
                "{format}: {stderr}"
            );
        }
        match format {
            "stream-json" => {
                let events = events(&output.stdout);
                assert_stream_contract(&events, 0);
                // Right after run_start, as the run's other warnings about its set-up.
                assert_eq!(types(&events)[..3], ["run_start", "warning", "warning"]);
                let said: Vec<&str> = events[1..3]
                    .iter()
                    .map(|e| e["message"].as_str().unwrap())
                    .collect();
                assert_eq!(said, expected, "{events:?}");
            }
            "json" => {
                let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
                assert_eq!(summary["warnings"], serde_json::json!(expected));
            }
            _ => assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n"),
        }
    }
}

#[test]
fn a_typo_is_reported_before_the_error_it_may_explain() {
    // `modle` meant `model`: without one the custom endpoint has no model, exit 3.
    let (config, file) = config_with("modle = \"m\"\ntimout = \"5m\"\n");
    let output = zero_std()
        .env("XDG_CONFIG_HOME", config.path())
        .env("ZERO_PROVIDER", "openai")
        .env("ZERO_BASE_URL", "http://model.invalid:9/v1")
        .args(["exec", "-o", "stream-json", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let events = events(&output.stdout);
    assert_stream_contract(&events, 3);
    assert_eq!(types(&events), ["warning", "warning", "error", "run_end"]);
    let said: Vec<&str> = events[..2]
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(said, typo_warnings(&file));
    assert_eq!(events[2]["code"], "config_error");
}

#[test]
fn every_key_zero_reads_passes_without_a_word() {
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    let (config, _) = config_with(&format!(
        "provider = \"openai\"\n\
         model = \"fake-model\"\n\
         base_url = \"{}\"\n\
         api_key = \"k-0123456789\"\n\
         max_output_tokens = 1000\n\
         timeout = \"5m\"\n\
         max_tokens = 1000000\n\
         max_cost_usd = 100\n\
         context_window = 32000\n\
         sandbox = \"auto\"\n\
         network = false\n\
         env_keep = []\n\
         verify = [\"true\"]\n\
         verify_timeout = \"1m\"\n\
         verify_retries = 1\n\
         strict = false\n\
         [prices.\"fake-model\"]\n\
         input = 1.0\n\
         output = 2.0\n\
         [mcp_servers]\n",
        server.base_url_openai()
    ));
    let output = zero_std()
        .env("XDG_CONFIG_HOME", config.path())
        .env("ZERO_RETRY_BASE_MS", "10")
        .args(["exec", "-o", "stream-json", "go"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output.stdout);
    assert_stream_contract(&events, 0);
    assert!(
        events
            .iter()
            .all(|e| e["type"] != "warning"
                || !e["message"].as_str().unwrap().contains("unknown key")),
        "{events:?}"
    );
    assert!(!String::from_utf8_lossy(&output.stderr).contains("unknown key"));
}

#[test]
fn a_value_of_the_wrong_type_in_any_config_file_names_its_key_and_never_the_value() {
    let (config, file) = config_with("model = \"m\"\nmax_output_tokens = \"sk-hunter2\"\n");
    let workspace = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = workspace.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let rules_toml = write("rules.toml", "[permissions]\nallow = \"hunter2\"\n");
    let rules_json = write("rules.json", r#"{"permissions": {"deny": "hunter2"}}"#);
    let hooks = write(
        "hooks.toml",
        "[[hooks.pre_tool_use]]\ncommand = [\"hunter2\"]\n",
    );
    let mcp = write(
        "mcp.json",
        r#"{"mcpServers": {"s": {"command": ["hunter2"]}}}"#,
    );
    let config_file = file.display().to_string();
    let cases: [(&[&str], &str, &str, i32); 5] = [
        (
            &[],
            &config_file,
            "line 2, column 21: `max_output_tokens`",
            3,
        ),
        (
            &["--rules", &rules_toml],
            &rules_toml,
            "line 2, column 9: `permissions.allow`",
            2,
        ),
        (
            &["--rules", &rules_json],
            &rules_json,
            "`permissions.deny`",
            2,
        ),
        (
            &["--hooks", &hooks],
            &hooks,
            "`hooks.pre_tool_use[0].command`",
            2,
        ),
        (&["--mcp-config", &mcp], &mcp, "`mcpServers.s.command`", 2),
    ];
    for (flags, named, key, code) in cases {
        let output = zero_std()
            .env("XDG_CONFIG_HOME", config.path())
            .env("ZERO_API_KEY", "k")
            .args(["exec", "--base-url", "http://127.0.0.1:9/v1"])
            .args(flags)
            .arg("go")
            .current_dir(workspace.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{flags:?}: {stderr}");
        assert!(stderr.contains(named), "{flags:?}: {stderr}");
        assert!(stderr.contains(key), "{flags:?}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{flags:?}: {stderr}");
        // The config file's own error is the first: the others start from a good one.
        if !flags.is_empty() {
            continue;
        }
        std::fs::write(&file, "model = \"m\"\n").unwrap();
    }
}
