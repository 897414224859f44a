//! TLS for `ssl = 1`, by rustls. As in phantom, the server's certificate is
//! not verified unless asked for: a load test usually targets a staging host
//! with a self-signed certificate, and verification is not what is measured.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

/// What a queue's TLS needs, from its options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Verify the server's certificate against the Mozilla roots.
    pub verify: bool,
    /// `client_certificate`: a PEM file (`None`: no client authentication).
    pub client_certificate: Option<PathBuf>,
    /// `client_key`: a PEM file with the certificate's private key.
    pub client_key: Option<PathBuf>,
    /// `client_cipher_suites`: OpenSSL or IANA names (empty = rustls defaults).
    pub cipher_suites: Vec<String>,
}

/// Why a TLS option cannot be used: the option, and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    /// The option (`client_certificate`, `client_key`, `client_cipher_suites`).
    pub key: &'static str,
    /// What was wrong and what was expected.
    pub message: String,
}

fn tls_error(key: &'static str, message: impl Into<String>) -> TlsError {
    TlsError {
        key,
        message: message.into(),
    }
}

/// Build a client config; errors name the option and what was expected.
pub fn client_config(options: &TlsOptions) -> Result<Arc<ClientConfig>, TlsError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !options.cipher_suites.is_empty() {
        provider.cipher_suites = select_suites(&provider, &options.cipher_suites)
            .map_err(|m| tls_error("client_cipher_suites", m))?;
    }
    let provider = Arc::new(provider);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("client_cipher_suites", e.to_string()))?;
    let builder = if options.verify {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    };
    let config = match (&options.client_certificate, &options.client_key) {
        (None, None) => builder.with_no_client_auth(),
        (None, Some(_)) | (Some(_), None) => {
            let key = if options.client_certificate.is_none() {
                "client_key"
            } else {
                "client_certificate"
            };
            return Err(tls_error(
                key,
                "client_certificate and client_key go together: set both or neither",
            ));
        }
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    tls_error(
                        "client_certificate",
                        format!("{}: expected PEM certificates: {e}", cert.display()),
                    )
                })?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                tls_error(
                    "client_key",
                    format!("{}: expected a PEM private key: {e}", key.display()),
                )
            })?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| tls_error("client_key", format!("the key does not fit: {e}")))?
        }
    };
    Ok(Arc::new(config))
}

/// The server name to send (SNI): the request's `Host` header when it names a
/// host, else the target's host. IP addresses are sent as no SNI, as rustls does.
pub fn server_name(request: &[u8], target_host: &str) -> Result<ServerName<'static>, String> {
    let from_header = host_header(request).map(|host| match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.contains(':') => {
            name.to_string()
        }
        _ => host.to_string(),
    });
    let host = from_header.unwrap_or_else(|| target_host.to_string());
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    ServerName::try_from(host.clone())
        .map_err(|_| format!("`{host}` is not a valid TLS server name"))
}

fn host_header(request: &[u8]) -> Option<&str> {
    let head_end = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(request.len());
    request[..head_end]
        .split(|b| *b == b'\n')
        .skip(1)
        .find_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|b| *b == b':')?;
            let (name, value) = line.split_at(colon);
            name.eq_ignore_ascii_case(b"host")
                .then(|| std::str::from_utf8(value[1..].trim_ascii()).ok())
                .flatten()
        })
}

const SUITE_NAMES: &[(&str, &str)] = &[
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

fn select_suites(
    provider: &CryptoProvider,
    list: &[String],
) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    let mut chosen = Vec::new();
    for name in list {
        let rustls_name = SUITE_NAMES
            .iter()
            .find(|(openssl, iana)| {
                openssl.eq_ignore_ascii_case(name) || iana.eq_ignore_ascii_case(name)
            })
            .map(|(_, iana)| *iana)
            .ok_or_else(|| {
                let known: Vec<&str> = SUITE_NAMES.iter().map(|(o, _)| *o).collect();
                format!("unknown suite `{name}`; known: {}", known.join(", "))
            })?;
        if let Some(suite) = provider
            .cipher_suites
            .iter()
            .find(|s| format!("{:?}", s.suite()) == rustls_name)
        {
            chosen.push(*suite);
        }
    }
    if chosen.is_empty() {
        return Err(format!("`{}` selects no suite", list.join(":")));
    }
    Ok(chosen)
}

/// Accepts any certificate, but still checks the handshake signatures.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sni_comes_from_the_host_header_then_the_target() {
        let request = b"GET / HTTP/1.1\r\nhost: example.org:8443\r\n\r\n";
        assert_eq!(
            server_name(request, "10.0.0.1").unwrap(),
            ServerName::try_from("example.org").unwrap()
        );
        assert_eq!(
            server_name(b"GET / HTTP/1.0\r\n\r\n", "api.local").unwrap(),
            ServerName::try_from("api.local").unwrap()
        );
        assert!(matches!(
            server_name(b"GET / HTTP/1.0\r\n\r\n", "127.0.0.1").unwrap(),
            ServerName::IpAddress(_)
        ));
    }

    #[test]
    fn cipher_suites_by_openssl_or_iana_name() {
        let provider = rustls::crypto::ring::default_provider();
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let suites = select_suites(
            &provider,
            &names(&["ECDHE-RSA-AES128-GCM-SHA256", "TLS_AES_128_GCM_SHA256"]),
        )
        .unwrap();
        assert_eq!(suites.len(), 2);
        assert!(select_suites(&provider, &names(&["RC4-MD5"]))
            .unwrap_err()
            .contains("unknown suite `RC4-MD5`"));
    }

    #[test]
    fn key_without_certificate_is_an_error() {
        let options = TlsOptions {
            client_key: Some("key.pem".into()),
            ..TlsOptions::default()
        };
        let error = client_config(&options).unwrap_err();
        assert_eq!(error.key, "client_key");
        assert!(error.message.contains("go together"), "{error:?}");
        assert!(client_config(&TlsOptions::default()).is_ok());
    }
}
