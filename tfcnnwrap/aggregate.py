"""Statistics over a sweep's runs with pandas: one row per model and batch size, over ok runs."""

SUMMARY_COLUMNS = [
    "model",
    "batch_size",
    "runs_ok",
    "runs_failed",
    "mean",
    "std",
    "cv_pct",
    "min",
    "max",
    "median",
    "failures",
]


def _failures_text(statuses):
    counts = {}
    for status in statuses:
        if status != "ok":
            counts[status] = counts.get(status, 0) + 1
    return " ".join("%s:%d" % (k, counts[k]) for k in sorted(counts))


def runs_frame(runs):
    """The runs as a DataFrame with the columns statistics need."""
    import pandas as pd

    frame = pd.DataFrame(
        [
            {
                "model": r.get("model"),
                "batch_size": r.get("batch_size"),
                "run": r.get("run"),
                "status": r.get("status"),
                "images_per_sec": r.get("images_per_sec") if r.get("status") == "ok" else None,
            }
            for r in runs
        ],
        columns=["model", "batch_size", "run", "status", "images_per_sec"],
    )
    frame["images_per_sec"] = pd.to_numeric(frame["images_per_sec"], errors="coerce")
    return frame


def summarize(runs, order=None):
    """One dict per (model, batch_size): runs_ok, runs_failed, mean, std (sample), cv_pct, min, max, median.

    Statistics are over ok runs only; std needs two of them. Rows follow ``order`` (the plan), then any
    other pairs in first-seen order.
    """
    frame = runs_frame(runs)
    if frame.empty:
        return []
    grouped = frame.groupby(["model", "batch_size"], sort=False)
    stats = grouped["images_per_sec"].agg(["count", "mean", "std", "min", "max", "median"])
    statuses = grouped["status"].agg(list)
    sizes = grouped.size()
    rows = {}
    for key in stats.index:
        s = stats.loc[key]
        mean = s["mean"]
        std = s["std"]
        rows[key] = {
            "model": key[0],
            "batch_size": int(key[1]),
            "runs_ok": int(s["count"]),
            "runs_failed": int(sizes.loc[key] - s["count"]),
            "mean": _num(mean),
            "std": _num(std),
            "cv_pct": _num(std / mean * 100.0) if _num(std) is not None and mean else None,
            "min": _num(s["min"]),
            "max": _num(s["max"]),
            "median": _num(s["median"]),
            "failures": _failures_text(statuses.loc[key]),
        }
    ordered = [rows.pop(tuple(k)) for k in (order or []) if tuple(k) in rows]
    return ordered + list(rows.values())


def ok_values(runs):
    """{(model, batch_size): [images/sec of each ok run]} for significance tests."""
    values = {}
    for r in runs:
        if r.get("status") == "ok" and isinstance(r.get("images_per_sec"), (int, float)):
            values.setdefault((r.get("model"), r.get("batch_size")), []).append(float(r["images_per_sec"]))
    return values


def summary_csv_text(rows):
    from tfcnnwrap.render import to_csv

    return to_csv(rows, SUMMARY_COLUMNS)


def _num(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if value != value else value
