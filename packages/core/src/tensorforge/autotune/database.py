"""The tuning records database: SQLite (stdlib), embedded, one file (default ``tuning.db``).

* WAL journal and a busy time-out: several tuning processes may write one file at once.
* Every measurement is committed when it completes, so a run killed at any moment loses at
  most the measurement in flight; ``UNIQUE(task_key, target, config_index)`` makes a record
  land once however often it is written (a resumed run skips measured configs anyway).
* The schema is versioned (``meta.schema_version``); an older file is migrated on open, a
  newer one is refused.
* ``export_jsonl`` / ``import_jsonl`` share records as JSON lines (one record per line, with
  its task), importing skips records already present.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["SCHEMA_VERSION", "Database", "Record"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    task_key TEXT PRIMARY KEY, template TEXT NOT NULL, args TEXT NOT NULL,
    target TEXT NOT NULL, module TEXT, space_size INTEGER, flop REAL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_key TEXT NOT NULL, target TEXT NOT NULL, config_index INTEGER NOT NULL,
    config TEXT NOT NULL, costs TEXT NOT NULL, cost REAL,
    error_class TEXT, error_msg TEXT, all_cost REAL, timestamp REAL NOT NULL,
    tuner TEXT, run_id TEXT,
    UNIQUE (task_key, target, config_index));
CREATE INDEX IF NOT EXISTS records_by_task ON records (task_key, target, cost);
"""


@dataclass
class Record:
    """One measured config. ``cost`` is the median seconds per run (None on error)."""

    task_key: str
    target: str
    config_index: int
    config: dict[str, Any]
    costs: list[float] = field(default_factory=list)
    error_class: str | None = None
    error_msg: str = ""
    all_cost: float = 0.0
    timestamp: float = field(default_factory=time.time)
    tuner: str = ""
    run_id: str = ""

    @property
    def ok(self) -> bool:
        return self.error_class is None and bool(self.costs)

    @property
    def cost(self) -> float:
        if not self.ok:
            return math.inf
        c = sorted(self.costs)
        return c[len(c) // 2]


class Database:
    """Tuning records in an SQLite file (``":memory:"`` works for tests)."""

    def __init__(self, path: str | os.PathLike[str] = "tuning.db", timeout: float = 60.0):
        self.path = os.fspath(path)
        self.timeout = timeout
        self._local = threading.local()
        self._migrate()

    # connection ----------------------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _migrate(self) -> None:
        c = self.conn
        c.executescript(_SCHEMA)  # idempotent statements
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise RuntimeError(f"{self.path}: tuning database schema {row[0]} is newer than "
                                   f"this tensorforge's ({SCHEMA_VERSION}); upgrade tensorforge")
            # (migrations from older versions go here, one step per version)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0])

    # writing -------------------------------------------------------------------------------
    def add_task(self, task: Any) -> None:
        """Remember a task (so records can be re-featurized for transfer learning)."""
        d = task.to_json()
        self.conn.execute(
            "INSERT OR IGNORE INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?)",
            (task.key, d["template"], json.dumps(d["args"]), d["target"], d["module"],
             len(task.config_space), task.flop))

    def add(self, rec: Record) -> bool:
        """Commit one record; False if that config of that task was already recorded."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO records (task_key, target, config_index, config, costs, cost,"
            " error_class, error_msg, all_cost, timestamp, tuner, run_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rec.task_key, rec.target, rec.config_index, json.dumps(rec.config),
             json.dumps(rec.costs), rec.cost if rec.ok else None, rec.error_class,
             rec.error_msg[:2000], rec.all_cost, rec.timestamp, rec.tuner, rec.run_id))
        return cur.rowcount == 1

    # reading -------------------------------------------------------------------------------
    @staticmethod
    def _record(row: sqlite3.Row | tuple) -> Record:
        (task_key, target, idx, config, costs, _cost, err, msg, all_cost, ts, tuner,
         run_id) = row
        return Record(task_key, target, idx, json.loads(config), json.loads(costs), err,
                      msg or "", all_cost or 0.0, ts, tuner or "", run_id or "")

    _COLS = ("task_key, target, config_index, config, costs, cost, error_class, error_msg, "
             "all_cost, timestamp, tuner, run_id")

    def records(self, task_key: str | None = None, target: str | None = None,
                ok_only: bool = False) -> list[Record]:
        """Records in insertion order, optionally of one task / target / without errors."""
        where, params = [], []
        if task_key is not None:
            where.append("task_key = ?")
            params.append(task_key)
        if target is not None:
            where.append("target = ?")
            params.append(str(target))
        if ok_only:
            where.append("error_class IS NULL")
        sql = f"SELECT {self._COLS} FROM records"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._record(r) for r in self.conn.execute(sql + " ORDER BY id", params)]

    def count(self, task_key: str | None = None) -> int:
        if task_key is None:
            return self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        return self.conn.execute("SELECT COUNT(*) FROM records WHERE task_key = ?",
                                 (task_key,)).fetchone()[0]

    def measured(self, task_key: str, target: str) -> set[int]:
        """Config indices of a task already recorded (with or without errors)."""
        rows = self.conn.execute(
            "SELECT config_index FROM records WHERE task_key = ? AND target = ?",
            (task_key, str(target)))
        return {r[0] for r in rows}

    def best(self, task_key: str, target: str, k: int = 1) -> Record | list[Record] | None:
        """The fastest error-free record of a task (or the ``k`` fastest as a list)."""
        rows = self.conn.execute(
            f"SELECT {self._COLS} FROM records WHERE task_key = ? AND target = ? AND "
            "error_class IS NULL AND cost IS NOT NULL ORDER BY cost LIMIT ?",
            (task_key, str(target), max(1, k))).fetchall()
        recs = [self._record(r) for r in rows]
        if k == 1:
            return recs[0] if recs else None
        return recs

    def tasks(self) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT task_key, template, args, target, module FROM tasks")
        return [{"key": r[0], "template": r[1], "args": json.loads(r[2]), "target": r[3],
                 "module": r[4]} for r in rows]

    # sharing -------------------------------------------------------------------------------
    def export_jsonl(self, path: str | os.PathLike[str], task_key: str | None = None) -> int:
        """Write records (with their task) as JSON lines; returns how many."""
        tasks = {t["key"]: t for t in self.tasks()}
        n = 0
        with open(path, "w", encoding="utf-8") as f:
            for rec in self.records(task_key):
                d = asdict(rec)
                d["task"] = tasks.get(rec.task_key)
                f.write(json.dumps(d) + "\n")
                n += 1
        return n

    def import_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Add the records of a JSON-lines file; returns how many were new."""
        new = 0
        with open(path, encoding="utf-8") as f:
            lines: Iterable[str] = list(f)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for line in lines:
                if not line.strip():
                    continue
                d = json.loads(line)
                task = d.pop("task", None)
                if task:
                    self.conn.execute(
                        "INSERT OR IGNORE INTO tasks (task_key, template, args, target, module)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (task["key"], task["template"], json.dumps(task["args"]),
                         task["target"], task.get("module")))
                new += self.add(Record(**d))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return new

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())
