//! How an HTTP/2 stream's reply is read and classified: the status (or, for
//! gRPC, `grpc-status` by Pandora's table) as the proto code, h2's errors as
//! net codes, and the reply written for the answers log as HTTP/1-shaped
//! text (`HTTP/2 200`, the headers, a blank line, the body, then any
//! trailers as header lines).

use bytes::Bytes;
use h2::client::ResponseFuture;
use http::HeaderMap;
use tank_grpc::Status;
use tank_stats::NetCode;

use crate::http::Limits;
use crate::netcode;

/// What a gun's replies mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTTP: the status is the proto code.
    Http,
    /// gRPC: `grpc-status` (in the trailers, or in the head of a reply that
    /// has no body) by Pandora's table; a reply without one has the HTTP
    /// status when that is not 200, else UNKNOWN's 500.
    Grpc,
}

/// The net code of an h2 error: the server's reset or GOAWAY with its
/// reason; the kernel's errno; the connection gone without either; 71 for a
/// protocol error h2 found in what the server sent.
pub(super) fn net_code(error: &h2::Error) -> NetCode {
    let reason = || error.reason().map_or(0, u32::from);
    if error.is_go_away() && error.is_remote() {
        return NetCode::h2(NetCode::H2_GOAWAY, reason());
    }
    if error.is_reset() && error.is_remote() {
        return NetCode::h2(NetCode::H2_RESET, reason());
    }
    match error.get_io() {
        Some(io) => io_code(io),
        None => NetCode::PROTOCOL,
    }
}

/// The connection failed under the stream: the errno when the kernel gave
/// one, else the connection was simply gone.
fn io_code(io: &std::io::Error) -> NetCode {
    match io.raw_os_error() {
        Some(_) => netcode::of_io(io),
        None => NetCode::H2_CONNECTION_LOST,
    }
}

/// Where a reply stands once it ended, or broke.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// The proto code so far (0 before the head).
    pub code: u16,
    /// gRPC's status, once read.
    pub grpc: Option<Status>,
}

/// Read the reply to a stream, within `limits` (the body's size; the head's
/// is h2's `max_header_list_size`), into `outcome` as it goes; `reply`, when
/// kept, gets its text up to its capacity. `Err` is the net code of a reply that broke.
pub(super) async fn read(
    response: ResponseFuture,
    kind: Kind,
    limits: &Limits,
    outcome: &mut Outcome,
    mut reply: Option<&mut Vec<u8>>,
) -> Result<(), NetCode> {
    let response = response.await.map_err(|e| net_code(&e))?;
    let status = response.status().as_u16();
    outcome.code = status;
    if let Some(reply) = reply.as_deref_mut() {
        write_head(reply, status, response.headers());
    }
    let in_head = grpc_status(response.headers());
    let mut body = response.into_body();
    let mut size: u64 = 0;
    while let Some(chunk) = body.data().await {
        let chunk: Bytes = chunk.map_err(|e| net_code(&e))?;
        // The window reopens at once: tank reads as fast as the server sends.
        let _ = body.flow_control().release_capacity(chunk.len());
        size += chunk.len() as u64;
        if size > limits.entity {
            // Dropping the stream resets it (CANCEL).
            return Err(NetCode::PROTOCOL);
        }
        if let Some(reply) = reply.as_deref_mut() {
            keep(reply, &chunk);
        }
    }
    let trailers = body.trailers().await.map_err(|e| net_code(&e))?;
    if let (Some(reply), Some(trailers)) = (reply, &trailers) {
        for (name, value) in trailers {
            keep(reply, name.as_str().as_bytes());
            keep(reply, b": ");
            keep(reply, value.as_bytes());
            keep(reply, b"\r\n");
        }
    }
    if kind == Kind::Grpc {
        let found = trailers.as_ref().and_then(grpc_status).or(in_head);
        match found {
            Some(status) => {
                outcome.grpc = Some(status);
                outcome.code = status.http_code();
            }
            None if status == 200 => {
                outcome.grpc = Some(Status::UNKNOWN);
                outcome.code = Status::UNKNOWN.http_code();
            }
            // A proxy's error page, say: its status tells more than UNKNOWN.
            None => {}
        }
    }
    Ok(())
}

fn grpc_status(headers: &HeaderMap) -> Option<Status> {
    Status::parse(headers.get("grpc-status")?.as_bytes())
}

/// Append `data` to `reply` as far as its capacity allows.
fn keep(reply: &mut Vec<u8>, data: &[u8]) {
    let room = reply.capacity().saturating_sub(reply.len()).min(data.len());
    reply.extend_from_slice(&data[..room]);
}

fn write_head(reply: &mut Vec<u8>, status: u16, headers: &HeaderMap) {
    keep(reply, format!("HTTP/2 {status}\r\n").as_bytes());
    for (name, value) in headers {
        keep(reply, name.as_str().as_bytes());
        keep(reply, b": ");
        keep(reply, value.as_bytes());
        keep(reply, b"\r\n");
    }
    keep(reply, b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_written_as_http1_text_within_the_kept_reply() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "text/plain".parse().unwrap());
        let mut reply = Vec::with_capacity(64);
        write_head(&mut reply, 404, &headers);
        assert_eq!(reply, b"HTTP/2 404\r\ncontent-type: text/plain\r\n\r\n");
        let mut small = Vec::with_capacity(4);
        write_head(&mut small, 200, &headers);
        assert_eq!(small, b"HTTP");
    }

    #[test]
    fn grpc_status_is_read_from_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(grpc_status(&headers), None);
        headers.insert("grpc-status", "14".parse().unwrap());
        assert_eq!(grpc_status(&headers), Some(Status(14)));
    }

    #[test]
    fn io_errors_keep_their_errno_and_a_close_is_connection_lost() {
        let reset = std::io::Error::from_raw_os_error(104);
        assert_eq!(io_code(&reset), NetCode::RESET);
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(io_code(&closed), NetCode::H2_CONNECTION_LOST);
        let library = h2::Error::from(h2::Reason::PROTOCOL_ERROR);
        assert_eq!(net_code(&library), NetCode::PROTOCOL);
    }
}
