"""Diagnose a job from its Darshan log: derive what it did, check it against rules, say what to change."""
