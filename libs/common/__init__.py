"""Shared pieces of the Sluice suite: settings, contracts, topics, errors, wiring."""
