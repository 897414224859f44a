//! memcached's ASCII protocol (`tank_type = memcached`).
//!
//! A request is one or more commands, sent verbatim; the gun reads the
//! request to know which replies to expect, in order: a retrieval (`get`,
//! `gets`, `gat`, `gats`) is answered by `VALUE <key> <flags> <bytes>
//! [<cas>]` blocks and `END`, `stats` by `STAT` lines and `END`, every other
//! command by one line; a command ending in `noreply` by nothing. The reply is
//! whole when every expected reply has arrived.
//!
//! Proto codes are HTTP-shaped, so autostop's `http(...)` criteria, `writelog
//! = proto_warning` and the reports' code tables read them without a special
//! case:
//!
//! | code | reply |
//! |------|-------|
//! | 200  | a hit (every key asked for came back), `STORED`, `DELETED`, `TOUCHED`, `OK`, a number, `VERSION`, stats |
//! | 206  | a multiget that found some of its keys, not all |
//! | 404  | a miss (a retrieval that found none), `NOT_FOUND` |
//! | 409  | `NOT_STORED`, `EXISTS` |
//! | 400  | `CLIENT_ERROR ...` |
//! | 500  | `SERVER_ERROR ...` |
//! | 501  | `ERROR` (the server does not know the command) |
//!
//! A request of several commands gets the worst of their codes (errors, then
//! 409, 404, 206, 200). A reply line that fits none of these breaks the reply
//! (net code 71). A request may be sent again on a closed kept connection
//! when each of its commands may be repeated (retrievals, `set`, `delete`,
//! `touch`, `version`, `stats`); `add`, `cas`, `append`, `prepend`, `incr`
//! and `decr` may have been acted on, and are not.

use smallvec::SmallVec;

use super::Progress;

/// A hit, a stored value, or any other success.
pub const HIT: u16 = 200;
/// A multiget that found some of its keys, not all.
pub const PARTIAL: u16 = 206;
/// A miss, or `NOT_FOUND`.
pub const MISS: u16 = 404;
/// `NOT_STORED` or `EXISTS`.
pub const NOT_STORED: u16 = 409;
/// `CLIENT_ERROR`.
pub const CLIENT_ERROR: u16 = 400;
/// `SERVER_ERROR`.
pub const SERVER_ERROR: u16 = 500;
/// `ERROR`: an unknown command.
pub const ERROR: u16 = 501;

/// The longest reply line read (a `VALUE` line with a 250-byte key fits).
const MAX_LINE: usize = 2048;

/// What one command of a request is answered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `VALUE` blocks then `END`, for this many keys.
    Values { keys: u32 },
    /// `STAT` lines then `END`.
    Stats,
    /// One line.
    Line,
}

/// The replies a request expects, in order (inline for the usual one or two
/// commands: a request's reply allocates nothing), and whether it may be
/// sent again.
fn expected(request: &[u8]) -> (SmallVec<[Expect; 2]>, bool) {
    let mut expect = SmallVec::new();
    let mut repeatable = true;
    let mut rest = request;
    while !rest.is_empty() {
        let (line, after) = match memchr::memchr(b'\n', rest) {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = after;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut words = words(line);
        let Some(command) = words.next() else {
            continue;
        };
        // What the command needs of its arguments: how many, the fourth
        // (a storage command's data size) and the last (`noreply`).
        let (mut args, mut fourth, mut last) = (0usize, None, None);
        for word in words {
            args += 1;
            if args == 4 {
                fourth = Some(word);
            }
            last = Some(word);
        }
        let noreply = last == Some(&b"noreply"[..]);
        let kind = match command {
            b"get" | b"gets" => Expect::Values { keys: args as u32 },
            // The first argument is the new expiry time.
            b"gat" | b"gats" => Expect::Values {
                keys: args.saturating_sub(1) as u32,
            },
            b"stats" => Expect::Stats,
            _ => Expect::Line,
        };
        match command {
            b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" => {
                // The data block follows: skip it, so its bytes are not read as commands.
                let bytes = fourth
                    .and_then(decimal)
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(0);
                // Saturating: a size past usize (the ammo's) takes the rest.
                rest = rest.get(bytes.saturating_add(2)..).unwrap_or(&[]);
                repeatable &= matches!(command, b"set" | b"replace");
            }
            b"get" | b"gets" | b"gat" | b"gats" | b"delete" | b"touch" | b"version" | b"stats" => {}
            _ => repeatable = false,
        }
        if !noreply {
            expect.push(kind);
        }
    }
    (expect, repeatable)
}

/// Whether `request` may be sent again (see the module docs).
pub(super) fn may_resend(request: &[u8]) -> bool {
    expected(request).1
}

/// Where the reader stands in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Reading a line.
    Line,
    /// Inside a `VALUE`'s data block: this many bytes left, the last two `\r\n`.
    Data { left: u64 },
}

/// One memcached reply (to every command of a request) being read.
pub(super) struct McReply {
    expect: SmallVec<[Expect; 2]>,
    /// The command whose reply is being read.
    index: usize,
    /// Values read for the current retrieval.
    values: u32,
    /// The worst code so far.
    code: Option<u16>,
    at: At,
    /// A line cut between reads, kept until its end arrives (a line read
    /// whole is read where it lies).
    line: Vec<u8>,
}

impl McReply {
    /// The reply to `request`.
    pub(super) fn new(request: &[u8]) -> Self {
        McReply {
            expect: expected(request).0,
            index: 0,
            values: 0,
            code: None,
            at: At::Line,
            line: Vec::new(),
        }
    }

    /// Whole before any byte is read: every command said `noreply`.
    pub(super) fn whole_unread(&self) -> Option<u16> {
        self.expect.is_empty().then_some(HIT)
    }

    pub(super) fn feed(&mut self, data: &[u8]) -> Progress {
        match self.feed_some(data) {
            // Bytes past the last reply belong to no request.
            (used, Progress::Whole { .. }) if used < data.len() => Progress::Broken,
            (_, progress) => progress,
        }
    }

    /// Feed `data` up to the reply's end: the bytes taken, and where the
    /// reply stands (the rest belongs to the next request's reply).
    pub(super) fn feed_some(&mut self, data: &[u8]) -> (usize, Progress) {
        let mut rest = data;
        while !rest.is_empty() && self.index < self.expect.len() {
            match self.at {
                At::Data { left } => {
                    let take = (rest.len() as u64).min(left) as usize;
                    // The block's last two bytes must be its "\r\n": those in this read.
                    for at in left.saturating_sub(2)..take as u64 {
                        if rest[at as usize] != b"\r\n"[(at + 2 - left) as usize] {
                            return (data.len() - rest.len(), Progress::Broken);
                        }
                    }
                    rest = &rest[take..];
                    self.at = match left - take as u64 {
                        0 => At::Line,
                        left => At::Data { left },
                    };
                }
                At::Line => {
                    let Some(end) = memchr::memchr(b'\n', rest) else {
                        if self.line.len() + rest.len() > MAX_LINE {
                            return (data.len() - rest.len(), Progress::Broken);
                        }
                        self.line.extend_from_slice(rest);
                        rest = &[];
                        break;
                    };
                    if self.line.len() + end > MAX_LINE {
                        return (data.len() - rest.len(), Progress::Broken);
                    }
                    let read = if self.line.is_empty() {
                        self.read_line(&rest[..end])
                    } else {
                        let mut line = std::mem::take(&mut self.line);
                        line.extend_from_slice(&rest[..end]);
                        let read = self.read_line(&line);
                        line.clear();
                        self.line = line;
                        read
                    };
                    rest = &rest[end + 1..];
                    if !read {
                        return (data.len() - rest.len(), Progress::Broken);
                    }
                }
            }
        }
        let progress = match self.code {
            Some(code) if self.index == self.expect.len() => Progress::Whole {
                code,
                keep_alive: true,
            },
            _ => Progress::More,
        };
        (data.len() - rest.len(), progress)
    }

    /// Take one whole reply line (its `\n` cut); `false` when it fits no reply.
    fn read_line(&mut self, line: &[u8]) -> bool {
        let Some(line) = line.strip_suffix(b"\r") else {
            return false;
        };
        let expect = self.expect[self.index];
        let error = if line == b"ERROR" {
            Some(ERROR)
        } else if line.starts_with(b"CLIENT_ERROR") {
            Some(CLIENT_ERROR)
        } else if line.starts_with(b"SERVER_ERROR") {
            Some(SERVER_ERROR)
        } else {
            None
        };
        let done = match (expect, error) {
            (_, Some(code)) => code,
            (Expect::Values { keys }, None) => {
                if let Some(header) = line.strip_prefix(b"VALUE ") {
                    let Some(bytes) = value_bytes(header) else {
                        return false;
                    };
                    self.values += 1;
                    self.at = At::Data {
                        left: bytes.saturating_add(2),
                    };
                    return true;
                }
                if line != b"END" {
                    return false;
                }
                match std::mem::take(&mut self.values) {
                    0 => MISS,
                    found if found < keys => PARTIAL,
                    _ => HIT,
                }
            }
            (Expect::Stats, None) if line.starts_with(b"STAT ") => return true,
            (Expect::Stats, None) if line == b"END" => HIT,
            (Expect::Stats, None) => return false,
            (Expect::Line, None) => match line {
                b"STORED" | b"DELETED" | b"TOUCHED" | b"OK" => HIT,
                b"NOT_FOUND" => MISS,
                b"NOT_STORED" | b"EXISTS" => NOT_STORED,
                _ if line.starts_with(b"VERSION ") => HIT,
                _ if !line.is_empty() && line.iter().all(u8::is_ascii_digit) => HIT,
                _ => return false,
            },
        };
        self.code = Some(match self.code {
            Some(code) if rank(code) >= rank(done) => code,
            _ => done,
        });
        self.index += 1;
        true
    }
}

/// The data block's size in `<key> <flags> <bytes> [<cas>]`.
fn value_bytes(header: &[u8]) -> Option<u64> {
    let after_key = memchr::memchr(b' ', header)? + 1;
    let after_flags = after_key + memchr::memchr(b' ', &header[after_key..])? + 1;
    let rest = &header[after_flags..];
    decimal(&rest[..memchr::memchr(b' ', rest).unwrap_or(rest.len())])
}

/// A decimal number as Rust parses a `u64`: plain digits the quick way.
fn decimal(digits: &[u8]) -> Option<u64> {
    if !digits.is_empty() && digits.len() <= 19 && digits.iter().all(u8::is_ascii_digit) {
        return Some(digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')));
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The words of a command line: what lies between spaces, found a stretch
/// at a time (a key is tens of bytes).
fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = line;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        if !word.is_empty() {
            return Some(word);
        }
    })
}

/// How bad a code is: the request's code is its commands' worst.
fn rank(code: u16) -> u8 {
    match code {
        HIT => 0,
        PARTIAL => 1,
        MISS => 2,
        NOT_STORED => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(request: &[u8], chunks: &[&[u8]]) -> Vec<Progress> {
        let mut reply = McReply::new(request);
        chunks.iter().map(|chunk| reply.feed(chunk)).collect()
    }

    fn whole(code: u16) -> Progress {
        Progress::Whole {
            code,
            keep_alive: true,
        }
    }

    #[test]
    fn a_storage_commands_data_size_past_usize_is_skipped_to_the_end() {
        // The size is the request's (the ammo's): past what the request
        // holds, the data block takes the rest of it.
        for size in ["18446744073709551614", "18446744073709551615"] {
            let request = format!("set a 0 0 {size}\r\nhi\r\nget b\r\n");
            assert!(may_resend(request.as_bytes()));
            assert_eq!(
                read(request.as_bytes(), &[b"CLIENT_ERROR bad data chunk\r\n"]),
                vec![whole(CLIENT_ERROR)]
            );
        }
    }

    #[test]
    fn replies_map_to_their_codes() {
        let cases: &[(&[u8], &[u8], u16)] = &[
            (b"get a\r\n", b"VALUE a 0 2\r\nhi\r\nEND\r\n", HIT),
            (b"get a\r\n", b"END\r\n", MISS),
            (
                b"get a b c\r\n",
                b"VALUE a 0 1\r\nx\r\nVALUE c 0 0\r\n\r\nEND\r\n",
                PARTIAL,
            ),
            (b"gets a\r\n", b"VALUE a 0 1 77\r\nx\r\nEND\r\n", HIT),
            (b"set a 0 0 2\r\nhi\r\n", b"STORED\r\n", HIT),
            (b"add a 0 0 2\r\nhi\r\n", b"NOT_STORED\r\n", NOT_STORED),
            (b"cas a 0 0 2 5\r\nhi\r\n", b"EXISTS\r\n", NOT_STORED),
            (b"delete a\r\n", b"NOT_FOUND\r\n", MISS),
            (b"delete a\r\n", b"DELETED\r\n", HIT),
            (b"incr n 1\r\n", b"42\r\n", HIT),
            (b"bogus\r\n", b"ERROR\r\n", ERROR),
            (
                b"set a 0 0 z\r\n",
                b"CLIENT_ERROR bad data chunk\r\n",
                CLIENT_ERROR,
            ),
            (
                b"get a\r\n",
                b"SERVER_ERROR out of memory\r\n",
                SERVER_ERROR,
            ),
            (b"version\r\n", b"VERSION 1.6.21\r\n", HIT),
            (b"stats\r\n", b"STAT pid 1\r\nSTAT uptime 2\r\nEND\r\n", HIT),
            // Several commands: the worst code.
            (b"set a 0 0 1\r\nx\r\nget b\r\n", b"STORED\r\nEND\r\n", MISS),
            // A noreply command has no reply.
            (
                b"set a 0 0 1 noreply\r\nx\r\nget a\r\n",
                b"VALUE a 0 1\r\nx\r\nEND\r\n",
                HIT,
            ),
        ];
        for (request, reply, code) in cases {
            assert_eq!(
                read(request, &[reply]),
                vec![whole(*code)],
                "{}",
                String::from_utf8_lossy(request)
            );
        }
    }

    #[test]
    fn a_reply_that_fits_no_command_breaks() {
        for (request, reply) in [
            (&b"get a\r\n"[..], &b"STORED\r\n"[..]),
            (b"set a 0 0 1\r\nx\r\n", b"END\r\n"),
            (b"get a\r\n", b"VALUE a 0 2\r\nhi!\r\nEND\r\n"),
            (b"get a\r\n", b"VALUE a 0\r\n"),
            (b"get a\r\n", b"END\n"),
            (b"get a\r\n", b"END\r\nEND\r\n"),
        ] {
            assert_eq!(
                read(request, &[reply]).last(),
                Some(&Progress::Broken),
                "{}",
                String::from_utf8_lossy(reply)
            );
        }
        let long = vec![b'x'; MAX_LINE + 1];
        assert_eq!(read(b"get a\r\n", &[&long]), vec![Progress::Broken]);
    }

    #[test]
    fn only_requests_that_may_be_repeated_are_resent() {
        assert!(may_resend(b"get a b\r\n"));
        assert!(may_resend(b"set a 0 0 1\r\nx\r\nget a\r\n"));
        assert!(!may_resend(b"incr a 1\r\n"));
        assert!(!may_resend(b"add a 0 0 1\r\nx\r\n"));
        // The data block is not read as a command.
        assert!(may_resend(b"set a 0 0 9\r\nincr a 1\r\n"));
        assert!(McReply::new(b"set a 0 0 1 noreply\r\nx\r\n")
            .whole_unread()
            .is_some());
        assert!(McReply::new(b"get a\r\n").whole_unread().is_none());
    }

    /// A pipelined request of gets and sets, and the server's reply to it.
    fn exchange() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, u16)> {
        let command = prop_oneof![
            // get of 1-3 keys, each a hit (with a value of 0-40 bytes) or a miss.
            proptest::collection::vec(proptest::option::of(0usize..40), 1..4).prop_map(|keys| {
                let names: Vec<String> = (0..keys.len()).map(|i| format!("k{i}")).collect();
                let request = format!("get {}\r\n", names.join(" "));
                let mut reply = Vec::new();
                for (name, value) in names.iter().zip(&keys) {
                    if let Some(size) = value {
                        reply.extend_from_slice(format!("VALUE {name} 0 {size}\r\n").as_bytes());
                        // Data that looks like protocol lines must not confuse the reader.
                        reply.extend((0..*size).map(|i| b"END\r\n"[i % 5]));
                        reply.extend_from_slice(b"\r\n");
                    }
                }
                reply.extend_from_slice(b"END\r\n");
                let found = keys.iter().filter(|k| k.is_some()).count();
                let code = match found {
                    0 => MISS,
                    n if n < keys.len() => PARTIAL,
                    _ => HIT,
                };
                (request.into_bytes(), reply, code)
            }),
            (0usize..40, any::<bool>()).prop_map(|(size, stored)| {
                let mut request = format!("set k 0 0 {size}\r\n").into_bytes();
                request.extend(std::iter::repeat_n(b'\n', size));
                request.extend_from_slice(b"\r\n");
                let (reply, code) = if stored {
                    (b"STORED\r\n".to_vec(), HIT)
                } else {
                    (b"NOT_STORED\r\n".to_vec(), NOT_STORED)
                };
                (request, reply, code)
            }),
        ];
        proptest::collection::vec(command, 1..5).prop_map(|commands| {
            let mut request = Vec::new();
            let mut reply = Vec::new();
            let mut code = HIT;
            for (q, r, c) in commands {
                request.extend(q);
                reply.extend(r);
                if rank(c) > rank(code) {
                    code = c;
                }
            }
            (request, reply, code)
        })
    }

    proptest! {
        #[test]
        fn words_and_numbers_read_as_splitting_and_parsing_read_them(
            line in "[ a0+9]{0,40}",
        ) {
            let line = line.as_bytes();
            let split: Vec<&[u8]> = line.split(|b| *b == b' ').filter(|w| !w.is_empty()).collect();
            prop_assert_eq!(words(line).collect::<Vec<_>>(), split);
            let third = line.split(|b| *b == b' ').nth(2);
            let parsed = third.and_then(|n| std::str::from_utf8(n).ok()?.parse::<u64>().ok());
            prop_assert_eq!(value_bytes(line), parsed);
        }

        #[test]
        fn any_split_of_the_stream_reads_the_same_reply(
            (request, reply, code) in exchange(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(reply.len() + 1)).collect();
            cuts.push(0);
            cuts.push(reply.len());
            cuts.sort_unstable();
            let mut parser = McReply::new(&request);
            let mut last = Progress::More;
            for pair in cuts.windows(2) {
                let chunk = &reply[pair[0]..pair[1]];
                if chunk.is_empty() {
                    continue;
                }
                prop_assert_eq!(last, Progress::More, "whole before the last byte");
                last = parser.feed(chunk);
            }
            prop_assert_eq!(last, whole(code));
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            request in proptest::collection::vec(any::<u8>(), 0..64),
            reply in proptest::collection::vec(any::<u8>(), 0..256),
        ) {
            let mut parser = McReply::new(&request);
            let _ = parser.feed(&reply);
        }
    }
}
