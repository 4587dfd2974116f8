//! Running CI jobs' shell steps the way the runners do, for the tests that run docs/CI.md's
//! jobs, the GitHub Action and the GitLab component: bash with `-eo pipefail` and only the
//! environment given, a base environment that finds the tools and nothing else of the
//! machine's, and the zero this suite built where a restored cache would put it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// What one script printed and how it exited.
#[derive(Debug)]
pub struct StepRun {
    /// The step's name.
    pub name: String,
    /// Its exit code (-1 for a signal).
    pub code: i32,
    /// Its stdout, then its stderr.
    pub output: String,
}

/// Runs `script` with bash as both CI systems do (`-eo pipefail`), in `dir`, with only `env`.
pub fn bash(name: &str, script: &str, dir: &Path, env: &BTreeMap<String, String>) -> StepRun {
    let output = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .env_clear()
        .envs(env)
        .output()
        .unwrap();
    StepRun {
        name: name.to_string(),
        code: output.status.code().unwrap_or(-1),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// The environment a step starts from: what finds tools (`PATH`, and rustup's and cargo's
/// homes), `home` as the home directory with zero's data and config beneath it, and fast
/// retries; nothing else of the machine's.
pub fn base_env(home: &Path) -> BTreeMap<String, String> {
    let real_home = std::env::var("HOME").unwrap();
    let mut env = BTreeMap::new();
    env.insert("PATH".into(), std::env::var("PATH").unwrap());
    for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var(var).unwrap_or(format!("{real_home}/{default}"));
        env.insert(var.into(), value);
    }
    env.insert("HOME".into(), home.display().to_string());
    env.insert(
        "ZERO_HOME".into(),
        home.join("zero-data").display().to_string(),
    );
    env.insert(
        "XDG_CONFIG_HOME".into(),
        home.join("config").display().to_string(),
    );
    env.insert("ZERO_RETRY_BASE_MS".into(), "10".into());
    env
}

/// Puts the zero this test suite built where a restored cache would: `dir/bin/zero`.
pub fn restore_cached_zero(dir: &Path) {
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("zero"), dir.join("bin/zero")).unwrap();
}

/// Writes the record `cargo install --git URL --rev REV --root dir` leaves in `dir`
/// (`.crates.toml`), naming `rev`.
pub fn record_git_install(dir: &Path, rev: &str) {
    let full = format!("{rev:0<40}");
    let record = format!(
        "[v1]\n\"zero 0.1.0 (git+https://example.invalid/zero.git?rev={rev}#{full})\" = [\"zero\"]\n"
    );
    std::fs::write(dir.join(".crates.toml"), record).unwrap();
}
