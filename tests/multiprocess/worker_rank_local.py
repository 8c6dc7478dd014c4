"""Rank-local host reads of multi-process arrays (test_rank_local.py): 2 processes x 2 CPU
devices, jax.distributed on 127.0.0.1. Usage: worker_rank_local.py PORT NPROC RANK.

Process 1 alone calls np.asarray / tolist / print / float / item on arrays spanning both
processes while process 0 waits at a barrier: each call either answers from process 1's own
data or raises NonLocalDataError at once naming darray.distributed.gather; a collective started
by one process alone would hang and the launcher's timeout would fail the test. Then every
process gathers collectively. Prints "RANK r ok <check>" lines.
"""
import os
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)
from jax.experimental import multihost_utils  # noqa: E402

import darray  # noqa: E402

port, nproc, rank = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
darray.distributed.initialize(f"127.0.0.1:{port}", nproc, rank, heartbeat_timeout=20)
assert jax.device_count() == 2 * nproc

host = np.arange(16.0)
x = darray.asarray(host, mesh=(2 * nproc,), spec=("x",))
total = darray.sum(x)  # 0-d, replicated on every device
one = darray.asarray(np.array([5.0]), mesh=(2 * nproc,), spec=("x",))  # cell 0 on process 0
assert not x.data.is_fully_addressable and not one.data.is_fully_addressable
multihost_utils.sync_global_devices("built")


def refused(call, what):
    start = time.monotonic()
    try:
        call()
    except darray.distributed.NonLocalDataError as err:
        text = str(err)
        assert text.startswith(what) and "darray.distributed.gather(x)" in text, text
        assert "over 2 processes" in text and f"jax.process_index()={rank}" in text, text
        assert time.monotonic() - start < 5, "the refusal was not immediate"
        return
    raise AssertionError(f"{what} did not raise on process {rank} alone")


if rank == 1:
    refused(lambda: np.asarray(x), "np.asarray(x)")
    refused(lambda: x.tolist(), "np.asarray(x)")
    refused(lambda: float(one), "float(x)")
    refused(lambda: one.item(), "item(x)")
    assert repr(x) == "DistArray(float64[16], mesh=(x:4), split=(x,))", repr(x)
    text = str(x)
    assert text.startswith(repr(x)) and "darray.distributed.gather(x)" in text, text
    print(x)
    print(f"RANK {rank} ok refused", flush=True)
    # answered from this process's own data: the replicated 0-d result
    assert float(total) == host.sum() and total.item() == host.sum()
    assert str(total) == str(np.float64(host.sum())), str(total)
    print(f"RANK {rank} ok local", flush=True)
else:
    assert float(one) == 5.0 and one.item() == 5.0  # process 0's own device holds cell 0
    print(f"RANK {rank} ok local", flush=True)
    print(f"RANK {rank} ok refused", flush=True)
multihost_utils.sync_global_devices("rank-local reads done")

# the collective, on every process
gathered = darray.distributed.gather(x)
np.testing.assert_array_equal(gathered, host)
assert isinstance(gathered, np.ndarray) and gathered.shape == x.shape
np.testing.assert_array_equal(darray.distributed.gather(one), [5.0])
assert x.layout.spec == jax.sharding.PartitionSpec("x")
print(f"RANK {rank} ok gather", flush=True)
