//! gRPC's status codes (`grpc-status`), by name, and the HTTP code Pandora's
//! gRPC gun reports for each: the proto code of a gRPC row, so phout readers
//! and autostop's `http(...)` criteria read gRPC results unchanged.

/// A gRPC status code, 0 (OK) to 16 (UNAUTHENTICATED); a server may send
/// others, which keep their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Status(pub u8);

/// The names of codes 0 to 16, in order.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

impl Status {
    /// OK.
    pub const OK: Status = Status(0);
    /// UNKNOWN: also what a reply without a readable `grpc-status` means.
    pub const UNKNOWN: Status = Status(2);

    /// The status a `grpc-status` value names (`None`: not a number 0–255).
    pub fn parse(value: &[u8]) -> Option<Status> {
        if value.is_empty() || value.len() > 3 || !value.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = value.iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
        u8::try_from(n).ok().map(Status)
    }

    /// Its name (`NOT_FOUND`), or `CODE_N` for a code gRPC does not define.
    pub fn name(self) -> String {
        match NAMES.get(usize::from(self.0)) {
            Some(name) => (*name).to_owned(),
            None => format!("CODE_{}", self.0),
        }
    }

    /// The HTTP code Pandora's gRPC gun reports for it: OK 200, CANCELLED 499,
    /// INVALID_ARGUMENT, FAILED_PRECONDITION and OUT_OF_RANGE 400,
    /// DEADLINE_EXCEEDED 504, NOT_FOUND 404, ALREADY_EXISTS and ABORTED 409,
    /// PERMISSION_DENIED 403, RESOURCE_EXHAUSTED 429, UNIMPLEMENTED 501,
    /// UNAVAILABLE 503, UNAUTHENTICATED 401; any other (UNKNOWN, INTERNAL,
    /// DATA_LOSS, codes gRPC does not define) 500.
    pub fn http_code(self) -> u16 {
        match self.0 {
            0 => 200,
            1 => 499,
            3 | 9 | 11 => 400,
            4 => 504,
            5 => 404,
            6 | 10 => 409,
            7 => 403,
            8 => 429,
            12 => 501,
            14 => 503,
            16 => 401,
            _ => 500,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pandoras_table() {
        let table: Vec<(String, u16)> = (0..=16)
            .map(|n| (Status(n).name(), Status(n).http_code()))
            .collect();
        let expected = [
            ("OK", 200),
            ("CANCELLED", 499),
            ("UNKNOWN", 500),
            ("INVALID_ARGUMENT", 400),
            ("DEADLINE_EXCEEDED", 504),
            ("NOT_FOUND", 404),
            ("ALREADY_EXISTS", 409),
            ("PERMISSION_DENIED", 403),
            ("RESOURCE_EXHAUSTED", 429),
            ("FAILED_PRECONDITION", 400),
            ("ABORTED", 409),
            ("OUT_OF_RANGE", 400),
            ("UNIMPLEMENTED", 501),
            ("INTERNAL", 500),
            ("UNAVAILABLE", 503),
            ("DATA_LOSS", 500),
            ("UNAUTHENTICATED", 401),
        ];
        let expected: Vec<(String, u16)> = expected
            .iter()
            .map(|(n, c)| ((*n).to_owned(), *c))
            .collect();
        assert_eq!(table, expected);
        assert_eq!(
            (Status(42).name(), Status(42).http_code()),
            ("CODE_42".into(), 500)
        );
    }

    #[test]
    fn grpc_status_values_parse_as_small_numbers_only() {
        assert_eq!(Status::parse(b"0"), Some(Status::OK));
        assert_eq!(Status::parse(b"14"), Some(Status(14)));
        assert_eq!(Status::parse(b""), None);
        assert_eq!(Status::parse(b"256"), None);
        assert_eq!(Status::parse(b"1a"), None);
        assert_eq!(Status::parse(b"0014"), None);
    }

    proptest! {
        #[test]
        fn parse_round_trips_every_byte(n in 0u8..=255) {
            prop_assert_eq!(Status::parse(n.to_string().as_bytes()), Some(Status(n)));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            let _ = Status::parse(&bytes);
        }
    }
}
