"""Every error rlvitals raises on purpose. One base class, shallow subclasses.

Messages name the place (file and line where there is one), the bad value, what was
expected, and the fix. A message is :class:`~rlvitals.words.Words` (English, with its Chinese), so that
``--lang zh`` can say it in Chinese; ``str(exc)`` is the English.
"""

from __future__ import annotations

from .words import in_lang

__all__ = ["CatalogError", "ConfigError", "EmptyInputError", "InputError", "MissingExtraError",
           "MissingInputError", "ModelUnavailableError", "ProbeError", "RlvitalsError", "SamplerError",
           "UnknownFormatError", "UnknownMetricError"]


class RlvitalsError(Exception):
    """Base class of every error rlvitals raises on purpose."""

    def text(self, lang: str = "en") -> str:
        """The message in ``lang`` (English where it has no Chinese)."""
        return in_lang(self.args[0], lang) if self.args else ""


class InputError(RlvitalsError):
    """A path given by the user cannot be read as a training log."""


class MissingInputError(InputError):
    """The path does not exist (yet: a watcher waits for it)."""


class UnknownFormatError(InputError):
    """No reader recognises the file or folder."""


class EmptyInputError(InputError):
    """The input was recognised but holds no metric at all."""


class CatalogError(RlvitalsError):
    """The metric catalog file is malformed (a bug in rlvitals, caught by its tests)."""


class UnknownMetricError(RlvitalsError):
    """A metric name is neither a canonical key nor an alias of one."""


class ConfigError(RlvitalsError):
    """A diagnosis config file (``--config``) is invalid."""


class MissingExtraError(RlvitalsError, ImportError):
    """An optional feature needs packages that are not installed; the message names the install command."""


class SamplerError(RlvitalsError):
    """The small model cannot be sampled as asked (a bad count, length or temperature)."""


class ModelUnavailableError(SamplerError, MissingExtraError):
    """The small model cannot be loaded: a package or the weights file is missing."""


class ProbeError(RlvitalsError):
    """A probe cannot run as asked: the model endpoint refuses or cannot be reached, or a budget is invalid."""
