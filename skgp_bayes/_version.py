"""The package version, importable from any layer without the package."""

__version__ = "0.1.0"
