//! Asking a gRPC server for its schema (server reflection, v1 then
//! v1alpha) over one HTTP/2 connection, before the first shot: what a
//! `tank_type = grpc` queue without `proto` needs to compile its ammo.
//!
//! Each request of the exchange goes on a stream of its own (one message
//! in, one answer out), which every reflection service serves; what to ask
//! and how to read the answers is `tank_grpc::reflection`'s.

use bytes::{Buf, Bytes};
use http::{Method, Request, Uri};
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
        let uri = Uri::builder()
            .scheme(self.scheme)
            .authority(self.authority.as_str())
            .path_and_query(path)
            .build()
            .map_err(|e| {
                CallError::Other(format!("`{}{path}` is not a URI: {e}", self.authority))
            })?;
        let request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .map_err(|e| CallError::Other(e.to_string()))?;
        let mut frame = Vec::with_capacity(5 + message.len());
        frame.push(0);
        frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
        frame.extend_from_slice(&message);
        let mut send = ready
            .send
            .clone()
            .ready()
            .await
            .map_err(|e| other("the connection", super::outcome::net_code(&e)))?;
        let (response, mut body) = send
            .send_request(request, false)
            .map_err(|e| other("sending", super::outcome::net_code(&e)))?;
        body.send_data(Bytes::from(frame), true)
            .map_err(|e| other("sending", super::outcome::net_code(&e)))?;
        let response = response
            .await
            .map_err(|e| other("the answer", super::outcome::net_code(&e)))?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Err(CallError::Missing);
        }
        let head_status = response
            .headers()
            .get("grpc-status")
            .and_then(|v| Status::parse(v.as_bytes()));
        let mut body = response.into_body();
        let mut data = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| other("the answer", super::outcome::net_code(&e)))?;
            let _ = body.flow_control().release_capacity(chunk.len());
            data.extend_from_slice(chunk.chunk());
        }
        let trailers = body
            .trailers()
            .await
            .map_err(|e| other("the answer", super::outcome::net_code(&e)))?;
        let status = trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .and_then(|v| Status::parse(v.as_bytes()))
            .or(head_status)
            .unwrap_or(Status::UNKNOWN);
        match status {
            Status::OK => {}
            Status(12) => return Err(CallError::Missing),
            status => {
                let message = trailers
                    .as_ref()
                    .and_then(|t| t.get("grpc-message"))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                return Err(CallError::Other(format!(
                    "the reflection service answered {} {message}",
                    status.name()
                )));
            }
        }
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
