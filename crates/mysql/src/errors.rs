//! Names of the server's error numbers, for people: `1064` → `SQL syntax
//! error`, as Apiary names them in its tallies. Only the common ones are named;
//! the others are told by number.

/// A short name of MySQL/MariaDB error `code` (empty when tank does not name it).
pub fn name(code: u16) -> &'static str {
    match code {
        1040 => "too many connections",
        1044 => "access denied to the schema",
        1045 => "access denied",
        1046 => "no schema selected",
        1049 => "unknown schema",
        1050 => "table exists",
        1051 => "unknown table",
        1054 => "unknown column",
        1062 => "duplicate entry",
        1064 => "SQL syntax error",
        1065 => "empty query",
        1142 => "command denied",
        1146 => "no such table",
        1205 => "lock wait timeout",
        1213 => "deadlock",
        1243 => "unknown prepared statement",
        1290 => "read-only server",
        1292 => "incorrect value",
        1364 => "field has no default",
        1366 => "incorrect string value",
        1406 => "data too long",
        1451 | 1452 => "foreign key constraint",
        1927 => "connection killed",
        2006 => "server has gone away",
        2013 => "lost connection",
        3024 => "query timeout",
        4031 => "disconnected for inactivity",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn common_errors_are_named() {
        assert_eq!(super::name(1064), "SQL syntax error");
        assert_eq!(super::name(1146), "no such table");
        assert_eq!(super::name(9999), "");
    }
}
