//! Asking a gRPC server for its schema (server reflection, v1 then
//! v1alpha) over one HTTP/2 connection, before the first shot: what a
//! `tank_type = grpc` queue without `proto` needs to compile its ammo.
//!
//! Each request of the exchange goes on a stream of its own (one message
//! in, one answer out), which every reflection service serves; what to ask
//! and how to read the answers is `tank_grpc::reflection`'s.

use bytes::Bytes;
use tank_grpc::reflection::{self, Collector, Next};
use tank_grpc::Status;
use tank_stats::NetCode;

use super::pool::{self, Ready};
use super::H2Gun;

/// Why a reflection call failed.
enum CallError {
    /// The server has no such service (UNIMPLEMENTED, or a 404).
    Missing,
    /// Anything else, said for a person.
    Other(String),
}

impl H2Gun {
    /// The server's schema as a serialized `FileDescriptorSet`, by asking
    /// its reflection service; the error says what went wrong, for the
    /// config's `[grpc]` place.
    pub async fn reflect(&self) -> Result<Vec<u8>, String> {
        let ready = pool::open(&self.dial, None, b"")
            .await
            .map_err(|code| format!("cannot connect: {}", describe(code)))?;
        let mut missing = Vec::new();
        for path in reflection::PATHS {
            match self.exchange(&ready, path).await {
                Ok(bytes) => return Ok(bytes),
                Err(CallError::Missing) => missing.push(path),
                Err(CallError::Other(message)) => return Err(message),
            }
        }
        Err(format!(
            "the server has no reflection service (asked {}): name the schema with \
             `[grpc] proto`",
            missing.join(" and ")
        ))
    }

    async fn exchange(&self, ready: &Ready, path: &str) -> Result<Vec<u8>, CallError> {
        let mut collector = Collector::default();
        let answer = self.call(ready, path, reflection::list_services()).await?;
        let mut next = collector.services(&answer).map_err(CallError::Other)?;
        while let Next::Ask(asks) = next {
            next = Next::Done;
            for ask in asks {
                let answer = self.call(ready, path, ask).await?;
                if let Next::Ask(more) = collector.files(&answer).map_err(CallError::Other)? {
                    next = match next {
                        Next::Ask(mut all) => {
                            all.extend(more);
                            Next::Ask(all)
                        }
                        Next::Done => Next::Ask(more),
                    };
                }
            }
        }
        let schema = collector.schema().map_err(CallError::Other)?;
        Ok(schema.to_descriptor_set())
    }

    /// One message to `path`, its one answer back.
    async fn call(
        &self,
        ready: &Ready,
        path: &str,
        message: Vec<u8>,
    ) -> Result<Vec<u8>, CallError> {
        let other =
            |what: &str, code: NetCode| CallError::Other(format!("{what}: {}", describe(code)));
        let block = super::request::encode([
            (&b":method"[..], &b"POST"[..]),
            (b":scheme", self.scheme.as_bytes()),
            (b":authority", self.authority.as_bytes()),
            (b":path", path.as_bytes()),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        ]);
        let mut frame = Vec::with_capacity(5 + message.len());
        frame.push(0);
        frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
        frame.extend_from_slice(&message);
        let request = tank_h2::Request {
            block,
            body: Bytes::from(frame),
            head: false,
        };
        let mut collect = tank_h2::Collect::Body(Vec::new());
        let mut stream = ready.conn.open(&request, &mut collect).map_err(|closed| {
            other(
                "the connection",
                super::outcome::net_code(tank_h2::Failure::NotSent(closed)),
            )
        })?;
        let ended = stream.end().await;
        let answer = stream.finish();
        ended.map_err(|failure| other("the answer", super::outcome::net_code(failure)))?;
        if answer.status == 404 {
            return Err(CallError::Missing);
        }
        let status = answer
            .grpc_status
            .as_deref()
            .and_then(Status::parse)
            .unwrap_or(Status::UNKNOWN);
        match status {
            Status::OK => {}
            Status(12) => return Err(CallError::Missing),
            status => {
                let message = answer
                    .grpc_message
                    .as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default();
                return Err(CallError::Other(format!(
                    "the reflection service answered {} {message}",
                    status.name()
                )));
            }
        }
        let tank_h2::Collect::Body(data) = answer.collect else {
            return Err(CallError::Other(
                "the reflection answer was not kept".into(),
            ));
        };
        // One message: its 5-byte frame head, then the message.
        if data.len() < 5 || data[0] != 0 {
            return Err(CallError::Other(
                "the reflection answer is not one uncompressed gRPC message".into(),
            ));
        }
        let length = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
        data.get(5..5 + length)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| CallError::Other("the reflection answer is cut short".into()))
    }
}

fn describe(code: NetCode) -> String {
    format!("{} ({})", code.describe(), code.0)
}
