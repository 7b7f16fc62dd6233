"""The reader builds its many summary objects with `summary.positional` instead of the frozen dataclasses' own
__init__: what it makes must not differ from what __init__ makes in any way a caller can see (equality, hash,
pickle bytes, attribute order), and a call with a field too few or too many must not make an object at all."""
from __future__ import annotations

import pickle

import pytest

from ioadvisor.darshanlog.summary import FileSummary, LustreLayout, Requests, positional
from ioadvisor.frozen import FrozenInstanceError, fields


def _values(cls) -> list:
    """A distinct value per field (so a field set from its neighbour's value shows)."""
    out = []
    for i, f in enumerate(fields(cls)):
        if f.name.endswith("_req"):
            out.append(Requests(ops=i, small=1, zero=0, exactly_1mib=0, time=0.5 * i, in_bins_below_1mib=2,
                                refined_out=1))
        elif f.name == "osts":
            out.append((i, i + 1))
        else:
            out.append(i)
    return out


@pytest.mark.parametrize("cls", [FileSummary, LustreLayout, Requests])
def test_positional_makes_what_init_makes(cls):
    vals = _values(cls)
    names = [f.name for f in fields(cls)]
    ours, theirs = positional(cls)(*vals), cls(**dict(zip(names, vals)))
    assert ours == theirs and hash(ours) == hash(theirs)
    assert list(vars(ours)) == list(vars(theirs)) == names
    assert pickle.dumps(ours) == pickle.dumps(theirs)
    with pytest.raises(FrozenInstanceError):
        ours.__setattr__(names[0], 1)


@pytest.mark.parametrize("cut", [-1, 1])
def test_positional_refuses_a_field_too_few_or_too_many(cut):
    vals = _values(Requests)
    vals = vals[:cut] if cut < 0 else vals + [0]
    with pytest.raises(TypeError, match=r"Requests\(\) (takes 7 positional arguments but 8|missing 1 required "
                                        r"positional argument: 'refined_out')"):
        positional(Requests)(*vals)
