"""Deterministic simulation of the money logic (docs/testing/simulation.md): see ``world`` and ``sim``."""
