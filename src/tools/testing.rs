//! A throwaway workspace for the tools' unit tests: a temp directory, a context confined to it
//! at `--auto medium`, and helpers to arrange files and call tools.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use super::{Policy, Tool, ToolContext, ToolResult};
use crate::tools::policy::Autonomy;

/// A temp workspace and the context a tool call in it gets.
pub(super) struct Workspace {
    /// Removed when the workspace is dropped.
    _dir: TempDir,
    /// The canonical workspace root.
    pub(crate) root: PathBuf,
    /// Confined to `root` at `--auto medium`.
    pub(crate) ctx: ToolContext,
}

impl Workspace {
    /// An empty workspace.
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ctx = ToolContext {
            workspace: root.clone(),
            policy: Arc::new(Policy::new(Autonomy::Medium, false, vec![root.clone()])),
            cancel: CancellationToken::new(),
            plan_updates: None,
        };
        Workspace {
            _dir: dir,
            root,
            ctx,
        }
    }

    /// The absolute path of `rel`.
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Creates `rel` (and its directories) with `contents`.
    pub(crate) fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    /// The bytes of `rel`.
    pub(crate) fn read(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap()
    }

    /// Whether `rel` exists (a dangling symlink counts).
    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    /// Calls `tool` with `args` in this workspace.
    pub(crate) async fn call(&self, tool: &dyn Tool, args: Value) -> ToolResult {
        tool.call(args, &self.ctx).await
    }
}
