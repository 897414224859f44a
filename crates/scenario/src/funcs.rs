//! Pandora's random functions: `randInt`, `randString` and `uuid`, callable
//! in templates (`{{randInt 1 10}}`), in preprocessor mappings
//! (`"randInt(1, 10)"`) and in a `variables` source (drawn once, when the
//! file is read). One implementation serves all three.

use rand::Rng;

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    /// `randInt`, `randInt(max)`, `randInt(a, b)`: a whole number in [0, 10),
    /// [0, max) or [min(a, b), max(a, b)).
    RandInt,
    /// `randString`, `randString(n)`, `randString(n, letters)`: `n` characters
    /// (1 by default) from `letters` (by default `a-zA-Z0-9_-`).
    RandString,
    /// `uuid`: a random UUID (version 4).
    Uuid,
}

/// The default letters of `randString`, Pandora's.
const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
/// `randInt` without arguments draws below this.
const DEFAULT_MAX: i64 = 10;
/// The longest string `randString` makes.
pub(crate) const MAX_STRING: i64 = 1 << 20;

impl Func {
    /// The function named `name`.
    pub(crate) fn named(name: &str) -> Option<Func> {
        match name {
            "randInt" => Some(Func::RandInt),
            "randString" => Some(Func::RandString),
            "uuid" => Some(Func::Uuid),
            _ => None,
        }
    }

    /// Its name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Func::RandInt => "randInt",
            Func::RandString => "randString",
            Func::Uuid => "uuid",
        }
    }

    /// The most arguments it takes.
    pub(crate) fn max_args(self) -> usize {
        match self {
            Func::RandInt | Func::RandString => 2,
            Func::Uuid => 0,
        }
    }

    /// What its arguments must be, for messages.
    pub(crate) fn takes(self) -> String {
        match self {
            Func::RandInt => "whole numbers".to_owned(),
            Func::RandString => {
                format!("a length, a whole number from 0 to {MAX_STRING}, then letters")
            }
            Func::Uuid => "none".to_owned(),
        }
    }

    /// Call it with `args` (as text), appending the result to `out`.
    pub(crate) fn call(
        self,
        args: &[&str],
        rng: &mut impl Rng,
        out: &mut String,
    ) -> Result<(), String> {
        if args.len() > self.max_args() {
            return Err(format!(
                "{} takes at most {} argument(s), found {}",
                self.name(),
                self.max_args(),
                args.len()
            ));
        }
        match self {
            Func::RandInt => {
                let bounds = args
                    .iter()
                    .map(|a| whole(a, "randInt"))
                    .collect::<Result<Vec<_>, _>>()?;
                let (low, high) = match bounds[..] {
                    [] => (0, DEFAULT_MAX),
                    [max] => (max.min(0), max.max(0)),
                    [a, b, ..] => (a.min(b), a.max(b)),
                };
                let n = if low == high {
                    low
                } else {
                    rng.random_range(low..high)
                };
                out.push_str(itoa::Buffer::new().format(n));
            }
            Func::RandString => {
                let count = match args.first() {
                    None => 1,
                    Some(n) => whole(n, "randString")?,
                };
                if !(0..=MAX_STRING).contains(&count) {
                    return Err(format!(
                        "randString: length {count}: expected 0 to {MAX_STRING}"
                    ));
                }
                let letters: Vec<char> = match args.get(1) {
                    Some(letters) if !letters.is_empty() => letters.chars().collect(),
                    _ => LETTERS.chars().collect(),
                };
                // Pandora makes one character when asked for none.
                for _ in 0..count.max(1) {
                    out.push(letters[rng.random_range(0..letters.len())]);
                }
            }
            Func::Uuid => {
                let bytes: [u8; 16] = rng.random();
                let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
                out.push_str(
                    id.hyphenated()
                        .encode_lower(&mut uuid::Uuid::encode_buffer()),
                );
            }
        }
        Ok(())
    }
}

fn whole(text: &str, what: &str) -> Result<i64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{what}: `{text}` is not a whole number"))
}

/// A function call written as text (`randInt(1, 10)`, `uuid()`): the
/// function and its arguments, trimmed; `None` when `text` is not a call of
/// one of the functions (then it is a path or a plain value).
pub(crate) fn parse_call(text: &str) -> Option<Result<(Func, Vec<String>), String>> {
    let text = text.trim();
    let name = text[..text.find('(')?].trim();
    let func = Func::named(name)?;
    let call = match crate::call::split(text) {
        Ok(call) => call,
        Err(message) => return Some(Err(message)),
    };
    if call.args.len() > func.max_args() {
        return Some(Err(format!(
            "`{text}`: {} takes at most {} argument(s)",
            func.name(),
            func.max_args()
        )));
    }
    Some(Ok((
        func,
        call.args.into_iter().map(str::to_owned).collect(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn call(func: Func, args: &[&str]) -> Result<String, String> {
        let mut out = String::new();
        func.call(args, &mut SmallRng::seed_from_u64(1), &mut out)?;
        Ok(out)
    }

    #[test]
    fn calls_are_recognised_with_their_arguments() {
        assert_eq!(
            parse_call("randInt(100, 200)").unwrap().unwrap(),
            (Func::RandInt, vec!["100".to_owned(), "200".to_owned()])
        );
        assert_eq!(parse_call("uuid()").unwrap().unwrap(), (Func::Uuid, vec![]));
        assert!(parse_call("source.users[next].id").is_none());
        assert!(parse_call("nope(1)").is_none());
        assert!(parse_call("randInt(1, 2, 3)").unwrap().is_err());
        assert!(parse_call("randInt(1").unwrap().is_err());
    }

    #[test]
    fn uuid_and_strings_have_their_shape() {
        let id = call(Func::Uuid, &[]).unwrap();
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
        assert_eq!(call(Func::RandString, &[]).unwrap().chars().count(), 1);
        let s = call(Func::RandString, &["12", "ab"]).unwrap();
        assert_eq!(s.len(), 12);
        assert!(s.chars().all(|c| c == 'a' || c == 'b'));
        assert!(call(Func::RandString, &["-1"]).is_err());
        assert!(call(Func::RandInt, &["x"]).is_err());
    }

    proptest! {
        #[test]
        fn rand_int_stays_within_its_bounds(a in -1000i64..1000, b in -1000i64..1000, seed in any::<u64>()) {
            let mut out = String::new();
            let (a_text, b_text) = (a.to_string(), b.to_string());
            Func::RandInt.call(&[&a_text, &b_text], &mut SmallRng::seed_from_u64(seed), &mut out).unwrap();
            let n: i64 = out.parse().unwrap();
            prop_assert!(n >= a.min(b));
            prop_assert!(n < a.max(b) || a == b);
            let mut one = String::new();
            Func::RandInt.call(&[&a_text], &mut SmallRng::seed_from_u64(seed), &mut one).unwrap();
            let n: i64 = one.parse().unwrap();
            prop_assert!(n >= a.min(0) && (n < a.max(0) || a == 0));
        }
    }
}
