"""A checkpoint writer to be killed mid-save (test_checkpoint_kill.py).

python3 worker_save_kill.py PATH ENGINE MODE: saves new data (all 7.0) to PATH on 8 CPU devices
and stops, printing "READY", at the point MODE names, until the test kills it:
  chunks: after the first block is written, before the others;
  commit: after the old checkpoint was renamed away, before the new one is renamed in.
"""
import os
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"


import darray  # noqa: E402
from darray._src.extras import io  # noqa: E402

path, engine, mode = sys.argv[1:4]


def stop_here():
    print("READY", flush=True)
    time.sleep(600)  # the test kills this process long before


if mode == "chunks":
    ranges, calls = io.logical_ranges, []

    def second_block_waits(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the first block is on disk
            stop_here()
        return ranges(*args, **kwargs)
    io.logical_ranges = second_block_waits
elif mode == "commit":
    rename, renames = os.rename, []

    def second_rename_waits(src, dst):
        if renames:
            stop_here()
        renames.append((src, dst))
        return rename(src, dst)
    io.os.rename = second_rename_waits
else:
    raise SystemExit(f"unknown mode {mode!r}")

x = darray.full((64, 48), 7.0, dtype=darray.float32, mesh=(4, 2), spec=("x", "y"))
darray.save(path, x, engine=engine)
print("SAVED (the kill came too late)", flush=True)
