//! Per-agent registration specs: each agent builds its own in its adapter
//! (`memtrail_adapters::agents::<agent>::registration`, through
//! [`memtrail_adapters::AgentAdapter::registration`]); the installer supplies the environment, the
//! binary and its JSONC reader.

use crate::error::InstallError;
use crate::spec::{AgentSpec, SpecContext, SpecError};
use memtrail_adapters::{Agent, Env};
use serde_json::Value;
use std::path::Path;

/// The registration spec of `agent` for the memtrail binary at `binary`.
///
/// Errors: [`InstallError::BadBinary`] when `binary` is not absolute or not valid UTF-8.
pub(crate) fn spec(agent: Agent, env: &Env, binary: &Path) -> Result<AgentSpec, InstallError> {
    if !binary.is_absolute() || binary.to_str().is_none() {
        return Err(InstallError::BadBinary(binary.to_path_buf()));
    }
    let ctx = SpecContext {
        env,
        binary,
        read_jsonc,
    };
    agent
        .adapter()
        .registration(&ctx)
        .map_err(|SpecError::BadBinary(p)| InstallError::BadBinary(p))
}

/// A JSON-with-comments file's value, through the format-preserving parser; `None` when missing,
/// not UTF-8 or not parseable.
fn read_jsonc(path: &Path) -> Option<Value> {
    memtrail_adapters::paths::read_small(path, crate::fsutil::MAX_CONFIG_BYTES)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| crate::jsonedit::JsonDoc::parse(&t).ok())
        .and_then(|d| d.value())
}
