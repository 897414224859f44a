#!/usr/bin/env python3
"""Write a synthetic HTTP/1.1 capture (classic pcap, Ethernet, IPv4) for the import benchmark.

    gen_pcap.py OUT.pcap [SIZE_MB] [CONNECTIONS]      (default 1100 MB, 2000 connections)

CONNECTIONS keep-alive connections are open at once, taking turns packet by packet (so
their packets interleave as on a busy server). Each sends 5-50 requests (GETs of ~200
bytes and POSTs with 1-64 KiB bodies cut into 1448-byte segments), the server answers
each with one small packet, and a closed connection is replaced by a new one (a new
client port, SYN first). Every 40th multi-segment request has two segments swapped (out
of order) and every 97th segment is sent twice (a retransmission). Timestamps advance
20 µs a packet. At SIZE_MB the requests in flight are finished and every connection
closed, so a lossless import has no warnings and exactly the requests printed. Prints
the packets, connections and requests written.
"""
import random
import struct
import sys

MSS = 1448
SERVER = bytes([10, 0, 0, 1])
SERVER_PORT = 80
ETH = bytes([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00])


def frame(src, sport, dst, dport, seq, flags, payload):
    ip_len = 20 + 20 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0x4000, 64, 6, 0, src, dst)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0)
    return ETH + ip + tcp + payload


class Conn:
    def __init__(self, rng, number):
        self.client = bytes([10, 1, (number >> 8) & 0xFF, number & 0xFF])
        self.port = 1024 + number % 60000
        self.seq = rng.randrange(1 << 32)
        self.left = self.total = rng.randint(5, 50)
        self.queue = [(self.seq, 0x02, b"")]  # SYN
        self.seq += 1

    def add_request(self, rng):
        if rng.random() < 0.7:
            path = "/api/item/%d?user=%d" % (rng.randrange(10**6), rng.randrange(10**4))
            request = ("GET %s HTTP/1.1\r\nHost: bench.example\r\nUser-Agent: gen\r\n"
                       "Accept: */*\r\n\r\n" % path).encode()
        else:
            body = rng.randbytes(rng.randint(1024, 65536))
            request = ("POST /upload/%d HTTP/1.1\r\nHost: bench.example\r\n"
                       "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n"
                       % (rng.randrange(1000), len(body))).encode() + body
        segments = []
        for at in range(0, len(request), MSS):
            segments.append((self.seq + at, 0x18, request[at:at + MSS]))
        if len(segments) > 2 and rng.randrange(40) == 0:
            i = rng.randrange(len(segments) - 1)
            segments[i], segments[i + 1] = segments[i + 1], segments[i]
        self.seq += len(request)
        self.queue.extend(segments)
        self.queue.append(None)  # the server's answer
        self.left -= 1
        if self.left == 0:
            self.queue.append((self.seq, 0x11, b""))  # FIN


def main():
    out_path = sys.argv[1]
    size = int(float(sys.argv[2]) * 1e6) if len(sys.argv) > 2 else 1100 * 10**6
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rng = random.Random(16)
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    written = packets = requests = sessions = 0
    opened = connections
    conns = [Conn(rng, n) for n in range(connections)]
    t_us = 1_700_000_000 * 10**6
    with open(out_path, "wb", buffering=1 << 22) as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        def send(conn, item):
            nonlocal t_us, written, packets
            if item is None:
                data = frame(SERVER, SERVER_PORT, conn.client, conn.port, 1, 0x18, answer)
            else:
                seq, flags, payload = item
                data = frame(conn.client, conn.port, SERVER, SERVER_PORT, seq, flags, payload)
                if payload and rng.randrange(97) == 0:
                    conn.queue.insert(0, item)  # retransmitted next turn
            t_us += 20
            out.write(struct.pack("<IIII", t_us // 10**6, t_us % 10**6, len(data), len(data)))
            out.write(data)
            written += 16 + len(data)
            packets += 1

        while written < size:
            for i, conn in enumerate(conns):
                if not conn.queue:
                    if conn.left == 0:
                        conns[i] = conn = Conn(rng, opened)
                        opened += 1
                    else:
                        # A connection is a session once it carries a request: the
                        # ones opened just before the end close without any.
                        sessions += conn.left == conn.total
                        conn.add_request(rng)
                        requests += 1
                send(conn, conn.queue.pop(0))
        # Finish what is in flight and close every connection: a clean end.
        for conn in conns:
            if conn.left > 0:
                conn.queue.append((conn.seq, 0x11, b""))
        while any(conn.queue for conn in conns):
            for conn in conns:
                if conn.queue:
                    send(conn, conn.queue.pop(0))
    print("%s: %.0f MB, %d packets, %d connections, %d requests"
          % (out_path, written / 1e6, packets, sessions, requests))


if __name__ == "__main__":
    main()
