# Sourced by the benchmark scripts that compare tank with a peer (issue 26's discipline).
#
#   hold_cpus_awake   keep every CPU out of halting idle states while the script runs (a
#                     zero-latency PM QoS request on /dev/cpu_dma_latency, held on fd 9 and
#                     dropped when the script exits), so that a tool whose wake-ups find a
#                     CPU idle does not pay the idle exit a busier tool does not; tank asks for
#                     the same itself (`keep_cpus_awake`). Sets $awake to "yes" or to why not.
#   quiet             wait until the machine is under 10% busy over a second (at most 120 s)
#                     and print the busy share it measured, for the results.

hold_cpus_awake() {
    awake="no (/dev/cpu_dma_latency not writable)"
    if [ -w /dev/cpu_dma_latency ]; then
        exec 9> /dev/cpu_dma_latency
        printf '\x00\x00\x00\x00' >&9 && awake=yes
    fi
}

quiet() {
    python3 - <<'PY'
import time
def busy(window):
    def sample():
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(f), f[3] + (f[4] if len(f) > 4 else 0)
    t0, i0 = sample(); time.sleep(window); t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)
start = time.time()
b = busy(1.0)
while b > 0.10 and time.time() - start < 120:
    b = busy(2.0)
print(f"{b:.3f}")
PY
}
