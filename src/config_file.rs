//! `config.toml`, read once per process. Each part of zero owns its own keys and reads them
//! from the one text with its own serde struct ([`ConfigFile::keys`]), so the file is opened
//! once however many parts read it, and an error names the file and, from the TOML parser,
//! the line and column.
//!
//! A leaf: it knows where the file is and how to read it, not what its keys mean.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

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
        /// The TOML parser's message (it names the line and the problem).
        message: String,
    },
}

impl ConfigFile {
    /// `$XDG_CONFIG_HOME/zero/config.toml`, else `$HOME/.config/zero/config.toml`, from the
    /// environment `var` looks up (empty values count as unset).
    pub(crate) fn path(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let base = set("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| set("HOME").map(|home| Path::new(&home).join(".config")))?;
        Some(base.join("zero").join("config.toml"))
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
        toml::from_str(&self.text).map_err(|error| ConfigFileError::Invalid {
            path: self.path.clone(),
            message: error.to_string(),
        })
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
    fn a_directory_or_fifo_in_its_place_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = ConfigFile::read(&fifo).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        assert!(ConfigFile::read(dir.path()).is_err());
    }
}
