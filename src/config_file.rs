//! `config.toml`, read once per process. Each part of zero owns its own keys and reads them
//! from the one text with its own serde struct ([`ConfigFile::keys`]), so the file is opened
//! once however many parts read it, and an error names the file and, from the TOML parser,
//! the line and column.
//!
//! A leaf: it knows where the file is and how to read it, not what its keys mean. It does know
//! which keys exist, given the serde structs that read them ([`fields`]): a key no part reads
//! is a typo to warn about ([`ConfigFile::unknown_keys`], [`closest`]).
//!
//! The file holds the provider's key, so nothing it says is ever quoted back: a parse error
//! names the line and column, never the line's text (the TOML parser's own message shows the
//! line, key and all, and a broken line is one no secret was read from), and a value of the
//! wrong type names its key and the type it should have, never the value ([`decode`], which
//! every configuration file zero reads goes through: config.toml, a `--rules` file, a hooks
//! file, `.mcp.json`).

use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeOwned, Visitor};

use crate::environ::{Base, zero_dir};
use crate::fsutil::{self, OpenError};

/// The most a config file may hold: far beyond any real one, so a wrong file (a log, a
/// device) cannot make zero read without bound.
const CONFIG_LIMIT: u64 = 1024 * 1024;

/// The config file's text, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    path: PathBuf,
    text: String,
}

/// Why the config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file exists but could not be read (or is not a regular file).
    #[error("cannot read config file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: OpenError,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("invalid config file {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where and what the problem is (`line 2, column 11: invalid basic string`), without
        /// the text of the line.
        message: String,
    },
}

/// A key of the config file that no part of zero reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownKey {
    /// The key as the file writes it.
    pub(crate) key: String,
    /// The known key it is most likely a typo of, if one is close.
    pub(crate) closest: Option<&'static str>,
}

impl ConfigFile {
    /// `$XDG_CONFIG_HOME/zero/config.toml`, else `$HOME/.config/zero/config.toml`, from the
    /// environment `var` looks up, by the XDG rules (`environ::Base`: empty or relative
    /// values are ignored).
    pub(crate) fn path(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let var = |name: &str| var(name).map(std::ffi::OsString::from);
        Some(zero_dir(Base::Config, &var)?.join("config.toml"))
    }

    /// Reads the file the environment points to; `Ok(None)` when there is none.
    pub(crate) fn load(
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigFileError> {
        let Some(path) = Self::path(var) else {
            return Ok(None);
        };
        Self::read(&path)
    }

    /// Reads the file at `path`; `Ok(None)` when it does not exist.
    pub(crate) fn read(path: &Path) -> Result<Option<Self>, ConfigFileError> {
        let unreadable = |source| ConfigFileError::Unreadable {
            path: path.to_owned(),
            source,
        };
        let bytes = match fsutil::read_regular(path, CONFIG_LIMIT) {
            Ok((bytes, _)) => bytes,
            Err(OpenError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None);
            }
            Err(error) => return Err(unreadable(error)),
        };
        let text = String::from_utf8(bytes).map_err(|_| ConfigFileError::Invalid {
            path: path.to_owned(),
            message: "it is not UTF-8 text".into(),
        })?;
        Ok(Some(ConfigFile {
            path: path.to_owned(),
            text,
        }))
    }

    /// Where the file is.
    pub(crate) fn location(&self) -> &Path {
        &self.path
    }

    /// The keys `T` describes (other keys belong to other parts of zero and are ignored,
    /// unless `T` denies unknown fields).
    pub(crate) fn keys<T: DeserializeOwned>(&self) -> Result<T, ConfigFileError> {
        decode(&self.text, Syntax::Toml).map_err(|message| ConfigFileError::Invalid {
            path: self.path.clone(),
            message,
        })
    }

    /// The top-level keys of the file that are not among `known`, sorted, each
    /// with the known key closest to it. None when the file is not valid TOML (that error is
    /// reported where the keys are read).
    pub(crate) fn unknown_keys(&self, known: &[&'static str]) -> Vec<UnknownKey> {
        let Ok(table) = toml::from_str::<toml::Table>(&self.text) else {
            return Vec::new();
        };
        table
            .keys()
            .filter(|key| !known.contains(&key.as_str()))
            .map(|key| UnknownKey {
                key: key.clone(),
                closest: closest(key, known.iter().copied()),
            })
            .collect()
    }
}

/// The syntax of a configuration text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// TOML (config.toml, a TOML rules or hooks file).
    Toml,
    /// JSON (`.mcp.json`, a Claude Code settings.json).
    Json,
}

/// Reads the file at `path` (at most `limit` bytes, a regular file) as `T`, in the syntax its
/// text is in: JSON when its name ends in `.json` or its text starts with `{` (a Claude Code
/// settings.json), TOML otherwise — the shapes a `--rules` or `--hooks` file comes in. The
/// error says why, for the caller to name the file in.
pub(crate) fn read_document<T: DeserializeOwned>(path: &Path, limit: u64) -> Result<T, String> {
    let (bytes, _) = fsutil::read_regular(path, limit).map_err(|error| error.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    let json =
        path.extension().is_some_and(|ext| ext == "json") || text.trim_start().starts_with('{');
    match json {
        true => decode(&text, Syntax::Json).map_err(|why| format!("invalid JSON: {why}")),
        false => decode(&text, Syntax::Toml).map_err(|why| format!("invalid TOML: {why}")),
    }
}

/// Reads `text` as `T`. An error says where (line and column), under which key (the path from
/// the top, `hooks.pre_tool_use[0].command`) and what is wrong, and quotes nothing of the text:
/// a configuration file may hold a key, and a secret put under the wrong key is still one.
pub(crate) fn decode<T: DeserializeOwned>(text: &str, syntax: Syntax) -> Result<T, String> {
    match syntax {
        Syntax::Toml => {
            // The syntax first: its errors have no key to name.
            toml::from_str::<toml::Table>(text).map_err(|error| toml_problem(text, &error, ""))?;
            serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|error| {
                let key = error.path().to_string();
                toml_problem(text, error.inner(), &key)
            })
        }
        Syntax::Json => {
            let mut input = serde_json::Deserializer::from_str(text);
            let value = serde_path_to_error::deserialize(&mut input).map_err(|error| {
                let key = error.path().to_string();
                let inner = error.into_inner();
                let at = format!("line {}, column {}", inner.line(), inner.column());
                match inner.classify() {
                    serde_json::error::Category::Data => problem(&at, &key, &inner.to_string()),
                    // The syntax's own words, without the location serde_json appends.
                    _ => problem(&at, "", &inner.to_string()),
                }
            })?;
            input
                .end()
                .map_err(|error| problem(&format!("line {}", error.line()), "", "trailing text"))?;
            Ok(value)
        }
    }
}

/// A TOML parser's `error` in `text`, at `key` (empty for none), with where it applies.
fn toml_problem(text: &str, error: &toml::de::Error, key: &str) -> String {
    let Some(span) = error.span() else {
        return problem("", key, error.message());
    };
    let before = &text.as_bytes()[..span.start.min(text.len())];
    let line = before.iter().filter(|byte| **byte == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |newline| newline + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    problem(
        &format!("line {line}, column {column}"),
        key,
        error.message(),
    )
}

/// `at` (a location, or empty), the `key` (`.` or empty for none) and the parser's `message`
/// with any value it quotes left out (see [`without_value`]).
fn problem(at: &str, key: &str, message: &str) -> String {
    let message = without_value(message.trim_end());
    let key = match key {
        "" | "." => String::new(),
        key => format!("`{key}`: "),
    };
    match at {
        "" => format!("{key}{message}"),
        at => format!("{at}: {key}{message}"),
    }
}

/// A deserializer's message without the value it quotes. serde's errors are text only, and
/// serde writes a value it could not take before `, expected …` (`invalid type: string
/// "sk-…", expected u32`, `unknown variant `x`, expected one of …`), in backticks or quotes,
/// and the type's own description after it. The words before the quote stay (`invalid type:
/// string`); so does an unknown field's name, a key. serde_json's `at line … column …` goes,
/// the location is said once. A message without `, expected ` quotes no value (`missing
/// field `command``).
fn without_value(message: &str) -> String {
    let message = match message.rfind(" at line ") {
        Some(at) if message[at..].contains(" column ") => &message[..at],
        _ => message,
    };
    let Some((found, expected)) = message.split_once(", expected ") else {
        return message.to_string();
    };
    if found.starts_with("unknown field ") {
        return message.to_string();
    }
    let words = found
        .split(['`', '"'])
        .next()
        .unwrap_or_default()
        .trim_end();
    format!("{words}, expected {expected}")
}

/// The name in `known` that `key` is most likely a typo of, if any is close enough: the test
/// clap uses for "a similar argument exists" (Jaro similarity above 0.7, `strsim`), so a
/// config key and a flag are suggested alike.
pub(crate) fn closest<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|candidate| (strsim::jaro(key, candidate), candidate))
        .filter(|(similarity, _)| *similarity > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// The keys the serde struct `T` reads (its field names, as renamed): what serde's derive hands
/// `deserialize_struct`, caught by a deserializer that does nothing else. This is how the set
/// of known keys is derived from the structs that read them, so it cannot drift from them.
/// (serde has no reflection; `serde-aux`'s `serde_introspect` does the same, and these lines
/// are not worth a dependency.) Empty for a type that is not a plain struct.
pub(crate) fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut found = &[][..];
    let _ = T::deserialize(FieldNames { found: &mut found });
    found
}

/// The deserializer [`fields`] uses: it records the field names and fails.
struct FieldNames<'a> {
    found: &'a mut &'static [&'static str],
}

impl<'de> de::Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.found = fields;
        Err(de::Error::custom("only the field names were wanted"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Model {
        model: Option<String>,
    }

    #[test]
    fn the_file_is_found_through_xdg_then_home_and_a_missing_one_is_none() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            ConfigFile::path(&env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/zero/config.toml"))
        );
        assert_eq!(
            ConfigFile::path(&env(&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/zero/config.toml"))
        );
        assert_eq!(ConfigFile::path(&env(&[])), None);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            ConfigFile::read(&dir.path().join("none.toml")).unwrap(),
            None
        );
    }

    #[test]
    fn each_reader_takes_its_keys_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "model = \"m\"\nsomething_else = 1\n").unwrap();
        let file = ConfigFile::read(&path).unwrap().unwrap();
        assert_eq!(file.keys::<Model>().unwrap().model.as_deref(), Some("m"));
        std::fs::write(&path, "model = \n").unwrap();
        let file = ConfigFile::read(&path).unwrap().unwrap();
        let error = file.keys::<Model>().unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("invalid config file {}", path.display())),
            "{error}"
        );
        assert!(error.contains("line 1"), "{error}");
    }

    #[test]
    fn a_parse_error_names_the_line_and_column_but_never_quotes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "model = \"m\"\napi_key = \"hunter2 hunter2\n").unwrap();
        let file = ConfigFile::read(&path).unwrap().unwrap();
        let error = file.keys::<Model>().unwrap_err().to_string();
        assert!(error.contains("line 2, column "), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
        assert!(!error.contains("api_key"), "{error}");
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)] // Only ever refused: its fields are never read.
    struct Nested {
        model: Option<String>,
        limits: Option<Limits>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)] // Likewise.
    struct Limits {
        turns: Option<u32>,
        auto: Option<Vec<Level>>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Level {
        Low,
    }

    #[test]
    fn a_value_of_the_wrong_type_names_its_key_and_never_the_value() {
        let toml = |text: &str| decode::<Nested>(text, Syntax::Toml).unwrap_err();
        let json = |text: &str| decode::<Nested>(text, Syntax::Json).unwrap_err();
        assert_eq!(
            toml("model = 5\n"),
            "line 1, column 9: `model`: invalid type: integer, expected a string"
        );
        let secret = toml("[limits]\nturns = \"sk-hunter2\"\n");
        assert_eq!(
            secret,
            "line 2, column 9: `limits.turns`: invalid type: string, expected u32"
        );
        let variant = toml("[limits]\nauto = [\"hunter2\"]\n");
        assert!(
            variant.starts_with("line 2, column 9: `limits.auto[0]`: unknown variant, expected"),
            "{variant}"
        );
        assert!(!variant.contains("hunter2"), "{variant}");
        assert_eq!(
            json("{\"limits\": {\"turns\": -1}}"),
            "line 1, column 23: `limits.turns`: invalid value: integer, expected u32"
        );
        assert_eq!(
            json("{\"model\": [\"hunter2\"]}"),
            "line 1, column 10: `model`: invalid type: sequence, expected a string"
        );
        // The syntax's own words, located, with no key to name.
        assert_eq!(json("{\"model\": }"), "line 1, column 11: expected value");
        assert_eq!(json("{} x"), "line 1: trailing text");
    }

    #[derive(Debug, serde::Deserialize)]
    struct Renamed {
        model: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
    }

    #[test]
    fn the_known_keys_are_the_structs_field_names_and_a_typo_gets_the_closest() {
        assert_eq!(fields::<Renamed>(), ["model", "type"]);
        let renamed: Renamed = toml::from_str("model = \"m\"\ntype = \"t\"").unwrap();
        assert_eq!(
            (renamed.model.unwrap(), renamed.kind.unwrap()),
            ("m".into(), "t".into())
        );
        assert!(fields::<String>().is_empty());
        let known = [
            "model",
            "provider",
            "max_tokens",
            "max_output_tokens",
            "timeout",
        ];
        assert_eq!(closest("modle", known), Some("model"));
        assert_eq!(closest("max_token", known), Some("max_tokens"));
        assert_eq!(closest("timout", known), Some("timeout"));
        assert_eq!(closest("zzz", known), None);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "modle = \"x\"\nmodel = \"m\"\n[zzz]\na = 1\n").unwrap();
        let file = ConfigFile::read(&path).unwrap().unwrap();
        assert_eq!(
            file.unknown_keys(&known),
            [
                UnknownKey {
                    key: "modle".into(),
                    closest: Some("model")
                },
                UnknownKey {
                    key: "zzz".into(),
                    closest: None
                }
            ]
        );
        std::fs::write(&path, "modle = \n").unwrap();
        let broken = ConfigFile::read(&path).unwrap().unwrap();
        assert!(broken.unknown_keys(&known).is_empty());
    }

    #[test]
    fn a_directory_or_fifo_in_its_place_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = ConfigFile::read(&fifo).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        assert!(ConfigFile::read(dir.path()).is_err());
    }
}
