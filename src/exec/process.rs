//! What a job changes for the whole process: its memory hidden from other processes before
//! anything is read, and, once the settings are known, the deadline armed and the provider's
//! key masked in everything zero writes.

use crate::lifecycle;
use crate::output::{Output, stderr_line_if_writable};
use crate::provider::ProviderConfig;

use super::failure::Failure;
use super::settings::Settings;

/// Makes this process's memory and initial environment unreadable to other processes of the
/// same user: `/proc/<pid>/environ` holds the key variables zero was started with, and a
/// command run by zero (same uid) could otherwise read them there, past the environment the
/// spawn door cleaned. The ssh-agent way (`PR_SET_DUMPABLE`); it also turns off core dumps,
/// which would hold the key too. Commands are unaffected: exec makes them dumpable again.
pub(super) fn hide_memory() {
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        stderr_line_if_writable(&format!(
            "zero: warning: cannot hide this process's memory from other processes: {error}"
        ));
    }
}

/// What the settings change for the whole process: from here on the deadline stops the run
/// as a signal does, wherever the run is held up, and the provider's key is masked in
/// everything zero writes.
pub(super) fn take_effect(settings: &Settings, output: &Output) -> Result<(), Failure> {
    if let Some(deadline) = settings.budget.deadline {
        lifecycle::arm_deadline(deadline).map_err(|e| Failure::internal(e.to_string()))?;
    }
    if let Ok(ProviderConfig {
        api_key: Some(key), ..
    }) = &settings.model.provider
    {
        output.secrets().add(key);
    }
    Ok(())
}
