//! MySQL 8's query attributes (`CLIENT_QUERY_ATTRIBUTES`), taken out of the
//! commands that carry them, so that a replay's server — which may not speak
//! them (MariaDB does not), and is not asked to — reads the commands as sent.
//!
//! A client that agreed on them sends `COM_QUERY` as the command byte, a
//! parameter count and a parameter-set count, (when the count is not 0) the
//! attributes, then the text; and `COM_STMT_EXECUTE` with a parameter count
//! after the iteration count and a name after each parameter's type. Both
//! are rewritten to the plain form. Attributes proper (a query's named
//! values, an execute's parameters beyond the statement's) would be lost by
//! that, so a command carrying them is left out, and said.

use tank_mysql::packet::Reader;

/// `COM_STMT_EXECUTE`'s flag: a parameter count follows the iteration count.
const PARAMETER_COUNT_AVAILABLE: u8 = 0x08;

/// A `COM_QUERY` payload in the plain form: `Err` says why it cannot be.
pub(crate) fn plain_query(payload: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut reader = Reader::new(payload.get(1..).ok_or("an empty query")?);
    let count = reader.lenenc().ok_or("a query cut short")?;
    let _sets = reader.lenenc().ok_or("a query cut short")?;
    if count > 0 {
        return Err("a query with query attributes");
    }
    let mut plain = Vec::with_capacity(1 + reader.rest().len());
    plain.push(payload[0]);
    plain.extend_from_slice(reader.rest());
    Ok(plain)
}

/// A `COM_STMT_EXECUTE` payload of a statement with `params` parameters in
/// the plain form: `Err` says why it cannot be.
pub(crate) fn plain_execute(payload: &[u8], params: u16) -> Result<Vec<u8>, &'static str> {
    const SHORT: &str = "an execute cut short";
    // Command, statement id, flags, iteration count.
    let head = payload.get(..10).ok_or(SHORT)?;
    let flags = head[5];
    let mut reader = Reader::new(&payload[10..]);
    if params == 0 && flags & PARAMETER_COUNT_AVAILABLE == 0 {
        return Ok(payload.to_vec());
    }
    let count = reader.lenenc().ok_or(SHORT)?;
    if count != u64::from(params) {
        return Err("an execute with query attributes");
    }
    let mut plain = head.to_vec();
    plain[5] &= !PARAMETER_COUNT_AVAILABLE;
    if params == 0 {
        plain.extend_from_slice(reader.rest());
        return Ok(plain);
    }
    let bitmap = reader.bytes(usize::from(params).div_ceil(8)).ok_or(SHORT)?;
    plain.extend_from_slice(bitmap);
    let bound = reader.u8().ok_or(SHORT)?;
    plain.push(bound);
    if bound == 1 {
        for _ in 0..params {
            plain.extend_from_slice(reader.bytes(2).ok_or(SHORT)?);
            reader.lenenc_bytes().ok_or(SHORT)?;
        }
    }
    plain.extend_from_slice(reader.rest());
    Ok(plain)
}

/// A `COM_STMT_EXECUTE` in the attribute form, for tests: the plain
/// `payload` of a statement with `names.len()` parameters.
#[cfg(test)]
fn with_attributes(plain: &[u8], names: &[&str]) -> Vec<u8> {
    use tank_mysql::packet::put_lenenc;
    let params = names.len();
    let mut out = plain[..10].to_vec();
    put_lenenc(&mut out, params as u64);
    let bitmap = params.div_ceil(8);
    out.extend_from_slice(&plain[10..10 + bitmap + 1]);
    let mut at = 10 + bitmap + 1;
    for name in names {
        out.extend_from_slice(&plain[at..at + 2]);
        put_lenenc(&mut out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        at += 2;
    }
    out.extend_from_slice(&plain[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_without_attributes_becomes_plain_and_one_with_them_is_refused() {
        assert_eq!(
            plain_query(b"\x03\x00\x01SELECT 1").unwrap(),
            b"\x03SELECT 1"
        );
        assert_eq!(
            plain_query(b"\x03\x01\x01\x00\x01\xfe\x00\x01aXSELECT 1"),
            Err("a query with query attributes")
        );
        assert!(plain_query(b"\x03").is_err());
    }

    #[test]
    fn an_execute_loses_its_parameter_count_and_names() {
        // Statement 1, no cursor, iteration 1; two parameters, no NULL,
        // types bound (LONG, VAR_STRING), values 7 and "ab".
        let plain = b"\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x03\x00\xfd\x00\x07\x00\x00\x00\x02ab";
        let attributed = with_attributes(plain, &["", ""]);
        assert_ne!(attributed, plain);
        assert_eq!(plain_execute(&attributed, 2).unwrap(), plain);
        assert_eq!(
            plain_execute(&with_attributes(plain, &["", ""]), 1),
            Err("an execute with query attributes")
        );
        let none = b"\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00";
        assert_eq!(plain_execute(none, 0).unwrap(), none);
        let mut counted = none.to_vec();
        counted[5] = PARAMETER_COUNT_AVAILABLE;
        counted.push(0);
        assert_eq!(plain_execute(&counted, 0).unwrap(), none);
    }
}
