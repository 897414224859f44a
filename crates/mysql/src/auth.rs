//! The auth plugins' answers to a scramble. Only what proves the password
//! without sending it is here: `mysql_native_password` (SHA-1) and
//! `caching_sha2_password`'s fast path (SHA-256). The latter's full path sends
//! the password itself, in the clear over TLS (the gun's business); over plain
//! TCP it needs the server's RSA key, which tank does not do.

use ring::digest::{digest, Context, SHA1_FOR_LEGACY_USE_ONLY, SHA256};

/// `mysql_native_password`: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)));
/// empty for an empty password.
pub fn native_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = digest(&SHA1_FOR_LEGACY_USE_ONLY, password);
    let stage2 = digest(&SHA1_FOR_LEGACY_USE_ONLY, stage1.as_ref());
    let mut context = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
    context.update(scramble.get(..20).unwrap_or(scramble));
    context.update(stage2.as_ref());
    let mask = context.finish();
    xor(stage1.as_ref(), mask.as_ref())
}

/// `caching_sha2_password`'s fast path: SHA256(password) XOR
/// SHA256(SHA256(SHA256(password)) + scramble); empty for an empty password.
pub fn caching_sha2(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = digest(&SHA256, password);
    let stage2 = digest(&SHA256, stage1.as_ref());
    let mut context = Context::new(&SHA256);
    context.update(stage2.as_ref());
    context.update(scramble.get(..20).unwrap_or(scramble));
    let mask = context.finish();
    xor(stage1.as_ref(), mask.as_ref())
}

fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The server checks SHA1(response XOR SHA1(scramble + stored)) == stored,
    /// where stored = SHA1(SHA1(password)): the check the answer must pass.
    #[test]
    fn native_password_passes_the_servers_check() {
        let scramble = b"01234567890123456789";
        let answer = native_password(b"secret", scramble);
        let stored = digest(
            &SHA1_FOR_LEGACY_USE_ONLY,
            digest(&SHA1_FOR_LEGACY_USE_ONLY, b"secret").as_ref(),
        );
        let mut context = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        context.update(scramble);
        context.update(stored.as_ref());
        let stage1 = xor(&answer, context.finish().as_ref());
        assert_eq!(
            hex(digest(&SHA1_FOR_LEGACY_USE_ONLY, &stage1).as_ref()),
            hex(stored.as_ref())
        );
        // MySQL's PASSWORD('secret'): the stored hash the server keeps.
        assert_eq!(
            hex(stored.as_ref()),
            "14e65567abdb5135d0cfd9a70b3032c179a49ee7"
        );
        assert!(native_password(b"", scramble).is_empty());
    }

    #[test]
    fn caching_sha2_passes_the_servers_check() {
        let scramble = b"abcdefghijklmnopqrst";
        let answer = caching_sha2(b"secret", scramble);
        let stage2 = digest(&SHA256, digest(&SHA256, b"secret").as_ref());
        let mut context = Context::new(&SHA256);
        context.update(stage2.as_ref());
        context.update(scramble);
        let stage1 = xor(&answer, context.finish().as_ref());
        assert_eq!(hex(digest(&SHA256, &stage1).as_ref()), hex(stage2.as_ref()));
    }
}
