"""The records database: WAL, schema version, no duplicates, best, JSON lines, concurrency."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from tensorforge.autotune import TIMEOUT, Database, Record
from tensorforge.autotune.database import SCHEMA_VERSION, ClaimOwner, TuningDatabaseError


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
    with pytest.raises(TuningDatabaseError, match="newer"):
        Database(path)
    with pytest.raises(TuningDatabaseError, match="newer"):
        Database(path, readonly=True)


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


def test_open_retries_when_sqlite_answers_locked_without_waiting(tmp_path, monkeypatch) -> None:
    # Two processes switching a new file to WAL at once: SQLite answers "database is locked"
    # at once for one of them, without its busy handler (seen as a CI failure of two
    # `tforge tune` runs on one new database). Opening retries until the timeout.
    real = sqlite3.connect
    failures = {"left": 3}

    class Racing:
        def __init__(self, conn):
            self._conn = conn

        def execute(self, sql, *args):
            if sql.startswith("PRAGMA journal_mode") and failures["left"]:
                failures["left"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return self._conn.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._conn, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: Racing(real(*a, **k)))
    db = Database(tmp_path / "t.db")
    assert failures["left"] == 0 and db.schema_version == SCHEMA_VERSION
    failures["left"] = 10**6  # locked for good: a clear error once the timeout has passed
    with pytest.raises(TuningDatabaseError, match="database is locked"):
        Database(tmp_path / "u.db", timeout=0.3)


def test_many_processes_open_one_new_database(tmp_path) -> None:
    script = textwrap.dedent("""
        import sys, time
        from tensorforge.autotune.database import Database
        start = float(sys.argv[2])
        while time.time() < start:
            pass
        Database(sys.argv[1]).close()
    """)
    import time
    for round_ in range(4):
        path, start = str(tmp_path / f"{round_}.db"), time.time() + 1.0
        procs = [subprocess.Popen([sys.executable, "-c", script, path, str(start)],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err


# ---- bad paths and files: refused up front, naming the file and what to do ---------------------
def test_empty_path_is_refused() -> None:
    for path in ("", "  "):
        with pytest.raises(TuningDatabaseError, match="path is empty"):
            Database(path)


def test_unwritable_paths_are_refused(tmp_path) -> None:
    with pytest.raises(TuningDatabaseError, match="does not exist; create it"):
        Database(tmp_path / "no" / "such" / "t.db")
    (tmp_path / "file").write_text("x")
    with pytest.raises(TuningDatabaseError, match="does not exist"):
        Database(tmp_path / "file" / "t.db")  # a file where a folder should be
    with pytest.raises(TuningDatabaseError, match="is a folder"):
        Database(tmp_path)


def test_corrupt_file_names_the_file_and_the_fix(tmp_path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not SQLite at all" * 100)
    for readonly in (False, True):
        with pytest.raises(TuningDatabaseError, match=r"bad\.db.*not a usable tuning database"
                           r".*move it away"):
            Database(bad, readonly=readonly)
    assert bad.read_bytes().startswith(b"this is not SQLite")  # left as it was


@pytest.mark.parametrize("folder_writable", [True, False])
def test_readonly_reads_without_writing(tmp_path, monkeypatch, folder_writable) -> None:
    import tensorforge.autotune.database as dbmod

    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "t.db"
    db = Database(path)
    db.add(_rec(0, 1.0))
    db.close()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    path.chmod(0o444)
    if not folder_writable:  # root ignores the mode bits: the check sees what a user would
        folder.chmod(0o555)
        real = os.access
        monkeypatch.setattr(dbmod.os, "access", lambda p, mode: False if os.fspath(p) == str(
            folder) and mode & os.W_OK else real(p, mode))
    try:
        ro = Database(path, readonly=True)
        assert ro.best("k1", "llvm").cost == 1.0 and ro.count() == 1
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro.add(_rec(1, 1.0))
        ro.close()
        after = {p.name: p.read_bytes() for p in folder.iterdir()}
        assert after[path.name] == before[path.name]  # not a byte of the records written
        if not folder_writable:
            assert after == before  # and no -wal or -shm made in a read-only folder
    finally:
        folder.chmod(0o755)
        path.chmod(0o644)


def test_readonly_needs_an_existing_tuning_database(tmp_path) -> None:
    with pytest.raises(TuningDatabaseError, match="does not exist .tforge tune writes one"):
        Database(tmp_path / "none.db", readonly=True)
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE x (y)").connection.close()
    with pytest.raises(TuningDatabaseError, match="holds no tuning records"):
        Database(tmp_path / "other.db", readonly=True)


# ---- claims: concurrent tuners measure disjoint configs -------------------------------------
def test_claims_are_exclusive_until_recorded_or_expired(tmp_path) -> None:
    db = Database(tmp_path / "t.db")
    a, b = ClaimOwner("run-a"), ClaimOwner("run-b")
    assert db.claim("k1", "llvm", [0, 1, 2], a) == [0, 1, 2]
    assert db.claim("k1", "llvm", [1, 2, 3, 4], b) == [3, 4]  # a's claims hold
    assert db.add(_rec(1, 1.0), owner=a)  # recording releases a's claim on 1
    assert db.claim("k1", "llvm", [1, 5], b) == [5]  # 1 is recorded now
    assert sorted(i for _, i, who, _ in db.claims("k1") if who == a.name) == [0, 2]
    db.release(a)
    assert db.claim("k1", "llvm", [0, 2], b) == [0, 2]
    c = ClaimOwner("run-c")
    assert db.claim("k1", "llvm", [6], c, lease=-1.0) == [6]  # lease already over
    assert db.claim("k1", "llvm", [6], b) == [6]


def test_claims_of_a_dead_process_are_free(tmp_path) -> None:
    db = Database(tmp_path / "t.db")
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = ClaimOwner("killed-run", pid=int(proc.stdout))  # this host, a finished process
    assert db.claim("k1", "llvm", [0, 1], dead) == [0, 1]
    assert db.claim("k1", "llvm", [0, 1], ClaimOwner("resumed")) == [0, 1]
    other_host = ClaimOwner("remote", host="elsewhere.invalid", pid=int(proc.stdout))
    assert db.claim("k1", "llvm", [2], other_host) == [2]
    assert db.claim("k1", "llvm", [2], ClaimOwner("local")) == []  # its lease still runs


def test_concurrent_claims_never_overlap(tmp_path) -> None:
    path = tmp_path / "t.db"
    Database(path).close()
    script = textwrap.dedent(f"""
        import random, sys
        from tensorforge.autotune.database import ClaimOwner, Database, Record
        db = Database({str(path)!r})
        me = ClaimOwner("w" + sys.argv[1])
        rng = random.Random(int(sys.argv[1]))
        got = []
        for _ in range(40):
            for i in db.claim("k", "llvm", rng.sample(range(200), 6), me):
                assert db.add(Record("k", "llvm", i, {{}}, [1.0], run_id=me.run_id), owner=me)
                got.append(i)
        print(len(got))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)], stdout=subprocess.PIPE,
                              text=True) for w in range(3)]
    counts = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    db = Database(path)
    recs = db.records("k")
    assert len(recs) == sum(counts) == len({r.config_index for r in recs})
    assert all(sum(r.run_id == f"w{w}" for r in recs) == counts[w] for w in range(3))
    assert db.claims() == []
