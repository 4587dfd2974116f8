//! What a fetched body becomes for the model: HTML converted to Markdown (`markdown`), other text
//! as it is, anything else refused — the model reads text, and a binary body is noise that
//! costs its context.

/// How a body is read, by its `Content-Type` (and, without one, by its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// HTML: converted to Markdown.
    Html,
    /// Text of another kind (plain, Markdown, JSON, XML, source code): as it is.
    Text,
}

/// What the `Content-Type` `declared` says before any of the body is read: its kind, `None`
/// when it says nothing (the body then decides), or the type itself when it is not text.
pub(super) fn declared(declared: Option<&str>) -> Result<Option<Kind>, String> {
    let Some(declared) = declared else {
        return Ok(None);
    };
    let essence = declared
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let textual_application = [
        "json",
        "xml",
        "javascript",
        "ecmascript",
        "yaml",
        "x-yaml",
        "toml",
        "x-sh",
        "sql",
        "graphql",
    ];
    Ok(Some(match essence.as_str() {
        "" => return Ok(None),
        "text/html" | "application/xhtml+xml" => Kind::Html,
        text if text.starts_with("text/") => Kind::Text,
        other => match other.strip_prefix("application/") {
            Some(sub)
                if textual_application.contains(&sub)
                    || sub.ends_with("+json")
                    || sub.ends_with("+xml") =>
            {
                Kind::Text
            }
            _ => return Err(essence),
        },
    }))
}

/// The kind of a body whose type was not declared, or that was declared text: text is UTF-8
/// (a character cut by the byte bound at the end aside) without NUL bytes, HTML text that
/// opens like a document. `None`: binary.
pub(super) fn sniffed(declared: Option<Kind>, body: &[u8]) -> Option<Kind> {
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(error) if error.error_len().is_none() => {
            // Only the last character was cut; what precedes it is whole.
            std::str::from_utf8(&body[..error.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    if text.contains('\0') {
        return None;
    }
    declared.or_else(|| {
        let opening = text
            .trim_start()
            .get(..14)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let html = opening.starts_with("<!doctype html") || opening.starts_with("<html");
        Some(if html { Kind::Html } else { Kind::Text })
    })
}

/// The body as the model gets it: Markdown for HTML, else the text itself (a character cut at
/// the end by the byte bound left out).
pub(super) fn text(kind: Kind, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim_end_matches('\u{fffd}');
    match kind {
        Kind::Text => text.to_string(),
        Kind::Html => super::markdown::convert(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_type_decides_html_text_or_binary() {
        assert_eq!(
            declared(Some("text/html; charset=utf-8")),
            Ok(Some(Kind::Html))
        );
        assert_eq!(
            declared(Some("application/xhtml+xml")),
            Ok(Some(Kind::Html))
        );
        for text in [
            "text/plain",
            "text/markdown",
            "application/json",
            "application/ld+json",
            "application/atom+xml",
            "application/javascript",
        ] {
            assert_eq!(declared(Some(text)), Ok(Some(Kind::Text)), "{text}");
        }
        assert_eq!(declared(None), Ok(None));
        assert_eq!(declared(Some("image/PNG")), Err("image/png".to_string()));
        assert_eq!(
            declared(Some("application/octet-stream")).map_err(|_| ()),
            Err(())
        );
    }

    #[test]
    fn a_body_without_a_type_is_sniffed_and_nul_bytes_are_binary() {
        assert_eq!(sniffed(None, b"  <!DOCTYPE html><p>hi"), Some(Kind::Html));
        assert_eq!(sniffed(None, b"plain words"), Some(Kind::Text));
        assert_eq!(sniffed(Some(Kind::Text), b"\x89PNG\r\n\x1a\n\0\0"), None);
        assert_eq!(sniffed(None, b"\xff\xfe\xfd"), None);
        // "é" cut in half by the bound is still text.
        assert_eq!(sniffed(None, b"caf\xc3"), Some(Kind::Text));
    }

    #[test]
    fn html_becomes_markdown_and_text_stays_as_it_is() {
        let page = b"<html><head><title>T</title><script>x()</script></head><body>\
            <h1>Title</h1><p>Some <a href=\"/a\">link</a>.</p><ul><li>one</li></ul></body></html>";
        let markdown = text(Kind::Html, page);
        assert!(markdown.contains("# Title"), "{markdown}");
        assert!(markdown.contains("[link](/a)"), "{markdown}");
        assert!(!markdown.contains("x()"), "{markdown}");
        assert_eq!(text(Kind::Text, b"a <b>\ncaf\xc3"), "a <b>\ncaf");
    }
}
