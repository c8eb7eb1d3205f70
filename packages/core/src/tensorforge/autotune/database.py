"""The tuning records database: SQLite (stdlib), embedded, one file (default ``tuning.db``).

* WAL journal and a busy time-out: several tuning processes may write one file at once.
* Every measurement is committed when it completes, so a run killed at any moment loses at
  most the measurement in flight; ``UNIQUE(task_key, target, config_index)`` makes a record
  land once however often it is written (a resumed run skips measured configs anyway).
* The schema is versioned (``meta.schema_version``); an older file is migrated on open, a
  newer one is refused.
* ``export_jsonl`` / ``import_jsonl`` share records as JSON lines (one record per line, with
  its task), importing skips records already present.
* Claims: a tuner claims the configs it is about to measure (``claim``: in one transaction,
  configs neither recorded nor claimed by a live owner); the record's commit releases the
  claim. A claim carries its owner (host, pid, run) and a lease that the owner renews with
  every record; a claim whose lease ran out, or whose owner process on this host is gone
  (SIGKILL), is free again. Two tuners on one file so measure disjoint configs.
* ``Database(path, readonly=True)`` (what ``compile(tuning_db=...)`` uses) opens the file with
  SQLite's ``mode=ro`` and writes nothing, so a read-only file or folder works. An empty path,
  a path that cannot be written (writable mode) and a file that is not a tuning database are a
  :class:`TuningDatabaseError` naming the file and what to do.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import TensorforgeError

__all__ = ["SCHEMA_VERSION", "ClaimOwner", "Database", "Record", "TuningDatabaseError"]

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
CREATE TABLE IF NOT EXISTS claims (
    task_key TEXT NOT NULL, target TEXT NOT NULL, config_index INTEGER NOT NULL,
    owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, expires REAL NOT NULL,
    PRIMARY KEY (task_key, target, config_index));
"""

#: seconds a claim holds without a renewal (every committed record renews the owner's claims)
DEFAULT_LEASE = 300.0


class TuningDatabaseError(TensorforgeError):
    """The tuning database cannot be used: no path, not writable, not a tuning database, or
    written by a newer tensorforge."""


@dataclass(frozen=True)
class ClaimOwner:
    """Who measures a claimed config: this host and process, and the tuning run."""

    run_id: str
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    @property
    def name(self) -> str:
        return f"{self.host}:{self.pid}:{self.run_id}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _reason(exc: BaseException) -> str:
    return f"{exc}" if isinstance(exc, sqlite3.Error) else f"{type(exc).__name__}: {exc}"



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
        return _median(self.costs) if self.ok else math.inf


def _median(costs: Sequence[float]) -> float:
    """A record's cost: the upper median of its samples."""
    c = sorted(costs)
    return c[len(c) // 2]


class Database:
    """Tuning records in an SQLite file (``":memory:"`` works for tests). ``readonly``
    opens an existing file without writing to it (compile's use)."""

    def __init__(self, path: str | os.PathLike[str] = "tuning.db", timeout: float = 60.0,
                 readonly: bool = False):
        self.path = os.fspath(path)
        self.timeout = timeout
        self.readonly = readonly
        self._immutable = False
        self._local = threading.local()
        if not self.path.strip():
            raise TuningDatabaseError("the tuning database path is empty: name a file, e.g. "
                                      "--db tuning.db")
        if readonly:
            self._check_readable()
        else:
            self._check_writable()
        try:
            self._open_retrying()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise self._unusable(exc) from None

    # opening -------------------------------------------------------------------------------
    def _open_retrying(self) -> None:
        """Open and migrate, retrying while another process holds the file. SQLite answers
        some races at open without calling the busy handler (two processes switching a new
        file to WAL, one reading the schema while another creates it): "database is locked"
        at once, whatever the timeout."""
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if ("locked" not in text and "busy" not in text) or \
                        time.monotonic() + delay > deadline:
                    raise
                self.close()
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _check_writable(self) -> None:
        """Refuse up front a path SQLite could not write (before any tuning work)."""
        if self.path == ":memory:":
            return
        folder = os.path.dirname(os.path.abspath(self.path))
        if os.path.isdir(self.path):
            raise TuningDatabaseError(f"tuning database {self.path!r} is a folder: name a file "
                                      f"in it, e.g. {os.path.join(self.path, 'tuning.db')!r}")
        if not os.path.isdir(folder):
            raise TuningDatabaseError(f"cannot write the tuning database {self.path!r}: folder "
                                      f"{folder!r} does not exist; create it or pick another path")
        if not os.access(folder, os.W_OK | os.X_OK) or (
                os.path.exists(self.path) and not os.access(self.path, os.R_OK | os.W_OK)):
            raise TuningDatabaseError(f"cannot write the tuning database {self.path!r} (no write "
                                      "permission; SQLite also writes -wal and -shm files next "
                                      "to it): pick a writable path")

    def _check_readable(self) -> None:
        if self.path == ":memory:":
            raise TuningDatabaseError("a read-only ':memory:' database has no records")
        if not os.path.isfile(self.path):
            raise TuningDatabaseError(f"tuning database {self.path!r} does not exist (tforge "
                                      "tune writes one)")
        if not os.access(self.path, os.R_OK):
            raise TuningDatabaseError(f"cannot read the tuning database {self.path!r}: no read "
                                      "permission")
        # SQLite reads a WAL database through a -shm file next to it; where none can be made
        # (a read-only folder), read the file as immutable (nobody can be writing it there)
        folder = os.path.dirname(os.path.abspath(self.path))
        self._immutable = not os.access(folder, os.W_OK) and not os.path.exists(
            self.path + "-shm")

    def _unusable(self, exc: BaseException) -> TuningDatabaseError:
        text = str(exc)
        if "not a database" in text or "malformed" in text or "encrypted" in text:
            return TuningDatabaseError(
                f"{self.path!r} is not a usable tuning database (SQLite: {text}): the file is "
                "corrupt or of another kind; move it away and tune again, or name another "
                "database")
        if isinstance(exc, sqlite3.OperationalError) and not self.readonly:
            return TuningDatabaseError(f"cannot write the tuning database {self.path!r} "
                                       f"(SQLite: {text}): pick a writable path")
        return TuningDatabaseError(f"cannot open the tuning database {self.path!r}: "
                                   f"{_reason(exc)}")

    def _connect(self) -> sqlite3.Connection:
        if not self.readonly:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn
        # mode=ro writes nothing; a WAL file in a read-only folder cannot even be read that
        # way (SQLite needs its -shm), so fall back to immutable=1 (no locking, no -shm)
        mode = "immutable=1" if self._immutable else "mode=ro"
        uri = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?{mode}"
        return sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)

    # connection ----------------------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._connect()
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
        if self.readonly:
            self._check_version_readonly()
            return
        c = self.conn
        c.executescript(_SCHEMA)  # idempotent statements
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise self._newer(row[0])
            # (migrations from older versions go here, one step per version)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def _newer(self, version: Any) -> TuningDatabaseError:
        return TuningDatabaseError(f"{self.path}: tuning database schema {version} is newer "
                                   f"than this tensorforge's ({SCHEMA_VERSION}); upgrade "
                                   "tensorforge")

    def _check_version_readonly(self) -> None:
        try:
            tables = {r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.OperationalError:
            if self._immutable:
                raise
            self.close()  # a WAL file in a read-only folder: read it as immutable
            self._immutable = True
            tables = {r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"meta", "records", "tasks"} <= tables:
            raise TuningDatabaseError(f"{self.path!r} holds no tuning records (not written by "
                                      "tforge tune): name the database tforge tune wrote")
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise self._newer(row[0])

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

    def retime(self, task_key: str, target: str, config_index: int,
               costs: Sequence[float]) -> bool:
        """Replace an error-free record's samples (and so its cost) with a later timing of
        the same config (``confirm.confirm_best``); False if there is no such record."""
        cur = self.conn.execute(
            "UPDATE records SET costs = ?, cost = ?, timestamp = ? WHERE task_key = ? AND "
            "target = ? AND config_index = ? AND error_class IS NULL",
            (json.dumps(list(costs)), _median(costs), time.time(), task_key, str(target),
             config_index))
        return cur.rowcount > 0

    def add(self, rec: Record, owner: ClaimOwner | None = None,
            lease: float = DEFAULT_LEASE) -> bool:
        """Commit one record; False if that config of that task was already recorded. With
        ``owner``, the same transaction drops the owner's claim on the config and renews the
        lease of its other claims."""
        c = self.conn
        if owner is not None:
            c.execute("BEGIN IMMEDIATE")
        try:
            cur = c.execute(
                "INSERT OR IGNORE INTO records (task_key, target, config_index, config, costs, "
                "cost, error_class, error_msg, all_cost, timestamp, tuner, run_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (rec.task_key, rec.target, rec.config_index, json.dumps(rec.config),
                 json.dumps(rec.costs), rec.cost if rec.ok else None, rec.error_class,
                 rec.error_msg[:2000], rec.all_cost, rec.timestamp, rec.tuner, rec.run_id))
            if owner is not None:
                c.execute("DELETE FROM claims WHERE task_key = ? AND target = ? AND "
                          "config_index = ? AND owner = ?",
                          (rec.task_key, rec.target, rec.config_index, owner.name))
                c.execute("UPDATE claims SET expires = ? WHERE owner = ?",
                          (time.time() + lease, owner.name))
                c.execute("COMMIT")
        except BaseException:
            if owner is not None:
                c.execute("ROLLBACK")
            raise
        return cur.rowcount == 1

    # claims --------------------------------------------------------------------------------
    def claim(self, task_key: str, target: str, indices: Sequence[int], owner: ClaimOwner,
              lease: float = DEFAULT_LEASE) -> list[int]:
        """Claim the configs of ``indices`` that are neither recorded nor claimed by another
        live owner; returns those claimed, in order. One transaction: two tuners never get
        the same config."""
        target, now = str(target), time.time()
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            marks = ",".join("?" * len(indices))
            done = {r[0] for r in c.execute(
                f"SELECT config_index FROM records WHERE task_key = ? AND target = ? AND "
                f"config_index IN ({marks})", (task_key, target, *indices))}
            held = {r[0]: r[1:] for r in c.execute(
                f"SELECT config_index, owner, host, pid, expires FROM claims WHERE "
                f"task_key = ? AND target = ? AND config_index IN ({marks})",
                (task_key, target, *indices))}
            got = []
            for i in dict.fromkeys(indices):
                if i in done:
                    continue
                if i in held:
                    who, host, pid, expires = held[i]
                    gone = host == owner.host and not _alive(pid)
                    if who != owner.name and expires > now and not gone:
                        continue
                c.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (task_key, target, i, owner.name, owner.host, owner.pid, now + lease))
                got.append(i)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return got

    def release(self, owner: ClaimOwner, task_key: str | None = None) -> None:
        """Drop ``owner``'s remaining claims (of one task, or all): a batch that ended early."""
        if task_key is None:
            self.conn.execute("DELETE FROM claims WHERE owner = ?", (owner.name,))
        else:
            self.conn.execute("DELETE FROM claims WHERE owner = ? AND task_key = ?",
                              (owner.name, task_key))

    def claims(self, task_key: str | None = None) -> list[tuple[str, int, str, float]]:
        """``(task_key, config_index, owner, expires)`` of the current claims."""
        sql, params = "SELECT task_key, config_index, owner, expires FROM claims", ()
        if task_key is not None:
            sql, params = sql + " WHERE task_key = ?", (task_key,)
        return [tuple(r) for r in self.conn.execute(sql, params)]

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

    def record(self, task_key: str, target: str, config_index: int) -> Record | None:
        """The error-free record of one config of a task, or None."""
        row = self.conn.execute(
            f"SELECT {self._COLS} FROM records WHERE task_key = ? AND target = ? AND "
            "config_index = ? AND error_class IS NULL AND cost IS NOT NULL",
            (task_key, str(target), config_index)).fetchone()
        return self._record(row) if row else None

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
