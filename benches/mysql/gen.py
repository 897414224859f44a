#!/usr/bin/env python3
"""Inputs of benches/mysql/run.sh, written without tank.

  gen.py arrivals OUT SESSIONS RATE SECONDS   a MySQL sessions file: SESSIONS connections
      sending `SELECT <offset_us> /*arrival*/` so that all together send RATE queries/s for
      SECONDS, each query's text its captured offset (the general log then says which).
  gen.py points OUT SESSIONS QUERIES TABLE_ROWS   a MySQL sessions file: SESSIONS connections,
      each preparing sysbench's point select once and executing it QUERIES times, all due
      at once (back to back: a closed loop, as sysbench's threads).
  gen.py pcap OUT SIZE_MB CONNECTIONS   a pcap of MySQL traffic (raw IPv4): CONNECTIONS
      connections interleaved, each a handshake then queries and their replies (a few rows,
      an OK), until the file is SIZE_MB. Prints its connections and commands.
"""
import random
import struct
import sys

COM_CONNECT, COM_QUERY, COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_QUIT = 0x0B, 0x03, 0x16, 0x17, 0x01


def connect(schema):
    # COM_CONNECT as tank writes it: caps (LE u32), collation, schema.
    return bytes([COM_CONNECT]) + struct.pack("<I", 0) + bytes([45]) + schema


def sessions_file(path, records):
    """records: (offset_us, kind, session, tag, bytes) sorted; kind 0 begin, 1 request, 2 end."""
    with open(path, "wb") as out:
        out.write(b"tank-sessions 1 mysql\n# benches/mysql/gen.py\n")
        for offset, kind, s, tag, payload in records:
            if kind == 0:
                out.write(b"S %d %d bench\n" % (s, offset))
            elif kind == 1:
                out.write(b"R %d %d %d %s\n" % (len(payload), offset, s, tag) + payload + b"\n")
            else:
                out.write(b"E %d %d\n" % (s, offset))


def arrivals(path, sessions, rate, seconds):
    random.seed(29)
    period = sessions * 1_000_000 // rate  # µs between a session's queries
    # Every connection logs in during the first second; the queries start after it,
    # so no query waits for a login.
    start = 1_000_000
    records = []
    for s in range(sessions):
        phase = s * period // sessions
        offsets = [start + phase + i * period + random.randrange(50) for i in range(seconds * 1_000_000 // period)]
        login = s * 900_000 // sessions
        records.append((login, 0, s, b"", b""))
        records.append((login, 1, s, b"CONNECT", connect(b"bench")))
        for o in offsets:
            records.append((o, 1, s, b"SELECT", b"\x03SELECT %d /*arrival*/" % o))
        records.append((offsets[-1], 1, s, b"QUIT", bytes([COM_QUIT])))
        records.append((offsets[-1], 2, s, b"", b""))
    records.sort(key=lambda r: (r[0], r[1] == 2))
    sessions_file(path, records)


def points(path, sessions, queries, rows):
    random.seed(29)
    records = []
    sql = b"SELECT c FROM sbtest1 WHERE id=?"
    for s in range(sessions):
        records.append((0, 0, s, b"", b""))
        records.append((0, 1, s, b"CONNECT", connect(b"sbtest")))
        records.append((0, 1, s, b"PREPARE SELECT sbtest1", bytes([COM_STMT_PREPARE]) + sql))
        for _ in range(queries):
            # Statement 1 of the session, no cursor, one iteration; one LONG parameter.
            execute = bytes([COM_STMT_EXECUTE]) + struct.pack("<IBI", 1, 0, 1) + b"\x00\x01\x03\x00"
            execute += struct.pack("<i", random.randrange(1, rows + 1))
            records.append((0, 1, s, b"SELECT sbtest1", execute))
        records.append((0, 2, s, b"", b""))
    sessions_file(path, records)


def packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def pcap(path, size_mb, connections):
    random.seed(29)
    limit = size_mb * 1_000_000
    out = open(path, "wb")
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))
    written = 24
    t = 1_700_000_000_000_000
    conns = []
    for c in range(connections):
        conns.append({"cport": 20000 + c % 40000, "cip": 0x0A000001 + c // 40000, "cseq": 1000, "sseq": 5000, "phase": 0})

    def frame(conn, from_client, flags, payload):
        nonlocal t, written
        t += 7
        src, dst = (conn["cip"], 0x0A0000FE) if from_client else (0x0A0000FE, conn["cip"])
        sport, dport = (conn["cport"], 3306) if from_client else (3306, conn["cport"])
        key = "cseq" if from_client else "sseq"
        seq = conn[key]
        conn[key] = (seq + len(payload) + (1 if flags & 0x02 else 0)) & 0xFFFFFFFF
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst) + tcp
        out.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(ip), len(ip)) + ip)
        written += 16 + len(ip)

    greeting = bytes([10]) + b"8.0.36\x00" + struct.pack("<I", 1) + b"abcdefgh\x00" + struct.pack("<H", 0xF7FF) \
        + bytes([45]) + struct.pack("<HH", 2, 0x81BF) + bytes([21]) + b"\x00" * 10 + b"ijklmnopqrst\x00" \
        + b"mysql_native_password\x00"
    caps = 0x000A_A20F  # PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, CONNECT_WITH_DB, …
    response = struct.pack("<IIB", caps, 1 << 24, 45) + b"\x00" * 23 + b"app\x00" + bytes([20]) + b"\x01" * 20 \
        + b"shop\x00" + b"mysql_native_password\x00"
    ok = b"\x00\x00\x00\x02\x00\x00\x00"
    rows = [b"\x01\x01", b"\x03def\x00\x00\x00\x01c\x01c\x0c\x21\x00\xff\x00\x00\x00\xfd\x00\x00\x00\x00\x00",
            b"\xfe\x00\x00\x02\x00"] + [bytes([120]) + b"x" * 120] * 3 + [b"\xfe\x00\x00\x02\x00"]
    commands = 0
    while written < limit:
        conn = random.choice(conns)
        if conn["phase"] == 0:
            frame(conn, True, 0x02, b"")
            frame(conn, False, 0x12, b"")
            frame(conn, False, 0x18, packet(0, greeting))
            frame(conn, True, 0x18, packet(1, response))
            frame(conn, False, 0x18, packet(2, ok))
            conn["phase"] = 1
            continue
        n = random.randrange(1, 1000)
        sql = b"SELECT c FROM items WHERE id = %d AND note = '%s'" % (n, b"y" * random.randrange(0, 400))
        frame(conn, True, 0x18, packet(0, bytes([COM_QUERY]) + sql))
        frame(conn, False, 0x18, b"".join(packet(i + 1, p) for i, p in enumerate(rows)))
        commands += 1
    for conn in conns:
        if conn["phase"]:
            frame(conn, True, 0x18, packet(0, bytes([COM_QUIT])))
            commands += 1
            frame(conn, True, 0x11, b"")
    out.close()
    opened = sum(1 for c in conns if c["phase"])
    print(f"{path}: {opened} connections, {commands} commands (and {opened} connects)")


if __name__ == "__main__":
    mode, out, *rest = sys.argv[1:]
    {"arrivals": arrivals, "points": points, "pcap": pcap}[mode](out, *map(int, rest))
