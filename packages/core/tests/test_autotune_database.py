"""The records database: WAL, schema version, no duplicates, best, JSON lines, concurrency."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from tensorforge.autotune import TIMEOUT, Database, Record
from tensorforge.autotune.database import SCHEMA_VERSION


def _rec(i: int, cost: float | None = None, key: str = "k1", err: str | None = None) -> Record:
    return Record(key, "llvm", i, {"index": i, "knobs": {"x": i}},
                  [] if cost is None else [cost, cost * 1.1, cost * 0.9], err,
                  "boom" if err else "")


def test_records_best_and_duplicates(tmp_path) -> None:
    db = Database(tmp_path / "t.db")
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.schema_version == SCHEMA_VERSION
    assert db.add(_rec(0, 3.0)) and db.add(_rec(1, 1.0)) and db.add(_rec(2, err=TIMEOUT))
    assert not db.add(_rec(1, 0.5))  # the same config again: ignored
    assert db.count() == 3 and db.measured("k1", "llvm") == {0, 1, 2}
    best = db.best("k1", "llvm")
    assert best.config_index == 1 and best.cost == 1.0
    assert [r.config_index for r in db.best("k1", "llvm", k=5)] == [1, 0]
    assert db.best("other", "llvm") is None
    assert db.records("k1", ok_only=True)[0].ok
    err = db.records("k1")[2]
    assert err.error_class == TIMEOUT and err.cost == float("inf")
    db.close()
    assert Database(tmp_path / "t.db").count() == 3  # persisted


def test_jsonl_round_trip(tmp_path) -> None:
    a = Database(tmp_path / "a.db")
    for i in range(5):
        a.add(_rec(i, 1.0 + i))
    a.add(_rec(0, 2.0, key="k2"))
    assert a.export_jsonl(tmp_path / "r.jsonl") == 6
    b = Database(tmp_path / "b.db")
    b.add(_rec(3, 9.0))
    assert b.import_jsonl(tmp_path / "r.jsonl") == 5  # k1/3 already there
    assert b.count() == 6 and b.best("k1", "llvm").cost == 1.0
    assert b.import_jsonl(tmp_path / "r.jsonl") == 0


def test_newer_schema_is_refused(tmp_path) -> None:
    path = tmp_path / "t.db"
    Database(path).close()
    with sqlite3.connect(path) as c:
        c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                  (str(SCHEMA_VERSION + 1),))
    with pytest.raises(RuntimeError, match="newer"):
        Database(path)


def test_concurrent_writers(tmp_path) -> None:
    path = tmp_path / "t.db"
    Database(path).close()
    script = textwrap.dedent(f"""
        import sys
        from tensorforge.autotune.database import Database, Record
        db = Database({str(path)!r})
        w = int(sys.argv[1])
        for i in range(100):
            db.add(Record("k", "llvm", i, {{}}, [float(w)]))       # shared: one lands
            db.add(Record(f"k{{w}}", "llvm", i, {{}}, [float(i)]))  # own
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(3)]
    assert all(p.wait(60) == 0 for p in procs)
    db = Database(path)
    assert db.count("k") == 100
    assert all(db.count(f"k{w}") == 100 for w in range(3))
