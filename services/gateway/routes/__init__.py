"""Endpoint table: one entry per partner endpoint, shared by the direct and routed forms."""
