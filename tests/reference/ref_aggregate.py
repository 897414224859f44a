#!/usr/bin/env python3
"""Aggregate a phout file with yandex-tank 2.0.11's own reader and aggregator.

This is the reference side of the golden aggregation test (tests/report.rs). It is harness
code, not a port: it wires the reference pieces together as yandex-tank's TankAggregator
does (PhantomReader → TimeChopper → Aggregator with the phout config) and writes one JSON
object per aggregated second:

    ref_aggregate.py PHOUT OUT.jsonl

Each line is the reference's `data` item (`{"ts", "tagged", "overall", "counted_rps"}`).
The histogram uses the reference Worker's coarse bins (`verbose_histogram=False`), the bins
SEMANTICS.md section 8 documents and tank writes.
"""
import json
import sys

import numpy as np

from yandextank.aggregator.aggregator import Aggregator
from yandextank.aggregator.chopper import TimeChopper
from yandextank.aggregator.tank_aggregator import TankAggregator
from yandextank.plugins.Phantom.reader import PhantomReader


class Encoder(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return super().default(o)


def chunks(path):
    """PhantomReader over the whole file; it yields None while it waits for a full line."""
    with open(path) as phout:
        reader = PhantomReader(phout)
        while True:
            chunk = next(reader)
            if chunk is None:
                # The reference reads until read() returns None, which a file never does:
                # stop when the file is exhausted (the buffer holds no partial line then).
                if not reader.buffer:
                    return
                continue
            if len(chunk) == 0:
                return
            yield chunk


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    phout, out = sys.argv[1], sys.argv[2]
    config = TankAggregator.load_config()
    pipeline = Aggregator(TimeChopper([chunks(phout)]), config, verbose_histogram=False)
    with open(out, "w") as f:
        for item in pipeline:
            f.write(json.dumps(item, cls=Encoder) + "\n")


if __name__ == "__main__":
    main()
