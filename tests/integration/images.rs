//! Images through the binary, on both wires: `--image` and `read_file` of an image put the
//! wire's own image content in the request (OpenAI's `image_url` data URL, Anthropic's base64
//! `image` block), the limits are named when an image passes them, a file named like an image
//! that is not one is read with a note, and a session keeps each image once and sends it again
//! when it is resumed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Route, Script};
use crate::support::zero::{Wire, finished_stream, tool_outputs, zero_std_with};

/// The smallest PNG a header reader takes: the signature and an `IHDR` chunk of `width` ×
/// `height` (no pixel data, which zero never decodes).
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend(width.to_be_bytes());
    png.extend(height.to_be_bytes());
    png.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    png
}

/// What a data URL or a base64 field carries for `bytes`.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A workspace holding `files`.
fn workspace(files: &[(&str, Vec<u8>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

/// `zero exec -o stream-json` in `workspace` against `server` on `wire`, with `flags` and the
/// data directory `data`; its events, once it exited with `code`.
fn run(
    server: &FakeModel,
    wire: Wire,
    workspace: &Path,
    data: &Path,
    flags: &[&str],
    code: i32,
) -> Vec<Value> {
    let mut cmd = assert_cmd::Command::from_std(zero_std_with(server, wire));
    cmd.env("XDG_DATA_HOME", data)
        .env("ZERO_HOME", data.join("zero"))
        .args(["exec", "-o", "stream-json", "--auto", "low", "--cwd"])
        .arg(workspace)
        .args(flags)
        .arg("what does the picture show?");
    finished_stream(&mut cmd, code)
}

/// The image content part each wire sends for `bytes`, a PNG.
fn image_part(wire: Wire, bytes: &[u8]) -> Value {
    match wire {
        Wire::OpenAi => json!({
            "type": "image_url",
            "image_url": {"url": format!("data:image/png;base64,{}", base64(bytes))}
        }),
        Wire::Anthropic => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": base64(bytes)}
        }),
    }
}

/// The content of the first user message of `body`.
fn first_user_content(wire: Wire, body: &Value) -> Value {
    let index = match wire {
        Wire::OpenAi => 1, // after the system message
        Wire::Anthropic => 0,
    };
    assert_eq!(body["messages"][index]["role"], "user", "{body}");
    body["messages"][index]["content"].clone()
}

#[test]
fn an_attached_image_goes_before_the_prompt_as_each_wire_documents_it() {
    let image = png(640, 480);
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(Script::new().reply(Reply::text("a cat")));
        let dir = workspace(&[("shot.png", image.clone())]);
        let data = tempfile::tempdir().unwrap();
        run(
            &server,
            wire,
            dir.path(),
            data.path(),
            &["--image", "shot.png"],
            0,
        );
        let content = first_user_content(wire, &server.requests()[0].body);
        assert_eq!(content[0], image_part(wire, &image), "{wire:?}");
        assert_eq!(content[1]["type"], "text", "{wire:?}: {content}");
        assert_eq!(content[1]["text"], "what does the picture show?");
    }
}

#[test]
fn read_file_of_an_image_returns_it_as_each_wire_documents_it() {
    let image = png(32, 16);
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::tool_call("read_file", json!({"path": "diagram"})))
                .reply(Reply::text("a diagram")),
        );
        // Known by its bytes, not its name.
        let dir = workspace(&[("diagram", image.clone())]);
        let data = tempfile::tempdir().unwrap();
        let events = run(&server, wire, dir.path(), data.path(), &[], 0);
        let outputs = tool_outputs(&events);
        assert!(
            outputs[0].contains("PNG image, 32×16 px"),
            "{wire:?}: {outputs:?}"
        );
        let body = &server.requests()[1].body;
        let messages = body["messages"].as_array().unwrap();
        match wire {
            // A tool message is text only: the image follows in a user message.
            Wire::OpenAi => {
                let tool = &messages[3];
                assert_eq!(tool["role"], "tool", "{body}");
                assert!(tool["content"].as_str().unwrap().contains("PNG image"));
                let user = &messages[4];
                assert_eq!(user["role"], "user", "{body}");
                assert!(
                    user["content"][0]["text"]
                        .as_str()
                        .unwrap()
                        .contains("read_file")
                );
                assert_eq!(user["content"][1], image_part(wire, &image));
            }
            // The image is part of the tool_result itself.
            Wire::Anthropic => {
                let result = &messages[2]["content"][0];
                assert_eq!(result["type"], "tool_result", "{body}");
                assert_eq!(result["content"][0]["type"], "text", "{body}");
                assert_eq!(result["content"][1], image_part(wire, &image));
            }
        }
    }
}

/// `zero exec --image IMAGE` in `workspace` against `server` (OpenAI), refused before any
/// request with exit 2; its stderr.
fn refused(server: &FakeModel, workspace: &Path, image: &str) -> String {
    let output = assert_cmd::Command::from_std(zero_std_with(server, Wire::OpenAi))
        .args(["exec", "--image", image, "--cwd"])
        .arg(workspace)
        .arg("look")
        .assert()
        .code(2);
    assert!(server.requests().is_empty());
    String::from_utf8_lossy(&output.get_output().stderr).into_owned()
}

#[test]
fn an_image_past_the_limit_is_refused_with_the_limit_named() {
    let mut big = png(100, 100);
    big.resize(6 * 1024 * 1024, 0);
    let dir = workspace(&[("big.png", big)]);
    let data = tempfile::tempdir().unwrap();

    let server = FakeModel::start(Script::new().reply(Reply::text("never asked")));
    let stderr = refused(&server, dir.path(), "big.png");
    assert!(
        stderr.contains("--image big.png") && stderr.contains("at most 5 MB"),
        "{stderr}"
    );

    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("read_file", json!({"path": "big.png"})))
            .reply(Reply::text("too big then")),
    );
    let events = run(&server, Wire::Anthropic, dir.path(), data.path(), &[], 0);
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("at most 5 MB") && outputs[0].contains("5242880 bytes"),
        "{outputs:?}"
    );
    let body = server.requests()[1].raw_body.clone();
    assert!(!body.contains("\"image\""), "no image was sent");
}

#[test]
fn a_file_named_like_an_image_that_is_not_one_is_read_with_a_note() {
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call("read_file", json!({"path": "notes.png"})))
            .reply(Reply::text("it was text")),
    );
    let dir = workspace(&[("notes.png", b"just some text\n".to_vec())]);
    let data = tempfile::tempdir().unwrap();
    let events = run(&server, Wire::OpenAi, dir.path(), data.path(), &[], 0);
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("named like an image but is not")
            && outputs[0].contains("1\tjust some text"),
        "{outputs:?}"
    );
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_resumed_session_sends_its_image_again_and_keeps_it_once() {
    let image = png(64, 64);
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = FakeModel::start(
            Script::new()
                .reply(Reply::tool_call("read_file", json!({"path": "shot.png"})))
                .reply(Reply::text("a square"))
                .reply(Reply::text("still a square")),
        );
        let dir = workspace(&[("shot.png", image.clone())]);
        let data = tempfile::tempdir().unwrap();
        run(
            &server,
            wire,
            dir.path(),
            data.path(),
            &["--image", "shot.png", "--session-id", "pictures"],
            0,
        );
        run(
            &server,
            wire,
            dir.path(),
            data.path(),
            &["--resume", "last"],
            0,
        );
        let resumed = &server.requests()[2];
        let content = first_user_content(wire, &resumed.body);
        assert_eq!(content[0], image_part(wire, &image), "{wire:?}");
        // The prompt's image and the one read_file returned, both sent again.
        let encoded = base64(&image);
        assert_eq!(resumed.raw_body.matches(&encoded).count(), 2, "{wire:?}");

        let stored: Vec<PathBuf> = files_under(data.path())
            .into_iter()
            .filter(|path| {
                path.parent()
                    .is_some_and(|parent| parent.ends_with("images"))
            })
            .collect();
        assert_eq!(stored.len(), 1, "{wire:?}: {stored:?}");
        assert_eq!(std::fs::read(&stored[0]).unwrap(), image);
        let name = stored[0].file_name().unwrap().to_str().unwrap();
        assert!(name.ends_with(".png") && name.len() == 64 + 4, "{name}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&stored[0]).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let transcript = files_under(data.path())
            .into_iter()
            .find(|path| path.ends_with("messages.jsonl"))
            .unwrap();
        let lines = std::fs::read_to_string(transcript).unwrap();
        assert!(
            !lines.contains(&encoded),
            "the transcript names the image, never holds it"
        );
        let shown = crate::support::zero::zero_std()
            .env("ZERO_HOME", data.path().join("zero"))
            .args(["sessions", "show", "pictures"])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains(&format!("[image {name}: PNG image, 64×64 px")),
            "{shown}"
        );
    }
}

#[test]
fn a_server_that_says_its_model_takes_no_images_gets_none() {
    let props = json!({"build_info": "b5000", "n_ctx": 65536, "modalities": {"vision": false}});
    let dir = workspace(&[("shot.png", png(8, 8))]);
    let data = tempfile::tempdir().unwrap();

    let server = FakeModel::start(Script::new().props(props.clone()));
    let stderr = refused(&server, dir.path(), "shot.png");
    assert!(
        stderr.contains("--image: the model cannot see images")
            && stderr.contains("modalities.vision"),
        "{stderr}"
    );

    let server = FakeModel::start(
        Script::new()
            .props(props)
            .reply(Reply::tool_call("read_file", json!({"path": "shot.png"})))
            .reply(Reply::text("I cannot see it")),
    );
    let events = run(&server, Wire::OpenAi, dir.path(), data.path(), &[], 0);
    let outputs = tool_outputs(&events);
    assert!(
        outputs[0].contains("The model cannot see images: its server says"),
        "{outputs:?}"
    );
    assert!(!server.requests()[1].raw_body.contains("image_url"));
}

#[test]
fn a_model_list_or_a_gateway_that_says_the_model_takes_no_images_gets_none() {
    let dir = workspace(&[("shot.png", png(8, 8))]);
    // The model's entry in /v1/models lists its input modalities (OpenRouter's shape).
    let listed = json!({"object": "list", "data": [{"id": "fake-model",
        "architecture": {"input_modalities": ["text"]}}]});
    let server = FakeModel::start(Script::new().models(listed));
    let stderr = refused(&server, dir.path(), "shot.png");
    assert!(
        stderr.contains("--image: the model cannot see images"),
        "{stderr}"
    );
    // One that takes images is sent them.
    let listed = json!({"object": "list", "data": [{"id": "fake-model",
        "architecture": {"input_modalities": ["text", "image"]}}]});
    let server = FakeModel::start(Script::new().models(listed).reply(Reply::text("a cat")));
    let data = tempfile::tempdir().unwrap();
    run(
        &server,
        Wire::OpenAi,
        dir.path(),
        data.path(),
        &["--image", "shot.png"],
        0,
    );
    assert!(server.requests()[0].raw_body.contains("image_url"));
}

#[test]
fn a_server_that_refuses_an_image_is_asked_again_with_a_note_in_its_place() {
    let image = png(8, 8);
    for (wire, needle, field) in [
        (Wire::OpenAi, "\"image_url\"", "image_url"),
        (Wire::Anthropic, "\"type\":\"image\"", "image"),
    ] {
        let refusal = "image input is not supported - hint: if this is unexpected, you may \
                       need to provide the mmproj";
        let server = FakeModel::start(
            Script::new()
                .route(Route::body_contains(needle).reply(Reply::error(400, refusal)))
                .reply(Reply::text("I was told I cannot see it")),
        );
        let dir = workspace(&[("shot.png", image.clone())]);
        let data = tempfile::tempdir().unwrap();
        let events = run(
            &server,
            wire,
            dir.path(),
            data.path(),
            &["--image", "shot.png"],
            0,
        );
        let warnings: Vec<&str> = events
            .iter()
            .filter(|event| event["type"] == "warning")
            .map(|event| event["message"].as_str().unwrap())
            .collect();
        assert_eq!(warnings.len(), 1, "{wire:?}: {warnings:?}");
        assert!(
            warnings[0].contains(&format!("the server refused `{field}`"))
                && warnings[0].contains("image input is not supported"),
            "{wire:?}: {warnings:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{wire:?}");
        assert!(!requests[1].raw_body.contains(needle), "{wire:?}");
        assert!(
            requests[1].raw_body.contains("this server takes no images"),
            "{wire:?}"
        );
    }
}
