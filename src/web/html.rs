//! HTML read as the standard's tokenizer reads it, as far as a page's text needs: start and end
//! tags with their attributes, text with its character references decoded, the raw text of
//! `script`, `style`, `textarea` and `title` taken whole (a `<` in a script opens no tag),
//! comments, doctypes and processing instructions left out, a tag cut off by the end dropped.
//!
//! Written here rather than taken from html5ever or html5gum: both carry static tables of
//! thousands of string pointers that the loader relocates in every zero process, whether or not
//! it ever reads a page (docs/PERFORMANCE.md, round 13). An iterator over the text with no
//! recursion: a hostile page's depth costs nothing here.

use std::borrow::Cow;

use super::entity::{Context, decode};

/// The elements whose content is text up to their own end tag, and whether its references are
/// decoded (RCDATA) or not (raw text).
const RAW_TEXT: [(&str, bool); 8] = [
    ("script", false),
    ("style", false),
    ("xmp", false),
    ("iframe", false),
    ("noembed", false),
    ("noframes", false),
    ("textarea", true),
    ("title", true),
];

/// How many attributes of one tag are kept.
const MAX_ATTRIBUTES: usize = 32;

/// One piece of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token<'a> {
    /// `<name attr=value …>`, the name lower-cased, the values decoded.
    Start {
        name: String,
        attributes: Vec<(String, String)>,
        self_closing: bool,
    },
    /// `</name>`, the name lower-cased.
    End { name: String },
    /// Text between tags, its references decoded (a raw text element's as it is).
    Text(Cow<'a, str>),
}

impl Token<'_> {
    /// The value of a start tag's attribute `name` (lower case), if it has one.
    pub(super) fn attribute(&self, name: &str) -> Option<&str> {
        match self {
            Token::Start { attributes, .. } => attributes
                .iter()
                .find(|(attribute, _)| attribute == name)
                .map(|(_, value)| value.as_str()),
            _ => None,
        }
    }
}

/// The tokens of a page, in order.
pub(super) struct Tokens<'a> {
    rest: &'a str,
    /// After a raw text element's start tag: its name, and whether its text is decoded.
    raw: Option<(String, bool)>,
    /// The raw text element's end tag, once its text was given.
    pending_end: Option<String>,
}

/// The tokens of `page`.
pub(super) fn tokens(page: &str) -> Tokens<'_> {
    Tokens {
        rest: page,
        raw: None,
        pending_end: None,
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if let Some(name) = self.pending_end.take() {
            return Some(Token::End { name });
        }
        if let Some((name, decoded)) = self.raw.take() {
            if let Some(text) = self.raw_text(&name, decoded) {
                return Some(text);
            }
            return self.next();
        }
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let Some(tag) = self.rest.strip_prefix('<') else {
                let end = self.rest.find('<').unwrap_or(self.rest.len());
                let (text, rest) = self.rest.split_at(end);
                self.rest = rest;
                return Some(Token::Text(decode(text, Context::Text)));
            };
            match tag.as_bytes().first() {
                Some(b'!' | b'?') => self.skip_markup_declaration(tag),
                Some(b'/') if tag[1..].starts_with(|c: char| c.is_ascii_alphabetic()) => {
                    return self.end_tag(&tag[1..]);
                }
                // `</>` is nothing; `</ …>` a bogus comment.
                Some(b'/') => self.skip_past('>', &tag[1..]),
                Some(c) if c.is_ascii_alphabetic() => return self.start_tag(tag),
                _ => {
                    let (text, rest) = self.rest.split_at(1);
                    self.rest = rest;
                    return Some(Token::Text(Cow::Borrowed(text)));
                }
            }
        }
    }
}

impl<'a> Tokens<'a> {
    /// Comments (`<!-- … -->`), doctypes, CDATA and `<? … >`: skipped.
    fn skip_markup_declaration(&mut self, tag: &'a str) {
        match tag.strip_prefix("!--") {
            Some(comment) => {
                // `<!-->` and `<!--->` close at once.
                let body = comment.strip_prefix('-').unwrap_or(comment);
                if let Some(body) = body.strip_prefix('>') {
                    self.rest = body;
                } else {
                    self.rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
                }
            }
            None => self.skip_past('>', tag),
        }
    }

    /// Everything of `text` up to and with the first `stop` skipped (to the end without one).
    fn skip_past(&mut self, stop: char, text: &'a str) {
        self.rest = text.find(stop).map_or("", |at| &text[at + 1..]);
    }

    /// `</name …>`: the name; what follows it up to `>` is ignored, as the standard does.
    fn end_tag(&mut self, tag: &'a str) -> Option<Token<'a>> {
        let name_len = tag.find(ends_name).unwrap_or(tag.len());
        let name = tag[..name_len].to_ascii_lowercase();
        let Some(close) = tag[name_len..].find('>') else {
            self.rest = "";
            return None;
        };
        self.rest = &tag[name_len + close + 1..];
        Some(Token::End { name })
    }

    /// `<name attributes…>`; a tag the page ends inside is dropped.
    fn start_tag(&mut self, tag: &'a str) -> Option<Token<'a>> {
        let name_len = tag.find(ends_name).unwrap_or(tag.len());
        let name = tag[..name_len].to_ascii_lowercase();
        let mut rest = &tag[name_len..];
        let mut attributes: Vec<(String, String)> = Vec::new();
        let self_closing = loop {
            rest = rest.trim_start_matches(is_space);
            if let Some(after) = rest.strip_prefix('>') {
                rest = after;
                break false;
            }
            if let Some(after) = rest.strip_prefix("/>") {
                rest = after;
                break true;
            }
            if rest.is_empty() {
                self.rest = "";
                return None;
            }
            if let Some(after) = rest.strip_prefix('/') {
                rest = after;
                continue;
            }
            let (attribute, after) = attribute(rest);
            rest = after;
            if let Some((name, value)) = attribute {
                // The first of two attributes with one name counts; past MAX_ATTRIBUTES none
                // is kept (the page's text needs a few, and a hostile tag's thousands would
                // cost this check quadratic time).
                if attributes.len() < MAX_ATTRIBUTES
                    && !attributes.iter().any(|(known, _)| *known == name)
                {
                    attributes.push((name, value));
                }
            }
        };
        self.rest = rest;
        if !self_closing && let Some((_, decoded)) = RAW_TEXT.iter().find(|(raw, _)| *raw == name) {
            self.raw = Some((name.clone(), *decoded));
        }
        Some(Token::Start {
            name,
            attributes,
            self_closing,
        })
    }

    /// A raw text element's text, up to `</name` followed by a space, `/` or `>` (any case);
    /// its end tag comes next.
    fn raw_text(&mut self, name: &str, decoded: bool) -> Option<Token<'a>> {
        // Searched without lower-casing a copy of the rest: a page of many scripts stays linear.
        let mut from = 0;
        let end = loop {
            let Some(at) = self.rest[from..].find("</") else {
                break self.rest.len();
            };
            let at = from + at;
            let after = &self.rest.as_bytes()[at + 2..];
            if after.len() >= name.len()
                && after[..name.len()].eq_ignore_ascii_case(name.as_bytes())
            {
                let next = after.get(name.len()).copied().map(char::from);
                if next.is_none_or(|c| is_space(c) || c == '/' || c == '>') {
                    break at;
                }
            }
            from = at + 2;
        };
        let (text, rest) = self.rest.split_at(end);
        self.rest = rest;
        if !rest.is_empty() {
            let after_name = &rest[2 + name.len()..];
            self.rest = after_name.find('>').map_or("", |at| &after_name[at + 1..]);
            self.pending_end = Some(name.to_string());
        }
        if text.is_empty() {
            return self.pending_end.take().map(|name| Token::End { name });
        }
        Some(Token::Text(if decoded {
            decode(text, Context::Text)
        } else {
            Cow::Borrowed(text)
        }))
    }
}

/// One attribute at the start of `rest` (`name`, `name=value`, `name="value"`, `name='value'`)
/// and what follows it; `None` for a stray `=`.
fn attribute(rest: &str) -> (Option<(String, String)>, &str) {
    // A name runs to a space, `/`, `>` or `=` — but a leading `=` is part of it.
    let name_len = rest
        .char_indices()
        .skip(1)
        .find(|(_, c)| is_space(*c) || matches!(c, '/' | '>' | '='))
        .map_or(rest.len(), |(at, _)| at);
    let name = rest[..name_len].to_ascii_lowercase();
    let after_name = rest[name_len..].trim_start_matches(is_space);
    let Some(value) = after_name.strip_prefix('=') else {
        return (Some((name, String::new())), &rest[name_len..]);
    };
    let value = value.trim_start_matches(is_space);
    let (raw, rest) = match value.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let body = &value[1..];
            match body.find(quote) {
                Some(end) => (&body[..end], &body[end + 1..]),
                None => (body, ""),
            }
        }
        _ => {
            let end = value
                .find(|c: char| is_space(c) || c == '>')
                .unwrap_or(value.len());
            value.split_at(end)
        }
    };
    let value = decode(raw, Context::Attribute).into_owned();
    (Some((name, value)), rest)
}

/// Whether `c` ends a tag's name.
fn ends_name(c: char) -> bool {
    is_space(c) || c == '/' || c == '>'
}

/// HTML's whitespace: space, tab, line feed, form feed, carriage return.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{c}' | '\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(name: &str, attributes: &[(&str, &str)]) -> Token<'static> {
        Token::Start {
            name: name.to_string(),
            attributes: attributes
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            self_closing: false,
        }
    }

    fn end(name: &str) -> Token<'static> {
        Token::End {
            name: name.to_string(),
        }
    }

    fn text(text: &str) -> Token<'static> {
        Token::Text(Cow::Owned(text.to_string()))
    }

    #[test]
    fn tags_attributes_and_text_are_read_as_the_standard_reads_them() {
        let page = "<!DOCTYPE html><!-- a <p> comment --><P CLASS=x id='y' data-a=\"1&amp;2\" \
            hidden>a &lt; b</p ignored><br/><?php x ?>";
        let read: Vec<Token> = tokens(page).collect();
        assert_eq!(
            read,
            vec![
                start(
                    "p",
                    &[
                        ("class", "x"),
                        ("id", "y"),
                        ("data-a", "1&2"),
                        ("hidden", "")
                    ]
                ),
                text("a < b"),
                end("p"),
                Token::Start {
                    name: "br".to_string(),
                    attributes: vec![],
                    self_closing: true
                },
            ]
        );
        assert_eq!(read[0].attribute("id"), Some("y"));
    }

    #[test]
    fn a_script_is_text_to_its_end_tag_and_a_title_has_its_references_decoded() {
        let page = "<script>if (a<b) { x('</p>') }</SCRIPT ><title>A &amp; B</title>";
        assert_eq!(
            tokens(page).collect::<Vec<_>>(),
            vec![
                start("script", &[]),
                text("if (a<b) { x('</p>') }"),
                end("script"),
                start("title", &[]),
                text("A & B"),
                end("title"),
            ]
        );
        // `</scripts>` does not close it; an unclosed script runs to the end.
        assert_eq!(
            tokens("<script></scripts>x").collect::<Vec<_>>(),
            vec![start("script", &[]), text("</scripts>x")]
        );
    }

    #[test]
    fn a_tag_of_thousands_of_attributes_keeps_the_first_few() {
        let tag = format!("<a href=/first {}href=/later>", "x ".repeat(10_000));
        let token = tokens(&tag).next().expect("a start tag");
        assert_eq!(token.attribute("href"), Some("/first"));
        let Token::Start { attributes, .. } = token else {
            panic!("not a start tag: {token:?}");
        };
        assert_eq!(
            attributes.len(),
            2,
            "one href, one x: duplicates are not kept"
        );
        let tag = format!(
            "<p {}>",
            (0..100).map(|n| format!("a{n} ")).collect::<String>()
        );
        let Some(Token::Start { attributes, .. }) = tokens(&tag).next() else {
            panic!("no start tag");
        };
        assert_eq!(attributes.len(), MAX_ATTRIBUTES);
    }

    #[test]
    fn stray_brackets_and_tags_cut_off_by_the_end_lose_nothing_else() {
        assert_eq!(
            tokens("1 < 2 <3 a</ b><a href=\"x").collect::<Vec<_>>(),
            vec![text("1 "), text("<"), text(" 2 "), text("<"), text("3 a"),]
        );
        assert_eq!(tokens("<!-- never closed <p>").count(), 0);
        assert_eq!(
            tokens("<a href=x>y</a").collect::<Vec<_>>(),
            vec![start("a", &[("href", "x")]), text("y")]
        );
        assert_eq!(
            tokens("<a b c=d = e>").next(),
            Some(start("a", &[("b", ""), ("c", "d"), ("=", ""), ("e", "")]))
        );
    }
}
