//! The XDG base directory rules, through the binary, for each of zero's directories: config
//! (`config.toml`), specialists, data and cache. An `XDG_*_HOME` that is empty or relative is
//! ignored (the spec says so) and the default beneath `$HOME` is used; every reader agrees.
//! Each test starts zero in a directory where the relative value *would* lead somewhere, and
//! checks that nothing there was read or written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::runs::{background, wait_for_task};
use crate::support::zero::{Wire, events, zero_std, zero_std_with};

/// A home, and a working directory holding `rel/`, where a relative `XDG_*_HOME=rel` would
/// point.
struct Place {
    home: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        Place {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn relative(&self) -> PathBuf {
        self.cwd.path().join("rel")
    }

    /// `command` run in the working directory with `$HOME` here, `variable` set to `value`
    /// and the other XDG variables and `ZERO_HOME` unset.
    fn configure(&self, command: &mut std::process::Command, variable: &str, value: &str) {
        command
            .current_dir(self.cwd.path())
            .env("HOME", self.home())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("ZERO_HOME")
            .env(variable, value);
    }
}

/// The two values the spec says to ignore.
const IGNORED: [&str; 2] = ["", "rel"];

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn config_toml_is_read_beneath_home_when_xdg_config_home_is_empty_or_relative() {
    let server = FakeModel::start(Script::new().reply(Reply::text("done")));
    for value in IGNORED {
        let place = Place::new();
        write(
            &place.home().join(".config/zero/config.toml"),
            "model = \"from-home\"\n",
        );
        write(
            &place.relative().join("zero/config.toml"),
            "model = \"from-relative\"\n",
        );
        let mut zero = zero_std_with(&server, Wire::OpenAi);
        place.configure(&mut zero, "XDG_CONFIG_HOME", value);
        let output = zero
            .env_remove("ZERO_MODEL")
            .args(["exec", "-o", "stream-json", "hi"])
            .output()
            .unwrap();
        let start = events(&output.stdout)
            .into_iter()
            .find(|e| e["type"] == "run_start")
            .unwrap_or_else(|| panic!("{value:?}: {output:?}"));
        assert_eq!(start["model"], "from-home", "XDG_CONFIG_HOME={value:?}");
    }
}

#[test]
fn specialists_are_read_beneath_home_when_xdg_config_home_is_empty_or_relative() {
    let manifest =
        |name: &str| format!("---\nname: {name}\ndescription: d\ntools: read-only\n---\nDo it.\n");
    for value in IGNORED {
        let place = Place::new();
        write(
            &place.home().join(".config/zero/specialists/from-home.md"),
            &manifest("from-home"),
        );
        write(
            &place.relative().join("zero/specialists/from-relative.md"),
            &manifest("from-relative"),
        );
        let mut zero = zero_std();
        place.configure(&mut zero, "XDG_CONFIG_HOME", value);
        let output = zero
            .args(["exec", "--list-specialists", "-o", "json"])
            .output()
            .unwrap();
        let listing: Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"));
        let names = listing.to_string();
        assert!(names.contains("from-home"), "{value:?}: {names}");
        assert!(!names.contains("from-relative"), "{value:?}: {names}");
    }
}

#[test]
fn data_goes_beneath_home_when_xdg_data_home_is_empty_or_relative() {
    for value in IGNORED {
        let place = Place::new();
        let server = FakeModel::start(
            Script::new()
                .reply(background("echo hi"))
                .reply(wait_for_task())
                .reply(Reply::text("done")),
        );
        let mut zero = zero_std_with(&server, Wire::OpenAi);
        place.configure(&mut zero, "XDG_DATA_HOME", value);
        let output = zero
            .args(["exec", "--auto", "medium", "-o", "stream-json", "go"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let tasks = place.home().join(".local/share/zero/tasks");
        assert!(
            std::fs::read_dir(&tasks).is_ok_and(|mut dir| dir.next().is_some()),
            "XDG_DATA_HOME={value:?}: no record in {}",
            tasks.display()
        );
        assert!(!place.relative().exists(), "XDG_DATA_HOME={value:?}");
    }
}

#[test]
fn the_local_models_cache_is_beneath_home_when_xdg_cache_home_is_empty_or_relative() {
    for value in IGNORED {
        let place = Place::new();
        let mut zero = zero_std();
        place.configure(&mut zero, "XDG_CACHE_HOME", value);
        let output = zero
            .env_remove("ZERO_LOCAL_MODEL_CACHE")
            .args(["exec", "--provider", "local", "hi"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(3), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let expected = place.home().join(".cache/zero/local-model");
        assert!(
            stderr.contains(expected.to_str().unwrap()),
            "XDG_CACHE_HOME={value:?}: {stderr}"
        );
    }
}
