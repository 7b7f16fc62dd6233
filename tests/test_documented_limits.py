"""The limits README.md and docs/ state are the ones the code enforces: each number is read from the code and
must stand in the sentence that states it (`kb import` refused a 1 GB Darshan log at 256 MiB while the README
said a Darshan log may be 2 GiB). A cap changed in the code, or a number changed in the text, fails here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ioadvisor import importers, inputs
from ioadvisor.ingest.csvrows import ASIDE_BYTES
from ioadvisor.inputs import size_text

ROOT = Path(__file__).resolve().parent.parent


def _lua(name: str) -> int:
    """A `local NAME = number` constant of the Lua hook."""
    m = re.search(rf"^local {name} = (\d+)$", (ROOT / "slurm" / "job_submit.lua").read_text(), re.M)
    assert m, name
    return int(m.group(1))


def _text(doc: str) -> str:
    """The document with every run of whitespace (line breaks included) made one space."""
    return " ".join((ROOT / doc).read_text(encoding="utf-8").split())


# (document, sentence with {} where the code's value stands, the value as the code has it)
LIMITS = [
    ("README.md", "a line longer than {}", size_text(importers.MAX_LINE)),
    ("README.md", "a CSV cell longer than {}", size_text(importers.MAX_CELL)),
    ("README.md", "a non-CSV file larger than {} is refused", size_text(importers.MAX_WHOLE_FILE)),
    ("README.md", "(from {}, by a second process", size_text(ASIDE_BYTES)),
    ("README.md", "a job script {},", size_text(inputs.SCRIPT.limit)),
    ("README.md", "sweep TOML file {},", size_text(inputs.TOML.limit)),
    ("README.md", "a job record {},", size_text(inputs.RECORD.limit)),
    ("README.md", "a sweep plan {},", size_text(inputs.PLAN.limit)),
    ("README.md", "a Darshan log {} for `diagnose` and `archive scan`", size_text(inputs.LOG.limit)),
    ("README.md", "so it takes one of at most {},", size_text(importers.MAX_WHOLE_FILE)),
    ("docs/archive.md", "A file larger than {} (the cap of a Darshan log)", size_text(inputs.LOG.limit)),
    ("docs/canonical-csv.md", "A cell larger than {} is refused.", size_text(importers.MAX_CELL)),
    ("docs/canonical-csv.md", "refused after reading at most {})", size_text(importers.MAX_LINE)),
    ("docs/slurm.md", "reads at most {} and", size_text(_lua("MAX_SCAN"))),
    ("docs/slurm.md", "and {} lines of a script", str(_lua("MAX_LINES"))),
    ("docs/slurm.md", "`#IOADVISE` lines over {}", size_text(_lua("MAX_LINE"))),
    ("docs/slurm.md", "values over {}", size_text(_lua("MAX_VALUE"))),
]


@pytest.mark.parametrize("doc, sentence, value", LIMITS, ids=[f"{d}: {s}" for d, s, _ in LIMITS])
def test_a_documented_limit_is_the_enforced_one(doc, sentence, value):
    assert sentence.format(value) in _text(doc), f"{doc} does not say: {sentence.format(value)}"

