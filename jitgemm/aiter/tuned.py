"""aiter's tuning tables into the tuning database: each row a hardware-measured `seconds` of the table's winner
for one problem on one device. An aiter assembly winner is named by its kernel symbol and code sha256 (so the
selector's `deciding_row` finds it for that kernel's contract); another library's winner keeps its own name with
`generator` = the library, a fact about a kernel jitgemm does not hold."""

from __future__ import annotations

from ..tuning_db import TuningDB


def db_rows(inv) -> list[dict]:
    """The rows `import_rows` adds: every tuned row whose problem the IR expresses, whose target is known (from
    its cu_num, or from its kernels when the table has none: the device then stays unstated) and whose time is a
    measurement (a time the release description marks as copied is not)."""
    shas = {k.label: k.code_sha256 for k in inv.kernels}
    out = []
    for r in inv.tuned_rows:
        if r.problem is None or r.arch is None or not r.measured:
            continue
        out.append({"target": r.arch, "problem": r.problem_text, "kernel": r.kernel_name,
                    "generator": f"aiter@{inv.version}" if r.asm else r.library,
                    "code_sha256": shas.get(r.kernel_label or "", ""), "metric": "seconds", "value": r.us * 1e-6,
                    "source": "hardware", "origin": f"aiter {inv.version} {r.table}:{r.line}",
                    "tools": {"cu_num": r.cu_num, "device": r.device, "library": r.library, "split_k": r.split_k,
                              "family": r.family, **({"caveat": r.caveat} if r.caveat else {})}})
    return out


def import_rows(inv, db: TuningDB) -> int:
    """Add the inventory's tuned rows to `db` once (a row already imported from the same table line is skipped);
    returns how many were added."""
    rows = db_rows(inv)
    seen = {(r.origin, r.kernel) for t in {x["target"] for x in rows} for r in db.rows(target=t, metric="seconds")}
    fresh = [r for r in rows if (r["origin"], r["kernel"]) not in seen]
    return db.add(fresh) if fresh else 0
