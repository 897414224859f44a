//! The per-shot measurement.

use std::sync::Arc;
use std::time::Duration;

/// A shot's tag (marker), shared: a queue has few distinct tags, so samples
/// point at one copy instead of allocating per shot.
pub type Tag = Arc<[u8]>;

/// A network outcome as phantom reports it: 0 for success, otherwise an errno
/// (110 timed out, 111 refused, 104 reset, 71 protocol error, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NetCode(pub u16);

impl NetCode {
    /// Success.
    pub const OK: NetCode = NetCode(0);
    /// ETIMEDOUT: tank's own `timeout`, or the kernel's connect timeout.
    pub const TIMED_OUT: NetCode = NetCode(110);
    /// ECONNREFUSED.
    pub const REFUSED: NetCode = NetCode(111);
    /// ECONNRESET.
    pub const RESET: NetCode = NetCode(104);
    /// EPIPE.
    pub const BROKEN_PIPE: NetCode = NetCode(32);
    /// EPROTO: a reply that cannot be parsed, or a transport/TLS failure with no errno.
    pub const PROTOCOL: NetCode = NetCode(71);
    /// ECANCELED: the shot was in flight when a second Ctrl-C stopped the run at once.
    pub const CANCELED: NetCode = NetCode(125);
    /// tank's own, above every errno: a scenario's `assert/response` check
    /// failed on this request's reply (its status is kept); the run ended.
    pub const ASSERTION: NetCode = NetCode(901);
    /// tank's own: a scenario's request needed a value its run did not have
    /// (a variable not set, an index past a list's end); it was not sent,
    /// and the run ended.
    pub const UNSET: NetCode = NetCode(902);
    /// tank's own: a scenario's `var/jsonpath` or `var/xpath` matched
    /// nothing in this request's reply, or could not read it; the run ended.
    pub const EXTRACTION: NetCode = NetCode(903);

    /// Whether the code is a scenario's failure (901 to 903), not the network's.
    pub fn is_scenario_failure(self) -> bool {
        matches!(
            self,
            NetCode::ASSERTION | NetCode::UNSET | NetCode::EXTRACTION
        )
    }
    /// HTTP/2: the server reset the stream (RST_STREAM); the code is this
    /// plus the reset's error code (0 NO_ERROR to 13 HTTP_1_1_REQUIRED; 1099
    /// for a code HTTP/2 does not define). REFUSED_STREAM is 1007: the server
    /// did not process the request.
    pub const H2_RESET: NetCode = NetCode(1000);
    /// HTTP/2: the server sent GOAWAY and the stream was not among those it
    /// will finish; this plus GOAWAY's error code (1199 for an unknown one).
    pub const H2_GOAWAY: NetCode = NetCode(1100);
    /// HTTP/2: the connection ended (closed, or a protocol error on it) with
    /// the stream in flight and no GOAWAY; the kernel's errno, when it gave
    /// one (104, 32), is kept instead.
    pub const H2_CONNECTION_LOST: NetCode = NetCode(1200);
    /// HTTP/2: the request could not be sent whole within the budget because
    /// flow control held it back (no stream slot under the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS, or no send window).
    pub const H2_STALLED: NetCode = NetCode(1201);
    /// HTTP/2: the server does not speak it. Over TLS it did not choose `h2`
    /// by ALPN, so no request was sent; in cleartext (h2c) it answered in
    /// HTTP/1 or closed the connection before its first SETTINGS.
    pub const H2_NOT_OFFERED: NetCode = NetCode(1202);

    /// The usual name of the code, for people (`110` → `timed out`).
    pub fn describe(self) -> &'static str {
        match self.0 {
            0 => "ok",
            24 => "too many open files",
            32 => "broken pipe",
            71 => "protocol error",
            99 => "cannot assign requested address",
            101 => "network unreachable",
            103 => "connection aborted",
            104 => "connection reset by peer",
            110 => "timed out",
            111 => "connection refused",
            113 => "no route to host",
            125 => "cancelled (stopped at once)",
            901 => "assertion failed",
            902 => "variable not set",
            903 => "extraction failed",
            1000..=1099 => H2_RESETS[usize::from(self.0 - 1000).min(H2_RESETS.len() - 1)],
            1100..=1199 => H2_GOAWAYS[usize::from(self.0 - 1100).min(H2_GOAWAYS.len() - 1)],
            1200 => "HTTP/2 connection lost with the stream in flight",
            1201 => "HTTP/2 flow control held the request back",
            1202 => "the server does not speak HTTP/2 (no ALPN h2; HTTP/1 or a close for h2c)",
            _ => "error",
        }
    }

    /// The code of an HTTP/2 error code `reason` under `base` ([`NetCode::H2_RESET`]
    /// or [`NetCode::H2_GOAWAY`]): the base plus the reason, or plus 99 for a
    /// reason HTTP/2 does not define.
    pub fn h2(base: NetCode, reason: u32) -> NetCode {
        let offset = u16::try_from(reason)
            .ok()
            .filter(|r| *r <= 13)
            .unwrap_or(99);
        NetCode(base.0 + offset)
    }
}

/// The names of [`NetCode::H2_RESET`]'s codes, by HTTP/2 error code; the last for unknown ones.
const H2_RESETS: [&str; 15] = [
    "HTTP/2 stream reset: NO_ERROR",
    "HTTP/2 stream reset: PROTOCOL_ERROR",
    "HTTP/2 stream reset: INTERNAL_ERROR",
    "HTTP/2 stream reset: FLOW_CONTROL_ERROR",
    "HTTP/2 stream reset: SETTINGS_TIMEOUT",
    "HTTP/2 stream reset: STREAM_CLOSED",
    "HTTP/2 stream reset: FRAME_SIZE_ERROR",
    "HTTP/2 stream refused (REFUSED_STREAM)",
    "HTTP/2 stream reset: CANCEL",
    "HTTP/2 stream reset: COMPRESSION_ERROR",
    "HTTP/2 stream reset: CONNECT_ERROR",
    "HTTP/2 stream reset: ENHANCE_YOUR_CALM",
    "HTTP/2 stream reset: INADEQUATE_SECURITY",
    "HTTP/2 stream reset: HTTP_1_1_REQUIRED",
    "HTTP/2 stream reset: unknown error code",
];

/// The names of [`NetCode::H2_GOAWAY`]'s codes, by HTTP/2 error code; the last for unknown ones.
const H2_GOAWAYS: [&str; 15] = [
    "HTTP/2 GOAWAY: NO_ERROR",
    "HTTP/2 GOAWAY: PROTOCOL_ERROR",
    "HTTP/2 GOAWAY: INTERNAL_ERROR",
    "HTTP/2 GOAWAY: FLOW_CONTROL_ERROR",
    "HTTP/2 GOAWAY: SETTINGS_TIMEOUT",
    "HTTP/2 GOAWAY: STREAM_CLOSED",
    "HTTP/2 GOAWAY: FRAME_SIZE_ERROR",
    "HTTP/2 GOAWAY: REFUSED_STREAM",
    "HTTP/2 GOAWAY: CANCEL",
    "HTTP/2 GOAWAY: COMPRESSION_ERROR",
    "HTTP/2 GOAWAY: CONNECT_ERROR",
    "HTTP/2 GOAWAY: ENHANCE_YOUR_CALM",
    "HTTP/2 GOAWAY: INADEQUATE_SECURITY",
    "HTTP/2 GOAWAY: HTTP_1_1_REQUIRED",
    "HTTP/2 GOAWAY: unknown error code",
];

impl NetCode {
    /// Whether the code is one of HTTP/2's own (1000 to 1202), which no errno reaches.
    pub fn is_h2(self) -> bool {
        (1000..=1202).contains(&self.0)
    }
}

/// What the gun measured of one shot: phout's ten columns after the tag (their
/// order is [`crate::columns`]'s table). Times are in microseconds from the
/// shot's start; `connect + send + latency + receive == interval_real` always
/// (the engine fills the phases a failed shot never reached, as phantom does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measured {
    /// Total time of the shot.
    pub interval_real_us: u64,
    /// Connecting (0 on a reused keep-alive connection; includes the TLS handshake).
    pub connect_us: u64,
    /// Writing the request.
    pub send_us: u64,
    /// From the request written to the first byte of the response.
    pub latency_us: u64,
    /// From the first byte to the last byte of the response.
    pub receive_us: u64,
    /// Time spent waiting on I/O inside the timeout budget (the timeout itself on a timeout).
    pub interval_event_us: u64,
    /// Bytes sent.
    pub size_out: u64,
    /// Bytes received.
    pub size_in: u64,
    /// Network outcome.
    pub net_code: NetCode,
    /// HTTP status: the status line's code whenever one was read (also when the
    /// reply then broke: cut, over a limit, timed out); 0 when none was (or for
    /// the plain TCP gun).
    pub proto_code: u16,
    /// How many times the request went out (written, wholly or in part, to a
    /// connection): 1 as a rule; 0 when no connection could be made; 2 when a
    /// kept connection was found closed after the request went out and it was
    /// sent again on a new one. A phout does not record it: 0 there.
    pub sends: u8,
    /// The queue that fired the shot (its index in the config). Not a
    /// measurement: it rides here because it fits in this struct's padding,
    /// which keeps a [`Sample`] at 104 bytes on the samples channel (a field
    /// of `Sample` would make it 112, and the channel 10% slower). A phout does
    /// not record it: 0 there.
    pub queue: QueueIndex,
}

impl Measured {
    /// Times the request went out beyond the first: the server may have seen
    /// each of them.
    pub fn retries(&self) -> u64 {
        u64::from(self.sends.saturating_sub(1))
    }
}

/// The index of a queue in the config's order (its `[section]`), carried by
/// each sample so results can be shown per queue: a number on the hot path, a
/// name only where a report prints it.
pub type QueueIndex = u16;

/// One shot, as the engine reports it: when it started, how late, its tag,
/// and what was measured (with the queue that fired it). (Read back from a phout, a shot is a
/// [`crate::phout::Record`]: no lag, no queue.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// When the shot actually started (after waiting for its due time), µs since the Unix epoch.
    pub start_unix_us: u64,
    /// How late that start was against the plan, µs (start − due; 0 when on time).
    pub lag_us: u64,
    /// The shot's tag.
    pub tag: Tag,
    /// Its phases, sizes and codes.
    pub measured: Measured,
}

impl Sample {
    /// When the shot finished, µs since the Unix epoch (its aggregation second is this / 1e6).
    pub fn end_unix_us(&self) -> u64 {
        self.start_unix_us + self.measured.interval_real_us
    }
}

/// A tag with a trailing `#N` (from `enum_ammo`) cut off, as yandex-tank groups
/// cases.
#[inline]
pub fn case_of(tag: &[u8]) -> &[u8] {
    match tag.iter().rposition(|b| *b == b'#') {
        Some(at) => &tag[..at],
        None => tag,
    }
}

/// A duration in whole microseconds, as every time in a sample is kept;
/// saturating (a duration of 584,000 years does not fit).
#[inline]
pub fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_sample_stays_small_on_the_samples_channel() {
        // Every shot's sample is copied through a channel: a field that grows it
        // costs each shot (see `Measured::queue`).
        assert_eq!(std::mem::size_of::<Sample>(), 104);
    }

    #[test]
    fn http2_codes_keep_the_reason_and_never_meet_an_errno() {
        assert_eq!(NetCode::h2(NetCode::H2_RESET, 7), NetCode(1007));
        assert_eq!(
            NetCode(1007).describe(),
            "HTTP/2 stream refused (REFUSED_STREAM)"
        );
        assert_eq!(NetCode::h2(NetCode::H2_GOAWAY, 0), NetCode(1100));
        assert_eq!(NetCode::h2(NetCode::H2_RESET, 0x1_0000), NetCode(1099));
        assert_eq!(
            NetCode(1099).describe(),
            "HTTP/2 stream reset: unknown error code"
        );
        assert_eq!(
            NetCode(1199).describe(),
            "HTTP/2 GOAWAY: unknown error code"
        );
        assert_eq!(
            NetCode(1150).describe(),
            "HTTP/2 GOAWAY: unknown error code"
        );
        // Linux's errnos end at 133 (EHWPOISON).
        assert!((0..=133).all(|errno| !NetCode(errno).is_h2()));
        assert!(NetCode::H2_STALLED.is_h2() && NetCode::H2_CONNECTION_LOST.is_h2());
    }

    #[test]
    fn cases_cut_at_the_last_hash_and_micros_saturate() {
        assert_eq!(case_of(b"a#b#2"), b"a#b");
        assert_eq!(case_of(b"plain"), b"plain");
        assert_eq!(micros(Duration::from_millis(3)), 3000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
