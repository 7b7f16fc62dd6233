"""`frozen`: the package's frozen classes of named fields (records), made without compiling anything.

A frozen dataclass writes the source of six methods (__init__, __repr__, __eq__, __hash__, __setattr__,
__delattr__) for its fields and compiles it with `exec` when its class statement runs: 1.0-1.6 ms for a class of
eight fields on Python 3.11, at every start of a process. The 18 a cold `ioadvise advise` made took 90 million of
its 453 million instructions. A `@frozen` class is the same class made another way (0.13-0.22 ms for those eight
fields): its fields are collected here from the class body (its annotations in order, the defaults and `field`s),
and the methods are shared functions bound to the field list (closures and `operator.attrgetter`), which a class
statement merely creates. Nothing here imports `dataclasses`, which imports `inspect` (and with it ast, dis,
tokenize): a tenth of a cold advice's start-up.

A record behaves as the frozen dataclass of the same fields in what the package relies on, through this module's
`fields`, `replace`, `asdict` and `field(default=..., default_factory=..., init=, repr=, compare=, hash=,
kw_only=)` (each as dataclasses' of the same name; `fields`, `replace` and `asdict` take a dataclass too),
`__post_init__`, `__match_args__`; an instance has the same attributes in the same order (so it pickles and copies
to the same bytes), compares and hashes as the tuple of its compared fields, prints as dataclasses print it, and
refuses to be changed with `FrozenInstanceError` (an AttributeError, as dataclasses'). A call with an argument
missing, unknown, doubled or too many is refused with Python's own TypeError for the signature the dataclass's
__init__ would have (a function of that signature is made, from a code object's copy and not compiled, on the
first such call). Not supported: InitVar, KW_ONLY, `order=True`, `slots=True`, a record derived from a record or a
dataclass. To `dataclasses` a record is not a dataclass.

    @frozen(kw_only=True)
    class Tier:
        name: str
        stage: bool = True

The package's named tuples derive from `NamedTuple` here, which is typing.NamedTuple to a type checker. At run
time it makes the class as typing.NamedTuple does (collections.namedtuple, the defaults, the class's methods and
docstring) but keeps the annotations as the text they are under `from __future__ import annotations`:
typing.NamedTuple compiles each into a ForwardRef, 152 small compilations for the 17 named tuples a cold advice
makes. Nor is the class's __new__ compiled, as collections.namedtuple compiles one per class (`_named_tuple`).
"""
from __future__ import annotations

from _thread import get_ident
from _collections import _tuplegetter
from collections import namedtuple
from operator import attrgetter
from types import FunctionType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar, dataclass_transform, overload
    _T = TypeVar("_T")
else:
    # what a type checker reads `frozen` by; at run time typing is not imported for it (see the module's end)
    def overload(fn):
        return fn

    def dataclass_transform(**_):
        return overload
_REQUIRED = object()       # placeholders keeping a field's place in the instance's dict until its value is set
_FACTORY = object()
_MADE = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
FIELDS = "__record_fields__"
_BUILD = "__record_from_dict__"      # the class's builder of an instance from a dict (`from_dict`)
_ATOMIC = frozenset({type(None), bool, int, float, complex, str, bytes, range, type})


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()      # no default given (as dataclasses.MISSING)


class FrozenInstanceError(AttributeError):
    """An attempt to change a record (as dataclasses.FrozenInstanceError)."""


class Field:
    """A record's field, as `dataclasses.Field` describes one: its name, annotation (the text it is written as),
    default or default factory, and whether __init__ takes it, repr shows it, equality and hash compare it, and it
    is keyword-only."""

    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "compare", "hash", "kw_only")

    def __init__(self, default: Any, default_factory: Any, init: bool, repr: bool, compare: bool,
                 hash: bool | None, kw_only: Any) -> None:
        self.name: str = ""
        self.type: Any = None
        self.default, self.default_factory, self.init, self.repr = default, default_factory, init, repr
        self.compare, self.hash, self.kw_only = compare, hash, kw_only

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r},type={self.type!r},default={self.default!r},"
                f"default_factory={self.default_factory!r},init={self.init!r},repr={self.repr!r},"
                f"hash={self.hash!r},compare={self.compare!r},kw_only={self.kw_only!r})")


def field(*, default: Any = MISSING, default_factory: Any = MISSING, init: bool = True, repr: bool = True,
          hash: bool | None = None, compare: bool = True, kw_only: Any = MISSING) -> Any:
    """A record's field with a default, a default factory or other than the usual flags (as dataclasses.field)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, compare, hash, kw_only)


@overload
def frozen(cls: type[_T], /) -> type[_T]: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """Make `cls` a frozen record (`@frozen`, or `@frozen(kw_only=True)` for keyword-only fields)."""
    if cls is None:
        return lambda c: _make(c, kw_only)
    return _make(cls, kw_only)


def is_record(obj: Any) -> bool:
    """Whether `obj` is a record or a record's class."""
    return hasattr(obj, FIELDS)


def fields(obj: Any) -> tuple[Any, ...]:
    """A record's fields in their order (a dataclass's from dataclasses), as `dataclasses.fields` gives them."""
    found = getattr(obj, FIELDS, None)
    if found is not None:
        return found
    import dataclasses
    return dataclasses.fields(obj)


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of a record with `changes` (a dataclass's by dataclasses), made as `dataclasses.replace` makes it:
    through __init__ (so __post_init__ checks it), a field __init__ does not take refused with ValueError."""
    found = getattr(type(obj), FIELDS, None)
    if found is None:
        import dataclasses
        return dataclasses.replace(obj, **changes)     # type: ignore[type-var]
    for f in found:
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def asdict(obj: Any) -> dict[str, Any]:
    """A record (or dataclass) as a dict, as `dataclasses.asdict` makes it: records and dataclasses in it made
    dicts, lists, tuples (named tuples too) and dicts rebuilt, every other value deep-copied."""
    if not (hasattr(type(obj), FIELDS) or hasattr(type(obj), "__dataclass_fields__")):
        raise TypeError("asdict() should be called on dataclass instances")
    return _asdict(obj)


def _asdict(obj: Any) -> Any:
    if hasattr(type(obj), FIELDS) or hasattr(type(obj), "__dataclass_fields__"):
        return {f.name: _asdict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_asdict(v) for v in obj)
    if isinstance(obj, dict):
        if hasattr(type(obj), "default_factory"):
            out = type(obj)(obj.default_factory)
            for k, v in obj.items():
                out[_asdict(k)] = _asdict(v)
            return out
        return type(obj)((_asdict(k), _asdict(v)) for k, v in obj.items())
    if obj.__class__ in _ATOMIC:
        return obj         # what deepcopy returns for these (and `copy` is not imported for them)
    import copy
    return copy.deepcopy(obj)


def _collect(cls: type, kw_only: bool) -> tuple[Field, ...]:
    """The fields of a class body as dataclasses collect them: its annotations in order (but ClassVar), with the
    class attribute as the default or the `field` it holds; the class attribute set to the default, or removed."""
    out = []
    for name, kind in cls.__dict__.get("__annotations__", {}).items():
        text = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        if text.startswith(("ClassVar", "typing.ClassVar")):
            continue
        if text.startswith(("InitVar", "KW_ONLY", "dataclasses.")):
            raise TypeError(f"frozen {cls.__qualname__}: {text} is not supported")
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(value, MISSING, True, True, True, None, MISSING)
        f.name, f.type = name, kind
        if f.kw_only is MISSING:
            f.kw_only = kw_only
        if f.default is not MISSING and f.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: "
                             "use default_factory")
        if isinstance(value, Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out.append(f)
    return tuple(out)


def _make(cls: type, kw_only: bool) -> type:
    clash = [n for n in ("__setattr__", "__delattr__") if n in cls.__dict__]
    if clash or any(hasattr(b, FIELDS) or hasattr(b, "__dataclass_fields__") for b in cls.__mro__[1:]):
        raise TypeError(f"frozen {cls.__qualname__}: defines {clash[0]}" if clash else
                        f"frozen {cls.__qualname__}: derived from a dataclass or record")
    fields = _collect(cls, kw_only)
    setattr(cls, FIELDS, fields)
    if not cls.__doc__:
        cls.__doc__ = _doc(cls.__name__, fields)
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f.name for f in fields if f.init and not f.kw_only)  # type: ignore[attr-defined]
    positional = [f for f in fields if f.init and not f.kw_only]
    for a, b in zip(positional, positional[1:]):
        if not _has_default(b) and _has_default(a):
            raise TypeError(f"non-default argument {b.name!r} follows default argument")
    init, build = _init(cls, fields)
    setattr(cls, _BUILD, build)
    made = {"__init__": init, "__repr__": _repr(tuple(f.name for f in fields if f.repr))}
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


def _doc(name: str, fields: tuple[Field, ...]) -> str:
    """The docstring dataclasses give a class without one: its name and its __init__ signature."""
    def param(f: Field) -> str:
        text = f"{f.name}: {f.type!r}"
        if f.default is not MISSING:
            return f"{text} = {f.default!r}"
        return f"{text} = <factory>" if f.default_factory is not MISSING else text
    pos = [param(f) for f in fields if f.init and not f.kw_only]
    kwo = [param(f) for f in fields if f.init and f.kw_only]
    return f"{name}({', '.join(pos + (['*'] + kwo if kwo else []))})"


def _init(cls: type, fields: tuple[Field, ...]) -> tuple[Callable[..., None], Callable[[dict[str, Any]], Any]]:
    """__init__ as the dataclass's: every field set in the instance's dict in field order (defaults, the given
    values, then the factories' values for fields not given), then __post_init__ if the class has one; and the
    same filling of a new instance from a dict (`from_dict`)."""
    missing = MISSING
    names = frozenset(f.name for f in fields if f.init)
    required = frozenset(f.name for f in fields if f.init and f.default is missing and f.default_factory is missing)
    defaults = {f.name: f.default if f.default is not missing else
                _FACTORY if f.default_factory is not missing else _REQUIRED
                for f in fields if f.init or f.default_factory is not missing}   # else the class attribute
    factories = tuple((f.name, f.default_factory) for f in fields if f.default_factory is not missing)
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    post_init = hasattr(cls, "__post_init__")
    signature: list[FunctionType] = []

    def fill(self: Any, kw: dict[str, Any]) -> None:
        d = self.__dict__
        d.update(defaults)
        d.update(kw)
        for name, factory in factories:
            if name not in kw:
                d[name] = factory()
        if post_init:
            self.__post_init__()

    def __init__(self: Any, *args: Any, **kw: Any) -> None:
        if args:
            if len(args) > len(positional) or not kw.keys().isdisjoint(positional[:len(args)]):
                _refuse(cls, fields, signature, self, args, kw)
            kw.update(zip(positional, args))
        if not (required <= kw.keys() and kw.keys() <= names):
            _refuse(cls, fields, signature, self, args, kw)
        fill(self, kw)

    def build(kw: dict[str, Any]) -> Any:
        if not (required <= kw.keys() and kw.keys() <= names):
            return cls(**kw)          # which raises the TypeError of the call
        obj = object.__new__(cls)
        fill(obj, kw)
        return obj
    return __init__, build


def from_dict(cls: type[_T], kw: dict[str, Any]) -> _T:
    """`cls(**kw)` for a record class, from the dict itself: the same instance (every field set in field order,
    defaults and factories applied, __post_init__ called), without the copy of `kw` a keyword call makes (for a
    Run of twenty fields, a keyword call takes 1.6-1.9 times as long: on the path of every CSV row read). Names
    missing or unknown raise the TypeError `cls(**kw)` raises. `kw` is not changed."""
    return getattr(cls, _BUILD)(kw)


def _signature_of(self) -> None:     # the code object a record's __init__ signature is copied from
    pass


def _refuse(cls: type, fields: tuple[Field, ...], made: list[FunctionType], self: Any,
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


def _has_default(f: Field) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING


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
    error = FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return {"__setattr__": __setattr__, "__delattr__": __delattr__}


_tuple_new = tuple.__new__
# collections.namedtuple's __new__ for 1 to 25 fields, as namedtuple writes and compiles it, compiled here once
# with the module: a named tuple's __new__ is a copy of the one of its size, its arguments renamed to its fields
_NEW = (
    lambda _cls, a: _tuple_new(_cls, (a,)),
    lambda _cls, a, b: _tuple_new(_cls, (a, b)),
    lambda _cls, a, b, c: _tuple_new(_cls, (a, b, c)),
    lambda _cls, a, b, c, d: _tuple_new(_cls, (a, b, c, d)),
    lambda _cls, a, b, c, d, e: _tuple_new(_cls, (a, b, c, d, e)),
    lambda _cls, a, b, c, d, e, f: _tuple_new(_cls, (a, b, c, d, e, f)),
    lambda _cls, a, b, c, d, e, f, g: _tuple_new(_cls, (a, b, c, d, e, f, g)),
    lambda _cls, a, b, c, d, e, f, g, h: _tuple_new(_cls, (a, b, c, d, e, f, g, h)),
    lambda _cls, a, b, c, d, e, f, g, h, i: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x)),
    lambda _cls, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y:
    _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y)),
)


def _named_tuple(name: str, names: tuple[str, ...], defaults: tuple, module: str) -> type:
    """`collections.namedtuple(name, names, defaults=defaults, module=module)` made without compiling: the same
    class, with the same __new__ (its code copied from `_NEW`, the arguments named as the fields)."""
    count = len(names)
    if not 0 < count <= len(_NEW):
        return namedtuple(name, names, defaults=defaults, module=module)
    seen: set[str] = set()
    for n in names:
        if n.startswith("_") or n in seen:
            raise ValueError(f"Field names cannot start with an underscore: {n!r}" if n.startswith("_") else
                             f"Encountered duplicate field name: {n!r}")
        seen.add(n)
    arg_list = ", ".join(names) + ("," if count == 1 else "")
    code = _NEW[count - 1].__code__.replace(co_varnames=("_cls", *names), co_name="__new__",
                                            co_qualname=f"{name}.__new__")
    __new__ = FunctionType(code, {"_tuple_new": _tuple_new, "__builtins__": {}, "__name__": f"namedtuple_{name}"},
                           "__new__", defaults or None)

    def _make(cls: Any, iterable: Any) -> Any:
        result = _tuple_new(cls, iterable)
        if len(result) != count:
            raise TypeError(f"Expected {count} arguments, got {len(result)}")
        return result

    def _replace(self: Any, /, **kwds: Any) -> Any:
        result = self._make(map(kwds.pop, names, self))
        if kwds:
            raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
        return result

    repr_fmt = "(" + ", ".join(f"{n}=%r" for n in names) + ")"

    def __repr__(self: Any) -> str:
        return self.__class__.__name__ + repr_fmt % self

    def _asdict(self: Any) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def __getnewargs__(self: Any) -> tuple:
        return tuple(self)

    __new__.__doc__ = f"A {name} of ({arg_list})."
    _make.__doc__ = f"A {name} of the {count} values an iterable gives."
    _replace.__doc__ = f"A copy of this {name} with the fields named given new values."
    __repr__.__doc__ = f"{name}(field=value, ...)."
    _asdict.__doc__ = "The fields and their values, as a dict."
    __getnewargs__.__doc__ = "The values as a plain tuple (for copy and pickle)."
    ns: dict[str, Any] = {"__doc__": f"{name}({arg_list})", "__slots__": (), "_fields": names,
                          "_field_defaults": dict(zip(names[count - len(defaults):], defaults)), "__new__": __new__,
                          "_make": classmethod(_make), "_replace": _replace, "__repr__": __repr__,
                          "_asdict": _asdict, "__getnewargs__": __getnewargs__, "__match_args__": names}
    for fn in (__new__, _make, _replace, __repr__, _asdict, __getnewargs__):
        fn.__qualname__ = f"{name}.{fn.__name__}"
    for i, n in enumerate(names):
        ns[n] = _tuplegetter(i, f"Field {i}: {n}.")
    cls = type(name, (tuple,), ns)
    cls.__module__ = module
    return cls


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
        cls = _named_tuple(name, tuple(annotations), tuple(ns[n] for n in defaults), ns["__module__"])
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
