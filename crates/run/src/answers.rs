//! The answers log (`writelog`): request and reply of the shots it selects.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use tank_engine::Answer;

/// Start the thread writing answers to `file`.
pub fn spawn(
    answers: Receiver<Answer>,
    file: File,
) -> std::io::Result<JoinHandle<std::io::Result<u64>>> {
    std::thread::Builder::new().name("answers".into()).spawn(move || {
        let mut out = BufWriter::new(file);
        let mut written = 0;
        for answer in answers {
            let s = &answer.sample;
            writeln!(
                out,
                "---- {}.{:03} tag={} net_code={} proto_code={} interval_real={}us size_out={} size_in={}",
                s.start_unix_us / 1_000_000,
                s.start_unix_us / 1000 % 1000,
                String::from_utf8_lossy(&s.tag),
                s.measured.net_code.0,
                s.measured.proto_code,
                s.measured.interval_real_us,
                s.measured.size_out,
                s.measured.size_in
            )?;
            writeln!(out, ">>> request ({} bytes)", answer.request.len())?;
            out.write_all(&answer.request)?;
            // What is kept is the reply as text (HTTP/2's headers decoded, its
            // trailers after the body), not its bytes on the wire (size_in).
            writeln!(
                out,
                "\n<<< reply ({} bytes kept; {} bytes in on the wire)",
                answer.reply.len(),
                s.measured.size_in
            )?;
            out.write_all(&answer.reply)?;
            out.write_all(b"\n")?;
            written += 1;
        }
        out.flush()?;
        Ok(written)
    })
}
