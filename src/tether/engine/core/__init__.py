"""The session document and the types every part of the engine shares.

The leaf of the engine: the stored session (:mod:`.session`), a turn's inputs, results, events and
mutable state (:mod:`.state`), the ports for time and ids, templates, and the journaled effects an
action or agent step records. It imports nothing else of the engine.
"""
