"""The version, in one place: the package, the report footer and the build (pyproject.toml) read it here."""

__all__ = ["__version__"]

__version__ = "0.1.0"
