//! Where samples go: a bounded channel to the results thread. Shooters never
//! wait on it; if it is ever full, the sample is dropped and counted.

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
}

impl AnswerSink {
    /// A channel holding up to `capacity` answers, and its receiving end.
    pub fn new(capacity: usize) -> (Self, Receiver<Answer>) {
        let (tx, rx) = mpsc::sync_channel(capacity);
        (AnswerSink { tx }, rx)
    }

    /// Send without waiting (a full answers log drops entries rather than slow the shooting).
    pub fn send(&self, answer: Answer) {
        let _ = self.tx.try_send(answer);
    }
}
