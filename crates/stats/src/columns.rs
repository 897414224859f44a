//! phout's columns, in one table: their order, their names as yandex-tank
//! spells them, and which member of [`Measured`] each numeric one is.
//!
//! ```text
//! send_ts  tag  interval_real  connect_time  send_time  latency  receive_time  interval_event  size_out  size_in  net_code  proto_code
//! ```
//!
//! Everything that walks the columns in order (the phout writer and reader,
//! the per-group `{total, min, max, len}` stats, [`Field`]) is generated from
//! the table below, so the order is written down once.

use crate::sample::{Measured, NetCode};

/// Declares the eight numeric columns once and derives from that list every
/// place that needs their order.
macro_rules! numeric_columns {
    ($($field:ident = $index:literal: $member:ident, $name:literal, $doc:literal;)*) => {
        /// One of phout's eight numeric columns, as an index into
        /// [`crate::GroupStats::fields`] and [`Measured::fields`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Field {
            $(#[doc = $doc] $field = $index,)*
        }

        impl Field {
            /// Every numeric column, in phout's order.
            pub const ALL: [Field; 8] = [$(Field::$field,)*];

            /// The column's name, as yandex-tank spells it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Field::$field => $name,)*
                }
            }
        }

        /// The numeric columns' names, in phout's order.
        pub const FIELD_NAMES: [&str; 8] = [$($name,)*];

        /// All twelve phout columns' names, in order.
        pub const COLUMNS: [&str; 12] = ["send_ts", "tag", $($name,)* "net_code", "proto_code"];

        impl Measured {
            /// The eight numeric columns, in phout's order ([`Field::ALL`]).
            #[inline]
            pub fn fields(&self) -> [u64; 8] {
                [$(self.$member,)*]
            }

            /// The inverse of [`Measured::fields`], with the two codes (`sends`
            /// unknown: 0).
            pub fn from_fields(fields: [u64; 8], net_code: NetCode, proto_code: u16) -> Measured {
                Measured {
                    $($member: fields[$index],)*
                    net_code,
                    proto_code,
                    sends: 0,
                    queue: 0,
                }
            }
        }
    };
}

numeric_columns! {
    IntervalReal = 0: interval_real_us, "interval_real", "Total time of the shot, µs.";
    Connect = 1: connect_us, "connect_time", "Connecting, µs.";
    Send = 2: send_us, "send_time", "Writing the request, µs.";
    Latency = 3: latency_us, "latency", "Request written → first response byte, µs.";
    Receive = 4: receive_us, "receive_time", "First → last response byte, µs.";
    IntervalEvent = 5: interval_event_us, "interval_event", "Time waiting on I/O, µs.";
    SizeOut = 6: size_out, "size_out", "Bytes sent.";
    SizeIn = 7: size_in, "size_in", "Bytes received.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_agrees_with_itself() {
        for (i, field) in Field::ALL.into_iter().enumerate() {
            assert_eq!(field as usize, i);
            assert_eq!(field.name(), FIELD_NAMES[i]);
            assert_eq!(COLUMNS[i + 2], FIELD_NAMES[i]);
        }
        let fields = [1, 2, 3, 4, 5, 6, 7, 8];
        let measured = Measured::from_fields(fields, NetCode(110), 503);
        assert_eq!(measured.fields(), fields);
        assert_eq!(
            (measured.connect_us, measured.size_in),
            (2, 8),
            "members follow the table"
        );
        assert_eq!(
            (measured.net_code, measured.proto_code),
            (NetCode(110), 503)
        );
    }
}
