"""The query plans (SQLite's EXPLAIN QUERY PLAN) of what `compare --rank --source all`, `import` and `pull` ask the
library's index (issue 39: the index's queries use indexes), printed for docs/performance.md.

Usage:
    TFCNNWRAP_DATA=LIBRARY python benchmarks/explain_library.py [--models resnet50,vgg16] [--device gpu]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tfcnnwrap.share import library as lib  # noqa: E402


def queries(models, device, has_link):
    """(what, sql, parameters) of every query compare --rank and import/pull make."""
    columns = "gpu, precision, xla, variable_update, data, tf_version, %s" % ("link" if has_link else "NULL")
    where = " AND (vendor = ?) = ?" if device else ""
    by_device = [lib.CPU_VENDOR, device == "cpu"] if device else []
    return [
        (
            "rank: the verified bundles' conditions, by distinct set",
            "SELECT %s, group_concat(id, ' ') FROM bundles WHERE verified = 1%s GROUP BY %s"
            % (columns, where, columns),
            by_device,
        ),
        ("rank: the verified results of the sweep's models", lib.community_results_sql(len(models)), list(models)),
        ("rank: every verified result (no models given)", lib.community_results_sql(0), []),
        (
            "rank: the bundles of the sweep's own creation time",
            "SELECT DISTINCT bundle_id FROM results WHERE created_at = ?",
            ["2026-11-30T10:15:00Z"],
        ),
        ("rank: the signers' keys", "SELECT bundle_id, fingerprint FROM signers", []),
        ("rank: the 95% intervals of the signed bundles", lib.INTERVALS_SQL, []),
        ("import/pull: is a bundle there", "SELECT 1 FROM bundles WHERE id=?", ["0" * 64]),
        ("import/pull: every id", "SELECT id FROM bundles", []),
        ("`library`, newest first", lib.rows_sql(False), []),
        ("`library --model M`", lib.rows_sql(True), ["resnet50"]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="alexnet,inception3,resnet152,resnet50,vgg16")
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu", ""])
    args = ap.parse_args()
    library = lib.Library(create=False)
    if library.db is None:
        raise SystemExit("no library at %s" % library.root)
    bundles = library.db.execute("SELECT count(*) FROM bundles").fetchone()[0]
    results = library.db.execute("SELECT count(*) FROM results").fetchone()[0]
    print("library %s: %d bundles, %d results" % (library.root, bundles, results))
    print("| query | plan |\n|---|---|")
    for what, sql, params in queries([m for m in args.models.split(",") if m], args.device, library.has_link):
        plan = [row[3] for row in library.db.execute("EXPLAIN QUERY PLAN " + sql, params)]
        print("| %s | `%s` |" % (what, "; ".join(plan)))
    library.close()


if __name__ == "__main__":
    main()
