"""Files into the knowledge base: a file read by its importer in bounded memory (`source`), its runs given the
evidence flags the center allows (`center.evidence`), handed to the KB as batches it stores in one transaction
(`KB.add_batches`). This stands above the KB, which stores prepared batches and knows neither importers nor
centers, and above the importers and the center it reads with."""
from __future__ import annotations

from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from .. import importers
from ..errors import ImportFormatError
from ..frozen import replace
from ..kb.rows import V_FLAGS, V_SYSTEM, values_run
from ..kb.store import KB, Batch, ImportResult, batched, keyed_runs
from ..model.run import WRITE_OPS, Run
from ..util import few_collections, printable
from .source import ImportSource

__all__ = ["import_file", "flagger", "run_flagger", "synced_writes"]

Keyed = tuple[str, tuple]          # a run as the KB stores it: (content key, values in VALUES order)
Progress = Callable[[int, int], None]


def import_file(kb: KB, path: str | Path, fmt: str = "auto", *, system: str | None = None,
                filesystem: str | None = None, kind: str = "benchmark", progress: Progress | None = None,
                center: Any = None) -> ImportResult:
    """Parse one file with the named (or detected) importer and add its runs to `kb` as one transaction.

    The file is read twice in bounded memory: once to hash it (and, for text formats, to refuse a line
    longer than MAX_LINE, such as /dev/zero's), once to parse it as it goes when the importer can stream
    (the canonical CSV), else whole (formats whose files are small; larger than MAX_WHOLE_FILE is refused).
    A pipe is copied to a temporary file on the first read; a device or socket is refused unopened
    (ioadvisor.inputs).
    `progress(bytes_done, bytes_total)` is called as the file is parsed. Runs get their evidence flags
    (ioadvisor.center.evidence) from `center` (a `Center`, a center file or a shipped name) or else from
    the shipped center named like the runs' system; the same center's mounts decide whether a Darshan log
    measures it (importers.darshan.placement): a log that does not adds nothing, and the result's note says
    why; and the file system an IOR, mdtest or fio test path lies on (importers.place), else the result's warnings
    say which path and that --filesystem names it."""
    p = Path(path)
    name = printable(str(p))      # the source as runs and messages hold it (a byte that is not UTF-8 as \\xNN)
    # the generators reading the reopened file are closed (their clean-up run) while it is still open
    with ImportSource(p) as src, ExitStack() as readers:
        head = src.head()
        if not head:
            # a pipe with no writer, or whose writer wrote nothing, reads as empty too: said as what it is
            raise ImportFormatError("empty file" if src.spool is None else "a pipe: nothing was written to it", name)
        imp = importers.detect(head, name) if fmt == "auto" else importers.get(fmt)
        if imp.check is not None and src.spool is None:
            imp.check(str(p))                # e.g. a Darshan header that does not fit the file: not read
        digest, size = src.scan(imp.text, None if imp.stream else importers.MAX_WHOLE_FILE)
        ctx = importers.ImportContext(source=name, system=system, filesystem=filesystem, kind=kind,
                                      center=center)
        nullable = kb.null_default_columns()      # read here: the batches may be made in a second process
        flag = flagger(center)

        def prepared(items: Iterable[Keyed]) -> Iterator[Batch]:
            return batched(flag(items), nullable)

        batches: Iterable[Batch]
        aside = False
        if imp.stream is not None:
            batches, aside = _streamed(imp, src.reopen(), ctx, size, progress, readers, prepared)
        else:
            try:
                runs = _parsed_whole(imp, src, ctx, size, progress)
            except importers.NoMeasurement as e:    # read, but no measurement: nothing added, not even its hash
                return ImportResult(name, imp.name, 0, False, 0, f"no measured run: {e.reason}")
            batches = prepared(keyed_runs(runs, name))
        try:
            with few_collections():
                result = kb.add_batches(batches, source=name, source_hash=digest, fmt=imp.name,
                                        importer=f"{imp.name}/{imp.version}", require_runs=True,
                                        overlapped=aside)
        except ImportFormatError as e:
            raise e if e.path else e.at(name) from None
    # what the importer warned of concerns the runs added (a file already in the KB added none)
    return replace(result, warnings=tuple(ctx.warnings)) if ctx.warnings and result.runs else result


def flagger(center: Any) -> Callable[[Iterable[Keyed]], Iterator[Keyed]]:
    """What gives keyed rows, in order, the evidence flags (`evidence.flags_of`) of `center` (a Center, a
    center file or a name) or else of the center named like each row's system (none without a center that
    states node memory or rated peaks): for `import_file`, and for `KB.add_source(flag=...)`."""
    return lambda items: _flagged(items, center)


def run_flagger(center: Any = None) -> Callable[[Run], tuple[str, ...]]:
    """What judges one run's evidence flags as `flagger` does (by `center`, else by the center named like its
    system; a write its record says was synced before close, `synced_writes`, is not cache-sized); a
    run of a system without such a center keeps its flags: for `KB.relabel(flags_of=...)` and `kb check`."""
    from ..center.evidence import flags_of
    center_of = _centers(center)

    def judge(run: Run) -> tuple[str, ...]:
        c = center_of(run.system)
        return flags_of(run, center=c, synced=synced_writes(run)) if c is not None else run.flags
    return judge


def synced_writes(run: Run) -> bool:
    """Whether a write run's own record says its data reached the storage before the timed close (IOR's `-e` or
    `-Y` on the command line it keeps): such a write cannot have been served from the page cache, whatever the
    node's memory, as `ioadvise bench` writes (which sync before close) are not. Judged from what a stored run
    keeps, so an import, `kb check` and `kb relabel` judge the same run alike."""
    if run.provenance.tool != "IOR" or not run.provenance.command or run.op not in WRITE_OPS:
        return False
    from ..importers.ior import fsync_requested
    return fsync_requested(run.provenance.command)


def _centers(center: Any) -> Callable[[str], Any]:
    """system -> the center whose evidence rules flag its runs: `center` (a Center, a center file or a name) if
    given, else the center named like the system; None where it states nothing a flag is judged by. Each
    system's is looked up once."""
    from ..center import center_for
    from ..center.evidence import useful
    given = center if center is None or hasattr(center, "filesystems") else center_for(center, None)
    centers: dict[str, Any] = {}

    def center_of(system: str) -> Any:
        if system not in centers:
            c = given if given is not None else center_for(None, system)
            centers[system] = c if useful(c) else None
        return centers[system]
    return center_of


def _flagged(items: Iterable[Keyed], center: Any) -> Iterator[Keyed]:
    """`items`, in order, with the flags of the center of each row's system; a row of a system without such a
    center (most files' every row) passes as it is."""
    from ..center.evidence import flags_of
    center_of = _centers(center)
    plain: set[str] = set()         # the systems without one
    for item in items:
        system = item[1][V_SYSTEM]
        if system in plain:
            yield item
            continue
        c = center_of(system)
        if c is None:
            plain.add(system)
            yield item
            continue
        key, values = item
        run = values_run(values)
        f = flags_of(run, center=c, synced=synced_writes(run))
        if f != run.flags:
            values = values[:V_FLAGS] + (",".join(f) or None,)
        yield key, values


def _progressed(items: Iterable[Any], f: BinaryIO, size: int, progress: Progress) -> Iterator[Any]:
    """The items a streaming reader yields, reporting the bytes of `f` read so far (of `size`) every few
    thousand."""
    for i, item in enumerate(items, 1):
        if i % 2000 == 0:
            progress(f.tell(), size)
        yield item
    progress(size, size)


def _streamed(imp: Any, f: BinaryIO, ctx: Any, size: int, progress: Progress | None, readers: ExitStack,
              prepared: Callable[[Iterable[Keyed]], Iterator[Batch]]) -> tuple[Iterable[Batch], bool]:
    """The batches of a file an importer reads as it goes (its generators closed by `readers`), and whether a
    second process makes them."""
    if imp.name == "csv":
        # rows read straight into the stored form (ingest.csvrows), no Run per row; a large file by a
        # second process, which also sets flags and makes the batches, while this one stores
        from . import csvrows
        if size >= csvrows.ASIDE_BYTES and csvrows.can_read_aside():
            return readers.enter_context(closing(csvrows.read_aside(f, ctx, prepared, size, progress))), True
        items = readers.enter_context(closing(imp.stream(f, ctx, csvrows.RowReader)))
    else:
        items = keyed_runs(readers.enter_context(closing(imp.stream(f, ctx))), ctx.source)
    return prepared(items if progress is None else _progressed(items, f, size, progress)), False


def _parsed_whole(imp: Any, src: ImportSource, ctx: Any, size: int, progress: Progress | None) -> list[Run]:
    """The runs of a file an importer reads whole; at least one, or an error naming the file (a NoMeasurement
    passes through: the caller reports why nothing was added)."""
    try:
        runs = imp.parse(src.read_all(), ctx)
    except ImportFormatError as e:
        raise e if e.path else e.at(ctx.source) from None
    if not runs:
        raise ImportFormatError(f"no measured results found ({imp.name} format)", ctx.source)
    if progress is not None:
        progress(size, size)
    return runs
