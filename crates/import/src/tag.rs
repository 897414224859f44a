//! What a request is tagged with (results are grouped by it): its target's
//! path, whatever form the request line gives the target in.

use crate::TagBy;

/// The tag of `request` under `by`: its URI's path, line breaks removed.
/// An absolute-form target (`GET http://host/path`, as a client sends to a
/// forward proxy) is tagged with its path (`/path`, `/` when it has none),
/// so a capture taken at a proxy is tagged as one taken at the server; an
/// authority-form target (`CONNECT host:443`) has no path and is its own tag.
pub fn tag(by: TagBy, request: &[u8]) -> Vec<u8> {
    match by {
        TagBy::None => Vec::new(),
        TagBy::Path => {
            let target = tank_plan::marker::uri_path(request).unwrap_or_default();
            let path = match absolute_path(target) {
                Some([]) => &b"/"[..],
                Some(path) => path,
                None => target,
            };
            path.iter()
                .copied()
                .filter(|b| !matches!(b, b'\r' | b'\n'))
                .collect()
        }
    }
}

/// The path of an absolute-form target (`scheme://authority/path`; empty
/// when it has none), or `None` for any other form.
fn absolute_path(target: &[u8]) -> Option<&[u8]> {
    let colon = memchr::memchr(b':', target)?;
    let scheme = &target[..colon];
    let valid = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    let rest = target[colon..].strip_prefix(b"://").filter(|_| valid)?;
    Some(memchr::memchr(b'/', rest).map_or(&[][..], |slash| &rest[slash..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_the_path_whatever_form_the_target_has() {
        let tag = |request: &[u8]| String::from_utf8(tag(TagBy::Path, request)).unwrap();
        assert_eq!(tag(b"GET /a/b?x=1 HTTP/1.1\r\n"), "/a/b");
        assert_eq!(tag(b"GET http://host:8080/a/b?x=1 HTTP/1.1\r\n"), "/a/b");
        assert_eq!(tag(b"GET HTTP://bro.org/ HTTP/1.1\r\n"), "/");
        assert_eq!(tag(b"GET https://bro.org HTTP/1.1\r\n"), "/");
        assert_eq!(
            tag(b"CONNECT secure.newegg.com:443 HTTP/1.1\r\n"),
            "secure.newegg.com:443"
        );
        assert_eq!(tag(b"OPTIONS * HTTP/1.1\r\n"), "*");
        assert_eq!(super::tag(TagBy::None, b"GET /a HTTP/1.1\r\n"), b"");
    }
}
