#!/usr/bin/env python3
"""Read a phout file with yandex-tank 2.0.11's own phout reader and summarise it.

    read_phout.py PHOUT

yandex-tank's reader (plugins/Phantom/reader.py, string_to_df) is pandas
read_csv with int64 columns: a short line or a non-integer field fails the
whole chunk. This harness prints one JSON object on stdout, or an error on
stderr and exits 1:

    {"rows": N, "seconds": {receive_second: rows}, "tags": {tag: rows},
     "net_codes": {code: rows}, "proto_codes": {code: rows}}
"""
import json
import logging
import sys

logging.disable(logging.CRITICAL)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from yandextank.plugins.Phantom.reader import string_to_df

    with open(sys.argv[1]) as f:
        data = f.read()
    try:
        df = string_to_df(data)
    except Exception as e:  # the reader's own failure is what we test for
        print("ERROR: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    if df is None:
        print("ERROR: yandex-tank's reader rejected the phout", file=sys.stderr)
        return 1
    counts = lambda series: {str(k): int(v) for k, v in series.value_counts().sort_index().items()}
    print(json.dumps({
        "rows": int(len(df)),
        "seconds": {str(k): int(v) for k, v in df.groupby(level=0).size().items()},
        "tags": counts(df.tag.fillna("")),
        "net_codes": counts(df.net_code),
        "proto_codes": counts(df.proto_code),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
