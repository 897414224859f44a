#!/usr/bin/env python3
"""Write the shared ammo files of the corpus, byte for byte.

The files are committed; this script is how they were made (chunk sizes are computed,
line endings and gzip bytes are exact). Run it from anywhere: it writes next to itself.
gzip files use mtime 0 so the output is reproducible.
"""
import gzip
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, data):
    with open(os.path.join(HERE, name), 'wb') as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, mtime=0)


def chunk(req, tag=None, extra=b''):
    """A phantom chunk: `<size>[ tag][extra]\\n<req>\\n`."""
    head = b'%d' % len(req)
    if tag is not None:
        head += b' ' + tag
    return head + extra + b'\n' + req + b'\n'


GET_A = b'GET /a HTTP/1.1\r\nHost: example.org\r\n\r\n'
GET_B = b'GET /b/c?x=1 HTTP/1.1\r\nHost: example.org\r\nUser-Agent: tank\r\n\r\n'
POST_C = b'POST /c HTTP/1.1\r\nHost: example.org\r\nContent-Length: 5\r\n\r\nhello'
GET_LF = b'GET /lf HTTP/1.0\nHost: example.org\n\n'

# --- phantom (request-style) -------------------------------------------------------
PHANTOM_TAGS = chunk(GET_A, b'a') + chunk(GET_B) + chunk(POST_C, b'post') + chunk(GET_LF, b'lf')
write('phantom_tags.ammo', PHANTOM_TAGS)
write('phantom_notags.ammo', chunk(GET_A) + chunk(GET_B) + chunk(POST_C))
# blank LF and CRLF lines between chunks, after the last one, a header with a leading
# space, and extra fields after the tag (ignored)
write('phantom_blank_lines.ammo',
      chunk(GET_A, b'a') + b'\n\r\n\n' + b' ' + chunk(GET_B, b'b', b' ignored fields')
      + b'\r\n' + chunk(POST_C) + b'\n\n\r\n')
# header lines end in CRLF, the missile bytes keep their own line endings
write('phantom_crlf.ammo',
      b'%d crlf\r\n' % len(GET_A) + GET_A + b'\r\n' + b'%d\r\n' % len(GET_LF) + GET_LF + b'\r\n')
# a zero-size chunk acts as end of file: the chunk after it is never read
write('phantom_size0.ammo', chunk(GET_A, b'a') + chunk(GET_B, b'b') + b'0\n' + chunk(POST_C, b'never'))
# a negative size reads the rest of the file as one missile
write('phantom_negative.ammo', chunk(GET_A, b'a') + b'-1 rest\n' + GET_B + b'\n' + chunk(POST_C, b'c'))
# a negative size on the first line: not a digit, so the file is sniffed as uri ammo
write('phantom_negative_first.ammo', b'-1 rest\n' + GET_B + b'\n')
# garbage after the last chunk
write('phantom_trailing_garbage.ammo', chunk(GET_A, b'a') + chunk(GET_B) + b'this is not a header\n')
# the last chunk is shorter than its size
write('phantom_truncated.ammo', chunk(GET_A, b'a') + b'%d short\n' % (len(GET_B) + 10) + GET_B)
# a line of spaces between chunks is not blank: error
write('phantom_spaces_line.ammo', chunk(GET_A, b'a') + b'   \n' + chunk(GET_B))
# a tag with non-ASCII bytes is copied as is
write('phantom_utf8_tag.ammo', chunk(GET_A, 'тег'.encode('utf8')) + chunk(GET_B, b'b'))
# first byte is not a digit: sniffed as uri ammo
write('phantom_sniff_uri.ammo', b'/sniffed/one tag1\n/sniffed/two\n[Host: sniffed.org]\n/sniffed/three\n')
# a blank first line: also sniffed as uri ammo (the chunks become odd URIs)
write('phantom_blank_first.ammo', b'\n' + chunk(GET_A, b'a'))
write('phantom_empty.ammo', b'')
write('phantom_tags.ammo.gz', gz(PHANTOM_TAGS))
# gzip of uri ammo, ammo_type left at phantom: sniffed after decompression
write('uri_sniff.ammo.gz', gz(b'/gz/one\n/gz/two gztag\n'))

# --- uri -----------------------------------------------------------------------------
write('uri_basic.txt', b'/\n/one\n/one/two tagged\n/one/two/three?q=1&r=2\n/one/two/three/four/five/six\n')
# headers anywhere: the dict persists and, once the file loops, applies to the top too
write('uri_headers.txt',
      b'[Host: example.org]\n/first\n[User-Agent: tank]\n/second t2\n[Host: other.org]\n'
      b'[Connection: close]\n/third\n')
# leading spaces, tabs, extra fields, CRLF, blank lines, a compact header
write('uri_spacing.txt',
      b'   /leading tag\r\n\r\n\t/tabbed\n/extra tag more fields\n\n[Host:x]\n[  Spaced  :   value   ]\n/after\n')
# a header line with a leading space is a URI, not a header
write('uri_indented_header.txt', b'/a\n  [Host: y]\n')
# headers with the same name in different case are different headers
write('uri_header_case.txt', b'[host: lower]\n[Host: upper]\n[accept: */*]\n[X-B: 1]\n[X-A: 2]\n/x\n')
write('uri_only_headers.txt', b'[Host: example.org]\n[Connection: close]\n')
write('uri_spaces_line.txt', b'/a\n   \n/b\n')
write('uri_header_no_colon.txt', b'[NoColonHere]\n/a\n')
write('uri_utf8.txt', '/путь/к?q=значение\n/plain\n'.encode('utf8'))
write('uri_autocases.txt',
      b'/\n/a\n/a/b\n/a/b/c?x=/y/z\n/a/b/c/d/e/f/g\nnoslash/x\n/a?q=1\n//double//slash\n')
write('uri_many.txt', b''.join(b'/item/%d\n' % i for i in range(10)))

# --- uripost -------------------------------------------------------------------------
write('uripost_basic.txt',
      b'[Host: example.org]\n[Content-Type: application/json]\n'
      b'13 /api/items create\n{"name":"a"}\n'
      b'0 /api/ping ping\n'
      b'5 /api/echo\nhello\n'
      b'\n[Host: other.org]\n'
      b'3 /api/last last extra\nabc\n')
write('uripost_crlf.txt', b'[Host: example.org]\r\n7 /crlf crlf\r\nbody\r\n\r\n\r\n4 /two\r\nab\r\n\r\n')
write('uripost_missing_uri.txt', b'5\nhello\n')
write('uripost_truncated.txt', b'5 /a a\nhello\n50 /b b\nshort\n')
write('uripost_bad_size.txt', b'x /a a\nhello\n')
write('uripost_empty.txt', b'')

# --- access ----------------------------------------------------------------------------
write('access_basic.log',
      b'127.0.0.1 - - [21/Nov/2026:10:00:00 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8"\n'
      b'127.0.0.1 - - [21/Nov/2026:10:00:01 +0000] "POST /form HTTP/1.1" 200 12 "-" "curl/8"\n'
      b'127.0.0.1 - - [21/Nov/2026:10:00:02 +0000] "GET /search?q=tank HTTP/1.0" 200 1024 "-" "curl/8"\n'
      b'garbage line without quotes\n'
      b'127.0.0.1 - - [21/Nov/2026:10:00:03 +0000] "GET /noproto" 400 0 "-" "-"\n'
      b'127.0.0.1 - - [21/Nov/2026:10:00:04 +0000] "GET /noslash HTTP" 400 0 "-" "-"\n'
      b'127.0.0.1 - - [21/Nov/2026:10:00:05 +0000] "HEAD /head HTTP/1.1" 200 0 "-" "-"\n'
      b'127.0.0.1 - - [21/Nov/2026:10:00:06 +0000] "GET /two/parts HTTP/2.0" 200 5 "-" "-"\n'
      b'\n')
write('access_no_get.log',
      b'127.0.0.1 - - [21/Nov/2026:10:00:01 +0000] "POST /form HTTP/1.1" 200 12 "-" "curl/8"\n'
      b'not a log line\n')
