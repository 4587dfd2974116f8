//! The one way zero builds an HTTP client (the model's endpoint, MCP servers over HTTP): with
//! rustls on the `ring` provider, which reqwest is built without (`rustls-no-provider`, so no
//! second crypto library is compiled in) and must be given before its first client.

use std::sync::Once;

/// A client builder with TLS ready and zero's user agent set.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Fails only if a provider is installed already, which then serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder().user_agent(concat!("zero/", env!("CARGO_PKG_VERSION")))
}
