"""The version, in one place: the package, the report footer and the build (pyproject.toml) read it here."""

__version__ = "0.1.0"
