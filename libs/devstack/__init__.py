"""Development and test stack: stores (configured, containers or embedded) and services.

Used by ``make run``, the test fixtures and ``make bench``. Not imported by any service.
"""
