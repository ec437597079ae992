"""The graph runner (seed 000): one run's loop over its flow's nodes.

:mod:`.runner` resolves a node and loops; :mod:`.dispatch` runs one node by kind (collect,
reply, decide, action, router, wait, gate, agent); :mod:`.moves` applies what a node returns;
:mod:`.starts` starts runs; :mod:`.degrade` is what a failed node does to its run. Imports
:mod:`tether.engine.step` and :mod:`tether.engine.core`.
"""
