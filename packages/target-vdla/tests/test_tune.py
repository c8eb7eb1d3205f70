"""The tuner on VDLA: candidates are built and exported in worker processes, loaded back with
`load_module` (the sidecar names its loader), checked against the default config's output
and timed in simulated seconds, which are exact: a config measures the same every time."""

import pytest

from tensorforge.autotune import Task, tune_task
from tensorforge.autotune.database import Database
from tensorforge_vdla.config import VDLAConfig
from tensorforge_vdla.strategies import ConvShape, Tile, fitting_tiles


def test_tune_conv_template_in_simulated_seconds(vdla, tmp_path):
    shape = ConvShape(h=8, w=8, icb=2, ocb=2, kh=3, kw=3, stride=1, pad=1)
    args = (shape.h, shape.w, shape.icb, shape.ocb, shape.kh, shape.kw, shape.stride, shape.pad)
    task = Task("conv2d_nchwc_int8.vdla", args, target="vdla")
    space = task.config_space
    assert set(space.knobs) == {"tile", "n_vthreads"}
    assert len(space.knobs["tile"]) == len(fitting_tiles(shape, VDLAConfig()))
    res = tune_task(task, 4, tuner="random", db=tmp_path / "t.db", seed=0, batch_size=2)
    assert res.best is not None and res.best.ok
    db = Database(tmp_path / "t.db")
    recs = [r for r in db.records(task.key) if r.ok]
    assert len(recs) >= 3
    for r in recs:  # simulated: every repeat of a config costs the same
        assert len(set(r.costs)) == 1 and 1e-6 < r.costs[0] < 1e-2
    cfg = space.get(res.best.config_index)
    assert Tile(*cfg["tile"].val) in fitting_tiles(shape, VDLAConfig())


@pytest.fixture(autouse=True)
def _vdla(vdla):
    return vdla
