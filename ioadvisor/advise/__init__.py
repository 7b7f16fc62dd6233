"""The advice engine: candidate settings for a workload, predicted, ranked, explained, with commands.

`advise(workload, kb, center)` returns an `Advice`. Candidates that the measured runs can predict are compared
through the fitted model's posterior draws: an option is kept out only when the best one beats it by at least
`MIN_GAIN` with probability `CONFIDENCE` or more; among the options the data cannot tell apart, published
comparisons decide, then the cheapest wins (fewest OSTs, no staging, fewest changes). Where a system has no
measured numbers the ranking rests on its published comparisons and on the center configuration alone, and the
prediction is left empty.

The modules: `candidates` (the settings weighed for a workload, each as the model's input), `policy` (the one
decision: which of them to advise, and on what grounds), `engine` (`advise`: the candidates predicted, bounded,
decided and explained), `explain` (the decision in words, warnings and commands), `fits` (the system's fits
and evidence from the KB), `validate` (the advice checked against held-out runs).
"""
from __future__ import annotations

from .candidates import STRIPE_STEPS, baseline_config, candidate_point, check_workload, default_filesystem, quota_bytes
from .engine import advise
from .policy import CONFIDENCE, MIN_GAIN, TOLERANCE, Decision, choose, decide, gain_probability

__all__ = ["advise", "baseline_config", "candidate_point", "check_workload", "choose", "CONFIDENCE", "decide", "Decision",
           "default_filesystem", "gain_probability", "MIN_GAIN", "quota_bytes", "STRIPE_STEPS", "TOLERANCE"]
