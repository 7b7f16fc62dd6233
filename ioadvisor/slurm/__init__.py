"""Slurm job scripts: parse (pure), rewrite (pure), submit through the command-line tools."""
from .jobscript import Directive, JobScript, parse_jobscript, parse_sbatch_args

__all__ = ["Directive", "JobScript", "parse_jobscript", "parse_sbatch_args"]
