"""`ioadvise docs build`: the center's I/O guide (HTML and Markdown, English and Japanese) generated from the
knowledge base and the center configurations."""
from .build import BuildResult, build_site

__all__ = ["BuildResult", "build_site"]
