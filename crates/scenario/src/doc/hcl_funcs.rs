//! The functions a Pandora HCL file may call while it is read (in `locals`
//! and in attribute values): `merge()` and the other collection and string
//! functions Pandora lists (go-cty's standard library), each with the meaning
//! go-cty gives it. They run once, when the file is read; nothing of them
//! remains at run time.

use hcl::eval::{Context, FuncArgs, FuncDef, ParamType};
use hcl::{Map, Value};

/// Declare every function in `ctx`.
pub(super) fn declare(ctx: &mut Context<'_>) {
    let any = || ParamType::Any;
    let list = || ParamType::array_of(ParamType::Any);
    let object = || ParamType::object_of(ParamType::Any);
    let variadic = |f| FuncDef::builder().variadic_param(ParamType::Any).build(f);
    ctx.declare_func("merge", variadic(merge));
    ctx.declare_func("concat", variadic(concat));
    ctx.declare_func("coalesce", variadic(coalesce));
    ctx.declare_func("coalescelist", variadic(coalescelist));
    ctx.declare_func("compact", FuncDef::builder().param(list()).build(compact));
    ctx.declare_func("distinct", FuncDef::builder().param(list()).build(distinct));
    ctx.declare_func("flatten", FuncDef::builder().param(list()).build(flatten));
    ctx.declare_func("reverse", FuncDef::builder().param(list()).build(reverse));
    ctx.declare_func("sort", FuncDef::builder().param(list()).build(sort));
    ctx.declare_func("keys", FuncDef::builder().param(object()).build(keys));
    ctx.declare_func("values", FuncDef::builder().param(object()).build(values));
    ctx.declare_func(
        "element",
        FuncDef::builder()
            .params([list(), ParamType::Number])
            .build(element),
    );
    ctx.declare_func(
        "index",
        FuncDef::builder().params([list(), any()]).build(index),
    );
    ctx.declare_func(
        "lookup",
        FuncDef::builder()
            .params([object(), ParamType::String])
            .variadic_param(any())
            .build(lookup),
    );
    ctx.declare_func(
        "slice",
        FuncDef::builder()
            .params([list(), ParamType::Number, ParamType::Number])
            .build(slice),
    );
    ctx.declare_func(
        "split",
        FuncDef::builder()
            .params([ParamType::String, ParamType::String])
            .build(split),
    );
    ctx.declare_func(
        "zipmap",
        FuncDef::builder()
            .params([ParamType::array_of(ParamType::String), list()])
            .build(zipmap),
    );
}

/// `merge(a, b, ...)`: the objects' entries, a later one's over an earlier
/// one's; null arguments are skipped.
fn merge(args: FuncArgs) -> Result<Value, String> {
    let mut merged = Map::new();
    for arg in args.iter() {
        match arg {
            Value::Null => {}
            Value::Object(object) => {
                for (key, value) in object {
                    merged.insert(key.clone(), value.clone());
                }
            }
            other => return Err(format!("merge takes objects, found {}", kind(other))),
        }
    }
    Ok(Value::Object(merged))
}

/// `concat(a, b, ...)`: the lists one after another.
fn concat(args: FuncArgs) -> Result<Value, String> {
    let mut joined = Vec::new();
    for arg in args.iter() {
        match arg {
            Value::Array(items) => joined.extend(items.iter().cloned()),
            other => return Err(format!("concat takes lists, found {}", kind(other))),
        }
    }
    Ok(Value::Array(joined))
}

/// `coalesce(a, b, ...)`: the first argument that is not null (nor an empty string).
fn coalesce(args: FuncArgs) -> Result<Value, String> {
    args.iter()
        .find(|v| !v.is_null() && v.as_str() != Some(""))
        .cloned()
        .ok_or_else(|| "coalesce: no argument is set".to_owned())
}

/// `coalescelist(a, b, ...)`: the first list that is not empty.
fn coalescelist(args: FuncArgs) -> Result<Value, String> {
    for arg in args.iter() {
        match arg {
            Value::Array(items) if !items.is_empty() => return Ok(arg.clone()),
            Value::Array(_) => {}
            other => return Err(format!("coalescelist takes lists, found {}", kind(other))),
        }
    }
    Err("coalescelist: every list is empty".to_owned())
}

fn items(args: &FuncArgs) -> &[Value] {
    args[0].as_array().map_or(&[], Vec::as_slice)
}

/// `compact(list)`: the list without empty strings and nulls.
fn compact(args: FuncArgs) -> Result<Value, String> {
    Ok(Value::Array(
        items(&args)
            .iter()
            .filter(|v| !v.is_null() && v.as_str() != Some(""))
            .cloned()
            .collect(),
    ))
}

/// `distinct(list)`: the list without repeats, first occurrences kept.
fn distinct(args: FuncArgs) -> Result<Value, String> {
    let mut seen: Vec<Value> = Vec::new();
    for item in items(&args) {
        if !seen.contains(item) {
            seen.push(item.clone());
        }
    }
    Ok(Value::Array(seen))
}

/// `flatten(list)`: nested lists spliced in, recursively.
fn flatten(args: FuncArgs) -> Result<Value, String> {
    fn walk(items: &[Value], out: &mut Vec<Value>, depth: usize) -> Result<(), String> {
        if depth > 64 {
            return Err("flatten: lists nested too deeply".to_owned());
        }
        for item in items {
            match item {
                Value::Array(inner) => walk(inner, out, depth + 1)?,
                other => out.push(other.clone()),
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(items(&args), &mut out, 0)?;
    Ok(Value::Array(out))
}

/// `reverse(list)`.
fn reverse(args: FuncArgs) -> Result<Value, String> {
    Ok(Value::Array(items(&args).iter().rev().cloned().collect()))
}

/// `sort(list)`: strings in lexical order.
fn sort(args: FuncArgs) -> Result<Value, String> {
    let mut texts = items(&args)
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("sort takes a list of strings, found {}", kind(v)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    texts.sort();
    Ok(Value::Array(texts.into_iter().map(Value::String).collect()))
}

/// `keys(object)`: its keys, sorted as go-cty sorts them.
fn keys(args: FuncArgs) -> Result<Value, String> {
    let mut keys: Vec<String> = args[0]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    Ok(Value::Array(keys.into_iter().map(Value::String).collect()))
}

/// `values(object)`: its values, in the order of its sorted keys.
fn values(args: FuncArgs) -> Result<Value, String> {
    let Some(object) = args[0].as_object() else {
        return Ok(Value::Array(Vec::new()));
    };
    let mut pairs: Vec<(&String, &Value)> = object.iter().collect();
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    Ok(Value::Array(
        pairs.into_iter().map(|(_, v)| v.clone()).collect(),
    ))
}

fn whole(value: &Value, what: &str) -> Result<i64, String> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("{what}: expected a whole number")),
        _ => Err(format!("{what}: expected a number")),
    }
}

/// `element(list, i)`: the item at `i`, wrapping around past the end.
fn element(args: FuncArgs) -> Result<Value, String> {
    let items = items(&args);
    if items.is_empty() {
        return Err("element: the list is empty".to_owned());
    }
    let at = whole(&args[1], "element")?;
    if at < 0 {
        return Err("element: the index must not be negative".to_owned());
    }
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    Ok(items[usize::try_from(at % len).unwrap_or(0)].clone())
}

/// `index(list, value)`: where `value` first is in the list.
fn index(args: FuncArgs) -> Result<Value, String> {
    items(&args)
        .iter()
        .position(|v| *v == args[1])
        .map(|at| Value::from(at as u64))
        .ok_or_else(|| "index: the value is not in the list".to_owned())
}

/// `lookup(object, key[, default])`.
fn lookup(args: FuncArgs) -> Result<Value, String> {
    let key = args[1].as_str().unwrap_or_default();
    if let Some(value) = args[0].as_object().and_then(|o| o.get(key)) {
        return Ok(value.clone());
    }
    args.get(2)
        .cloned()
        .ok_or_else(|| format!("lookup: no key `{key}`, and no default given"))
}

/// `slice(list, start, end)`: items `start` up to (not including) `end`.
fn slice(args: FuncArgs) -> Result<Value, String> {
    let items = items(&args);
    let start = whole(&args[1], "slice")?;
    let end = whole(&args[2], "slice")?;
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    if start < 0 || end < start || end > len {
        return Err(format!(
            "slice: expected 0 <= start <= end <= {len}, found {start} and {end}"
        ));
    }
    let (start, end) = (start as usize, end as usize);
    Ok(Value::Array(items[start..end].to_vec()))
}

/// `split(separator, text)`.
fn split(args: FuncArgs) -> Result<Value, String> {
    let separator = args[0].as_str().unwrap_or_default();
    let text = args[1].as_str().unwrap_or_default();
    if separator.is_empty() {
        return Err("split: the separator is empty".to_owned());
    }
    Ok(Value::Array(
        text.split(separator)
            .map(|piece| Value::String(piece.to_owned()))
            .collect(),
    ))
}

/// `zipmap(keys, values)`: an object of the pairs.
fn zipmap(args: FuncArgs) -> Result<Value, String> {
    let keys = items(&args);
    let values = args[1].as_array().map_or(&[][..], Vec::as_slice);
    if keys.len() != values.len() {
        return Err(format!(
            "zipmap: {} keys and {} values",
            keys.len(),
            values.len()
        ));
    }
    Ok(Value::Object(
        keys.iter()
            .zip(values)
            .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), v.clone()))
            .collect(),
    ))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcl::eval::Evaluate;

    fn eval(expr: &str) -> Result<Value, String> {
        let mut ctx = Context::new();
        declare(&mut ctx);
        let expr: hcl::Expression = expr.parse().map_err(|e| format!("{e}"))?;
        expr.evaluate(&ctx).map_err(|e| e.to_string())
    }

    #[test]
    fn merge_takes_the_later_value_and_skips_nulls() {
        assert_eq!(
            eval(r#"merge({a = 1, b = 2}, null, {b = 3})"#).unwrap(),
            eval(r#"{a = 1, b = 3}"#).unwrap()
        );
        assert!(eval("merge({a = 1}, [1])")
            .unwrap_err()
            .contains("merge takes objects"));
    }

    #[test]
    fn list_functions() {
        assert_eq!(
            eval(r#"concat([1], [2, 3])"#).unwrap(),
            eval("[1, 2, 3]").unwrap()
        );
        assert_eq!(
            eval(r#"coalesce(null, "", "x")"#).unwrap(),
            Value::from("x")
        );
        assert_eq!(
            eval(r#"compact(["a", "", "b"])"#).unwrap(),
            eval(r#"["a", "b"]"#).unwrap()
        );
        assert_eq!(
            eval(r#"distinct([1, 2, 1])"#).unwrap(),
            eval("[1, 2]").unwrap()
        );
        assert_eq!(
            eval(r#"flatten([[1, [2]], 3])"#).unwrap(),
            eval("[1, 2, 3]").unwrap()
        );
        assert_eq!(eval(r#"element(["a", "b"], 3)"#).unwrap(), Value::from("b"));
        assert_eq!(
            eval(r#"index(["a", "b"], "b")"#).unwrap(),
            Value::from(1u64)
        );
        assert_eq!(
            eval(r#"slice([1, 2, 3], 1, 3)"#).unwrap(),
            eval("[2, 3]").unwrap()
        );
        assert!(eval(r#"slice([1], 0, 5)"#).is_err());
        assert_eq!(
            eval(r#"sort(["b", "a"])"#).unwrap(),
            eval(r#"["a", "b"]"#).unwrap()
        );
        assert_eq!(eval(r#"reverse([1, 2])"#).unwrap(), eval("[2, 1]").unwrap());
        assert_eq!(
            eval(r#"split(",", "a,b")"#).unwrap(),
            eval(r#"["a", "b"]"#).unwrap()
        );
    }

    #[test]
    fn object_functions() {
        assert_eq!(
            eval(r#"keys({b = 1, a = 2})"#).unwrap(),
            eval(r#"["a", "b"]"#).unwrap()
        );
        assert_eq!(
            eval(r#"values({b = 1, a = 2})"#).unwrap(),
            eval("[2, 1]").unwrap()
        );
        assert_eq!(eval(r#"lookup({a = 1}, "a")"#).unwrap(), Value::from(1u64));
        assert_eq!(
            eval(r#"lookup({a = 1}, "z", 0)"#).unwrap(),
            Value::from(0u64)
        );
        assert!(eval(r#"lookup({a = 1}, "z")"#).is_err());
        assert_eq!(
            eval(r#"zipmap(["a", "b"], [1, 2])"#).unwrap(),
            eval("{a = 1, b = 2}").unwrap()
        );
    }
}
