use super::*;
use proptest::prelude::*;

/// The whole bytes of `request`, read back from `file` if spilled.
fn whole(request: Request, file: &SpillFile) -> Vec<u8> {
    let mut out = Vec::new();
    request
        .bytes
        .write_to(file, &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        })
        .unwrap();
    assert_eq!(out.len() as u64, request.bytes.len());
    out
}

/// Frame `chunks`, spilling the request in progress after each when `spilling`.
fn split_with(chunks: &[&[u8]], spilling: bool) -> Result<Vec<Vec<u8>>, FrameError> {
    let file = SpillFile::new();
    let mut framer = Framer::default();
    let mut out = Vec::new();
    for chunk in chunks {
        framer.feed(chunk, 0, &mut |r| out.push(r))?;
        if spilling {
            framer.spill(&file).unwrap();
        }
    }
    Ok(out.into_iter().map(|r| whole(r, &file)).collect())
}

fn split(chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, FrameError> {
    split_with(chunks, false)
}

#[test]
fn a_spilled_body_keeps_its_head_in_memory_and_reads_back_whole() {
    let head = b"POST /p HTTP/1.1\r\nContent-Length: 4000\r\n\r\n";
    let post = [&head[..], &[b'x'; 4000]].concat();
    let file = SpillFile::new();
    let mut framer = Framer::default();
    let mut out = Vec::new();
    framer.feed(&post[..3000], 0, &mut |r| out.push(r)).unwrap();
    let before = framer.held();
    framer.spill(&file).unwrap();
    assert!(framer.held() < before / 10, "{} of {before}", framer.held());
    assert_eq!(framer.partial_len(), 3000);
    framer.feed(&post[3000..], 1, &mut |r| out.push(r)).unwrap();
    let request = out.pop().unwrap();
    assert_eq!(request.bytes.head, head);
    assert_eq!(request.bytes.tail.len(), post.len() - 3000);
    assert_eq!(whole(request, &file), post);
}

const GET: &[u8] = b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
const POST: &[u8] = b"POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
const CHUNKED: &[u8] =
    b"PUT /c HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n";
const BARE_LF: &[u8] = b"DELETE /d HTTP/1.0\nX: y\n\n";
const LONG_CHUNKED: &[u8] = b"POST /l HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
    10\r\n0123456789abcdef\r\n8\r\n01234567\r\n0\r\nA: 1\r\nB: 2\r\n\r\n";

#[test]
fn requests_end_where_their_framing_says() {
    let all = [GET, POST, CHUNKED, BARE_LF].concat();
    assert_eq!(split(&[&all]).unwrap(), [GET, POST, CHUNKED, BARE_LF]);
}

#[test]
fn a_request_keeps_its_first_bytes_time_and_empty_lines_between_are_skipped() {
    let mut framer = Framer::default();
    let mut out = Vec::new();
    framer.feed(&GET[..5], 7, &mut |r| out.push(r)).unwrap();
    assert_eq!(framer.in_progress_since(), Some(7));
    framer.feed(&GET[5..], 9, &mut |r| out.push(r)).unwrap();
    framer.feed(b"\r\n", 10, &mut |r| out.push(r)).unwrap();
    framer.feed(GET, 11, &mut |r| out.push(r)).unwrap();
    assert_eq!(out.iter().map(|r| r.at_us).collect::<Vec<_>>(), [7, 11]);
    assert_eq!(framer.in_progress_since(), None);
}

#[test]
fn bytes_that_are_not_http_fail_at_their_offset() {
    let err = split(&[GET, b"\x16\x01\x01"]).unwrap_err();
    assert_eq!(err.at, GET.len() as u64);
    assert!(err.message.contains("0x16"), "{}", err.message);
    let err = split(&[b"GET / HTTP/2.0\r\n\r\n"]).unwrap_err();
    assert!(err.message.contains("HTTP/1.x"), "{}", err.message);
    let err = split(&[b"*1\r\n$4\r\nPING\r\n"]).unwrap_err();
    assert!(err.message.starts_with("`*1` is not"), "{}", err.message);
    assert!(split(&[b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"]).is_err());
    assert!(split(&[b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"]).is_err());
    // A broken chunked body fails at its request, saying what was expected.
    let err = split(&[
        GET,
        b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ])
    .unwrap_err();
    assert_eq!(err.at, GET.len() as u64);
    assert!(err.message.contains("where hex digits"), "{}", err.message);
}

/// Feed `chunks` (chunk i captured at time i) to a framer for a stream
/// from its middle: its requests with their times, and the bytes skipped.
fn split_mid_stream(chunks: &[&[u8]]) -> (Vec<(u64, Vec<u8>)>, Option<u64>) {
    let mut framer = Framer::mid_stream();
    let mut out = Vec::new();
    let mut skipped = None;
    for (at, chunk) in chunks.iter().enumerate() {
        framer
            .feed(chunk, at as u64, &mut |r| out.push((r.at_us, r.bytes.head)))
            .unwrap();
        skipped = skipped.or(framer.take_skipped());
    }
    (out, skipped)
}

#[test]
fn a_stream_from_its_middle_starts_at_its_first_request_line() {
    // The tail of a POST body and of a header block, then two requests.
    let tail: &[u8] = b"dy of an upload\r\nX-Rest: 1\r\n\r\n";
    let stream = [tail, GET, POST].concat();
    let (out, skipped) = split_mid_stream(&[&stream[..20], &stream[20..40], &stream[40..]]);
    assert_eq!(skipped, Some(tail.len() as u64));
    assert_eq!(out, [(1, GET.to_vec()), (2, POST.to_vec())]);
}

#[test]
fn a_stream_from_its_middle_that_starts_on_a_request_skips_nothing() {
    let (out, skipped) = split_mid_stream(&[GET]);
    assert_eq!((out, skipped), (vec![(0, GET.to_vec())], None));
}

#[test]
fn a_long_line_from_the_middle_is_body_up_to_its_end() {
    let mut framer = Framer::mid_stream();
    let long = vec![b'x'; MAX_REQUEST_LINE + 10];
    // A request line glued to the end of a long line is not at a line start.
    framer.feed(&long, 0, &mut |_| {}).unwrap();
    framer.feed(b"GET / HTTP/1.1\r\n", 1, &mut |_| {}).unwrap();
    assert_eq!(framer.still_searching(), Some(long.len() as u64 + 16));
    let mut out = Vec::new();
    framer.feed(GET, 2, &mut |r| out.push(r.bytes)).unwrap();
    assert_eq!(out, [RequestBytes::from(GET.to_vec())]);
    assert_eq!(framer.take_skipped(), Some(long.len() as u64 + 16));
    assert_eq!(framer.take_skipped(), None);
}

proptest! {
    #[test]
    fn a_stream_from_its_middle_gives_every_request_after_what_it_skips(
        garbage in "[a-z0-9 :\r\n]{0,200}",
        picks in proptest::collection::vec(0usize..4, 1..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        // Garbage ends its last line, so the first request starts a line.
        let garbage = if garbage.is_empty() || garbage.ends_with('\n') {
            garbage
        } else {
            garbage + "\n"
        };
        let all = [GET, POST, CHUNKED, BARE_LF];
        let want: Vec<&[u8]> = picks.iter().map(|&i| all[i]).collect();
        let stream = [garbage.as_bytes(), &want.concat()].concat();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.extend([0, stream.len()]);
        cuts.sort();
        let chunks: Vec<&[u8]> = cuts.windows(2).map(|w| &stream[w[0]..w[1]]).collect();
        let (out, skipped) = split_mid_stream(&chunks);
        let got: Vec<Vec<u8>> = out.into_iter().map(|(_, bytes)| bytes).collect();
        prop_assert_eq!(got, want);
        let expected_skip = (!garbage.is_empty()).then_some(garbage.len() as u64);
        prop_assert_eq!(skipped, expected_skip);
    }

    #[test]
    fn any_split_of_a_concatenation_gives_exactly_its_requests_spilled_or_not(
        picks in proptest::collection::vec(0usize..5, 1..12),
        cuts in proptest::collection::vec(any::<usize>(), 0..30),
        spilling in any::<bool>(),
    ) {
        let all = [GET, POST, CHUNKED, BARE_LF, LONG_CHUNKED];
        let want: Vec<&[u8]> = picks.iter().map(|&i| all[i]).collect();
        let stream = want.concat();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.push(0);
        cuts.push(stream.len());
        cuts.sort();
        let chunks: Vec<&[u8]> = cuts.windows(2).map(|w| &stream[w[0]..w[1]]).collect();
        prop_assert_eq!(split_with(&chunks, spilling).unwrap(), want);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        mid_stream in any::<bool>(),
    ) {
        let mut framer = if mid_stream { Framer::mid_stream() } else { Framer::default() };
        for chunk in &chunks {
            if framer.feed(chunk, 0, &mut |_| {}).is_err() {
                break;
            }
        }
    }
}

#[test]
fn tls_is_told_apart_from_other_bytes_that_are_not_http() {
    let err = split(&[GET, b"\x16\x03\x01\x02\x00"]).unwrap_err();
    assert_eq!((err.at, err.unreadable), (GET.len() as u64, Some("TLS")));
    assert_eq!(
        err.message,
        "a TLS record (bytes 16 03 01): TLS, not HTTP/1.x"
    );
    let err = split(&[b"\x80\x2e\x01\x00\x02"]).unwrap_err();
    assert_eq!(err.unreadable, Some("TLS"), "SSLv2: {}", err.message);
    let err = split(&[b"\x05\x01\x00"]).unwrap_err();
    assert_eq!(err.unreadable, None, "SOCKS is not TLS: {}", err.message);
}

#[test]
fn a_bad_header_line_is_quoted_at_its_own_offset() {
    let folded = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n";
    let err = split(&[GET, folded]).unwrap_err();
    let line_at = GET.len() + folded.windows(8).position(|w| w == b" chunked").unwrap();
    assert_eq!(err.at, line_at as u64);
    assert!(
        err.message
            .contains("its line ` chunked` continues the line before (obs-fold)"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .ends_with(&format!("the request starts at stream byte {}", GET.len())),
        "{}",
        err.message
    );
    let err = split(&[b"GET / HTTP/1.1\r\nHost h\r\n\r\n"]).unwrap_err();
    assert!(
        err.message.contains("`Host h` has no `:`"),
        "{}",
        err.message
    );
}

#[test]
fn a_segment_starts_a_request_only_with_a_whole_request_line() {
    assert!(starts_request(GET));
    assert!(!starts_request(b"GET / HTTP/1.1"));
    assert!(!starts_request(b"tent-Length: 4\r\n\r\n"));
}
