//! `name(arg, arg)`: the call syntax a scenario file writes in three places,
//! read one way: a scenario's steps (`buy(3, 100)`, `sleep(100)`), a header's
//! modifiers (`substr(6)`, `replace(=,)`) and a preprocessor's functions
//! (`randInt(1, 10)`). Arguments are split on `,` and trimmed; an empty
//! argument is kept (`replace(=,)` replaces with nothing), empty parentheses
//! have none.

/// A call as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call<'t> {
    /// The name, trimmed.
    pub name: &'t str,
    /// The arguments, trimmed (none without parentheses).
    pub args: Vec<&'t str>,
}

/// Split `text` into its name and arguments; an opening parenthesis must be
/// closed by the text's last character.
pub(crate) fn split(text: &str) -> Result<Call<'_>, String> {
    let text = text.trim();
    let Some(open) = text.find('(') else {
        return Ok(Call {
            name: text,
            args: Vec::new(),
        });
    };
    let inner = text[open + 1..]
        .strip_suffix(')')
        .ok_or_else(|| format!("`{text}`: expected `)` last"))?;
    let args = if inner.trim().is_empty() {
        Vec::new()
    } else {
        inner.split(',').map(str::trim).collect()
    };
    Ok(Call {
        name: text[..open].trim(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_and_arguments() {
        let call = |text| split(text).map(|c| (c.name, c.args));
        assert_eq!(call("buy"), Ok(("buy", vec![])));
        assert_eq!(call(" buy(3, 100) "), Ok(("buy", vec!["3", "100"])));
        assert_eq!(call("uuid()"), Ok(("uuid", vec![])));
        assert_eq!(call("replace(=,)"), Ok(("replace", vec!["=", ""])));
        assert!(call("substr(1").is_err());
        assert!(call("a(1)b").is_err());
    }

    proptest! {
        #[test]
        fn splitting_never_panics(text in "\\PC{0,30}") {
            let _ = split(&text);
        }
    }
}
