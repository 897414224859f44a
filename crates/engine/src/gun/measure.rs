//! What every gun shares when it times a shot: the phases' marks and
//! phantom's fill rule, so a shot's parts sum to its whole whatever the
//! protocol and wherever it failed.

use tank_stats::Measured;

/// Timestamps of one attempt, µs from the shot's start; `None` for a phase
/// the attempt never reached.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Marks {
    /// The connection was open (0 on a kept one).
    pub connected: Option<u64>,
    /// The request was written whole.
    pub sent: Option<u64>,
    /// The first byte (HTTP/1), or the reply's head (HTTP/2), arrived.
    pub first_byte: Option<u64>,
}

/// phantom's fill rule: phases never reached end at the shot's end, so the
/// parts always sum to the whole. `timeout_us` is the shot's budget.
pub(crate) fn fill(measured: &mut Measured, marks: &Marks, end_us: u64, timeout_us: u64) {
    let connected = marks.connected.unwrap_or(end_us).min(end_us);
    let sent = marks.sent.unwrap_or(end_us).clamp(connected, end_us);
    let first = marks.first_byte.unwrap_or(end_us).clamp(sent, end_us);
    measured.interval_real_us = end_us;
    measured.connect_us = connected;
    measured.send_us = sent - connected;
    measured.latency_us = first - sent;
    measured.receive_us = end_us - first;
    // The time spent waiting within the budget: the budget itself on a timeout.
    measured.interval_event_us = end_us.min(timeout_us);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_stats::NetCode;

    #[test]
    fn fill_rule_makes_parts_sum_to_the_whole() {
        let mut measured = Measured {
            net_code: NetCode::RESET,
            ..Measured::default()
        };
        let marks = Marks {
            connected: Some(100),
            sent: Some(150),
            first_byte: None,
        };
        fill(&mut measured, &marks, 900, 11_000_000);
        assert_eq!(
            (
                measured.connect_us,
                measured.send_us,
                measured.latency_us,
                measured.receive_us
            ),
            (100, 50, 750, 0)
        );
        let mut timed_out = Measured {
            net_code: NetCode::TIMED_OUT,
            ..Measured::default()
        };
        fill(&mut timed_out, &Marks::default(), 1_000_450, 1_000_000);
        assert_eq!(
            (timed_out.connect_us, timed_out.interval_event_us),
            (1_000_450, 1_000_000)
        );
    }
}
