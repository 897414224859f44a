//! A writer that does its system calls on its own thread: the caller fills
//! 1 MiB chunks in memory and hands them over, so planning and disk writes
//! overlap instead of adding up. Chunks are recycled, so memory stays at a few
//! chunks whatever is written.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

const CHUNK: usize = 1 << 20;
/// Chunks in flight: enough to ride out a slow write, small enough to stay flat.
const IN_FLIGHT: usize = 4;

/// Buffers writes and passes full chunks to a thread that writes them to `W`.
pub struct OffThreadWriter {
    chunk: Vec<u8>,
    full: Option<SyncSender<Vec<u8>>>,
    empty: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl OffThreadWriter {
    /// Start the writer thread over `sink`.
    pub fn new<W: Write + Send + 'static>(mut sink: W) -> Self {
        let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let thread = std::thread::spawn(move || -> io::Result<()> {
            for mut chunk in full_rx {
                sink.write_all(&chunk)?;
                chunk.clear();
                // The other side may have finished; a lost spare chunk is fine.
                let _ = empty_tx.try_send(chunk);
            }
            sink.flush()
        });
        OffThreadWriter {
            chunk: Vec::with_capacity(CHUNK),
            full: Some(full_tx),
            empty: empty_rx,
            thread: Some(thread),
        }
    }

    fn hand_over(&mut self) -> io::Result<()> {
        let spare = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.chunk, spare);
        let sent = self.full.as_ref().map(|tx| tx.send(chunk));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: its own error is the one to report.
            _ => self.finish(),
        }
    }

    /// The chunk being filled: append to it, then call [`Self::commit`].
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.chunk
    }

    /// Hand the chunk to the thread once it is full.
    pub fn commit(&mut self) -> io::Result<()> {
        if self.chunk.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Write what is buffered, wait for the thread, and report its first error.
    pub fn finish(&mut self) -> io::Result<()> {
        if !self.chunk.is_empty() {
            let chunk = std::mem::take(&mut self.chunk);
            if let Some(tx) = &self.full {
                // If the thread is gone, joining below reports why.
                let _ = tx.send(chunk);
            }
        }
        self.full = None;
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked"))),
            None => Err(io::Error::other("the writer has already finished")),
        }
    }
}

impl Write for OffThreadWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.chunk.extend_from_slice(bytes);
        self.commit()
    }

    /// Buffered bytes go out with [`OffThreadWriter::finish`]; flushing midway is not needed.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for OffThreadWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn everything_written_arrives_in_order() {
        let sink = Shared::default();
        let mut writer = OffThreadWriter::new(sink.clone());
        let mut expected = Vec::new();
        for i in 0..300_000u32 {
            let piece = i.to_le_bytes();
            writer.write_all(&piece).unwrap();
            expected.extend_from_slice(&piece);
        }
        writer.finish().unwrap();
        assert_eq!(*sink.0.lock().unwrap(), expected);
    }

    #[test]
    fn a_failing_sink_is_reported() {
        let mut writer = OffThreadWriter::new(Broken);
        let mut result = Ok(());
        for _ in 0..10 {
            result = result.and(writer.write_all(&[0u8; CHUNK]));
        }
        let finished = writer.finish();
        assert!(result.is_err() || finished.is_err());
    }
}
