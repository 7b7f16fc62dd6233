"""Re-score the advice's decision rule over the sweep corpus in seconds, without refitting anything.

`record` runs the corpus validation (`benchmarks/sweeps_corpus.py`, the shipped path: `kb validate --sweeps`,
which asks `engine.assess` per hidden sweep), prints its table and keeps, per scored hidden sweep, what `policy.decide` was
given (the workload, the weighed options with the runs near the job, the baseline configuration, the published
comparisons, each predicted option's posterior draws) and how the sweep scored (its measured medians, the
baselines' regrets). `score` calls the current `policy.decide` on those inputs and prints the regret of its
choices next to the baselines', overall and per system, so a changed rule is judged on the whole corpus at once.
The figures `score` prints equal a full corpus run's as long as only `advise/policy.py` changed; a change to the
predictions or the evidence (engine, candidates, predict/) needs a new `record`.

Usage:
    .venv/bin/python benchmarks/decision_cases.py record [--corpus DIR] [--out FILE]
    .venv/bin/python benchmarks/decision_cases.py score [--cases FILE] [--worst N] [--system NAME] [--set NAME=VALUE]
(`--set RUNS_TOLERANCE=0.05` scores the rule with one of `policy`'s constants changed.)
"""
from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = Path(tempfile.gettempdir()) / "ioadvisor-decision-cases.pkl"


def record(corpus: Path, out: Path) -> int:
    """Run the corpus validation once, keeping each scored case's decision inputs in `out`."""
    import sweeps_corpus
    from ioadvisor.advise import engine, validate
    from ioadvisor.ingest import import_file
    from ioadvisor.kb import KB
    seen: list[Any] = []
    kept: list[tuple[dict, dict]] = []
    real_decide, real_score = engine.decide, validate._score_case

    def decide(w: Any, options: Any, base: Any, comparisons: Any = (), draws: Any = None, **kw: Any) -> Any:
        drawn = {i: list(draws(i)) for i, o in enumerate(options) if o.value is not None} if draws else {}
        seen.append({"w": w, "options": list(options), "base": base, "comparisons": list(comparisons),
                     "draws": drawn, "kw": kw})
        return real_decide(w, options, base, comparisons, draws, **kw)

    def score_case(factor: str, group: list, fit: Any, osts: Any, dflt: Any, ev: Any, advised: Any) -> Any:
        case = real_score(factor, group, fit, osts, dflt, ev, advised)
        if case is not None and seen:
            kept.append((case, {**seen[-1], "osts": osts}))
        seen.clear()
        return case

    engine.decide, validate._score_case = decide, score_case
    with tempfile.TemporaryDirectory() as tmp:
        sweeps_corpus.convert(corpus, Path(tmp) / "csv")
        with KB.open(Path(tmp) / "corpus.sqlite", reference=False) as kb:
            for f in sorted((Path(tmp) / "csv").glob("*.csv")):
                import_file(kb, f, "csv")
            t0 = time.perf_counter()
            # in this process: the patches above record only the calls made in it
            res = validate.sweep_validate(kb, workers=1)
            took = time.perf_counter() - t0
    print(validate.format_sweep_table(res))
    for case, inputs in kept:
        inputs["case"] = {k: case[k] for k in ("system", "factor", "filesystem", "op", "layout", "api", "nodes",
                                               "ranks", "measured", "regret", "advised", "advise_args")}
    tmp_out = out.with_name(out.name + ".tmp")
    tmp_out.write_bytes(pickle.dumps([inputs for _, inputs in kept]))
    tmp_out.replace(out)
    print(f"{len(kept)} cases recorded in {out} ({took:.0f} s of validation)")
    return 0


def advised_of(rec: dict) -> Any:
    """The setting the current `policy.decide` chooses for a recorded case."""
    from ioadvisor.advise.policy import decide
    from ioadvisor.lustre import every_ost
    draws = rec["draws"]
    dec = decide(rec["w"], rec["options"], rec["base"], rec["comparisons"], lambda i: draws.get(i, []),
                 **rec["kw"])
    cfg = rec["options"][dec.choice].config
    if rec["case"]["factor"] == "stripe_count":
        return every_ost(cfg.stripe_count, rec["osts"])
    return getattr(cfg, rec["case"]["factor"])


def regret_of(case: dict, advised: Any) -> float | None:
    """Best measured / measured at `advised` (log-interpolated between stripe counts, as validate scores)."""
    from ioadvisor.advise.validate import _interp
    m = case["measured"]
    best = max(m.values())
    if case["factor"] == "stripe_count":
        if not advised or advised <= 0:
            return None
        return best / _interp({float(k): v for k, v in m.items()}, float(advised))
    return best / m[str(advised)] if str(advised) in m else None


def _stats(xs: list[float]) -> str:
    if not xs:
        return "-"
    from ioadvisor.advise.validate import _q
    return f"median {statistics.median(xs):.3f}  p90 {_q(xs, 0.9):.3f}  worst {max(xs):.3f}  n {len(xs)}"


def score(cases: Path, worst: int, system: str | None) -> int:
    recs = pickle.loads(cases.read_bytes())
    if system:
        recs = [r for r in recs if r["case"]["system"].lower() == system.lower()]
    rows = []
    for rec in recs:
        c = rec["case"]
        now = regret_of(c, advised_of(rec))
        rows.append((c, now, c["regret"].get("nearest_measured")))
    for factor in sorted({c["factor"] for c, _, _ in rows}):
        fr = [(c, r, b) for c, r, b in rows if c["factor"] == factor]
        print(f"{factor}: {len(fr)} cases")
        print(f"  rule now        {_stats([r for _, r, _ in fr if r is not None])}")
        print(f"  as recorded     {_stats([c['regret']['model'] for c, _, _ in fr])}")
        if any(b is not None for _, _, b in fr):
            both = [(r, b) for _, r, b in fr if r is not None and b is not None]
            print(f"  nearest (same)  {_stats([b for _, b in both])}")
            print(f"  rule (same)     {_stats([r for r, _ in both])}")
        for sysname in sorted({c["system"] for c, _, _ in fr}):
            rs = [r for c, r, _ in fr if c["system"] == sysname and r is not None]
            bs = [b for c, _, b in fr if c["system"] == sysname and b is not None]
            print(f"    {sysname[:28]:<28} rule {_stats(rs)} | nearest {_stats(bs)}")
        for c, r, b in sorted(fr, key=lambda x: -(x[1] or 0))[:worst]:
            print(f"    worst: {r:.3f} (nearest {b if b is None else round(b, 3)}) {c['system']} {c['filesystem']} "
                  f"{c['op']} {c['api']} {c['layout']} N={c['nodes']} ranks={c['ranks']} measured {c['measured']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    import sweeps_corpus
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--corpus", type=Path, default=sweeps_corpus.DEFAULT_CORPUS)
    r.add_argument("--out", type=Path, default=DEFAULT_CASES)
    s = sub.add_parser("score")
    s.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    s.add_argument("--worst", type=int, default=5)
    s.add_argument("--system", default=None)
    s.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        if not sorted(args.corpus.glob("*.csv")):
            print(f"decision_cases: no corpus CSV files in {args.corpus} (use --corpus DIR)", file=sys.stderr)
            return 2
        return record(args.corpus, args.out)
    from ioadvisor.advise import policy
    for kv in args.set:
        name, _, value = kv.partition("=")
        if not hasattr(policy, name):
            print(f"decision_cases: policy has no constant {name}", file=sys.stderr)
            return 2
        old = getattr(policy, name)
        setattr(policy, name, value.lower() in ("1", "true", "yes") if isinstance(old, bool) else type(old)(value))
    return score(args.cases, args.worst, args.system)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    raise SystemExit(main())
