#!/usr/bin/env python3
"""Write a synthetic phout of LINES lines to stdout (~72 bytes a line, ~20k rps, 5 tags).

    benches/gen_phout.py 28000000 > /tmp/big.phout     # ~2 GB
"""
import random
import sys


def main():
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rnd = random.Random(1)
    tags = ["search#1", "search#2", "cart", "", "api"]
    out = sys.stdout
    block = []
    for i in range(lines):
        ms = 1_700_000_000_000 + i // 20
        interval = 200 + rnd.randrange(20000)
        proto = 503 if i % 97 == 0 else 200
        block.append("%d.%03d\t%s\t%d\t0\t12\t%d\t30\t%d\t80\t%d\t0\t%d\n" % (
            ms // 1000, ms % 1000, tags[i % 5], interval, interval - 42, interval, i % 4000, proto))
        if len(block) == 100_000:
            out.write("".join(block))
            block = []
    out.write("".join(block))


if __name__ == "__main__":
    main()
