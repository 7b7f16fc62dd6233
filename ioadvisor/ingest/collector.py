"""The cyclic garbage collector while a file is imported."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

# The cyclic collector found nothing to free in an import's rows, caches and batches, yet scanned the batch being
# made or stored every 700 allocations: a tenth of the reading of a million rows (2.0 s of 20; 0.37 s so), 0.8 s
# of storing them. Its first generation is collected every 50,000 allocations while a file is imported (a few
# times per batch), which still bounds any cycle a hostile file makes.
GC_THRESHOLD = (50_000, 100, 1000)


@contextmanager
def few_collections() -> Iterator[None]:
    """The cyclic collector's thresholds at GC_THRESHOLD while an import runs, then as they were."""
    old = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*old)
