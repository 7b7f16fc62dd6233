"""`frozen`: the package's frozen classes of named fields (records), made without compiling anything.

A frozen dataclass writes the source of six methods (__init__, __repr__, __eq__, __hash__, __setattr__,
__delattr__) for its fields and compiles it with `exec` when its class statement runs: 1.0-1.6 ms for a class of
eight fields on Python 3.11, at every start of a process. The 18 a cold `ioadvise advise` made took 90 million of
its 453 million instructions. A `@frozen` class is the same class made another way (0.13-0.22 ms for those eight
fields): `dataclasses.dataclass` only collects its fields (init, repr and eq left out, so it compiles nothing), and
the methods are shared functions bound to the field list (closures and `operator.attrgetter`), which a class
statement merely creates.

A record behaves as the frozen dataclass of the same fields in what the package relies on: `dataclasses.fields`,
`replace`, `asdict`, `field(default=..., default_factory=..., init=, repr=, compare=, hash=)`, `__post_init__`,
`__match_args__`; an instance has the same attributes in the same order (so it pickles and copies to the same
bytes), compares and hashes as the tuple of its compared fields, prints as dataclasses print it, and refuses to
be changed with `dataclasses.FrozenInstanceError`. A call with an argument missing, unknown, doubled or too many
is refused with Python's own TypeError for the signature the dataclass's __init__ would have (a function of that
signature is made, from a code object's copy and not compiled, on the first such call). Not supported: InitVar,
`order=True`, `slots=True`, a record derived from another dataclass.

    @frozen(kw_only=True)
    class Tier:
        name: str
        stage: bool = True

The package's named tuples derive from `NamedTuple` here, which is typing.NamedTuple to a type checker. At run
time it makes the class as typing.NamedTuple does (collections.namedtuple, the defaults, the class's methods and
docstring) but keeps the annotations as the text they are under `from __future__ import annotations`:
typing.NamedTuple compiles each into a ForwardRef, 152 small compilations for the 17 named tuples a cold advice
makes.
"""
from __future__ import annotations

import dataclasses
from _thread import get_ident
from operator import attrgetter
from types import FunctionType
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Callable, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")
_REQUIRED = object()       # placeholders keeping a field's place in the instance's dict until its value is set
_FACTORY = object()
_MADE = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


@overload
def frozen(cls: type[_T], /) -> type[_T]: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """Make `cls` a frozen record (`@frozen`, or `@frozen(kw_only=True)` for keyword-only fields)."""
    if cls is None:
        return lambda c: _make(c, kw_only)
    return _make(cls, kw_only)


def _make(cls: type, kw_only: bool) -> type:
    clash = [n for n in ("__setattr__", "__delattr__") if n in cls.__dict__]
    if clash or any(dataclasses.is_dataclass(b) for b in cls.__mro__[1:]):
        raise TypeError(f"frozen {cls.__qualname__}: defines {clash[0]}" if clash else
                        f"frozen {cls.__qualname__}: derived from a dataclass")
    undocumented = not cls.__doc__
    if undocumented:
        cls.__doc__ = "-"      # dataclasses would write it from inspect.signature, which parses text (compiles)
    dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only)
    fields = dataclasses.fields(cls)
    if undocumented:
        cls.__doc__ = _doc(cls.__name__, fields)
    positional = [f for f in fields if f.init and not f.kw_only]
    for a, b in zip(positional, positional[1:]):
        if b.default is dataclasses.MISSING and b.default_factory is dataclasses.MISSING and (
                a.default is not dataclasses.MISSING or a.default_factory is not dataclasses.MISSING):
            raise TypeError(f"non-default argument {b.name!r} follows default argument")
    made = {"__init__": _init(cls, fields), "__repr__": _repr(tuple(f.name for f in fields if f.repr))}
    made.update(_eq_hash(tuple(f.name for f in fields if f.compare),
                         tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))))
    made.update(_frozen(cls, frozenset(f.name for f in fields)))
    for name in _MADE:
        if name == "__hash__" and "__hash__" in cls.__dict__ and not (
                cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__):
            continue       # a __hash__ of the class's own is kept, as dataclasses keep it
        if name in ("__init__", "__repr__", "__eq__") and name in cls.__dict__:
            continue
        fn = made[name]
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)
    return cls


def _doc(name: str, fields: tuple[dataclasses.Field, ...]) -> str:
    """The docstring dataclasses give a class without one: its name and its __init__ signature."""
    def param(f: dataclasses.Field) -> str:
        text = f"{f.name}: {f.type!r}"
        if f.default is not dataclasses.MISSING:
            return f"{text} = {f.default!r}"
        return f"{text} = <factory>" if f.default_factory is not dataclasses.MISSING else text
    pos = [param(f) for f in fields if f.init and not f.kw_only]
    kwo = [param(f) for f in fields if f.init and f.kw_only]
    return f"{name}({', '.join(pos + (['*'] + kwo if kwo else []))})"


def _init(cls: type, fields: tuple[dataclasses.Field, ...]) -> Callable[..., None]:
    """__init__ as the dataclass's: every field set in the instance's dict in field order (defaults, the given
    values, then the factories' values for fields not given), then __post_init__ if the class has one."""
    missing = dataclasses.MISSING
    names = frozenset(f.name for f in fields if f.init)
    required = frozenset(f.name for f in fields if f.init and f.default is missing and f.default_factory is missing)
    defaults = {f.name: f.default if f.default is not missing else
                _FACTORY if f.default_factory is not missing else _REQUIRED
                for f in fields if f.init or f.default_factory is not missing}   # else the class attribute
    factories = tuple((f.name, f.default_factory) for f in fields if f.default_factory is not missing)
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    post_init = hasattr(cls, "__post_init__")
    signature: list[FunctionType] = []

    def __init__(self: Any, *args: Any, **kw: Any) -> None:
        if args:
            if len(args) > len(positional) or not kw.keys().isdisjoint(positional[:len(args)]):
                _refuse(cls, fields, signature, self, args, kw)
            kw.update(zip(positional, args))
        if not (required <= kw.keys() and kw.keys() <= names):
            _refuse(cls, fields, signature, self, args, kw)
        d = self.__dict__
        d.update(defaults)
        d.update(kw)
        for name, factory in factories:
            if name not in kw:
                d[name] = factory()
        if post_init:
            self.__post_init__()
    return __init__


def _signature_of(self) -> None:     # the code object a record's __init__ signature is copied from
    pass


def _refuse(cls: type, fields: tuple[dataclasses.Field, ...], made: list[FunctionType], self: Any,
            args: tuple, kw: dict[str, Any]) -> None:
    """Raise the TypeError Python raises for a call of the dataclass's __init__ with these arguments: a function
    with that signature (same parameters, qualified name, which ones have defaults) is called with them."""
    if not made:
        pos = [f for f in fields if f.init and not f.kw_only]
        kwo = [f for f in fields if f.init and f.kw_only]
        first = "__dataclass_self__" if "self" in {f.name for f in fields} else "self"
        names = (first, *(f.name for f in pos), *(f.name for f in kwo))
        code = _signature_of.__code__.replace(
            co_argcount=1 + len(pos), co_kwonlyargcount=len(kwo), co_varnames=names, co_nlocals=len(names),
            co_name="__init__", co_qualname=f"{cls.__qualname__}.__init__")
        fn = FunctionType(code, {}, "__init__")
        fn.__defaults__ = tuple(None for f in pos if _has_default(f)) or None
        fn.__kwdefaults__ = {f.name: None for f in kwo if _has_default(f)} or None
        made.append(fn)
    made[0](self, *args, **kw)
    raise TypeError(f"{cls.__qualname__}.__init__() got arguments it cannot take")   # not reached


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


_repr_running: set[tuple[int, int]] = set()


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    get = _getter(names)

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in _repr_running:
            return "..."           # a record inside itself, printed as dataclasses print it
        _repr_running.add(key)
        try:
            return (f"{self.__class__.__qualname__}("
                    + ", ".join([f"{n}={v!r}" for n, v in zip(names, get(self))]) + ")")
        finally:
            _repr_running.discard(key)
    return __repr__


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """The tuple of the attributes `names` of an object (attrgetter gives a bare value for one name)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq_hash(compared: tuple[str, ...], hashed: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    key, hkey = _getter(compared), _getter(hashed)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(hkey(self))
    return {"__eq__": __eq__, "__hash__": __hash__}


def _frozen(cls: type, names: frozenset[str]) -> dict[str, Callable[..., Any]]:
    error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return {"__setattr__": __setattr__, "__delattr__": __delattr__}



# the attributes typing.NamedTuple refuses to take from a class body, and those it does not copy
_TUPLE_PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                               "_make", "_replace", "_asdict", "_source"})
_TUPLE_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})


class _NamedTupleMaker(type):
    """The metaclass of `NamedTuple`: a class deriving from it is made a collections.namedtuple."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if bases != (_NAMED_TUPLE,):
            raise TypeError("can only inherit from a NamedTuple type")
        annotations = ns.get("__annotations__", {})
        defaults: list[str] = []
        for n in annotations:
            if n in ns:
                defaults.append(n)
            elif defaults:
                raise TypeError(f"Non-default namedtuple field {n} cannot follow default field"
                                f"{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}")
        cls = namedtuple(name, annotations, defaults=[ns[n] for n in defaults], module=ns["__module__"])
        cls.__annotations__ = cls.__new__.__annotations__ = dict(annotations)
        for key, value in ns.items():
            if key in _TUPLE_PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _TUPLE_SPECIAL and key not in cls._fields:
                setattr(cls, key, value)
        return cls


_NAMED_TUPLE = type.__new__(_NamedTupleMaker, "NamedTuple", (), {"__module__": __name__})

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    NamedTuple = _NAMED_TUPLE
