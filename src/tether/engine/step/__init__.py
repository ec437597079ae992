"""The agent step (seed 004): a node whose model calls tools in a loop until it moves on.

:mod:`.agent_step` arrives at (or resumes) a step; :mod:`.loop` runs its model-and-tools rounds;
:mod:`.tools` offers and dispatches tools; :mod:`.children` and :mod:`.batch` run nested steps;
:mod:`.view` and :mod:`.context` are what its hooks see; :mod:`.memory` holds its namespaces.
Imports only :mod:`tether.engine.core`.
"""
