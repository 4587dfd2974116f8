//! HTML character references (`&amp;`, `&#233;`, `&#x1F600;`, the legacy `&copy` without its
//! semicolon) decoded as the HTML standard's tokenizer decodes them.
//!
//! The named references come from `quick_xml::escape::resolve_html5_entity`, a `match` compiled
//! to code: a table of 2,231 `&str`s (html5ever's, html-escape's) is 4,000–12,000 pointers the
//! loader relocates in every zero process, whether or not it ever reads a page (docs/
//! PERFORMANCE.md, round 13). Its list lacks the 94 references that stand for two code points
//! (`&NotSubset;` and other negated math); those stay as written, which a model reads as well.

use std::borrow::Cow;

/// Whether `name` is one of the references the standard still decodes without their
/// semicolon (`&copy 2024`). A `match` compiled to code, not a table of `&str`s: it costs the
/// loader no relocation, and a page of a million references no scan of a list each.
// One name per line would be a hundred lines of data: kept as the standard's list is printed.
#[rustfmt::skip]
fn is_legacy(name: &str) -> bool {
    matches!(
        name,
        "AElig" | "AMP" | "Aacute" | "Acirc" | "Agrave" | "Aring" | "Atilde" | "Auml" | "COPY" |
        "Ccedil" | "ETH" | "Eacute" | "Ecirc" | "Egrave" | "Euml" | "GT" | "Iacute" | "Icirc" |
        "Igrave" | "Iuml" | "LT" | "Ntilde" | "Oacute" | "Ocirc" | "Ograve" | "Oslash" | "Otilde" |
        "Ouml" | "QUOT" | "REG" | "THORN" | "Uacute" | "Ucirc" | "Ugrave" | "Uuml" | "Yacute" |
        "aacute" | "acirc" | "acute" | "aelig" | "agrave" | "amp" | "aring" | "atilde" | "auml" |
        "brvbar" | "ccedil" | "cedil" | "cent" | "copy" | "curren" | "deg" | "divide" | "eacute" |
        "ecirc" | "egrave" | "eth" | "euml" | "frac12" | "frac14" | "frac34" | "gt" | "iacute" |
        "icirc" | "iexcl" | "igrave" | "iquest" | "iuml" | "laquo" | "lt" | "macr" | "micro" |
        "middot" | "nbsp" | "not" | "ntilde" | "oacute" | "ocirc" | "ograve" | "ordf" | "ordm" |
        "oslash" | "otilde" | "ouml" | "para" | "plusmn" | "pound" | "quot" | "raquo" | "reg" |
        "sect" | "shy" | "sup1" | "sup2" | "sup3" | "szlig" | "thorn" | "times" | "uacute" |
        "ucirc" | "ugrave" | "uml" | "uuml" | "yacute" | "yen" | "yuml"
    )
}

/// The longest legacy reference name is six bytes (`frac12`).
const LEGACY_MAX: usize = 6;

/// What the numeric references 0x80–0x9F stand for: windows-1252's characters, as the standard
/// maps them (0 where it keeps the code point).
const C1: [u16; 32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
    0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
];

/// Where the text stands, which decides a legacy reference followed by a letter, a digit or
/// `=`: decoded in text (`&notit` is `¬it`), kept in an attribute value (`?a=1&copy=2` is a
/// query string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Context {
    /// Between tags.
    Text,
    /// Inside an attribute's value.
    Attribute,
}

/// `text` with every character reference decoded; borrowed when it holds none.
pub(super) fn decode(text: &str, context: Context) -> Cow<'_, str> {
    let Some(first) = text.find('&') else {
        return Cow::Borrowed(text);
    };
    let mut decoded = String::with_capacity(text.len());
    decoded.push_str(&text[..first]);
    let mut rest = &text[first..];
    while let Some(at) = rest.find('&') {
        decoded.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match reference(after, context) {
            Some((consumed, replacement)) => {
                decoded.push_str(&replacement);
                rest = &after[consumed..];
            }
            None => {
                decoded.push('&');
                rest = after;
            }
        }
    }
    decoded.push_str(rest);
    Cow::Owned(decoded)
}

/// The reference that opens `after` (the text after an `&`): how many bytes it takes and what
/// it stands for, or `None` when it is not one (the `&` then stays as it is).
fn reference(after: &str, context: Context) -> Option<(usize, Cow<'static, str>)> {
    if let Some(number) = after.strip_prefix('#') {
        return numeric(number).map(|(consumed, c)| (consumed + 1, Cow::Owned(c.to_string())));
    }
    let name_len = after.bytes().take_while(u8::is_ascii_alphanumeric).count();
    let name = &after[..name_len];
    if after[name_len..].starts_with(';')
        && let Some(replacement) = quick_xml::escape::resolve_html5_entity(name)
    {
        return Some((name_len + 1, Cow::Borrowed(replacement)));
    }
    let legacy = (2..=name_len.min(LEGACY_MAX))
        .rev()
        .map(|len| &name[..len])
        .find(|candidate| is_legacy(candidate))?;
    let next = after.as_bytes().get(legacy.len()).copied();
    if context == Context::Attribute && next.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'=')
    {
        return None;
    }
    quick_xml::escape::resolve_html5_entity(legacy)
        .map(|replacement| (legacy.len(), Cow::Borrowed(replacement)))
}

/// A numeric reference (`233;`, `x1F600;`, the semicolon optional): the bytes it takes and its
/// character, U+FFFD for zero, a surrogate or a number past Unicode.
fn numeric(number: &str) -> Option<(usize, char)> {
    let (radix, digits_at) = match number.as_bytes().first() {
        Some(b'x' | b'X') => (16, 1),
        _ => (10, 0),
    };
    let digits = number[digits_at..]
        .bytes()
        .take_while(|b| (*b as char).is_digit(radix))
        .count();
    if digits == 0 {
        return None;
    }
    let value = number[digits_at..digits_at + digits]
        .chars()
        .try_fold(0u32, |value, digit| {
            value
                .checked_mul(radix)?
                .checked_add(digit.to_digit(radix)?)
        });
    let mut consumed = digits_at + digits;
    if number[consumed..].starts_with(';') {
        consumed += 1;
    }
    let character = match value {
        Some(value @ 0x80..=0x9F) => match C1[(value - 0x80) as usize] {
            0 => char::from_u32(value),
            mapped => char::from_u32(u32::from(mapped)),
        },
        Some(0) | None => None,
        Some(value) => char::from_u32(value),
    };
    Some((consumed, character.unwrap_or('\u{fffd}')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(input: &str) -> String {
        decode(input, Context::Text).into_owned()
    }

    #[test]
    fn named_numeric_and_legacy_references_are_decoded() {
        assert_eq!(text("a &amp; b &lt;c&gt; &quot;d&quot;"), "a & b <c> \"d\"");
        assert_eq!(text("caf&eacute; &#233; &#xE9; &#XE9"), "café é é é");
        assert_eq!(text("&nbsp;&CounterClockwiseContourIntegral;"), "\u{a0}∳");
        assert_eq!(text("&copy 2024 &notin; &notit"), "© 2024 ∉ ¬it");
        assert_eq!(
            text("&#128512;&#x80;&#0;&#xD800;&#x110000;"),
            "😀€\u{fffd}\u{fffd}\u{fffd}"
        );
        assert_eq!(text("&#99999999999999999999;"), "\u{fffd}");
    }

    #[test]
    fn what_is_not_a_reference_stays_as_it_is() {
        for kept in [
            "AT&T",
            "a & b",
            "&unknown;",
            "&#;",
            "&#x;",
            "&",
            "tail&",
            "&;",
        ] {
            assert_eq!(text(kept), kept);
        }
        assert!(matches!(
            decode("no references", Context::Text),
            Cow::Borrowed(_)
        ));
        // The two-code-point references quick-xml does not list stay written.
        assert_eq!(text("&NotSubset;"), "&NotSubset;");
    }

    #[test]
    fn an_attribute_keeps_a_legacy_name_that_runs_on() {
        assert_eq!(
            decode("/q?a=1&copy=2&amp;b&lt", Context::Attribute),
            "/q?a=1&copy=2&b<"
        );
        assert_eq!(decode("&notit", Context::Attribute), "&notit");
    }
}
