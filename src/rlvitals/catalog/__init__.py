"""Facts about metrics, and nothing else: the catalog (``catalog.toml``), how a logged key resolves to a
canonical metric across frameworks and versions (:mod:`.aliases`), and the lookup behind ``explain``; and how
the package's own TOML files are read, parsed once per content (:mod:`.bundled`)."""

from __future__ import annotations

from .aliases import EARLIEST, LATEST, Context, KeyResolver, Resolved, Version, parse_version
from .bundled import bundled_toml, cache_root
from .catalog import AlgorithmSignature, Alias, Catalog, FrameworkSignature, Layer, Metric, load_catalog, parse_catalog
from .lookup import explain, list_metrics, lookup, metric_info
from .views import VALIDATION, Views, load_views

__all__ = [
    "EARLIEST", "LATEST", "Alias", "AlgorithmSignature", "Catalog", "Context", "FrameworkSignature", "KeyResolver",
    "Layer", "Metric", "Resolved", "Version", "bundled_toml", "cache_root", "explain", "list_metrics", "load_catalog",
    "lookup", "metric_info", "parse_catalog", "parse_version", "VALIDATION", "Views", "load_views",
]
