"""The diagnosis config (``--config FILE``): enable/disable checks, override thresholds, cap severity.

```toml
[checks.grad_norm_spike]
ratio = 8.0            # any default parameter of the check
max_status = "warn"    # never report worse than this
[checks.mfu_low]
max_status = "note"    # "note": shown with its advice, never part of the verdict
[checks.nan_inf]
enabled = false
```
Everything is validated when the file is read; a typo names the file, the key and what
would have been valid. Settings built in code (``CheckSettings``, ``DiagnoseConfig``) are
validated when they are constructed, with the same words.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..errors import ConfigError
from ..words import Words
from ._base import Status
from .registry import load_checks

#: what a check may be capped at: "note" keeps its words and advice but takes it out of the verdict
MAX_STATUSES: tuple[Status, ...] = ("ok", "note", "warn", "fail")


@dataclass(frozen=True)
class CheckSettings:
    """One check's settings; ``max_status`` caps its severity (the words still say what was found).

    Example:
        >>> CheckSettings(max_status="note").max_status
        'note'
    """

    enabled: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)
    max_status: Status | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ConfigError(Words(f"CheckSettings(enabled={self.enabled!r}): expected true or false",
                                    f"CheckSettings(enabled={self.enabled!r})：应为 true 或 false"))
        if self.max_status is not None and self.max_status not in MAX_STATUSES:
            raise ConfigError(Words(f"max_status = {self.max_status!r}: expected one of {', '.join(MAX_STATUSES)}",
                                    f"max_status = {self.max_status!r}：应为 {'、'.join(MAX_STATUSES)} 之一"))


@dataclass(frozen=True)
class DiagnoseConfig:
    """The settings of the checks named in it (the others run with their defaults).

    Example:
        >>> DiagnoseConfig({"mfu_low": CheckSettings(max_status="note")}).for_check("mfu_low").max_status
        'note'
    """

    checks: Mapping[str, CheckSettings] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.checks:
            return
        known = {c.id: c for c in load_checks()}
        for cid, settings in self.checks.items():
            if cid not in known:
                hint = _hint(cid, list(known))
                raise ConfigError(Words(f"DiagnoseConfig: unknown check {cid!r}{hint}; "
                                        "run 'rlvitals diagnose --list-checks' to see them",
                                        f"DiagnoseConfig：没有名为 {cid!r} 的检查{hint.zh}；"
                                        "运行 'rlvitals diagnose --list-checks' 可以查看全部检查"))
            if not isinstance(settings, CheckSettings):
                kind = type(settings).__name__
                raise ConfigError(Words(f"DiagnoseConfig: the settings of {cid!r} are a {kind}; "
                                        "expected CheckSettings(...)",
                                        f"DiagnoseConfig：{cid!r} 的设置是 {kind}，应为 CheckSettings(...)"))
            unknown = sorted(set(settings.params) - set(known[cid].params))
            if unknown:
                valid = ", ".join(known[cid].params) or "none"
                hint = _hint(unknown[0], list(known[cid].params))
                raise ConfigError(Words(f"DiagnoseConfig: check {cid!r} has no setting {unknown[0]!r}"
                                        f"{hint} (its parameters: {valid})",
                                        f"DiagnoseConfig：检查 {cid!r} 没有 {unknown[0]!r} 这项设置{hint.zh}"
                                        f"（它的参数：{'、'.join(known[cid].params) or '无'}）"))

    def for_check(self, check_id: str) -> CheckSettings:
        return self.checks.get(check_id, CheckSettings())

    def with_params(self, check_id: str, **params: Any) -> DiagnoseConfig:
        """This config with ``params`` set for ``check_id`` over what it had (a command-line option such
        as ``--target`` over the config file's value).

        Example:
            >>> DiagnoseConfig().with_params("entropy_ceiling", target=0.7).for_check("entropy_ceiling").params
            {'target': 0.7}
        """
        old = self.for_check(check_id)
        new = CheckSettings(old.enabled, {**old.params, **params}, old.max_status)
        return DiagnoseConfig({**self.checks, check_id: new})


def _hint(word: str, choices: list[str]) -> Words:
    close = difflib.get_close_matches(word, choices, n=1)
    return Words(f"; did you mean {close[0]!r}?", f"，是不是想写 {close[0]!r}？") if close else Words("", "")


def _settings(path: Path, cid: str, raw: Any, defaults: Mapping[str, Any]) -> CheckSettings:
    where = f"{path}: [checks.{cid}]"
    zh = f"{path} 的 [checks.{cid}]"
    if not isinstance(raw, dict):
        raise ConfigError(Words(f"{where} must be a table of settings", f"{zh} 应是一张设置表"))
    enabled, max_status, params = True, None, {}
    for key, value in raw.items():
        if key == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(Words(f"{where} enabled = {value!r}: expected true or false",
                                        f"{zh}：enabled = {value!r}，应为 true 或 false"))
            enabled = value
        elif key == "max_status":
            if value not in MAX_STATUSES:
                raise ConfigError(Words(f"{where} max_status = {value!r}: expected one of {', '.join(MAX_STATUSES)}",
                                        f"{zh}：max_status = {value!r}，应为 {'、'.join(MAX_STATUSES)} 之一"))
            max_status = value
        elif key in defaults:
            default = defaults[key]
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ConfigError(Words(f"{where} {key} = {value!r}: expected a number like {default!r}",
                                            f"{zh}：{key} = {value!r}，应为数值，例如 {default!r}"))
                if isinstance(default, float):
                    value = float(value)
                elif isinstance(value, float):  # an int setting (a window) must stay whole
                    if not value.is_integer():
                        raise ConfigError(Words(
                            f"{where} {key} = {value!r}: expected a whole number like {default!r}",
                            f"{zh}：{key} = {value!r}，应为整数，例如 {default!r}"))
                    value = int(value)
            params[key] = value
        else:
            valid = ["enabled", "max_status", *defaults]
            hint = _hint(key, valid)
            raise ConfigError(Words(f"{where} has no setting {key!r}{hint} (valid: {', '.join(valid)})",
                                    f"{zh} 没有 {key!r} 这项设置{hint.zh}（可用的有：{'、'.join(valid)}）"))
    return CheckSettings(enabled, params, max_status)


def load_config(path: str | Path) -> DiagnoseConfig:
    """Read and validate a diagnosis config file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(Words(f"{path}: no such config file", f"{path}：配置文件不存在")) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(Words(f"{path}: not valid TOML ({exc})", f"{path}：不是有效的 TOML（{exc}）")) from None
    unknown = sorted(set(data) - {"checks"})
    if unknown:
        raise ConfigError(Words(f"{path}: unknown section {unknown[0]!r}; the only section is [checks.<id>]",
                                f"{path}：未知的节 {unknown[0]!r}；只能有 [checks.<id>] 这一节"))
    known = {c.id: c for c in load_checks()}
    checks = {}
    for cid, raw in data.get("checks", {}).items():
        if cid not in known:
            hint = _hint(cid, list(known))
            raise ConfigError(Words(f"{path}: unknown check {cid!r}{hint}; "
                                    "run 'rlvitals diagnose --list-checks' to see them",
                                    f"{path}：没有名为 {cid!r} 的检查{hint.zh}；"
                                    "运行 'rlvitals diagnose --list-checks' 可以查看全部检查"))
        checks[cid] = _settings(path, cid, raw, known[cid].params)
    return DiagnoseConfig(checks)
