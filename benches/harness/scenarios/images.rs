//! `zero exec --image` with one 1 MiB PNG: what the run sends the model in its first request
//! (the image base64-encoded, a third larger, on top of the prompt and tools), and how long it
//! takes from launch to that request (reading, checking and hashing the image, then encoding
//! it into the body).

use std::fs;
use std::path::Path;

use anyhow::Result;

use super::Bench;
use crate::table::Row;

/// The size of the attached image.
const IMAGE_BYTES: usize = 1024 * 1024;

impl Bench<'_> {
    /// The image rows (see the module documentation).
    pub(super) fn images(&self, rows: &mut Vec<Row>) -> Result<()> {
        let workspace = self.temp_dir()?;
        write_png(&workspace.path().join("shot.png"))?;
        let (first, mut sent, bytes) = self.first_request(
            "exec --image, one 1 MiB PNG",
            &[
                "exec",
                "--image",
                "shot.png",
                "what does the screenshot show?",
            ],
            workspace.path(),
            "A screenshot.",
            |request| request.raw_body.contains("data:image/png;base64,"),
        )?;
        sent.note(format!(
            "{bytes} bytes (the image's {IMAGE_BYTES} as base64, the prompt and the tools)"
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
