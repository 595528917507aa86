"""The library's share of `compare --rank`, in one process (the imports and the sweep's summary left out).

    PYTHONPATH=CODE TFCNNWRAP_DATA=LIBRARY python benchmarks/bench_rank_library.py SWEEP

Prints the CPU seconds of the ranking with `--source all`, of the same with `--source builtin` (no library
read: their difference is the library's share) and of the `Community:` provenance notes under it.
"""

import sys
import time


def main() -> None:
    start = time.process_time()
    import pandas  # noqa: F401  # the sweep's summary needs it, not the library

    from tfcnnwrap.compare import community, rank
    from tfcnnwrap.results.comparesweep import Sweep

    assert Sweep(sys.argv[1]).rows
    ready = time.process_time()
    ranking = rank.rank(sys.argv[1], source="all")
    ranked = time.process_time()
    notes = community.rank_provenance(ranking)
    noted = time.process_time()
    rank.rank(sys.argv[1], source="builtin")
    builtin = time.process_time() - noted
    print(
        "imports+sweep %.3f  rank %.3f (builtin only %.3f)  provenance %.3f  community rows %d"
        % (ready - start, ranked - ready, builtin, noted - ranked, len(notes))
    )


if __name__ == "__main__":
    main()
