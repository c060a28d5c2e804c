"""One process's costs for the full-size benches: wall and CPU seconds, peak RSS, and where the
model's loading ended.

`measured(command, watch=True)` runs `command` and waits for it with `os.wait4`, so the CPU
seconds (user + system, every thread) and the peak RSS are the kernel's own for that process
(and any it waited for). With `watch`, a thread samples /proc/PID/stat and /proc/PID/io twice a
second: the moment the process's read bytes (`rchar`) reached their final value, less 1 MiB, is
taken as the end of its loading (a model's files are read first; the input and the tokenizer
are read before them, the output only written), and the wall and CPU seconds after it are the
embedding's own, to within the half-second sampling. `loadavg()` is the machine's load average,
recorded beside each figure on a shared machine.
"""

import os
import subprocess
import sys
import threading
import time

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.5
LOADED_SLACK_BYTES = 1 << 20


def loadavg():
    """The 1-, 5- and 15-minute load averages."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def _sample(pid):
    """(CPU seconds, bytes read) of `pid` now, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines())
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    # utime and stime are the 12th and 13th fields after the command name.
    return (int(fields[11]) + int(fields[12])) / TICKS, int(io["rchar"])


def measured(command, watch=False, env=None, timeout=None):
    """Runs `command` to its end (killed after `timeout` seconds, if given, and then an error):
    a dict of its costs and its stdout and stderr (text)."""
    started = time.perf_counter()
    load_before = loadavg()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    samples = []
    done = threading.Event()

    def sampler():
        while not done.is_set():
            sample = _sample(process.pid)
            if sample is not None:
                samples.append((time.perf_counter() - started, *sample))
            done.wait(SAMPLE_S)

    watcher = threading.Thread(target=sampler, daemon=True)
    if watch:
        watcher.start()
    out_chunks, err_chunks = [], []
    readers = [threading.Thread(target=lambda s=s, c=c: c.append(s.read()), daemon=True)
               for s, c in [(process.stdout, out_chunks), (process.stderr, err_chunks)]]
    for reader in readers:
        reader.start()
    killer = threading.Timer(timeout, process.kill) if timeout else None
    if killer:
        killer.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    if killer:
        killer.cancel()
        if wall >= timeout:
            sys.exit(f"{command[0]} was stopped after its {timeout:.0f} s")
    for reader in readers:
        reader.join()
    out, err = "".join(out_chunks), "".join(err_chunks)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{command[0]} failed ({code}): {err[-2000:]}")
    costs = {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_bytes": usage.ru_maxrss * 1024,
        "load_average_before": load_before,
        "load_average_after": loadavg(),
    }
    if watch and samples:
        final_read = samples[-1][2]
        loaded = next(s for s in samples if s[2] >= final_read - LOADED_SLACK_BYTES)
        last = samples[-1]
        costs["after_loading"] = {
            "wall_s": round(last[0] - loaded[0], 2),
            "cpu_s": round(last[1] - loaded[1], 2),
            "bytes_read_by_then": loaded[2],
        }
    return costs, out, err


def record_delta(report, folder, rows=slice(None)):
    """The largest |difference| between geneb's and PyTorch's embeddings in `folder` (rows
    `rows` of each), and PyTorch's largest |value| to judge it by, into `report`."""
    import numpy as np

    ours, theirs = np.load(folder / "geneb.npy")[rows], np.load(folder / "torch.npy")[rows]
    report["max_abs_delta"] = float(np.abs(ours - theirs).max())
    report["max_abs_value"] = float(np.abs(theirs).max())
