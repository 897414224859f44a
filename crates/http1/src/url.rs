//! One URL type for every place tank is given a URL: a probe's target, a
//! monitoring source, InfluxDB, an origin page. It is the `http` crate's
//! [`Uri`] (what hyper parses with) plus what each of those needs and `Uri`
//! leaves open: a scheme that is `http` or `https`, a host without user info,
//! a port that is always known, and a path that is at least `/`.

use std::fmt;

use http::Uri;

/// The two schemes tank speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`, port 80 by default.
    Http,
    /// `https://`, port 443 by default.
    Https,
}

impl Scheme {
    /// The port a URL of this scheme means when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// Why a text is not a URL tank can use. Its message starts with the text
/// and says what is wrong; callers add what they expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {why}")]
pub struct UrlError {
    url: String,
    why: String,
}

impl UrlError {
    fn new(url: &str, why: impl Into<String>) -> UrlError {
        UrlError {
            url: url.to_owned(),
            why: why.into(),
        }
    }
}

/// An `http://` or `https://` URL, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    scheme: Scheme,
    /// The host as written (`[::1]` keeps its brackets), without the port.
    host: String,
    /// The port, given or the scheme's default.
    port: u16,
    /// Whether the text gave the port.
    port_given: bool,
    /// Path and query, at least `/`; the fragment dropped.
    path: String,
}

impl Url {
    /// Reads `text` as `scheme://host[:port][/path][?query][#fragment]`.
    pub fn parse(text: &str) -> Result<Url, UrlError> {
        let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
        let scheme = if lower.starts_with("http://") {
            Scheme::Http
        } else if lower.starts_with("https://") {
            Scheme::Https
        } else {
            return Err(UrlError::new(text, "not an http:// or https:// URL"));
        };
        // `http://h?q` has an empty path before its query; `Uri` wants the `/`.
        let rest = &text[if scheme == Scheme::Http { 7 } else { 8 }..];
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_len];
        if authority.is_empty() {
            return Err(UrlError::new(text, "no host"));
        }
        if authority.contains('@') {
            return Err(UrlError::new(
                text,
                "a host with user info (user@host), which tank does not send",
            ));
        }
        if let Some(port) = port_text(authority) {
            if port.parse::<u16>().is_err() {
                return Err(UrlError::new(
                    text,
                    format!("the port `{port}` is not a number from 0 to 65535"),
                ));
            }
        }
        let path = rest[authority_len..].split('#').next().unwrap_or_default();
        let normal = match path.strip_prefix('?') {
            Some(query) => format!("{}{authority}/?{query}", &text[..text.len() - rest.len()]),
            None => text.split('#').next().unwrap_or(text).to_owned(),
        };
        let uri: Uri = normal
            .parse()
            .map_err(|e: http::uri::InvalidUri| UrlError::new(text, e.to_string()))?;
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| UrlError::new(text, "no host"))?;
        Ok(Url {
            scheme,
            host: host.to_owned(),
            port: uri.port_u16().unwrap_or(scheme.default_port()),
            port_given: uri.port().is_some(),
            path: uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
        })
    }

    /// The URL of `path_and_query` (starting with `/`) on `host` (a name, an
    /// IPv4 address, or an IPv6 address with or without brackets) at `port`.
    pub fn from_parts(
        scheme: Scheme,
        host: &str,
        port: u16,
        path_and_query: &str,
    ) -> Result<Url, UrlError> {
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let prefix = match scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        Url::parse(&format!("{prefix}://{host}:{port}{path_and_query}"))
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Whether the URL is `https://`.
    pub fn is_tls(&self) -> bool {
        self.scheme == Scheme::Https
    }

    /// The host as written, without the port (`[::1]` with its brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, given or the scheme's default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port`, the port always given: what to connect to.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The `Host` header's value: the host, and the port when the URL gave one.
    pub fn host_header(&self) -> String {
        if self.port_given {
            self.authority()
        } else {
            self.host.clone()
        }
    }

    /// The path and query, at least `/` (the request target).
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for Url {
    /// The URL again, the port always given, without a fragment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

/// The port part of an authority (after the last `:` outside `[…]`), if any.
fn port_text(authority: &str) -> Option<&str> {
    let after_host = match authority.rfind(']') {
        Some(end) => &authority[end + 1..],
        None => authority,
    };
    after_host.rfind(':').map(|at| &after_host[at + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parts(url: &Url) -> (bool, String, String, &str) {
        (url.is_tls(), url.authority(), url.host_header(), url.path())
    }

    #[test]
    fn urls_give_the_address_host_and_path() {
        let u = Url::parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(
            parts(&u),
            (
                false,
                "127.0.0.1:8080".into(),
                "127.0.0.1:8080".into(),
                "/a/b?x=1"
            )
        );
        let u = Url::parse("https://example.com").unwrap();
        assert_eq!(
            parts(&u),
            (true, "example.com:443".into(), "example.com".into(), "/")
        );
        let u = Url::parse("http://[::1]/?q").unwrap();
        assert_eq!((u.authority().as_str(), u.path()), ("[::1]:80", "/?q"));
        let u = Url::parse("http://[::1]:9100/metrics?x=1").unwrap();
        assert_eq!(
            (u.authority().as_str(), u.path()),
            ("[::1]:9100", "/metrics?x=1")
        );
        assert_eq!(Url::parse("http://h?q=1").unwrap().path(), "/?q=1");
        assert_eq!(Url::parse("http://h#top").unwrap().path(), "/");
        assert_eq!(Url::parse("HTTP://h/").unwrap().scheme(), Scheme::Http);
        assert_eq!(
            Url::parse("http://h:81/p").unwrap().to_string(),
            "http://h:81/p"
        );
    }

    #[test]
    fn urls_are_made_from_parts() {
        let u = Url::from_parts(Scheme::Http, "::1", 8086, "/write?db=a%20b").unwrap();
        assert_eq!(
            (u.authority().as_str(), u.path()),
            ("[::1]:8086", "/write?db=a%20b")
        );
        let u = Url::from_parts(Scheme::Http, "db", 8086, "/").unwrap();
        assert_eq!(u.host_header(), "db:8086");
        assert!(Url::from_parts(Scheme::Http, "a b", 1, "/").is_err());
    }

    #[test]
    fn bad_urls_say_what_is_wrong_after_the_url() {
        for (url, why) in [
            ("ftp://x/", "not an http:// or https:// URL"),
            ("127.0.0.1:80", "not an http:// or https:// URL"),
            ("http:///x", "no host"),
            ("http://", "no host"),
            (
                "http://h:99999/",
                "the port `99999` is not a number from 0 to 65535",
            ),
            ("http://h:x/", "the port `x` is not a number"),
            ("http://u@h/", "user info"),
            ("http://h /", "invalid"),
            ("http://h/a b", "invalid"),
        ] {
            let error = Url::parse(url).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("{url}: ")) && error.contains(why),
                "{url}: {error}"
            );
        }
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_what_parses_reads_back_the_same(text in "\\PC{0,40}") {
            if let Ok(url) = Url::parse(&text) {
                prop_assert!(url.path().starts_with('/'));
                prop_assert_eq!(Url::parse(&url.to_string()), Ok(Url { port_given: true, ..url }));
            }
        }

        #[test]
        fn http_urls_keep_their_parts(
            host in "[a-z][a-z0-9.-]{0,10}",
            port in proptest::option::of(any::<u16>()),
            path in "(/[a-z0-9._~%-]{0,6}){0,3}(\\?[a-z0-9=&]{0,8})?",
        ) {
            let port_text = port.map(|p| format!(":{p}")).unwrap_or_default();
            let url = Url::parse(&format!("http://{host}{port_text}{path}")).unwrap();
            prop_assert_eq!(url.host(), host.as_str());
            prop_assert_eq!(url.port(), port.unwrap_or(80));
            let expected = if path.starts_with('/') { path.clone() } else { format!("/{path}") };
            prop_assert_eq!(url.path(), expected.as_str());
        }
    }
}
