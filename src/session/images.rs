//! `images/`: the images of a session's conversation, each stored once under its content hash
//! (`<sha256>.<ext>`, 0600, written atomically), so a message names its images instead of
//! carrying them, however often the conversation is written again (compaction, a fork), and a
//! resumed run sends them again as they were.

use std::fs::Permissions;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::SessionError;
use crate::provider::{Image, Message};

/// The directory of a session's images.
const IMAGES_DIR: &str = "images";

/// Stores `image` in the session directory `dir`, unless it is there already. Called by the
/// transcript's writer before the line that names the image, so a line never names an image
/// the directory does not hold.
pub(super) fn store(dir: &Path, image: &Image) -> io::Result<()> {
    let images = dir.join(IMAGES_DIR);
    match crate::fsutil::private_dir(false).create(&images) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let path = images.join(image.file_name());
    if path.symlink_metadata().is_ok_and(|meta| meta.is_file()) {
        return Ok(());
    }
    crate::fsutil::write_atomic_with_permissions(&path, image.data(), Permissions::from_mode(0o600))
}

/// Gives every image of `messages` (read from the session directory `dir`) its bytes back.
/// An image missing, or not the bytes its name promises, is [`SessionError::Corrupt`].
pub(super) fn restore(dir: &Path, messages: &mut [Message]) -> Result<(), SessionError> {
    for message in messages {
        let images = match message {
            Message::User { images, .. } | Message::ToolResult { images, .. } => images,
            Message::Assistant { .. } => continue,
        };
        for image in images.iter_mut() {
            let path = dir.join(IMAGES_DIR).join(image.file_name());
            let corrupt = |message: String| SessionError::Corrupt {
                path: path.display().to_string(),
                line: 0,
                message,
            };
            let (bytes, _) = crate::fsutil::read_regular(&path, crate::image::MAX_BYTES as u64)
                .map_err(|e| corrupt(format!("an image of the conversation: {e}")))?;
            *image = image.clone().with_data(bytes).ok_or_else(|| {
                corrupt("an image whose bytes are not the ones it is named by".into())
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_stored_once_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let image = Image::new(crate::image::test_png(4, 3)).unwrap();
        store(dir.path(), &image).unwrap();
        store(dir.path(), &image).unwrap();
        let stored: Vec<_> = std::fs::read_dir(dir.path().join(IMAGES_DIR))
            .unwrap()
            .map(|entry| entry.unwrap())
            .collect();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].file_name().to_str().unwrap(), image.file_name());
        assert_eq!(
            stored[0].metadata().unwrap().permissions().mode() & 0o777,
            0o600
        );

        let bare: Image = serde_json::from_str(&serde_json::to_string(&image).unwrap()).unwrap();
        let mut messages = vec![Message::User {
            content: "look".into(),
            images: vec![bare],
        }];
        restore(dir.path(), &mut messages).unwrap();
        assert_eq!(messages[0].images(), std::slice::from_ref(&image));

        std::fs::write(
            dir.path().join(IMAGES_DIR).join(image.file_name()),
            b"other",
        )
        .unwrap();
        let error = restore(dir.path(), &mut messages).unwrap_err();
        assert!(error.to_string().contains("not the ones"), "{error}");
    }
}
