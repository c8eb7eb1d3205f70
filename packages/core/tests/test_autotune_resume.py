"""A tuning run killed with SIGKILL mid-way resumes: nothing lost, nothing twice, completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from tensorforge.autotune import Database, Task, tune_task

N_TRIALS = 14
WORKLOAD = (16, 32, 16)

SCRIPT = textwrap.dedent("""
    import sys
    from tensorforge.autotune import Task, tune_task
    task = Task("matmul_packed.llvm", {workload}, "llvm -num-threads=1")
    tune_task(task, {n}, tuner="random", db=sys.argv[1], batch_size=2, seed=0)
""")


def test_sigkill_then_resume(llvm_target, tmp_path) -> None:
    path = str(tmp_path / "tuning.db")
    env = dict(os.environ, TENSORFORGE_PLUGINS="llvm")
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(workload=WORKLOAD, n=N_TRIALS), path],
        env=env, start_new_session=True)  # its own process group: workers die with it
    task = Task("matmul_packed.llvm", WORKLOAD, "llvm -num-threads=1")
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the tuning run ended before it was killed"
            if os.path.exists(path) and Database(path).count(task.key) >= 5:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the tuning run wrote no records within 60 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    db = Database(path)
    before = {r.config_index: r for r in db.records(task.key)}
    assert 5 <= len(before) < N_TRIALS
    res = tune_task(task, N_TRIALS, tuner="random", db=db, batch_size=2, seed=1)
    after = db.records(task.key)
    indices = [r.config_index for r in after]
    assert res.n_measured == N_TRIALS == len(after) == len(set(indices))  # complete, no dup
    assert res.n_new == N_TRIALS - len(before)
    kept = {r.config_index: r for r in after}
    for i, r in before.items():  # nothing lost or rewritten
        assert kept[i].timestamp == r.timestamp and kept[i].run_id == r.run_id
    assert len({r.run_id for r in after}) == 2
    assert all(r.ok for r in after)
