"""A center's Darshan archive: every log diagnosed once, kept in the KB, and ranked by the I/O time at stake.

- `scan.scan(roots, kb, settings, workers=...)`: find the logs under the roots, skip those seen before (by the
  sha256 of their bytes; a path with unchanged size and mtime is not even read), diagnose the rest in a pool of
  long-lived worker processes (`pool.WorkerPool`; a log that crashes the Darshan library costs one worker
  restart and is recorded as failed), and add per-job facts, findings and production runs to the KB in
  transactions (`store.add_results`).
- `worker`: what a worker does with one log, with the same rules and settings as `ioadvise diagnose`.
"""
