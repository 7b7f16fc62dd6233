"""`ioadvisor.frozen`: a record (a class made with `@frozen`) is made without compiling anything, and behaves as
the frozen dataclass of the same fields in everything the package relies on (construction, refusals, equality,
hashing, repr, pickle, copy, and frozen's replace, asdict and fields as dataclasses' of the dataclass), without
importing dataclasses; a `frozen.NamedTuple` compiles none of its annotations and behaves as typing.NamedTuple's.
Each behaviour is checked against the real one built from the same class body."""
from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import pickle
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

from ioadvisor import frozen as rec_module
from ioadvisor.frozen import NamedTuple, frozen

PACKAGE = Path(__file__).resolve().parent.parent / "ioadvisor"


def _bodies(kw_only: bool):
    """The same class body made twice: as a record and as a frozen dataclass, with the same qualified name (so
    messages and reprs can be compared as they are), each with its own `field`."""
    def make(decorate, field):
        class Point:
            """A point with a label."""

            x: int
            label: str = "p"
            tags: dict = field(default_factory=dict, compare=False)
            seen: list = field(default_factory=list, init=False, repr=False, compare=False)
            weight: float = field(default=1.0, hash=False)
            note: str = field(default="", init=False)
        return decorate(Point)
    return (make(frozen(kw_only=kw_only), rec_module.field),
            make(dataclass(frozen=True, kw_only=kw_only), dataclasses.field))


PAIRS = {"keyword-only": _bodies(True), "positional": _bodies(False)}


@pytest.fixture(params=sorted(PAIRS))
def pair(request):
    return PAIRS[request.param]


def _events_while(make) -> list[str]:
    seen: list[str] = []
    active = [True]

    def hook(event, args):
        if active[0] and event in ("compile", "exec"):
            seen.append(event)
    sys.addaudithook(hook)      # hooks cannot be removed: this one goes quiet instead
    try:
        make()
    finally:
        active[0] = False
    return seen


def test_making_a_record_compiles_nothing():
    def body(field=rec_module.field):
        class Job:
            name: str
            nodes: int = 1
            hints: dict = field(default_factory=dict)
        return Job
    assert _events_while(lambda: frozen(body())) == []
    assert _events_while(lambda: frozen(kw_only=True)(body())) == []
    # the hook does see what a frozen dataclass compiles (six methods: one compile and one exec each)
    assert _events_while(lambda: dataclass(frozen=True)(body(dataclasses.field))).count("exec") >= 6


def _calls(kw_only: bool):
    yield (), {"x": 1}
    yield (), {"x": 1, "label": "q", "tags": {"a": "b"}, "weight": 2.5}
    yield (), {"weight": 3.0, "x": 2}
    if not kw_only:
        yield (1,), {}
        yield (1, "q"), {"weight": 0.5}
        yield (1, "q", {"k": 1}, 4.0), {}


def test_instances_hold_the_same_attributes_in_the_same_order(pair):
    rec, dc = pair
    kw_only = rec_module.fields(rec)[0].kw_only
    for args, kw in _calls(kw_only):
        r, d = rec(*args, **kw), dc(*args, **kw)
        assert list(r.__dict__.items()) == list(d.__dict__.items())
        assert repr(r) == repr(d)
    a, b = rec(x=1), rec(x=1)
    assert a.tags is not b.tags and a.seen is not b.seen      # a factory's value is made per instance


BAD_CALLS = [
    ((), {}),                                   # the required field missing
    ((), {"label": "q"}),
    ((), {"x": 1, "colour": "red"}),            # unknown name
    ((), {"x": 1, "seen": []}),                 # a field __init__ does not take
    ((1,), {}),                                 # positional where only keywords are taken
    ((1, "q", {}, 1.0, 5), {}),                 # too many
    ((1,), {"x": 2}),                           # twice
    ((), {"x": 1, "label": "q", "colour": 1, "size": 2}),
]


def test_bad_calls_are_refused_with_the_dataclass_message(pair):
    rec, dc = pair
    refused = 0
    for args, kw in BAD_CALLS:
        try:
            dc(*args, **kw)
        except TypeError as e:
            expected = str(e)
        else:
            assert repr(rec(*args, **kw)) == repr(dc(*args, **kw))     # a call the positional one takes
            continue
        with pytest.raises(TypeError) as got:
            rec(*args, **kw)
        assert str(got.value) == expected
        refused += 1
    assert refused >= 5


def test_equality_and_hash_are_the_dataclass_ones(pair):
    rec, dc = pair
    a, b = rec(x=1, tags={"a": 1}), rec(x=1, tags={"b": 2})
    assert a == b and hash(a) == hash(b)                         # tags: compare=False
    assert a != rec(x=2) and a != rec(x=1, label="q")
    assert hash(a) == hash(dc(x=1)) == hash((1, "p", ""))       # weight: hash=False; the tuple of the rest
    assert a == rec(x=1, weight=1.0) and a != rec(x=1, weight=2.0)
    assert a.__eq__(dc(x=1)) is NotImplemented and a != dc(x=1)  # another class: never equal
    assert len({a, b, rec(x=3)}) == 2


def test_a_field_that_cannot_be_hashed_refuses_as_the_dataclass_does(pair):
    rec, dc = pair
    messages = []
    for cls in pair:
        with pytest.raises(TypeError) as e:
            hash(cls(x=[1]))
        messages.append(str(e.value))
    assert messages == ["unhashable type: 'list'"] * 2


def test_a_record_cannot_be_changed(pair):
    rec, dc = pair
    for obj, error in ((rec(x=1), rec_module.FrozenInstanceError), (dc(x=1), dataclasses.FrozenInstanceError)):
        assert issubclass(error, AttributeError)
        with pytest.raises(error, match="cannot assign to field 'x'"):
            obj.x = 2
        with pytest.raises(error, match="cannot assign to field 'other'"):
            obj.other = 2
        with pytest.raises(error, match="cannot delete field 'label'"):
            del obj.label
        assert obj.x == 1 and "other" not in obj.__dict__


def test_frozens_functions_see_a_record_as_dataclasses_see_the_dataclass(pair):
    rec, dc = pair
    r, d = rec(x=1, tags={"a": [1]}), dc(x=1, tags={"a": [1]})
    assert rec_module.is_record(r) and rec_module.is_record(rec) and not rec_module.is_record(d)
    assert not dataclasses.is_dataclass(r)          # to dataclasses a record is not one
    flags = ("name", "type", "default", "default_factory", "init", "repr", "compare", "hash", "kw_only")
    missing = (rec_module.MISSING, dataclasses.MISSING)

    def described(fields):
        return [tuple("MISSING" if any(getattr(f, k) is m for m in missing) else getattr(f, k) for k in flags)
                for f in fields]
    assert described(rec_module.fields(rec)) == described(dataclasses.fields(dc)) == described(rec_module.fields(dc))
    assert sum(d.count("MISSING") for d in described(rec_module.fields(rec))) == 7
    assert rec_module.fields(r) == rec_module.fields(rec)
    assert rec_module.asdict(r) == dataclasses.asdict(d) == rec_module.asdict(d)
    assert rec_module.asdict(r)["tags"]["a"] is not r.tags["a"]        # copied all the way down, as dataclasses do
    r2, d2 = rec_module.replace(r, label="z"), dataclasses.replace(d, label="z")
    assert type(r2) is rec and list(r2.__dict__.items()) == list(d2.__dict__.items())
    assert type(rec_module.replace(d, label="z")) is dc
    for replace, obj in ((rec_module.replace, r), (dataclasses.replace, d)):
        with pytest.raises(ValueError, match="field seen is declared with init=False"):
            replace(obj, seen=[1])
    assert rec.__match_args__ == dc.__match_args__
    assert rec.__doc__ == dc.__doc__ == "A point with a label."
    assert rec.label == dc.label == "p" and "tags" not in rec.__dict__ and "tags" not in dc.__dict__
    for obj in (rec, r):
        with pytest.raises(TypeError, match="dataclass instances"):
            rec_module.asdict(type(obj) if obj is r else {"x": 1})


def test_asdict_goes_into_what_a_record_holds_as_dataclasses_go():
    class Pair(typing.NamedTuple):
        a: object
        b: object

    def make(decorate, field):
        @decorate
        class Inner:
            v: object
            w: list = field(default_factory=list)

        @decorate
        class Outer:
            inner: object
            items: tuple = ()
            by_name: dict = field(default_factory=dict)
            pair: object = None
        return Inner, Outer
    values = []
    for decorate, field in ((frozen, rec_module.field), (dataclass(frozen=True), dataclasses.field)):
        inner, outer = make(decorate, field)
        i = inner(1.5, [inner("s")])
        o = outer(i, (i, [i, 2], None), {"k": i, ("t", 1): [b"x"]}, Pair(i, inner(True)))
        values.append((rec_module.asdict(o), dataclasses.asdict(o) if decorate is not frozen else None))
    ours, theirs = values[0][0], values[1][1]
    assert ours == theirs and type(ours["pair"]) is Pair and type(ours["items"][1]) is list
    assert ours["pair"].a == {"v": 1.5, "w": [{"v": "s", "w": []}]}


@frozen(kw_only=True)
class RecSample:
    name: str
    sizes: tuple = ()
    hints: dict = rec_module.field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DatSample:                  # the same fields, and a name of the same length: the pickles can be compared
    name: str
    sizes: tuple = ()
    hints: dict = dataclasses.field(default_factory=dict)


def test_pickles_and_copies_as_the_dataclass():
    r, d = RecSample(name="n", sizes=(1, 2), hints={"a": "b"}), DatSample(name="n", sizes=(1, 2), hints={"a": "b"})
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.dumps(r, protocol) == pickle.dumps(d, protocol).replace(b"DatSample", b"RecSample")
        back = pickle.loads(pickle.dumps(r, protocol))
        assert back == r and list(back.__dict__.items()) == list(r.__dict__.items())
    c, dc = copy.copy(r), copy.deepcopy(r)
    assert c == r == dc and c.hints is r.hints and dc.hints is not r.hints


def test_post_init_runs_after_every_field_is_set():
    seen = []

    @frozen
    class Checked:
        low: int
        high: int = 10

        def __post_init__(self):
            seen.append(dict(self.__dict__))
            if self.low > self.high:
                raise ValueError(f"low {self.low} above high {self.high}")
    Checked(3)
    assert seen == [{"low": 3, "high": 10}]
    with pytest.raises(ValueError, match="low 11 above high 10"):
        Checked(low=11)
    with pytest.raises(ValueError, match="low 3 above high 2"):
        rec_module.replace(Checked(1, 2), low=3)


def test_class_statements_dataclasses_refuse_are_refused():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @frozen
        class Order:
            a: int = 1
            b: int
    with pytest.raises(ValueError, match="mutable default"):
        @frozen
        class Mutable:
            a: list = []
    with pytest.raises(TypeError, match="__setattr__"):
        @frozen
        class Settable:
            a: int

            def __setattr__(self, name, value):
                pass


def _frozen_dataclass_decorators() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and any(
                            k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value
                            for k in dec.keywords):
                        found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    return found


def test_the_package_makes_its_frozen_classes_as_records():
    """One way to make a frozen class: a frozen dataclass would compile its methods at every start."""
    assert _frozen_dataclass_decorators() == []


def test_an_undocumented_record_is_described_as_dataclasses_describe_it():
    def body(field=rec_module.field):
        class Bare:
            x: int
            y: "list[int] | None" = None
            z: dict = field(default_factory=dict)
            q: int = field(default=3, init=False)
            k: str = field(default="a", kw_only=True)
        return Bare
    assert frozen(body()).__doc__ == dataclass(frozen=True)(body(dataclasses.field)).__doc__ == \
        "Bare(x: 'int', y: \"'list[int] | None'\" = None, z: 'dict' = <factory>, *, k: 'str' = 'a')"
    assert frozen(kw_only=True)(body()).__doc__ == dataclass(frozen=True, kw_only=True)(body(dataclasses.field)).__doc__


def _tuple(base):
    """A named tuple made by `base` (typing.NamedTuple or frozen.NamedTuple)."""
    class Band(base):
        """A band of values."""

        low: float
        high: "float | None" = None
        n: int = 0

        @property
        def width(self):
            return None if self.high is None else self.high - self.low

        def scaled(self, k):
            return self._replace(low=self.low * k)
    return Band


def _tuples():
    return _tuple(NamedTuple), _tuple(typing.NamedTuple)


def test_a_named_tuple_is_made_without_compiling_anything():
    ours = _events_while(lambda: _tuple(NamedTuple))
    theirs = _events_while(lambda: _tuple(typing.NamedTuple))
    # collections.namedtuple's __new__ is one compilation; typing's adds one per annotated field; ours has none
    assert ours == [] and theirs.count("compile") == 1 + 3


def test_a_named_tuple_behaves_as_typing_makes_it():
    ours, theirs = _tuples()
    for cls in (ours, theirs):
        assert cls.__mro__[1:] == (tuple, object) and cls.__doc__ == "A band of values."
    a, b = ours(1.0, 3.0), theirs(1.0, 3.0)
    assert repr(a) == repr(b) and a == b and hash(a) == hash(b) and tuple(a) == (1.0, 3.0, 0)
    assert ours._fields == theirs._fields and ours._field_defaults == theirs._field_defaults == {"high": None, "n": 0}
    assert a.width == b.width == 2.0 and a.scaled(2) == b.scaled(2) == (2.0, 3.0, 0)
    assert a._asdict() == b._asdict() and ours._make([5, 6, 7]) == (5, 6, 7)
    assert typing.get_type_hints(ours) == typing.get_type_hints(theirs)
    # every way of calling: all fields, defaults left out, keywords (each the same tuple, or the same TypeError)
    calls = {((1, 2, 3), ()): True, ((1, 2), ()): True, ((1,), (("n", 5),)): True, ((), (("low", 1), ("n", 5))): True,
             ((), ()): False, ((1, 2, 3, 4), ()): False, ((1,), (("low", 2),)): False,
             ((), (("low", 1), ("x", 1))): False, ((1,), (("_cls", 1),)): False}
    for (args, kw), made_one in calls.items():
        made = []
        for cls in (ours, theirs):
            try:
                made.append(repr(cls(*args, **dict(kw))))
            except TypeError as e:
                made.append(f"TypeError: {e}")
        assert made[0] == made[1] and made[0].startswith("Band(" if made_one else "TypeError: Band.__new__()")
    signatures = [[(p.name, p.default) for p in inspect.signature(c).parameters.values()] for c in (ours, theirs)]
    assert signatures[0] == signatures[1] == [("low", inspect.Parameter.empty), ("high", None), ("n", 0)]
    with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow default field a"):
        class Order(NamedTuple):
            a: int = 1
            b: int
    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):
        class Replacing(NamedTuple):
            a: int

            def _replace(self):
                pass


class PickledBand(NamedTuple):
    low: float
    high: float = 2.0


def test_a_named_tuple_pickles_as_a_tuple_of_its_class():
    band = PickledBand(1.0)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(band, protocol))
        assert type(back) is PickledBand and back == band
    assert copy.deepcopy(band) == band


def test_the_package_makes_its_named_tuples_with_frozen():
    """typing.NamedTuple compiles every field's annotation at every start."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "typing" and any(
                    a.name == "NamedTuple" for a in node.names) and path.name != "frozen.py":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
