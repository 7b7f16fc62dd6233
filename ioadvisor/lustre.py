"""What Lustre accepts and how a job names its storage, written once. Pure: values in, values out.

* A stripe size is a positive multiple of 64 KiB below 4 GiB, written the way `lfs` parses sizes: a number and
  one unit letter (`1M`, `192K`, never `1MiB`).
* A stripe count is -1 (every OST) or 1 to 2000 (`LOV_MAX_STRIPE_COUNT`; more only by overstriping, which
  ioadvisor does not set). An unset count (None or 0) means the file system's default, 1 where it states none.
* Users set striping themselves (`lfs setstripe`) only on Lustre whose center says `striping = "user"`; a
  progressive layout the center manages, BeeGFS and the rest are left alone. Files on Lustre and BeeGFS are
  spread over storage targets either way (`striped`).
* A mount pattern may hold `$VAR` / `${VAR}` (`/lustre/$USER`): each stands for one path component.
* A tier is asked for with one sbatch option; `--constraint=FEATURES` / `-C FEATURES` joins the job's own
  constraint.
"""
from __future__ import annotations

import math
import re
import shlex

from .errors import UsageError
from .frozen import frozen
from .util import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

STRIPE_UNIT = 65536                 # lfs-setstripe(1): stripe sizes are multiples of 64 KiB
MAX_STRIPE_SIZE = 4 << 30           # Lustre refuses stripes of 4 GiB and more
ALL_OSTS = -1                       # the stripe count meaning every OST
MAX_STRIPE_COUNT = 2000             # LOV_MAX_STRIPE_COUNT
STRIPED_TYPES = ("lustre", "beegfs")

_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_CONSTRAINT = LazyPattern(r"^(?:--constraint=|-C\s*)(.*)$")


# ---- stripe size and count --------------------------------------------------------------------------------------

def stripe_size_problem(n: object) -> str | None:
    """Why Lustre refuses `n` bytes as a stripe size, or None when it accepts it."""
    if isinstance(n, bool) or not isinstance(n, int):
        return f"{n!r} is not a whole number of bytes"
    if n <= 0 or n % STRIPE_UNIT:
        return f"{n} bytes is not a positive multiple of 64 KiB ({STRIPE_UNIT} bytes)"
    if n >= MAX_STRIPE_SIZE:
        return f"{n} bytes is not below 4 GiB, the largest stripe Lustre lays out"
    return None


def stripe_count_problem(n: object) -> str | None:
    """Why `lfs setstripe -c n` is refused (or, for 0, means nothing), or None when it is a count to set."""
    if isinstance(n, bool) or not isinstance(n, int):
        return f"{n!r} is not a whole number"
    if n == 0 or n < ALL_OSTS:
        return f"{n} is neither -1 (all OSTs) nor a positive count"
    if n > MAX_STRIPE_COUNT:
        return f"{n} is more than the {MAX_STRIPE_COUNT} stripes Lustre lays out"
    return None


def check_stripe_size(n: object, what: str = "stripe size") -> None:
    """UsageError for a stripe size Lustre would refuse (None: unset, fine)."""
    problem = None if n is None else stripe_size_problem(n)
    if problem:
        raise UsageError(f"{what} {problem}, e.g. 1MiB or 4MiB")


def check_stripe_count(n: object, what: str = "stripe count") -> None:
    """UsageError for a stripe count `lfs setstripe` would refuse (None: unset, fine)."""
    problem = None if n is None else stripe_count_problem(n)
    if problem:
        raise UsageError(f"{what} {problem}")


def lfs_size(n: int) -> str:
    """A stripe size in the grammar of Lustre's size parser: a number and one unit letter (`4M`, `192K`).
    ValueError for a size Lustre refuses."""
    problem = stripe_size_problem(n)
    if problem:
        raise ValueError(f"stripe size {problem}")
    return next(f"{n // mult}{suffix}" for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10))
                if n % mult == 0)      # every multiple of 64 KiB is a whole number of K


def shell_word(p: str) -> str:
    """Quote for the shell, keeping $VARIABLES expandable: `"$OUTDIR"`, `"/lustre/$USER"` in double quotes."""
    if "$" not in p:
        return shlex.quote(p)
    return '"' + re.sub(r'([\\"`])', r"\\\1", p) + '"'


@frozen
class Setstripe:
    """One `lfs setstripe` (or `lfs migrate`) as data: the flags are read from here, never from the text.
    ValueError on construction for a count or size Lustre refuses, so no such command can be rendered."""

    path: str
    count: int | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        for value, problem in ((self.count, stripe_count_problem), (self.size, stripe_size_problem)):
            if value is not None and problem(value):
                raise ValueError(f"lfs setstripe: {problem(value)}")

    def args(self) -> list[str]:
        """`["-c", "8", "-S", "1M"]` (empty when both are unset)."""
        return ((["-c", str(self.count)] if self.count is not None else [])
                + (["-S", lfs_size(self.size)] if self.size is not None else []))

    def flags(self) -> str:
        """`-c 8 -S 1M` (empty when both are unset)."""
        return " ".join(self.args())

    def argv(self, lfs: str = "lfs", verb: str = "setstripe") -> list[str]:
        """The command as the arguments of a process run without a shell, `lfs` the program's path."""
        return [lfs, verb, *self.args(), self.path]

    def render(self, verb: str = "setstripe") -> str:
        return " ".join(["lfs", verb, *filter(None, [self.flags()]), shell_word(self.path)])

    def __str__(self) -> str:
        return self.render()


# ---- the stripe-count rule --------------------------------------------------------------------------------------

def ost_limit(osts: float | None) -> float:
    """The OSTs a file can spread over: infinite where the count is unknown."""
    return float(osts) if osts and osts > 0 else math.inf


def most_stripes(osts: int) -> int:
    """The most stripes a file gets on `osts` OSTs: one per OST, at most 2000."""
    return min(osts, MAX_STRIPE_COUNT)


def every_ost(count: int | None, osts: int | None) -> int | None:
    """A stripe count with -1 (every OST) replaced by the stripes that gives where the OST count is known."""
    return most_stripes(osts) if count == ALL_OSTS and osts else count


def count_set(count: int | None) -> bool:
    """Whether a stripe count is set: 0 (as in `lfs setstripe -c 0`) means the file system's default, as unset as
    none at all."""
    return count is not None and count != 0


def stripes_of(count: int | None, osts: int | None, default: int | None = None) -> int:
    """The stripes a new file gets: the count set, else the file system's default, else 1; every OST for a
    negative count (1 where the OST count is unknown)."""
    n = count if count_set(count) else (default or 1)
    return (most_stripes(osts) if osts else 1) if n < 0 else n


def default_stripes(count: int | None) -> int:
    """The stripes a file system's default gives: its stated count, 1 where it states none."""
    return count if count_set(count) else 1


# ---- file systems -----------------------------------------------------------------------------------------------

def stripable(fs_type: str | None, striping: str | None) -> bool:
    """Whether users may run `lfs setstripe` there: Lustre whose center leaves striping to them."""
    return fs_type == "lustre" and striping == "user"


def striped(fs_type: str | None) -> bool:
    """Whether files there spread over several storage targets (whoever sets the layout)."""
    return fs_type in STRIPED_TYPES


def pattern_vars(pattern: str) -> Iterator[tuple[str, int, int]]:
    """(name, start, end) of each `$VAR` / `${VAR}` in a mount or directory pattern."""
    for m in _VAR.finditer(pattern):
        yield m.group(1) or m.group(2), m.start(), m.end()


def mount_regex(pattern: str) -> re.Pattern[str]:
    """A mount pattern as a regex matching it and anything below it; `$VAR` matches one path component."""
    parts, pos = [], 0
    for _name, start, end in pattern_vars(pattern):
        parts += [re.escape(pattern[pos:start]), r"[^/]+"]
        pos = end
    parts.append(re.escape(pattern[pos:].rstrip("/")))
    return re.compile("^" + "".join(parts) + r"(?:/|$)")


# ---- asking Slurm for a tier ------------------------------------------------------------------------------------

def constraint_of(request: str | None) -> str | None:
    """The features of a `--constraint=FEATURES` / `-C FEATURES` request ('' when empty), None for another
    option."""
    m = _CONSTRAINT.match((request or "").strip())
    return m.group(1) if m else None


def has_feature(constraint: str, feature: str) -> bool:
    """Whether a constraint expression already names `feature` (as a whole feature, not part of a name)."""
    return bool(re.search(rf"(^|[&|,\[\]]){re.escape(feature)}($|[&|,\[\]*:])", constraint))
