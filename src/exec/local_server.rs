//! The local provider's server for a run: started before the provider is built (the provider
//! needs its socket), unless a parent run's server is handed down. The runtime owns it from
//! then on, so it ends with the run on every path.

use tokio_util::sync::CancellationToken;

use crate::local_model::{LocalModel, LocalServer, LocalSettings};
use crate::provider::ProviderConfig;
use crate::runtime::Runtime;

use super::driver::before_stop;
use super::failure::Failure;
use super::settings::Settings;

/// Starts the server `config` needs, if it needs one, and points `config` at its socket. A
/// missing build or a server that does not come up is exit 3 with what to do or what it said;
/// a stop or the deadline while it loads ends the run as it would any time (the half-started
/// server is stopped).
pub(crate) async fn start(
    settings: &Settings,
    local: Option<LocalSettings>,
    config: &mut ProviderConfig,
    runtime: &Runtime,
    cancel: &CancellationToken,
) -> Result<Option<LocalServer>, Failure> {
    let Some(local) = local.filter(|_| config.socket.is_none()) else {
        return Ok(None);
    };
    let model = LocalModel::parse(&config.model)
        .ok_or_else(|| Failure::config(format!("{:?} is not a local model", config.model)))?;
    let env = |name: &str| settings.var(name);
    let server = before_stop(LocalServer::start(runtime, model, local, &env), cancel)
        .await?
        .map_err(|message| {
            Failure::config(format!("the local model could not start: {message}"))
        })?;
    config.socket = Some(server.socket.clone());
    Ok(Some(server))
}
