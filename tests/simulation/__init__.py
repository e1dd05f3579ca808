"""Deterministic simulation of the money logic (issue 28): see ``world`` and ``sim``."""
