"""h2load prints min/max/mean/sd of request times, not quantiles: this reports its max
as an upper bound of p99, labelled so ("<= X"), from h2load's output file (argv[1])."""
import re
import sys

text = open(sys.argv[1]).read()
match = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text)
print(f"<= {match.group(2)} (h2load gives max, not p99)" if match else "n/a")
