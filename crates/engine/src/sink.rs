//! Where samples (and answers-log entries) go: bounded channels to the results
//! and answers threads. Shooters never wait on them; if one is ever full, what
//! was sent is dropped and counted, and the summary warns about it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use tank_stats::Sample;

/// The shooters' end of the samples channel.
#[derive(Clone)]
pub struct SampleSink {
    tx: SyncSender<Sample>,
    dropped: Arc<AtomicU64>,
}

impl SampleSink {
    /// A channel holding up to `capacity` samples, and its receiving end.
    pub fn new(capacity: usize) -> (Self, Receiver<Sample>) {
        let (tx, rx) = mpsc::sync_channel(capacity);
        (
            SampleSink {
                tx,
                dropped: Arc::default(),
            },
            rx,
        )
    }

    /// Send without waiting; a full channel drops the sample and counts it.
    pub fn send(&self, sample: Sample) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(sample) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Samples dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A shot for the answers log (`writelog`): its sample, request and reply.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The shot's measurement.
    pub sample: Sample,
    /// The request as sent.
    pub request: Arc<[u8]>,
    /// The reply as received (its first 64 KiB).
    pub reply: Vec<u8>,
}

/// The shooters' end of the answers channel.
#[derive(Clone)]
pub struct AnswerSink {
    tx: SyncSender<Answer>,
    dropped: Arc<AtomicU64>,
}

impl AnswerSink {
    /// A channel holding up to `capacity` answers, and its receiving end.
    pub fn new(capacity: usize) -> (Self, Receiver<Answer>) {
        let (tx, rx) = mpsc::sync_channel(capacity);
        (
            AnswerSink {
                tx,
                dropped: Arc::default(),
            },
            rx,
        )
    }

    /// Send without waiting: a full answers log drops the entry, and counts
    /// it, rather than slow the shooting.
    pub fn send(&self, answer: Answer) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(answer) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Entries dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> Answer {
        Answer {
            sample: Sample {
                start_unix_us: 0,
                lag_us: 0,
                tag: Arc::from(&b""[..]),
                measured: tank_stats::Measured::default(),
            },
            request: Arc::from(&b"GET / HTTP/1.0\r\n\r\n"[..]),
            reply: Vec::new(),
        }
    }

    #[test]
    fn a_full_answers_log_counts_what_it_drops() {
        let (sink, rx) = AnswerSink::new(2);
        for _ in 0..5 {
            sink.send(answer());
        }
        assert_eq!(sink.dropped(), 3);
        assert_eq!(rx.try_iter().count(), 2);
        sink.send(answer());
        assert_eq!(sink.dropped(), 3, "room again: nothing more dropped");
    }
}
