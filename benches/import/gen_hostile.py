#!/usr/bin/env python3
"""Write a capture (classic pcap, Ethernet, IPv4) that tests `tank import`'s memory bounds.

    gen_hostile.py OUT.pcap bigpost MB          one POST of MB megabytes, 1448-byte segments
    gen_hostile.py OUT.pcap openconns N         N uploads, 8 KiB sent of a 100 KB body each, never finished
    gen_hostile.py OUT.pcap synonly N           N connections that send a SYN and nothing else (a SYN scan)
    gen_hostile.py OUT.pcap synonly N GET       the same, then one GET on a connection of its own

Timestamps advance 10 µs a packet (so 1,000,000 SYNs span 10 s of capture time). Prints
what it wrote and what a lossless import must report.
"""
import struct
import sys

MSS = 1448
SERVER = bytes([10, 0, 0, 1])
ETH = bytes([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00])
SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


def frame(src, sport, dst, dport, seq, flags, payload):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0)
    return ETH + ip + tcp + payload


class Writer:
    def __init__(self, path):
        self.out = open(path, "wb", buffering=1 << 22)
        self.out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.t_us = 1_700_000_000 * 10**6
        self.packets = 0

    def send(self, data):
        self.t_us += 10
        self.out.write(struct.pack("<IIII", self.t_us // 10**6, self.t_us % 10**6, len(data), len(data)))
        self.out.write(data)
        self.packets += 1


def client(n):
    return bytes([10, 1 + n // 64000 % 200, (n // 250) % 256, 1 + n % 250]), 1024 + n % 64000


def main():
    path, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    w = Writer(path)
    if mode == "bigpost":
        body_len = count * 10**6
        addr, port = client(0)
        w.send(frame(addr, port, SERVER, 80, 999, SYN, b""))
        head = b"POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % body_len
        seq = 1000
        w.send(frame(addr, port, SERVER, 80, seq, ACK | PSH, head))
        seq += len(head)
        chunk = bytes(range(256)) * (MSS // 256 + 1)
        left = body_len
        while left:
            n = min(MSS, left)
            w.send(frame(addr, port, SERVER, 80, seq, ACK | PSH, chunk[:n]))
            seq += n
            left -= n
        w.send(frame(addr, port, SERVER, 80, seq, ACK | FIN, b""))
        want = "1 sessions, 1 requests, %d bytes" % (len(head) + body_len)
    elif mode == "openconns":
        body = b"x" * 8192
        for n in range(count):
            addr, port = client(n)
            w.send(frame(addr, port, SERVER, 80, 999, SYN, b""))
            head = b"POST /up/%d HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n" % n
            data = head + body
            for at in range(0, len(data), MSS):
                w.send(frame(addr, port, SERVER, 80, 1000 + at, ACK | PSH, data[at:at + MSS]))
        want = "0 sessions, 0 requests (and a warning per connection: it ends inside a request)"
    elif mode == "synonly":
        for n in range(count):
            addr, port = client(n)
            w.send(frame(addr, port, SERVER, 80, 999, SYN, b""))
        want = "0 sessions, 0 requests"
        if len(sys.argv) > 4 and sys.argv[4] == "GET":
            addr, port = bytes([10, 250, 0, 1]), 4000
            get = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"
            w.send(frame(addr, port, SERVER, 80, 999, SYN, b""))
            w.send(frame(addr, port, SERVER, 80, 1000, ACK | PSH, get))
            w.send(frame(addr, port, SERVER, 80, 1000 + len(get), ACK | FIN, b""))
            want = "1 sessions, 1 requests, %d bytes" % len(get)
    else:
        sys.exit("mode: bigpost MB | openconns N | synonly N [GET]")
    w.out.close()
    print("%s: %s, %d packets; a lossless import: %s" % (path, mode, w.packets, want))


if __name__ == "__main__":
    main()
