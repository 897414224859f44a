//! One structured mutation fuzzer: a valid input, a few of [`Mutation`]s
//! applied, each at a fraction of the input's current length (so a strategy
//! does not depend on the seed's size and shrinks toward fewer, earlier edits).

use std::ops::Range;

use proptest::prelude::*;

/// One mutation: where (a fraction of the length, `0.0..1.0`) and what.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Overwrite the byte at the fraction with this one.
    Flip(f64, u8),
    /// Insert these bytes at the fraction.
    Insert(f64, &'static [u8]),
    /// Remove the bytes between the two fractions.
    Cut(f64, f64),
    /// Repeat the bytes between the two fractions once, right after themselves.
    Double(f64, f64),
}

/// Any one mutation, inserting only `snippets` (bytes that matter to the syntax under test).
pub fn mutation(snippets: &'static [&'static [u8]]) -> impl Strategy<Value = Mutation> {
    let at = || 0.0..1.0f64;
    prop_oneof![
        (at(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
        (at(), proptest::sample::select(snippets)).prop_map(|(a, s)| Mutation::Insert(a, s)),
        (at(), at()).prop_map(|(a, b)| Mutation::Cut(a, b)),
        (at(), at()).prop_map(|(a, b)| Mutation::Double(a, b)),
    ]
}

/// `bytes` with `mutations` applied in order, each at its fraction of the length
/// the previous ones left. Never panics, whatever the fractions.
pub fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let at = |f: f64| (((bytes.len() as f64) * f) as usize).min(bytes.len());
        match *m {
            Mutation::Flip(f, b) if !bytes.is_empty() => {
                let i = at(f).min(bytes.len() - 1);
                bytes[i] = b;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(f, s) => {
                let i = at(f);
                bytes.splice(i..i, s.iter().copied());
            }
            Mutation::Cut(f, g) => {
                let (i, j) = (at(f.min(g)), at(f.max(g)));
                bytes.drain(i..j);
            }
            Mutation::Double(f, g) => {
                let (i, j) = (at(f.min(g)), at(f.max(g)));
                let copy = bytes[i..j].to_vec();
                bytes.splice(j..j, copy);
            }
        }
    }
    bytes
}

/// One of `seeds`, mutated `count` times (a number drawn from the range), with
/// `snippets` to insert.
pub fn mutated(
    seeds: &'static [&'static [u8]],
    snippets: &'static [&'static [u8]],
    count: Range<usize>,
) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::sample::select(seeds),
        proptest::collection::vec(mutation(snippets), count),
    )
        .prop_map(|(seed, mutations)| mutate(seed.to_vec(), &mutations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mutation_edits_at_its_fraction() {
        let seed = b"abcdef".to_vec();
        assert_eq!(
            mutate(seed.clone(), &[Mutation::Flip(0.5, b'X')]),
            b"abcXef"
        );
        assert_eq!(
            mutate(seed.clone(), &[Mutation::Insert(0.0, b"<>")]),
            b"<>abcdef"
        );
        assert_eq!(mutate(seed.clone(), &[Mutation::Cut(0.5, 0.0)]), b"def");
        assert_eq!(
            mutate(seed.clone(), &[Mutation::Double(0.0, 0.5)]),
            b"abcabcdef"
        );
        assert_eq!(mutate(Vec::new(), &[Mutation::Flip(0.9, b'X')]), b"");
    }

    const SNIPPETS: [&[u8]; 2] = [b"", b"\r\n"];

    proptest! {
        #[test]
        fn any_mutations_of_any_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..40),
            mutations in proptest::collection::vec(mutation(&SNIPPETS), 0..6),
        ) {
            let _ = mutate(bytes, &mutations);
        }
    }
}
