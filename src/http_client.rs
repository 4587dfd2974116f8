//! The one way zero builds an HTTP client (the model's endpoint, MCP servers over HTTP): TLS
//! by rustls on the `ring` provider, server certificates checked against the system's root
//! certificates, as reqwest does by default (so a CA an administrator added is trusted).
//!
//! What differs from reqwest's own set-up is when the roots are read: its platform verifier
//! reads and parses every certificate under /etc/ssl when a client is built — milliseconds and
//! megabytes before a run's first request, also for a model on `http://127.0.0.1` that never
//! shakes hands. [`LazyPlatformVerifier`] builds that verifier at the first certificate it
//! checks. (Written here because neither rustls nor the verifier's crate has a lazy mode.)

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A client builder with TLS configured and zero's user agent set.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls().clone())
        .user_agent(concat!("zero/", env!("CARGO_PKG_VERSION")))
}

/// The TLS configuration every client of the process shares: TLS 1.2 and 1.3, HTTP/2 offered
/// first, one lazily loaded set of system roots.
fn tls() -> &'static rustls::ClientConfig {
    static TLS: OnceLock<rustls::ClientConfig> = OnceLock::new();
    TLS.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = LazyPlatformVerifier {
            provider: Arc::clone(&provider),
            platform: OnceLock::new(),
        };
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config
    })
}

/// The platform verifier, built when the first certificate is to be checked. Handshake
/// signatures need no roots, so they are checked by the provider's algorithms directly, as
/// the platform verifier itself does.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    platform: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let platform = self
            .platform
            .get_or_init(|| rustls_platform_verifier::Verifier::new(Arc::clone(&self.provider)));
        match platform {
            Ok(platform) => platform.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ),
            Err(error) => Err(error.clone()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
