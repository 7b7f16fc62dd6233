"""Parse a Slurm batch script the way sbatch reads it. Pure: text in, values out, never raises on bad text.

sbatch reads `#SBATCH` directives from the top of the script until the first line that is neither blank nor a
comment; `#SBATCH` lines after that are ignored by sbatch and reported here as warnings. `#IOADVISE` lines are
read by `ioadvisor.ioadvise_lines` (through `ioadvisor.job.describe`), not here.
"""
from __future__ import annotations

import re

from ..frozen import field, frozen

# short option -> long option (sbatch 22.05)
SHORT = {
    "A": "account", "a": "array", "B": "extra-node-info", "b": "begin", "C": "constraint", "c": "cpus-per-task",
    "D": "chdir", "d": "dependency", "e": "error", "F": "nodefile", "G": "gpus", "H": "hold", "i": "input",
    "J": "job-name", "k": "no-kill", "L": "licenses", "M": "clusters", "m": "distribution", "N": "nodes",
    "n": "ntasks", "O": "overcommit", "o": "output", "p": "partition", "Q": "quiet", "q": "qos",
    "S": "core-spec", "s": "oversubscribe", "t": "time", "V": "version", "v": "verbose", "W": "wait",
    "w": "nodelist", "x": "exclude",
}
# options that never take a value (short forms by their long names)
FLAGS = {
    "hold", "overcommit", "quiet", "oversubscribe", "version", "verbose", "wait", "contiguous", "parsable",
    "test-only", "requeue", "no-requeue", "spread-job", "use-min-nodes", "ignore-pbs", "reboot", "help",
    "usage", "no-kill", "exclusive", "get-user-env", "export-file-less", "kill-on-invalid-dep-never",
}
# flags whose value is optional and must be attached with "=" (--exclusive=user, --no-kill=off)
OPTIONAL_ARG = {"exclusive", "get-user-env", "no-kill"}

# the blanks of a line that sbatch (C isspace) and the job_submit.lua hook (%s) skip; str.strip() would also
# skip FS, GS, RS, NEL and the Unicode spaces, which bash runs as (unknown) commands
BLANKS = " \t\r\v\f"

_SBATCH_RE = re.compile(r"^#SBATCH(?:\s+(.*))?$")


@frozen
class Directive:
    """One sbatch option: canonical long name, value (None for flags), where it came from."""

    option: str
    value: str | None
    line: int | None = None      # 1-based line in the script; None for command-line options
    raw: str = ""


@frozen
class JobScript:
    """A parsed batch script. `block_end` is the 0-based index of the first command line (sbatch's stop)."""

    text: str
    lines: tuple[str, ...]
    shebang: str | None
    directives: tuple[Directive, ...]
    block_end: int
    warnings: tuple[str, ...] = field(default=())

    def option(self, name: str, cli: tuple[Directive, ...] = ()) -> str | None:
        """Last value of an option (long name, or a short letter); command-line options win over the script."""
        name = SHORT.get(name, name) if len(name) == 1 else name
        value = None
        for d in (*self.directives, *cli):
            if d.option == name:
                value = d.value if d.value is not None else ""
        return value

    def options(self, cli: tuple[Directive, ...] = ()) -> dict[str, str | None]:
        """All options with their effective values (later wins; command line after the script)."""
        out: dict[str, str | None] = {}
        for d in (*self.directives, *cli):
            out[d.option] = d.value
        return out

    @property
    def interpreter(self) -> str | None:
        """Program name of the shebang (`bash` for `#!/usr/bin/env bash -l`)."""
        if not self.shebang:
            return None
        parts = self.shebang[2:].strip().split()
        if not parts:
            return None
        prog = parts[0].rsplit("/", 1)[-1]
        if prog == "env" and len(parts) > 1:
            rest = [p for p in parts[1:] if not p.startswith("-")]
            prog = rest[0].rsplit("/", 1)[-1] if rest else "env"
        return prog


_TOKEN = re.compile(r"""(?:[^\s"'\\]|\\.|"[^"]*"|'[^']*')+""")
_UNQUOTE = re.compile(r"""\\(.)|"([^"]*)"|'([^']*)'""")


def _split(text: str) -> list[str]:
    """Split like a shell (quotes, backslashes, a trailing # comment) in linear time; never fails
    (an unbalanced quote is dropped)."""
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith("#"):
            break
        out.append(_UNQUOTE.sub(lambda u: next(g for g in u.groups() if g is not None), tok))
    return out


def _options(tokens: list[str], line: int | None, raw: str, warnings: list[str]) -> tuple[list[Directive], list[str]]:
    """Turn sbatch argument tokens into Directives; returns (directives, positional leftovers)."""
    out: list[Directive] = []
    rest: list[str] = []
    where = f"line {line}: " if line else ""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok.startswith("--") and len(tok) > 2:
            name, eq, value = tok[2:].partition("=")
            if eq:
                out.append(Directive(name, value, line, raw))
            elif name in FLAGS or name in OPTIONAL_ARG:
                out.append(Directive(name, None, line, raw))
            elif i < len(tokens):
                out.append(Directive(name, tokens[i], line, raw))
                i += 1
            else:
                warnings.append(f"{where}--{name} needs a value")
        elif tok.startswith("-") and len(tok) > 1 and tok != "-":
            letter = tok[1]
            name = SHORT.get(letter)
            if name is None:
                warnings.append(f"{where}unknown option -{letter}")
                continue
            if name in FLAGS:
                out.append(Directive(name, None, line, raw))
                # grouped flags like -Hv
                for extra in tok[2:]:
                    if SHORT.get(extra) in FLAGS:
                        out.append(Directive(SHORT[extra], None, line, raw))
            elif len(tok) > 2:
                value = tok[2:]
                out.append(Directive(name, value[1:] if value.startswith("=") else value, line, raw))
            elif i < len(tokens):
                out.append(Directive(name, tokens[i], line, raw))
                i += 1
            else:
                warnings.append(f"{where}-{letter} needs a value")
        else:
            rest.append(tok)
    return out, rest


def parse_sbatch_args(args: list[str] | tuple[str, ...]) -> tuple[Directive, ...]:
    """sbatch command-line options as Directives (positional arguments are ignored)."""
    directives, _ = _options(list(args), None, " ".join(args), [])
    return tuple(directives)


def script_lines(text: str) -> list[str]:
    """The lines of a script as bash reads them, each with its "\\n" (the last one may have none): split at
    "\\n" only. CR, VT, FF, FS, GS, RS, NEL, U+2028 and U+2029 are ordinary characters inside a line (a comment
    goes on past them), where str.splitlines() would start a new line. "".join(script_lines(t)) == t."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def parse_jobscript(text: str) -> JobScript:
    """Parse a batch script (lines split as bash splits them). Never raises; problems are listed in `warnings`."""
    lines = tuple(line.removesuffix("\n") for line in script_lines(text))
    warnings: list[str] = []
    shebang = lines[0] if lines and lines[0].startswith("#!") else None
    if shebang is None:
        warnings.append("no #! line: sbatch requires the script to start with one")
    directives: list[Directive] = []
    block_end = len(lines)
    in_block = True
    for idx, line in enumerate(lines):
        n = idx + 1
        stripped = line.strip(BLANKS)
        if in_block and not (stripped == "" or stripped.startswith("#")):
            in_block = False
            block_end = idx
        m = _SBATCH_RE.match(line)
        if m:
            if in_block:
                found, rest = _options(_split(m.group(1) or ""), n, line, warnings)
                directives.extend(found)
                if rest:
                    warnings.append(f"line {n}: ignored text in #SBATCH line: {' '.join(rest)[:80]}")
            else:
                warnings.append(f"line {n}: #SBATCH after the first command is ignored by sbatch")
            continue
    return JobScript(text=text, lines=lines, shebang=shebang, directives=tuple(directives),
                     block_end=block_end, warnings=tuple(warnings))
