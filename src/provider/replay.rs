//! What the model produced, made valid for the wire before it is sent back.
//!
//! Every request replays the conversation, the model's own tool calls included, and a server
//! checks them: llama.cpp answers HTTP 500 to a call whose arguments are not JSON, Anthropic
//! refuses a `tool_use` whose input is not an object or whose name or id breaks its pattern.
//! A model can produce all of those — a call cut at the output cap, malformed JSON, an array,
//! a call with no name — and the loop has already answered such a call with an error result,
//! so the call itself only has to be acceptable. Both wires send these views of a call, never
//! its raw fields, and every view is a pure function of what it replaces: the requests of one
//! conversation keep their prefix byte for byte from turn to turn.

use std::borrow::Cow;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::value::RawValue;

/// The longest tool name both wires take (`^[a-zA-Z0-9_-]{1,64}$`).
const NAME_MAX: usize = 64;

/// The name sent for a call that came without one.
const UNNAMED: &str = "unnamed_tool";

/// The id sent for a call that came with an empty one.
const NO_ID: &str = "call_no_id";

/// A call's arguments as the JSON object both wires require, as the model wrote them (checked,
/// not rebuilt: the text between the braces is kept byte for byte, only surrounding whitespace
/// goes). Anything else — cut or malformed JSON, an array, a string, trailing text — is sent
/// as `{}`.
pub(super) fn arguments(raw: &str) -> &RawValue {
    match serde_json::from_str::<&RawValue>(raw) {
        Ok(value) if value.get().starts_with('{') => value,
        _ => empty_object(),
    }
}

/// `{}`, borrowed for as long as needed.
fn empty_object() -> &'static RawValue {
    // A literal, so it is parsed without an allocation and cannot fail.
    serde_json::from_str("{}").expect("`{}` is JSON")
}

/// A call's tool name as both wires take it: ASCII letters, digits, `_` and `-`, 1 to 64 of
/// them. A valid name is sent as it is; in any other, each other character becomes `_` and
/// the name is cut to 64; an empty one becomes [`UNNAMED`]. (Such a call was already answered
/// as a call of an unknown tool.)
pub(super) fn tool_name(name: &str) -> Cow<'_, str> {
    if name.is_empty() {
        return Cow::Borrowed(UNNAMED);
    }
    if name.len() <= NAME_MAX && name.bytes().all(is_word_byte) {
        return Cow::Borrowed(name);
    }
    Cow::Owned(
        name.chars()
            .take(NAME_MAX)
            .map(|c| {
                if c.is_ascii() && is_word_byte(c as u8) {
                    c
                } else {
                    '_'
                }
            })
            .collect(),
    )
}

/// A call's id as both wires take it (Anthropic: `^[a-zA-Z0-9_-]+$`), for the call and for its
/// result alike, so they still pair up. A valid id is sent as it is; an empty one becomes
/// [`NO_ID`]; in any other each other character becomes `_` and a hash of the original is
/// appended, so that two ids which differ only there stay two ids.
pub(super) fn call_id(id: &str) -> Cow<'_, str> {
    if id.is_empty() {
        return Cow::Borrowed(NO_ID);
    }
    if id.bytes().all(is_word_byte) {
        return Cow::Borrowed(id);
    }
    // `DefaultHasher::new()` hashes alike in every process of one build, which is all the
    // stability a conversation's requests need (SipHash; no crate is needed for this).
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii() && is_word_byte(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect();
    Cow::Owned(format!("{cleaned}_{:016x}", hasher.finish()))
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_objects_sent_as_written() {
        assert_eq!(arguments(" {\"a\": [1, 2]}\n").get(), "{\"a\": [1, 2]}");
        assert_eq!(arguments("{\n  \"x\": 1\n}").get(), "{\n  \"x\": 1\n}");
        for not_an_object in [
            "[1]",
            "\"text\"",
            "",
            "   ",
            "{\"a\":",
            "{\"path\": \"poem.md\", \"content\": \"Roses",
            "{} trailing",
            "null",
            "42",
        ] {
            assert_eq!(arguments(not_an_object).get(), "{}", "{not_an_object:?}");
        }
    }

    #[test]
    fn valid_names_and_ids_are_borrowed_unchanged() {
        for name in ["read_file", "mcp__git__log", "a-b", &"n".repeat(64)] {
            assert!(matches!(tool_name(name), Cow::Borrowed(same) if same == name));
        }
        for id in ["call_abc123", "toolu_01A", "call_0", "x-y"] {
            assert!(matches!(call_id(id), Cow::Borrowed(same) if same == id));
        }
    }

    #[test]
    fn bad_names_become_valid_ones() {
        assert_eq!(tool_name(""), UNNAMED);
        assert_eq!(tool_name("read file.v2"), "read_file_v2");
        assert_eq!(tool_name("lire_é"), "lire__");
        assert_eq!(tool_name(&"n".repeat(100)), "n".repeat(64));
    }

    #[test]
    fn bad_ids_become_valid_distinct_and_stable() {
        assert_eq!(call_id(""), NO_ID);
        let colon = call_id("call:0");
        let dot = call_id("call.0");
        assert!(colon.starts_with("call_0_"), "{colon}");
        assert!(colon.bytes().all(is_word_byte), "{colon}");
        assert_ne!(colon, dot);
        assert_eq!(colon, call_id("call:0"));
    }
}
