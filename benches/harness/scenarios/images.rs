//! `zero exec --image` with one 1 MiB PNG: what the run sends the model in its first request
//! (the image base64-encoded, a third larger, on top of the prompt and tools), and how long it
//! takes from launch to that request (reading, checking and hashing the image, then encoding
//! it into the body).

use std::fs;
use std::path::Path;

use anyhow::{Result, ensure};

use super::{Bench, tail};
use crate::process;
use crate::support::fake_model::{FakeModel, Reply};
use crate::table::{Row, Unit};

/// The size of the attached image.
const IMAGE_BYTES: usize = 1024 * 1024;

impl Bench<'_> {
    /// The image rows (see the module documentation).
    pub(super) fn images(&self, rows: &mut Vec<Row>) -> Result<()> {
        let workspace = self.temp_dir()?;
        write_png(&workspace.path().join("shot.png"))?;
        let name = "exec --image, one 1 MiB PNG";
        let mut first = Row::new(format!("{name}: launch → first request"), Unit::Ms, "");
        let mut sent = Row::new(format!("{name}: first request's body"), Unit::MiB, "");
        let mut sent_bytes = 0;
        for _ in 0..self.options.runs {
            let server = FakeModel::start(self.script(vec![Reply::text("A screenshot.")]));
            let scratch = self.temp_dir()?;
            let mut command = self.zero(scratch.path())?;
            command
                .args([
                    "exec",
                    "--image",
                    "shot.png",
                    "what does the screenshot show?",
                ])
                .current_dir(workspace.path())
                .env("ZERO_PROVIDER", "openai")
                .env("ZERO_BASE_URL", server.base_url_openai())
                .env("ZERO_MODEL", "fake-model");
            let running = process::start(&mut command)?;
            let launched = running.launched;
            let finished = running.wait()?;
            let requests = server.requests();
            ensure!(
                finished.code == 0
                    && requests.len() == 1
                    && requests[0].raw_body.contains("data:image/png;base64,"),
                "the run exited {} after {} requests, with or without the image; stderr:\n{}",
                finished.code,
                requests.len(),
                tail(&scratch.path().join("stderr")),
            );
            first.time(requests[0].at - launched);
            let bytes = requests[0].raw_body.len();
            sent.kib(bytes as u64 / 1024);
            sent_bytes = bytes;
        }
        sent.note(format!(
            "{sent_bytes} bytes (the image's {IMAGE_BYTES} as base64, the prompt and the tools)"
        ));
        rows.extend([first, sent]);
        Ok(())
    }
}

/// A PNG of [`IMAGE_BYTES`] at `path`: a 1024×1024 header and data zero never decodes.
fn write_png(path: &Path) -> Result<()> {
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend(1024u32.to_be_bytes());
    png.extend(1024u32.to_be_bytes());
    png.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    png.resize(IMAGE_BYTES, 0);
    fs::write(path, png)?;
    Ok(())
}
