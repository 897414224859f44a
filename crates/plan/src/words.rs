//! Counts in words: `1 session`, `2 sessions`, `1 full pass`. What tank prints
//! about a plan or a capture reads as a sentence, and "1 sessions" does not.

/// `n` and `noun`, the noun in the plural unless `n` is 1 (`-es` after s,
/// x, ch and sh; `-s` otherwise: every noun tank counts is regular).
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        return format!("1 {noun}");
    }
    let es = ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end));
    format!("{n} {noun}{}", if es { "es" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(count(1, "session"), "1 session");
        assert_eq!(count(0, "session"), "0 sessions");
        assert_eq!(count(2, "full pass"), "2 full passes");
        assert_eq!(count(1, "full pass"), "1 full pass");
        assert_eq!(count(3, "uri"), "3 uris");
    }
}
