"""The site's message catalogues (i18n/<lang>.toml), one per language."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError

LANGS = ("en", "ja")


def catalogue(lang: str) -> dict[str, str]:
    """The message catalogue of one language (i18n/<lang>.toml)."""
    path = Path(__file__).resolve().parent / "i18n" / f"{lang}.toml"
    if not path.is_file():
        raise UsageError(f"no message catalogue for language {lang!r} (have: {', '.join(LANGS)})")
    with path.open("rb") as f:
        return {k: str(v) for k, v in tomllib.load(f).items()}


def translator(cat: dict[str, str]) -> Callable[..., str]:
    """`t(key, **fields)`: the catalogue's text for `key`, with the fields filled in."""
    def t(key: str, **kw: Any) -> str:
        return cat[key].format(**kw) if kw else cat[key]
    return t
