//! Images the model is shown: a file attached with `--image`, or one `read_file` opened.
//!
//! An image is recognised by its first bytes (PNG, JPEG, GIF, WebP: the formats both APIs
//! take), never by its name, and bounded before it goes anywhere: at most [`MAX_BYTES`] and
//! [`MAX_SIDE`] pixels a side, the limits Anthropic documents (OpenAI's are looser: 20 MB a
//! picture), so one image is refused the same way on every wire, with the limit named. zero
//! does not resize: the pixel size comes from the header alone (the `imagesize` crate), which
//! is all the limits and the token estimate need.
//!
//! It lives at the crate root because `tools` (`read_file` finds images) and `provider` (the
//! wires send them) both need it and neither may depend on the other.

use std::fmt;
use std::sync::Arc;

use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The most bytes one image may have: Anthropic's limit per image (5 MB, counted as
/// 5 × 1024 × 1024 bytes, the file as it is before base64), the stricter of the two APIs
/// (OpenAI takes 20 MB).
pub const MAX_BYTES: usize = 5 * 1024 * 1024;

/// The most pixels an image may have on a side: Anthropic rejects anything larger than
/// 8000×8000 px.
pub const MAX_SIDE: u32 = 8000;

/// The most tokens one image costs: Anthropic scales an image down until it is about 1,600
/// tokens (a long edge of 1568 px), and OpenAI's high-detail tiles of a large image come to
/// less (765 for 1024×1024).
const MAX_TOKENS: u64 = 1600;

/// The image formats the model can be shown: what both APIs accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// Portable Network Graphics.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (the first frame is what the APIs look at).
    Gif,
    /// WebP.
    Webp,
}

impl ImageFormat {
    /// The format whose signature `head` (the first bytes of a file) starts with, if any.
    pub fn sniff(head: &[u8]) -> Option<ImageFormat> {
        if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageFormat::Png)
        } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(ImageFormat::Jpeg)
        } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
            Some(ImageFormat::Gif)
        } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
            Some(ImageFormat::Webp)
        } else {
            None
        }
    }

    /// The MIME type the wires name it by (`image/png`, ...).
    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
        }
    }

    /// The file extension a stored copy gets.
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
        }
    }

    /// The name people use for it, for text the model and the user read.
    fn label(self) -> &'static str {
        match self {
            ImageFormat::Png => "PNG",
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Gif => "GIF",
            ImageFormat::Webp => "WebP",
        }
    }
}

/// Why some bytes are not an image the model can be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The bytes start with none of the four formats' signatures.
    #[error("not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
    /// More bytes than [`MAX_BYTES`].
    #[error(
        "the image is {bytes} bytes; an image may be at most 5 MB ({MAX_BYTES} bytes, the \
         Anthropic API's limit per image; OpenAI's is 20 MB) and zero does not resize images"
    )]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// A side longer than [`MAX_SIDE`].
    #[error(
        "the image is {width}×{height} px; an image may be at most {MAX_SIDE}×{MAX_SIDE} px \
         (the Anthropic API's limit) and zero does not resize images"
    )]
    TooManyPixels {
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
    },
    /// The signature is there but the header that follows it is not.
    #[error("the {} header is cut short or damaged", .0.label())]
    Damaged(ImageFormat),
}

/// One image, checked: its format, pixel size, content hash and bytes.
///
/// Serialised (as sessions keep it) without its bytes: a session stores each image once, by
/// [`Image::file_name`], and a message names it. An image read back that way has no bytes
/// until [`Image::with_data`] gives them back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    /// Its format.
    pub format: ImageFormat,
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The SHA-256 of its bytes, in lowercase hex.
    pub sha256: String,
    /// The file's bytes.
    #[serde(skip)]
    data: Arc<[u8]>,
}

impl Image {
    /// `bytes` as an image, when they are one within the limits.
    pub fn new(bytes: Vec<u8>) -> Result<Image, ImageError> {
        let (format, width, height) = measure(&bytes)?;
        Ok(Image {
            format,
            width,
            height,
            sha256: hex_sha256(&bytes),
            data: bytes.into(),
        })
    }

    /// This image with its bytes given back (a session's stored copy), when they are the
    /// bytes it names.
    pub fn with_data(self, bytes: Vec<u8>) -> Option<Image> {
        (hex_sha256(&bytes) == self.sha256).then(|| Image {
            data: bytes.into(),
            ..self
        })
    }

    /// The file's bytes (empty for an image read back without them, see [`Image`]).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The name it is stored under: its hash and its format's extension.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.sha256, self.format.extension())
    }

    /// Its bytes in base64, written as they are serialised: a megabyte image is not copied
    /// into a second string for each request.
    pub fn base64(&self) -> impl fmt::Display + '_ {
        Base64Display::new(&self.data, &STANDARD)
    }

    /// How many bytes [`Image::base64`] writes.
    pub fn base64_len(&self) -> usize {
        base64::encoded_len(self.data.len(), true).unwrap_or(usize::MAX)
    }

    /// About how many tokens the model reads for it: Anthropic's documented `width × height /
    /// 750`, at most 1,600 (an image is scaled down to about that), which covers
    /// OpenAI's tiles too.
    pub fn tokens(&self) -> u64 {
        (u64::from(self.width) * u64::from(self.height))
            .div_ceil(750)
            .clamp(1, MAX_TOKENS)
    }

    /// A short description for text: `PNG image, 640×480 px, 12345 bytes`.
    pub fn describe(&self) -> String {
        format!(
            "{} image, {}×{} px, {} bytes",
            self.format.label(),
            self.width,
            self.height,
            self.data.len()
        )
    }
}

/// The format and pixel size of the image `bytes` hold, when they are one within the limits
/// (what [`Image::new`] checks, without taking the bytes).
pub fn measure(bytes: &[u8]) -> Result<(ImageFormat, u32, u32), ImageError> {
    let format = ImageFormat::sniff(bytes).ok_or(ImageError::NotAnImage)?;
    if bytes.len() > MAX_BYTES {
        return Err(ImageError::TooLarge { bytes: bytes.len() });
    }
    let size = imagesize::blob_size(bytes).map_err(|_| ImageError::Damaged(format))?;
    let (width, height) = (side(size.width), side(size.height));
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(ImageError::TooManyPixels { width, height });
    }
    Ok((format, width, height))
}

/// A side as the header gave it, held to `u32` (a header can claim anything; anything past
/// `u32` is past [`MAX_SIDE`] too).
fn side(pixels: usize) -> u32 {
    u32::try_from(pixels).unwrap_or(u32::MAX)
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Test images: the smallest valid PNG of a given size (a header and no pixel data, which is
/// all zero reads).
#[cfg(test)]
pub(crate) fn test_png(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend(width.to_be_bytes());
    png.extend(height.to_be_bytes());
    png.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    png
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_formats_are_told_by_their_first_bytes() {
        assert_eq!(ImageFormat::sniff(&test_png(1, 1)), Some(ImageFormat::Png));
        assert_eq!(
            ImageFormat::sniff(&[0xff, 0xd8, 0xff, 0xe0]),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(ImageFormat::sniff(b"GIF89a...."), Some(ImageFormat::Gif));
        assert_eq!(
            ImageFormat::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageFormat::Webp)
        );
        assert_eq!(ImageFormat::sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(ImageFormat::sniff(b"not an image at all"), None);
    }

    #[test]
    fn an_image_knows_its_size_hash_and_name() {
        let image = Image::new(test_png(640, 480)).unwrap();
        assert_eq!((image.width, image.height), (640, 480));
        assert_eq!(image.sha256.len(), 64);
        assert_eq!(image.file_name(), format!("{}.png", image.sha256));
        assert_eq!(image.tokens(), 410);
        assert_eq!(image.base64().to_string().len(), image.base64_len());
        assert!(image.describe().starts_with("PNG image, 640×480 px"));
    }

    #[test]
    fn the_limits_are_named_when_an_image_passes_them() {
        let mut big = test_png(10, 10);
        big.resize(MAX_BYTES + 1, 0);
        let error = Image::new(big).unwrap_err();
        assert_eq!(
            error,
            ImageError::TooLarge {
                bytes: MAX_BYTES + 1
            }
        );
        assert!(error.to_string().contains("at most 5 MB"), "{error}");
        let error = Image::new(test_png(9000, 10)).unwrap_err();
        assert!(error.to_string().contains("8000×8000 px"), "{error}");
        assert_eq!(
            Image::new(b"\x89PNG\r\n\x1a\n".to_vec()),
            Err(ImageError::Damaged(ImageFormat::Png))
        );
        assert_eq!(Image::new(b"hello".to_vec()), Err(ImageError::NotAnImage));
    }

    #[test]
    fn a_large_image_costs_what_the_api_scales_it_to() {
        assert_eq!(Image::new(test_png(4000, 3000)).unwrap().tokens(), 1600);
    }

    #[test]
    fn an_image_read_back_gets_only_its_own_bytes() {
        let image = Image::new(test_png(2, 2)).unwrap();
        let json = serde_json::to_string(&image).unwrap();
        assert!(!json.contains("data"), "{json}");
        let bare: Image = serde_json::from_str(&json).unwrap();
        assert!(bare.data().is_empty());
        assert!(bare.clone().with_data(test_png(3, 3)).is_none());
        assert_eq!(bare.with_data(test_png(2, 2)), Some(image));
    }
}
