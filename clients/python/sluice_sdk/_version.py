"""The package's version: the wheel's metadata reads it from here (``[tool.hatch.version]``)."""

__version__ = "0.1.0"
