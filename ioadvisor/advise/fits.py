"""Fitted models per system, cached in-process and in a small table of the user's KB (kb/fits.py reads and
writes it, and the runs the fits rest on); fits by content (advise, `kb validate`, `kb publish`) in the user's
cache."""
from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping

from ..frozen import fields
from ..kb import KB
from ..kb import fits as kb_fits
from ..model.types import Center
from ..predict import Fit, fit_all
from ..predict.evidence import Evidence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_CACHE: dict[tuple[str, str | None, str], tuple[tuple, dict]] = {}
_EVIDENCE: dict[tuple[str, str | None, str], tuple[tuple, Evidence]] = {}
MODEL_VERSION = "physical/6"   # stored fits of another version are refitted


def _signature(kb: KB, system: str, osts: dict, dflt: dict) -> tuple:
    """Everything a system's fits depend on: the model's version; the user KB's runs, which change when runs
    are added (rowids only grow) or when runs of this system are deleted (its per-file-system run counts, kept
    current by the KB, fall; a delete need not lower the largest rowid); the reference data (the reference KB's
    file name is a hash of its data and schema; its directory, the user's cache, is left out, so the users of
    one KB, each with a cache of their own, share the fits it stores instead of refitting in turn; a center's
    published KB by the id of its snapshot); and what the center says of the file systems (OST counts and
    default stripe counts enter the fit)."""
    last_rowid, sources, counts = kb_fits.fit_basis(kb, system)
    return (MODEL_VERSION, last_rowid, sources, counts, kb.reference_id,
            sorted([str(k), v, dflt.get(k)] for k, v in osts.items()))


def load_system_runs(kb: KB, system: str, max_per_group: int = 400) -> list:
    """A system's runs, at most `max_per_group` per (file system, op), evenly spread: enough to fit on, and
    quick to read from a KB of any size (only row ids are read for the whole group; full rows for the chosen)."""
    # row ids only, packed (positive: the user's KB, negative: the reference KB), so that even a group of a
    # million runs costs a few MB here; production observations and flagged runs are not fitted (fit_rowids)
    groups: dict[tuple, array] = {}
    for db, sign in (("main", 1),) + ((("ref", -1),) if kb.reference else ()):
        for fs, op, rowid in kb_fits.fit_rowids(kb, db, system):
            g = groups.get((fs, op))
            if g is None:
                g = groups[(fs, op)] = array("q")
            g.append(sign * rowid)
    chosen: list[tuple[str, int]] = []
    for g in groups.values():
        if len(g) > max_per_group:
            step = len(g) / max_per_group
            g = [g[int(i * step)] for i in range(max_per_group)]
        chosen += [("main", k) if k > 0 else ("ref", -k) for k in g]
    runs: dict[tuple[str, int], Any] = {}
    for db in {d for d, _ in chosen}:
        for rowid, run in kb_fits.runs_at_rowids(kb, db, [k for d, k in chosen if d == db]):
            runs[(db, rowid)] = run
    return [runs[k] for k in chosen]


def _fits_from_rows(rows: list) -> dict:
    from ..predict.physical import posterior_from_json
    out = {}
    for d in rows:
        d["run_ids"] = tuple(d["run_ids"])
        d["posterior"] = posterior_from_json(d["posterior"])
        for k in ("stripes_measured", "klasses"):
            d[k] = tuple(d.get(k) or ())
        f = Fit(**{k: (float("inf") if v == "inf" else v) for k, v in d.items()})
        out[(f.system, f.filesystem, f.op)] = f
    return out


def _fits_to_rows(fits: dict) -> list:
    from ..predict.physical import posterior_to_json
    rows = []
    for f in fits.values():
        d = {x.name: getattr(f, x.name) for x in fields(f) if x.name != "posterior"}
        d["run_ids"] = list(f.run_ids)
        d = {k: ("inf" if isinstance(v, float) and v == float("inf") else v) for k, v in d.items()}
        d["posterior"] = posterior_to_json(f.posterior)
        rows.append(d)
    return rows


class StoredFits(Mapping):
    """A system's stored fits by (system, file system, op), each decoded from its own JSON text when first asked
    for: an advice asks for its op's (a cold advice had decoded every op's fits, their posterior draws and run
    ids, to use one op's)."""

    def __init__(self, texts: dict[tuple, str]) -> None:
        self._fits: dict[tuple, Any] = texts

    def __getitem__(self, key: tuple) -> Fit:
        f = self._fits[key]
        if isinstance(f, str):
            f = self._fits[key] = next(iter(_fits_from_rows([json.loads(f)]).values()))
        return f

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._fits)

    def __len__(self) -> int:
        return len(self._fits)


def _load_table(kb: KB, system: str, sig: tuple, db: str = "main") -> Mapping | None:
    row = kb_fits.load_derived(kb, "fits", system, db)
    if row and row[0] == _stored_key(sig, FITS_FORM):
        return StoredFits({tuple(k): text for k, text in json.loads(row[1])})
    if row and row[0] == _stored_key(sig, FITS_FORM_BEFORE):
        return _fits_from_rows(json.loads(row[1]))
    return None


#: the form stored fits are kept in, part of their key: every run id of each fit (a fit stored with only its first
#: 40 showed other runs as the evidence of an advice than the same fit made afresh, the runs near the job being
#: among those left out), each fit as JSON text of its own under its (system, file system, op) (`StoredFits`); fits
#: stored in the form before (a list of every fit) are read as they are, in another form made again
FITS_FORM = "every run id, each fit as text"
FITS_FORM_BEFORE = "every run id"


def _stored_key(sig: tuple, form: str) -> str:
    """The key a derived value (fits, evidence index) is stored under: its signature and the form it is stored in."""
    return json.dumps([*sig, form], default=str)


def _store_table(kb: KB, system: str, sig: tuple, fits: Mapping, db: str = "main") -> None:
    if kb.path == ":memory:" and db == "main":
        return
    # nothing stored on a read-only KB: the in-process cache still serves
    texts = [[[r["system"], r["filesystem"], r["op"]], json.dumps(r)] for r in _fits_to_rows(fits)]
    kb_fits.store_derived(kb, "fits", system, _stored_key(sig, FITS_FORM), json.dumps(texts), db)


def _memoised(kb: KB, system: str, center: Center | None, cache: dict, load: Any, make: Any, store: Any) -> Any:
    """What `make(runs, osts, defaults)` builds for `system`, from this process's `cache`, else the KB's stored
    copy (`load`), else built from the system's runs and stored (`store`): rebuilt only when the system's runs
    or the center's OST and default stripe counts change (the signature)."""
    osts = {f.name: f.ost_count for f in center.filesystems} if center else {}
    dflt = {f.name: f.default_stripe_count for f in center.filesystems} if center else {}
    sig = _signature(kb, system, osts, dflt)
    key = (kb.path, kb.reference, system.lower())
    hit = cache.get(key)
    if hit and hit[0] == sig:
        return hit[1]
    value = load(kb, system, sig)
    if value is None and sig[3] == [] and kb.reference:
        # no run of the system in the user's KB: its fits rest on the layer below alone, and a center's
        # snapshot holds them, made when it was published (`store_published`) and keyed by its id
        value = load(kb, system, _published_signature(sig), "ref")
        if value is not None:
            cache[key] = (sig, value)
            return value
    if value is None:
        value = make(load_system_runs(kb, system), osts, dflt)
        store(kb, system, sig, value)
    cache[key] = (sig, value)
    return value


def _published_signature(sig: tuple) -> tuple:
    """The signature of `sig`'s system as a KB with no run of it sees it: the layer below and the center only
    (what a snapshot's stored fits are keyed by, whatever the user's KB holds of other systems)."""
    return (sig[0], None, 0, [], *sig[4:])


# Fits by content, in the user's cache: `kb validate` refits every system once per held-out run, `kb publish`
# every system of the snapshot, most of them on the very runs they fitted last time (the reference systems, a
# staff KB's unchanged ones), and advise a system whose runs are unchanged where the KB's stored fits are not
# (a new KB on the reference data, a run of another system added: the KB's signature changed, the runs did
# not). A fit is a function of its runs (every field, in their order), the OST and default stripe counts and the
# model's code, so those are the key. A fit of 20 runs is about 25 kB compressed (a median of 5 kB in a corpus
# validation); at most FIT_CACHE_FILES are kept, the oldest removed: enough for a few validations of a large KB (one
# of the public sweep corpus makes well over 1,000 fits; at 1,000 the cache dropped the first of them before the
# run ended, so the next run refitted them all).
FIT_CACHE_FILES = 5000
_MODEL_DIGEST: list[str] = []


# what bounds a fit's predictions afterwards and is never read by `fit_all`: a change to it need not refit
NOT_FITTED = ("evidence.py",)


def model_files() -> list:
    """The code a fit is made by: ioadvisor.predict (but the evidence bands, `NOT_FITTED`), the runs' model and
    the Lustre rules it reads."""
    from pathlib import Path
    from .. import predict
    pkg = Path(predict.__file__).parent.parent
    return [*sorted(f for f in (pkg / "predict").glob("*.py") if f.name not in NOT_FITTED),
            *sorted((pkg / "model").glob("*.py")), pkg / "lustre.py"]


def _model_digest() -> str | None:
    """A digest of the model: its version, its code (`model_files`) and the numpy and scipy it fits with; None
    where the code is not there to read (then nothing is cached)."""
    if not _MODEL_DIGEST:
        import hashlib
        from importlib.metadata import version
        files = model_files()
        pkg = files[-1].parent
        h = hashlib.sha256(f"{MODEL_VERSION} numpy {version('numpy')} scipy {version('scipy')}".encode())
        try:
            for f in files:
                h.update(f"{f.relative_to(pkg)}\0".encode() + f.read_bytes())
            _MODEL_DIGEST.append(h.hexdigest())
        except OSError:
            _MODEL_DIGEST.append("")
    return _MODEL_DIGEST[0] or None


def fit_all_cached(runs: list, osts: dict, dflt: dict, memo: dict | None = None) -> dict:
    """`fit_all(runs, osts, dflt, memo=memo)`, read from the cache when the same fit was made before."""
    import hashlib
    import os
    import zlib
    from ..util import cache_dir

    def fit() -> dict:
        return fit_all(runs, osts, dflt) if memo is None else fit_all(runs, osts, dflt, memo=memo)

    digest, d = _model_digest(), cache_dir("fits")
    if digest is None or d is None:
        return fit()
    key = json.dumps([digest, sorted([str(k), v] for k, v in osts.items()),
                      sorted([str(k), v] for k, v in dflt.items()), _run_texts(runs, memo)], default=str)
    path = d / f"{hashlib.sha256(key.encode()).hexdigest()}.json.z"
    try:
        return _fits_from_rows(json.loads(zlib.decompress(path.read_bytes())))
    except (OSError, ValueError, TypeError, KeyError, zlib.error):
        pass       # not there, or unreadable: fitted again
    fits = fit()
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        tmp.write_bytes(zlib.compress(json.dumps(_fits_to_rows(fits)).encode()))
        os.replace(tmp, path)
        if len(os.listdir(d)) > FIT_CACHE_FILES:
            _prune(d, FIT_CACHE_FILES * 3 // 4)
    except OSError:
        tmp.unlink(missing_ok=True)   # a full or read-only cache: the fit is still returned
    return fits


# where a caller's `memo` keeps each run's text for the key (a validation asks for the fits of nearly the same runs
# once per fold), by the run object's id, next to the object itself: the text is another run's never
_RUN_TEXTS = "run texts"


def _run_texts(runs: list, memo: dict | None) -> list[str]:
    """`repr` of each run, each made once per `memo`."""
    if memo is None:
        return [repr(r) for r in runs]
    texts = memo.setdefault(_RUN_TEXTS, {})
    out = []
    for r in runs:
        got = texts.get(id(r))
        if got is None or got[0] is not r:
            got = texts[id(r)] = (r, repr(r))
        out.append(got[1])
    return out


def _prune(d: Any, keep: int) -> None:
    """Remove the least recently written files of `d` but `keep` (another process may remove them too)."""
    import os
    entries = []
    for e in os.scandir(d):
        try:
            entries.append((e.stat().st_mtime, e.path))
        except OSError:
            continue
    for _, path in sorted(entries)[:max(0, len(entries) - keep)]:
        try:
            os.unlink(path)
        except OSError:
            pass


def store_published(kb: KB, center_of: Any) -> list[str]:
    """Fit every system of the snapshot attached (writable) as `ref` under the empty in-memory KB `kb`, as a
    user with no runs of it would, and store the fits and evidence in the snapshot, keyed by what they rest on
    (`_published_signature`: the snapshot's id and the center `center_of(kb, system)` describes it by, the
    one `advise --system` takes). The systems fitted."""
    done = []
    for system in kb.systems():
        center = center_of(kb, system)
        osts = {f.name: f.ost_count for f in center.filesystems} if center else {}
        dflt = {f.name: f.default_stripe_count for f in center.filesystems} if center else {}
        sig = _published_signature(_signature(kb, system, osts, dflt))
        runs = load_system_runs(kb, system)
        fits = fit_all_cached(runs, osts, dflt)
        _store_table(kb, system, sig, fits, "ref")
        if fits:
            _store_evidence(kb, system, sig, Evidence(runs, osts, dflt), "ref")
        done.append(system)
    return done


def system_fits(kb: KB, system: str, center: Center | None = None) -> dict[tuple[str, str | None, str], Fit]:
    """Fits for every (system, file system, op) of `system`, refitted only when the system's runs change; where
    the KB's stored fits do not match (a new KB, a run added), read from the fits by content when the runs they
    rest on were fitted before (a new KB on the reference data, a run of another system added)."""
    return _memoised(kb, system, center, _CACHE, _load_table, fit_all_cached, _store_table)


def system_evidence(kb: KB, system: str, center: Center | None = None) -> Evidence:
    """The system's runs indexed for the evidence bands (predict.evidence), kept as long as its fits are."""
    return _memoised(kb, system, center, _EVIDENCE, _load_evidence, Evidence, _store_evidence)


#: the form the evidence index is stored in (`Evidence.to_json`: each group's runs and each peak's points as JSON
#: text of their own), part of its key: a version that reads only a form stored before (groups as text, peaks as
#: lists; or both as lists) finds no index under this key and builds its own, where it would misread this one; this
#: version reads every form (`EVIDENCE_FORMS_READ`, and the bare signature of the first)
EVIDENCE_FORM = "groups and peaks as text"
EVIDENCE_FORMS_READ = (EVIDENCE_FORM, "groups as text")


def _load_evidence(kb: KB, system: str, sig: tuple, db: str = "main") -> Evidence | None:
    """The stored evidence index (a cold advice reads it instead of the system's runs, as it reads the fits)."""
    row = kb_fits.load_derived(kb, "evidence", system, db)
    if not row or row[0] not in (*(_stored_key(sig, f) for f in EVIDENCE_FORMS_READ), json.dumps(sig, default=str)):
        return None
    return Evidence.from_json(json.loads(row[1]))


def _store_evidence(kb: KB, system: str, sig: tuple, ev: Evidence, db: str = "main") -> None:
    if kb.path == ":memory:" and db == "main":
        return
    # nothing stored on a read-only KB: the in-process cache still serves
    kb_fits.store_derived(kb, "evidence", system, _stored_key(sig, EVIDENCE_FORM), json.dumps(ev.to_json()), db)
