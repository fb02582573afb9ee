"""The tuning database: what the project has learned about kernels, one row per measurement or prediction.

SQLite (stdlib `sqlite3`) in WAL mode, so a sweep's worker processes, a `jitgemm tune` and a notebook can write
the same file at once (SQLite serialises writers; `busy_timeout` makes a writer wait instead of failing).
Default file: `$JITGEMM_TUNING_DB`, else `<cache>/tuning.db` (`~/.cache/jitgemm/tuning.db`; `JITGEMM_CACHE_DIR`
moves the cache). A row says: target, problem key (the exact problem, `format_problem`), kernel identity
(kernel name from the contract's identity, generator + version, the code sha256), metric, value, source
(`hardware`, `model`, `emulator`, `host`), tool versions, time, and where it came from (`origin`: a sweep, a
CSV file and line, ...). A variant's config and contract travel with it (JSON) so the selector can offer a
tuned kernel again (`TunedSupplier`).

Metrics: `seconds` (measured run time, lower is better; what `jitgemm tune` and imported tables record),
`tflops` (predicted or measured throughput), `cycles_per_mfma`, `emulator_ok` (1 or 0), `compile_seconds`,
`occupancy` (waves per SIMD).

The store it replaces — `<cache>/tuning/<target>.json` (problem -> kernel key -> seconds) — is migrated the
first time a database is opened beside it; the JSON file is renamed `*.json.migrated`.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from jitgemm.codegen.gemm_ir import GemmProblem, IRError
from jitgemm.codegen.gemm_text import format_problem
from jitgemm.isa.errors import IsaError
from jitgemm.isa.spec.cache import cache_root
from jitgemm.isa.spec.targets import base_target, known_targets
from jitgemm.util.cache_notice import notice

SOURCES = ("hardware", "model", "emulator", "host")
METRICS = {"seconds": "lower", "tflops": "higher", "cycles_per_mfma": "lower", "emulator_ok": "higher",
           "compile_seconds": "lower", "occupancy": "higher",
           "chosen": "higher"}   # 1: another library's tuned choice with no time (hipBLASLt override files)
# Columns of `export_csv` / `import_csv` (the project's own format), in order.
CSV_COLUMNS = ("target", "problem", "kernel", "generator", "code_sha256", "contract_key", "metric", "value",
               "source", "tools", "time", "origin", "config", "contract")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    problem TEXT NOT NULL,
    kernel TEXT NOT NULL,
    generator TEXT NOT NULL DEFAULT '',
    code_sha256 TEXT NOT NULL DEFAULT '',
    contract_key TEXT NOT NULL DEFAULT '',
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('hardware', 'model', 'emulator', 'host')),
    tools TEXT NOT NULL DEFAULT '{}',
    time REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT '',
    config TEXT NOT NULL DEFAULT '',
    contract TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS results_lookup ON results (target, problem, metric, kernel);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
SCHEMA_VERSION = "1"


class TuningDBError(IsaError):
    """A database or CSV file that cannot be read or written; the message names the file (and line)."""


@dataclass(frozen=True)
class Row:
    """One row of the database (see the module docstring)."""

    id: int
    target: str
    problem: str
    kernel: str
    generator: str
    code_sha256: str
    contract_key: str
    metric: str
    value: float
    source: str
    tools: str
    time: float
    origin: str
    config: str
    contract: str

    @property
    def split_k(self) -> int | None:
        """The split-K count the measurement ran with (`tools.split_k`, as aiter's tables record each winner's
        splitK), None when the row does not say."""
        try:
            value = json.loads(self.tools or "{}").get("split_k")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None

    @classmethod
    def coerced(cls, values: tuple) -> Row | None:
        """A row from the database's values as they are stored, whatever wrote them (SQLite keeps any type
        in any column: a NULL, a BLOB, text in `value`): text columns as text, `value` and `time` as finite
        floats; None for a row whose id, value or time is not a number (it is skipped, not a traceback)."""
        rid, *rest = values
        text = [("" if v is None else v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
                for v in rest]
        try:
            value, stamp = float(rest[7]), float(rest[10])
            if isinstance(rest[7], (bytes, str)) or isinstance(rest[10], (bytes, str)) or \
                    not (math.isfinite(value) and math.isfinite(stamp)) or not isinstance(rid, int):
                return None
        except (TypeError, ValueError):
            return None
        stamp = stamp if 0 <= stamp < 1e11 else 0.0      # a time past the year 5000 prints as the epoch
        return cls(rid, *text[:7], value, text[8], text[9], stamp, *text[11:14])

    def describe(self) -> str:
        """What `explain` prints for the row that decided."""
        where = f", {self.origin}" if self.origin else ""
        stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.time))
        return f"db row {self.id}: {self.metric}={self.value:.6g} ({self.source}{where}, {stamp} UTC)"


def default_path() -> Path:
    """`$JITGEMM_TUNING_DB`, else `<cache>/tuning.db`."""
    env = os.environ.get("JITGEMM_TUNING_DB")
    return Path(env) if env else cache_root() / "tuning.db"


def problem_key(problem: GemmProblem) -> str:
    """The exact problem as the IR text writes it (sizes, dtypes, layout, epilogue), leading dimensions that
    equal packed storage left out: `matmul` states them, a table's row and `jitgemm select` do not, and they are
    the same problem (`GemmProblem.without_packed_lds`)."""
    return format_problem(problem.without_packed_lds())


def contract_identity(contract: dict) -> tuple[str, str, str]:
    """(kernel name, generator with version, code sha256) from a contract's `identity` section."""
    ident = contract.get("identity", {}) if isinstance(contract, dict) else {}
    generator = str(ident.get("generator", ""))
    if ident.get("generator_version"):
        generator += f"@{ident['generator_version']}"
    return str(ident.get("kernel", "")), generator, str(ident.get("code_sha256", "") or "")


_CORRUPT = "not a readable SQLite database"
_MEMORY = Path(":memory:")
SQLITE_MAGIC = b"SQLite format 3\x00"     # the first 16 bytes of every SQLite 3 file (sqlite.org/fileformat.html)
def _unusable(path: Path) -> str | None:
    """Why the database file cannot be used, judged without opening it with SQLite (which would block on a
    FIFO, read a device forever or trust a sparse file of zeros): None when it is absent, empty or starts with
    the SQLite header; `_CORRUPT...` when it is a regular file that is not a database (set aside, rebuilt);
    another reason (a folder, device, FIFO, unreadable or read-only place) when it cannot be used at all."""
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        parent = path.parent
        if parent.exists() and not parent.is_dir():
            return f"{parent} is not a folder"
        probe = parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not os.access(probe, os.W_OK | os.X_OK):
            return f"cannot create it ({probe} is read-only)"
        return None
    except OSError as exc:
        return f"cannot use it ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
            "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
        return f"it is {kind}, not a database file"
    if st.st_size == 0:
        return None if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK) else "it is read-only"
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    if head != SQLITE_MAGIC:
        return f"{_CORRUPT} (its first bytes are not the SQLite header)"
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
        return "it (or its folder) is read-only"
    return None


class TuningDB:
    """The SQLite tuning database. `path`: a `.db` file, or a folder (then `<folder>/tuning.db`, and the
    folder's old `<target>.json` files are migrated into it)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        p = Path(path) if path is not None else default_path()
        legacy = None
        if p.is_dir() or (path is not None and p.suffix == ""):
            legacy, p = p, p / "tuning.db"
        elif path is None:
            legacy = cache_root() / "tuning"
        self.path = p
        self._legacy = legacy
        self._explicit = path is not None
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self.degraded = ""        # why this process runs without the file (a read-only cache, ...): "" when not

    # --- connection ----------------------------------------------------------------------------------------
    def check_writable(self) -> None:
        """Open the database now and make sure a row could be written (the folder exists and is writable, the
        file is a database or can become one): a TuningDBError naming the file and the reason otherwise, so a
        command that records results says so before it works (`jitgemm sweep --db ...`)."""
        parent = self.path.parent
        if not parent.is_dir():
            raise TuningDBError(f"{self.path}: the folder {parent} does not exist")
        if self.path.exists() and not self.path.is_file():
            raise TuningDBError(f"{self.path}: not a regular file (a folder, device or FIFO); expected an SQLite "
                                f"database file or a new file name")
        if not os.access(parent, os.W_OK | os.X_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
            raise TuningDBError(f"{self.path}: cannot write there (read-only file or folder)")
        self._connect()
        if self.degraded:
            raise TuningDBError(f"{self.path}: {self.degraded}")

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = None
        why = _unusable(self.path)
        if why is None:
            try:
                conn = self._open(self.path)
            except (sqlite3.Error, OSError) as exc:
                why = str(exc) if str(exc).startswith(_CORRUPT) else f"cannot open it ({exc})"
        if why is not None and why.startswith(_CORRUPT):
            aside = self._set_aside()   # a cache: keep the damaged file for a post-mortem, start a new one
            if aside:
                try:
                    conn = self._open(self.path)
                    notice(f"tuning database {self.path}: {why}; moved to {aside.name} and started afresh")
                    why = None
                except (sqlite3.Error, OSError) as exc:
                    why = f"cannot open it ({exc})"
        if why is not None and "read-only" in why and self.path.is_file():
            try:                     # a read-only database still ranks kernels; nothing new is recorded
                conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
                conn.execute("SELECT count(*) FROM results").fetchone()
                self.degraded = f"{why}: read, nothing recorded"
                notice(f"tuning database {self.path}: {why}; reading it, recording nothing")
                why = None
            except sqlite3.Error:
                conn = None
        if why is not None:
            conn = self._in_memory(why)
        self._conn, self._pid = conn, os.getpid()
        if not self.degraded and self._legacy is not None and self._legacy.is_dir():
            self.migrate_json(self._legacy)
        return conn

    def _open(self, path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            missing = set(CSV_COLUMNS) - {r[1] for r in conn.execute("PRAGMA table_info(results)")}
            if missing:
                raise sqlite3.DatabaseError(f"{_CORRUPT}: table results lacks {', '.join(sorted(missing))}")
        except sqlite3.Error as exc:
            conn.close()
            text = str(exc)
            if any(w in text for w in ("not a database", "malformed", "disk image", _CORRUPT)):
                raise sqlite3.DatabaseError(text if text.startswith(_CORRUPT) else f"{_CORRUPT} ({text})") from None
            raise
        return conn

    def _set_aside(self) -> Path | None:
        """Rename the damaged file (and its WAL companions) to `<name>.corrupt-<time>`; None when that fails."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        try:
            self.path.rename(aside)
        except OSError:
            return None
        for extra in ("-wal", "-shm"):
            try:
                self.path.with_name(self.path.name + extra).unlink()
            except OSError:
                pass
        return aside

    def _in_memory(self, why: str) -> sqlite3.Connection:
        """Run without the file: an empty database in memory for this process, said once on stderr."""
        self.degraded = why
        notice(f"tuning database {self.path}: {why}; running without it (nothing read from it, nothing "
                   f"recorded)")
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.executescript(_SCHEMA)
        return conn

    def _recover(self, why: str) -> None:
        """The open database failed a read: set the file aside and start afresh when it is damaged, else run
        without it (a cache never stops the work)."""
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None
        if not self.degraded and any(w in why for w in ("malformed", "not a database", "disk image")) \
                and self._set_aside() is not None:
            notice(f"tuning database {self.path}: {why}; set aside and started afresh")
            self._connect()
            return
        self._conn, self._pid = self._in_memory(why), os.getpid()

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __getstate__(self) -> dict:        # a database travels to worker processes as its path
        return {"path": self.path, "_legacy": None, "_conn": None, "_pid": -1}

    # --- writing -------------------------------------------------------------------------------------------
    def add(self, rows: Iterable[dict]) -> int:
        """Insert rows (dicts with the `CSV_COLUMNS` keys; target, problem, kernel, metric, value and source
        required) in one transaction; returns how many."""
        now = time.time()
        records = []
        for i, r in enumerate(rows):
            required = ("target", "problem", "kernel", "metric", "value", "source")
            missing = [k for k in required if r.get(k) in (None, "")]
            if missing:
                raise TuningDBError(f"row {i}: missing {', '.join(missing)}")
            if r["source"] not in SOURCES:
                raise TuningDBError(f"row {i}: source={r['source']!r}; accepted: {', '.join(SOURCES)}")
            try:
                value = float(r["value"])
            except (TypeError, ValueError):
                raise TuningDBError(f"row {i}: value={r['value']!r} is not a number") from None
            if not math.isfinite(value) or value < 0 or (r["metric"] == "seconds" and value == 0):
                raise TuningDBError(f"row {i}: value={r['value']!r}; a finite number (> 0 for seconds) is accepted")
            target = base_target(str(r["target"]))
            if target not in known_targets():
                raise TuningDBError(f"row {i}: target={str(r['target'])[:40]!r}; accepted: "
                                    f"{', '.join(known_targets())}")
            _check_problem(str(r["problem"]), f"row {i}")
            stamp = r.get("time")
            try:
                stamp = float(stamp) if stamp not in (None, "") else now
            except (TypeError, ValueError):
                raise TuningDBError(f"row {i}: time={stamp!r} is not a number") from None
            if not 0 <= stamp < 1e11:
                raise TuningDBError(f"row {i}: time={r.get('time')!r}; seconds since 1970 are accepted")
            tools = r.get("tools") or {}
            records.append((target, str(r["problem"]), str(r["kernel"]),
                            str(r.get("generator") or ""), str(r.get("code_sha256") or ""),
                            str(r.get("contract_key") or ""), str(r["metric"]), value, str(r["source"]),
                            tools if isinstance(tools, str) else json.dumps(tools, sort_keys=True),
                            stamp, str(r.get("origin") or ""),
                            _json_text(r.get("config")), _json_text(r.get("contract"))))
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO results (target, problem, kernel, generator, code_sha256, contract_key, "
                             "metric, value, source, tools, time, origin, config, contract) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", records)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if self.degraded:        # a read-only database: the rows are not kept, as it said when it opened
                return 0
            raise TuningDBError(f"{self.path}: cannot write ({exc})") from None
        return len(records)

    def record(self, target: str, problem: GemmProblem, kernel_key: str, seconds: float, *, kernel: str = "",
               code_sha256: str = "", source: str = "hardware", contract: dict | None = None,
               tools: dict | None = None, origin: str = "") -> None:
        """A measured run time of one kernel (`kernel_key`: the selector candidate's key; `kernel` and
        `code_sha256`: what actually ran, when the contract was planned before the binary existed)."""
        name, generator, sha = contract_identity(contract or {})
        sha = code_sha256 or sha
        self.add([{"target": target, "problem": problem_key(problem), "kernel": kernel or name or kernel_key,
                   "generator": generator, "code_sha256": sha, "contract_key": kernel_key, "metric": "seconds",
                   "value": seconds, "source": source, "tools": tools or {}, "origin": origin,
                   "contract": contract or ""}])

    # --- reading -------------------------------------------------------------------------------------------
    def rows(self, target: str | None = None, problem: GemmProblem | str | None = None, metric: str | None = None,
             source: str | None = None, kernel: str | None = None) -> list[Row]:
        """Rows matching every given field, oldest first."""
        where, args = [], []
        for column, value in (("target", base_target(target) if target else None),
                              ("problem", problem_key(problem) if isinstance(problem, GemmProblem) else problem),
                              ("metric", metric), ("source", source), ("kernel", kernel)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = (f"SELECT id, {', '.join(CSV_COLUMNS)} FROM results" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY id")
        try:
            rows = [Row.coerced(r) for r in self._connect().execute(sql, args)]
        except sqlite3.Error as exc:       # damage SQLite finds only when it reads the pages (a truncated file)
            self._recover(f"cannot read it ({exc})")
            return []
        return [r for r in rows if r is not None]

    def lookup(self, target: str, problem: GemmProblem, kernel_key: str) -> float | None:
        """The fastest measured seconds of a kernel (by candidate key) for exactly this problem."""
        best = [r.value for r in self.rows(target, problem, "seconds", "hardware") if r.contract_key == kernel_key
                and r.value > 0]
        return min(best) if best else None

    def deciding_row(self, target: str, problem: GemmProblem, kernel_key: str, contract: dict) -> Row | None:
        """The row that ranks a selector candidate: the best hardware-measured `seconds`, else the best
        model-predicted `tflops` of an emulator-verified variant. A row recorded for a selector candidate
        (`jitgemm tune`) matches by the candidate's key only; any other row (a sweep's, an imported table's)
        by the contract's kernel name when the row's code sha256 is unknown (imported tables) or equal."""
        name, _, sha = contract_identity(contract)

        def matches(r: Row) -> bool:
            if r.contract_key:
                return r.contract_key == kernel_key
            return bool(name) and r.kernel == name and (not r.code_sha256 or not sha or r.code_sha256 == sha)

        rows = [r for r in self.rows(target, problem) if matches(r)]
        measured = [r for r in rows if r.metric == "seconds" and r.source == "hardware" and r.value > 0]
        if measured:
            return min(measured, key=lambda r: (r.value, r.id))
        verified = {(r.kernel, r.code_sha256) for r in rows if r.metric == "emulator_ok" and r.value >= 1}
        failed = {(r.kernel, r.code_sha256) for r in rows if r.metric == "emulator_ok" and r.value < 1}
        modelled = [r for r in rows if r.metric == "tflops" and r.source == "model" and r.value > 0
                    and (r.kernel, r.code_sha256) in verified - failed]
        if modelled:
            return max(modelled, key=lambda r: (r.value, -r.id))
        return None

    def tuned(self, target: str, problem: GemmProblem) -> list[Row]:
        """One row per tuned kernel of the problem that carries a config (what `TunedSupplier` offers): the
        latest `tflops` row of each emulator-verified variant."""
        rows = self.rows(target, problem)
        verified = {(r.kernel, r.code_sha256) for r in rows if r.metric == "emulator_ok" and r.value >= 1}
        out: dict[tuple[str, str], Row] = {}
        for r in rows:
            if r.metric == "tflops" and r.config and (r.kernel, r.code_sha256) in verified:
                out[(r.kernel, r.code_sha256)] = r
        return list(out.values())

    # --- migration and CSV ---------------------------------------------------------------------------------
    def migrate_json(self, folder: Path) -> int:
        """Move the old JSON store (`<folder>/<target>.json`: problem -> kernel key -> seconds) into the
        database; each migrated file is renamed `*.json.migrated`. Returns the number of rows added."""
        added = 0
        for path in sorted(Path(folder).glob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise TuningDBError(f"{path}: not a JSON tuning store ({exc})") from None
            rows = []
            for problem, kernels in (data.items() if isinstance(data, dict) else ()):
                for key, seconds in (kernels.items() if isinstance(kernels, dict) else ()):
                    if isinstance(seconds, (int, float)) and seconds > 0:
                        rows.append({"target": path.stem, "problem": problem, "kernel": key, "contract_key": key,
                                     "metric": "seconds", "value": seconds, "source": "hardware",
                                     "origin": f"migrated from {path.name}", "time": path.stat().st_mtime})
            if rows:
                added += self.add(rows)
            path.rename(path.with_name(path.name + ".migrated"))
        return added

    def export_csv(self, path: str | os.PathLike, **filters) -> int:
        """Write rows (filtered as `rows()`) as CSV with the `CSV_COLUMNS` header; returns the count."""
        rows = self.rows(**filters)
        try:
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(CSV_COLUMNS)
                for r in rows:
                    w.writerow([getattr(r, c) for c in CSV_COLUMNS])
        except OSError as exc:
            raise TuningDBError(f"{path}: cannot write ({exc})") from None
        return len(rows)

    def import_csv(self, path: str | os.PathLike, target: str | None = None, layout: str = "NT") -> int:
        """Rows from a CSV file: the project's own export, or another team's tuning table with M, N, K, a run
        time in microseconds (`us`) and a `kernelName` (aiter's `*_tuned_gemm.csv`; `target` is then
        required, `layout` says how their A and B are stored). Returns the number of rows added; a bad line
        is an error naming the file and line."""
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                header = tuple(reader.fieldnames or ())
                lines = list(reader)
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise TuningDBError(f"{path}: cannot read ({exc})") from None
        if set(CSV_COLUMNS) <= set(header):
            rows = [dict(r) for r in lines]
            for r in rows:            # add() checks every field (a time that is not a number is refused there)
                r["time"] = r["time"] or None
        elif {"M", "N", "K", "us", "kernelName"} <= set(header):
            if not target:
                raise TuningDBError(f"{path}: a foreign tuning table needs --target (which GPU measured it)")
            rows = [_foreign_row(path, i + 2, r, target, layout) for i, r in enumerate(lines)]
        else:
            raise TuningDBError(f"{path}: unknown CSV header {','.join(header)[:120]}; accepted: this project's "
                                f"export ({','.join(CSV_COLUMNS)}) or a table with M,N,K,us,kernelName")
        return self.add(rows)


@functools.cache
def _torch_dtypes() -> dict[str, str]:
    """aiter's torch dtype names -> jitgemm dtypes, from their one home: specs/aiter/release.yaml `torch:` (a copy
    here once mapped torch.float8_e4m3fn, OCP, to gfx942's FNUZ fp8)."""
    from importlib import resources

    from jitgemm.util.safe_yaml import load_yaml

    text = resources.files("jitgemm.specs").joinpath("aiter/release.yaml").read_text(encoding="utf-8")
    return dict(load_yaml(text)["torch"])


def _foreign_row(path, line: int, r: dict, target: str, layout: str) -> dict:
    """A row of aiter's tuning tables: `M,N,K,...,dtype,outdtype,...,us,kernelName` (microseconds)."""
    where = f"{path}:{line}"
    try:
        m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
        us = float(r["us"])
        dtypes = _torch_dtypes()
        a = dtypes.get(str(r.get("dtype") or "torch.bfloat16"))
        d = dtypes.get(str(r.get("outdtype") or r.get("dtype") or "torch.bfloat16"))
        if a is None or d is None:
            raise ValueError(f"dtype {r.get('dtype')!r} / outdtype {r.get('outdtype')!r}; accepted: "
                             + ", ".join(dtypes))
        problem = GemmProblem.make(m, n, k, a, d=d, layout=layout)
    except (KeyError, ValueError, IRError) as exc:
        raise TuningDBError(f"{where}: {exc}") from None
    if us <= 0 or not r.get("kernelName"):
        raise TuningDBError(f"{where}: us={r.get('us')!r} kernelName={r.get('kernelName')!r}; a positive time and a "
                            f"kernel name are required")
    return {"target": target, "problem": problem_key(problem), "kernel": r["kernelName"], "metric": "seconds",
            "value": us * 1e-6, "source": "hardware", "origin": f"{Path(path).name}:{line}",
            "tools": {"cu_num": r.get("cu_num", ""), "libtype": r.get("libtype", "")}}


MAX_SIZE = 2**31 - 1        # sizes travel as 32-bit kernel arguments


def _check_problem(text: str, where: str) -> None:
    """A row's problem must be one the project can make (the IR text `format_problem` writes) with sizes a kernel
    takes: M=1e30 or a garbled key is refused on the way in, never found later by a reader."""
    from jitgemm.codegen.gemm_text import parse

    if text in _GOOD_PROBLEMS:
        return
    try:
        problem, _ = parse(text, where)
    except (IRError, ValueError) as exc:
        raise TuningDBError(f"{where}: problem {text[:80]!r}: {str(exc)[:200]}") from None
    if max(problem.m, problem.n, problem.k, problem.batch) > MAX_SIZE:
        raise TuningDBError(f"{where}: problem {text[:80]!r}: sizes up to {MAX_SIZE} are accepted")
    if len(_GOOD_PROBLEMS) > 65536:
        _GOOD_PROBLEMS.clear()
    _GOOD_PROBLEMS.add(text)


_GOOD_PROBLEMS: set[str] = set()


def _json_text(value) -> str:
    if value in (None, ""):
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)

