//! The XDG base directory rules, written once: config, specialists, data and cache all ask
//! here, so no two readers can disagree about a value (a relative `XDG_CONFIG_HOME` was once
//! taken by `config.toml` and ignored by specialist discovery, which then read two different
//! roots).
//!
//! Per the spec (<https://specifications.freedesktop.org/basedir-spec/latest/>): an
//! `XDG_*_HOME` that is unset, empty or relative is ignored, and the default beneath `$HOME`
//! is used instead. A `HOME` that is empty or relative names no home. `ZERO_HOME`, zero's own
//! variable, may be relative: it is taken from the working directory zero started in.

use std::ffi::OsString;
use std::path::PathBuf;

use super::names::{HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_DATA_HOME, ZERO_HOME};

/// The name of zero's own directory beneath each base directory.
const ZERO: &str = "zero";

/// One of the XDG base directories zero uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// `$XDG_CONFIG_HOME`, else `~/.config`: `config.toml`, the user's specialists.
    Config,
    /// `$XDG_DATA_HOME`, else `~/.local/share`: task records, runs, sessions.
    Data,
    /// `$XDG_CACHE_HOME`, else `~/.cache`: the local model.
    Cache,
}

impl Base {
    /// The variable that names this base directory.
    fn variable(self) -> &'static str {
        match self {
            Base::Config => XDG_CONFIG_HOME,
            Base::Data => XDG_DATA_HOME,
            Base::Cache => XDG_CACHE_HOME,
        }
    }

    /// Where it is beneath `$HOME` when the variable does not say.
    fn beneath_home(self) -> &'static str {
        match self {
            Base::Config => ".config",
            Base::Data => ".local/share",
            Base::Cache => ".cache",
        }
    }

    /// The base directory the environment `var` looks up describes, if any.
    pub(crate) fn dir(self, var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        absolute(var, self.variable())
            .or_else(|| home(var).map(|home| home.join(self.beneath_home())))
    }
}

/// The user's home directory: `$HOME` when it is an absolute path.
pub(crate) fn home(var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    absolute(var, HOME)
}

/// zero's own directory beneath `base` (`<base>/zero`).
pub(crate) fn zero_dir(base: Base, var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    base.dir(var).map(|dir| dir.join(ZERO))
}

/// zero's data directory: `$ZERO_HOME` (made absolute, since records store absolute paths
/// and a later `cd` must not move the data), else `<data base>/zero`.
pub(crate) fn data_dir(var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    match var(ZERO_HOME).filter(|value| !value.is_empty()) {
        Some(home) => std::path::absolute(PathBuf::from(home)).ok(),
        None => zero_dir(Base::Data, var),
    }
}

/// The value of `name` when it is an absolute path.
fn absolute(var: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<PathBuf> {
    var(name)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn an_absolute_xdg_value_wins_and_an_empty_or_relative_one_is_ignored() {
        for base in [Base::Config, Base::Data, Base::Cache] {
            let home = format!("/h/{}", base.beneath_home());
            let var = base.variable();
            assert_eq!(
                base.dir(&env(&[(var, "/x"), ("HOME", "/h")])),
                Some("/x".into())
            );
            assert_eq!(
                base.dir(&env(&[(var, ""), ("HOME", "/h")])),
                Some(home.clone().into())
            );
            assert_eq!(
                base.dir(&env(&[(var, "rel"), ("HOME", "/h")])),
                Some(home.into())
            );
            assert_eq!(base.dir(&env(&[(var, "rel"), ("HOME", "h")])), None);
            assert_eq!(base.dir(&env(&[("HOME", "")])), None);
        }
    }

    #[test]
    fn zero_home_beats_the_data_base_and_an_empty_one_is_unset() {
        let all = [("ZERO_HOME", "/z"), ("XDG_DATA_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(data_dir(&env(&all)), Some("/z".into()));
        assert_eq!(
            data_dir(&env(&[("ZERO_HOME", ""), ("HOME", "/h")])),
            Some("/h/.local/share/zero".into())
        );
        assert_eq!(
            data_dir(&env(&[("XDG_DATA_HOME", "x"), ("HOME", "/h")])),
            Some("/h/.local/share/zero".into())
        );
        assert!(
            data_dir(&env(&[("ZERO_HOME", "rel")]))
                .unwrap()
                .is_absolute()
        );
    }
}
