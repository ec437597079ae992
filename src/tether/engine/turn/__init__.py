"""The turn (seed 003): Load, Ingest, Understand, Decide, Run, Speak, Settle, Return.

:mod:`.turn` is the pipeline; each phase is a module (:mod:`.ingest`, :mod:`.understand`,
:mod:`.route` for Decide, :mod:`.run_phase`, :mod:`.speak`, :mod:`.settle`,
:mod:`.return_phase`), with compaction, continuation of an unfinished turn, handed-off sessions,
flow drift and wakes beside them. The top of the engine: it may import every other package.
"""
