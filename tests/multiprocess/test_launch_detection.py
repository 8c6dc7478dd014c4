"""Covers: darray/_src/placement/distributed.py

darray.distributed.detect_launch: which launcher started this process (no processes run)."""
import os

import pytest

import darray
from darray._src.placement import distributed


def test_explicit_arguments_win():
    launch = darray.distributed.detect_launch("10.0.0.1:1234", 4, 3,
                                              environ={"PMI_RANK": "0", "PMI_SIZE": "2"})
    assert (launch.launcher, launch.coordinator_address, launch.num_processes,
            launch.process_id) == ("explicit", "10.0.0.1:1234", 4, 3)


def test_darray_environment_variables():
    env = {"DARRAY_COORDINATOR_ADDRESS": "node1:5000", "DARRAY_NUM_PROCESSES": "8",
           "DARRAY_PROCESS_ID": "5", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}
    launch = darray.distributed.detect_launch(environ=env)
    assert (launch.launcher, launch.coordinator_address, launch.num_processes,
            launch.process_id) == ("env", "node1:5000", 8, 5)


def test_slurm_is_delegated_to_jax():
    launch = darray.distributed.detect_launch(environ={"SLURM_PROCID": "1", "SLURM_NTASKS": "4"})
    assert launch == distributed.Launch("slurm", None, None, None)


@pytest.mark.parametrize("env,launcher", [
    ({"PMI_RANK": "1", "PMI_SIZE": "3", "MPI_LOCALNRANKS": "3"}, "mpich"),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, "openmpi"),
])
def test_mpiexec_on_one_node_agrees_on_a_port_without_mpi4py(env, launcher, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "mpi4py", None)  # as if not installed
    launch = darray.distributed.detect_launch(environ=env)
    assert (launch.launcher, launch.num_processes, launch.process_id) == (launcher, 3, 1)
    host, port = launch.coordinator_address.split(":")
    assert host == "127.0.0.1" and 20000 <= int(port) < 50000
    # every rank of the job (same launcher parent) derives the same address
    assert darray.distributed.detect_launch(environ=dict(env, PMI_RANK="0",
                                                         OMPI_COMM_WORLD_RANK="0")
                                            ).coordinator_address == launch.coordinator_address


def test_mpiexec_across_nodes_without_mpi4py_asks_for_an_address(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "mpi4py", None)
    with pytest.raises(ValueError, match="incomplete launch description from mpich.*"
                                         "DARRAY_COORDINATOR_ADDRESS"):
        darray.distributed.detect_launch(environ={"PMI_RANK": "0", "PMI_SIZE": "4",
                                                  "MPI_LOCALNRANKS": "2"})


def test_single_process_and_bad_arguments():
    assert darray.distributed.detect_launch(environ={}).launcher == "single"
    with pytest.raises(ValueError, match="give all of coordinator_address, num_processes and "
                                         "process_id"):
        darray.distributed.detect_launch("h:1", 2, None, environ={})
    with pytest.raises(ValueError, match=r"process_id=2 must be in \[0, num_processes=2\)"):
        darray.distributed.detect_launch("h:1", 2, 2, environ={})
    with pytest.raises(ValueError, match="coordinator_address='h' must be 'host:port'"):
        darray.distributed.detect_launch("h", 2, 0, environ={})
    with pytest.raises(ValueError, match="heartbeat_timeout=0 must be a number of seconds"):
        darray.distributed.initialize(heartbeat_timeout=0)


def test_report_in_a_single_process():
    info = darray.distributed.report()
    assert info["process_index"] == 0 and info["process_count"] == 1
    assert info["device_count"] == len(info["local_devices"]) == 8
    assert os.environ.get("DARRAY_NUM_PROCESSES") is None
    assert info["huge_page_buffers"].split(":")[0] in ("on", "off", "unknown")
    assert info["buffer_reuse"].split(":")[0] in ("on", "off", "unknown")
    # one process: its threads cannot take cores from another process of the job
    assert info["cpu_binding"].startswith("ok: each of the 1 process(es) on this node has ")


@pytest.mark.parametrize("environ, want", [
    ({"MPI_LOCALNRANKS": "4"}, 4),                                       # MPICH's Hydra
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, 2),                            # Open MPI
    ({"SLURM_NTASKS_PER_NODE": "8"}, 8),
    ({"SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": "2"}, 2),       # runs expanded
    ({"SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": "3"}, 1),
    ({"SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": "4"}, None),    # no such node
    ({"SLURM_TASKS_PER_NODE": "2(x,1", "SLURM_NODEID": "0"}, None),      # unreadable
    ({"SLURM_TASKS_PER_NODE": "4"}, None),                               # no node id
    ({}, None),
])
def test_local_process_count_reads_the_launchers(environ, want):
    assert distributed.local_process_count(environ) == want


def test_cpu_binding_says_when_processes_share_cores_and_how_to_bind():
    bound = distributed.cpu_binding(local_processes=2, cores=1, node_cores=2)
    assert bound == "ok: each of the 2 process(es) on this node has 1 of the node's 2 cores"
    unbound = distributed.cpu_binding(local_processes=2, cores=2, node_cores=2)
    assert unbound.startswith("oversubscribed: the 2 processes on this node may each run on "
                              "2 of the node's 2 cores")
    assert "mpiexec --bind-to core" in unbound and "srun --cpu-bind=cores" in unbound
    # the launcher's count, read from the environment given
    assert distributed.cpu_binding(cores=16, node_cores=16, environ={
        "MPI_LOCALNRANKS": "2"}).startswith("oversubscribed")
    assert distributed.cpu_binding(cores=3, node_cores=16, environ={}).startswith(
        "unknown: this process may run on 3 of the node's 16 cores")


def test_cpu_binding_is_unknown_where_the_system_has_no_affinity_masks(monkeypatch):
    monkeypatch.delattr(distributed.os, "sched_getaffinity")            # macOS, Windows
    assert distributed.cpu_binding(local_processes=2) == (
        "unknown: this system does not say which cores a process may run on")
