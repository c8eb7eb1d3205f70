"""Target: a target kind plus option values, parsed from strings like ``"llvm -mcpu=znver3"``."""

from __future__ import annotations

import difflib
import functools
import shlex
import warnings
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, distribution
from typing import Any

from tensorforge.errors import TargetError
from tensorforge.target.kind import TargetKind

__all__ = ["Target"]


class Target:
    """An immutable compilation target: a :class:`TargetKind` and explicit option values.

    ``Target.parse("llvm -mcpu=znver3 -num-threads=2")``, ``Target.parse("amd/zen3")`` (a tag,
    optionally followed by overriding options) or ``Target("llvm", {"num-threads": 2})``.
    ``target.options`` fills the unset options with defaults and, for kinds that detect the
    host, with host values (unless the string names a ``-mtriple``, i.e. a cross target).
    ``str(target)`` parses back to an equal target.
    """

    __slots__ = ("kind", "tag", "_explicit")

    kind: TargetKind
    tag: str | None
    _explicit: dict[str, Any]

    def __init__(
        self,
        kind: TargetKind | str,
        options: Mapping[str, Any] | None = None,
        *,
        tag: str | None = None,
    ) -> None:
        if isinstance(kind, str):
            kind = _lookup_kind(kind)
        explicit = {}
        for name, value in (options or {}).items():
            key = _option_name(kind, name)
            explicit[key] = kind.options[key].convert(value, key)
        ordered = {k: explicit[k] for k in kind.options if k in explicit}
        _validate(kind, ordered)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "tag", tag)
        object.__setattr__(self, "_explicit", ordered)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Target is immutable; use with_options()")

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Target:
        """Parse ``"KIND_OR_TAG [-option=value ...]"``."""
        if not isinstance(text, str):
            raise TargetError(f"a target must be a string or a Target, got {type(text).__name__}")
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise TargetError(f"cannot parse target {text!r}: {exc}") from None
        if not words:
            raise TargetError("empty target string; " + _installed_summary())
        head, rest = words[0], words[1:]
        options: dict[str, Any] = {}
        tag = None
        from tensorforge.plugins import get_registry

        registry = get_registry()
        if head in registry.targets:
            kind = registry.targets[head]
        elif head in registry.target_tags:
            tag = head
            base = cls.parse(registry.target_tags[head].config)
            kind, options = base.kind, dict(base._explicit)
        else:
            kind = _lookup_kind(head)  # raises with a helpful message
        for word in rest:
            if not word.startswith("-") or word.strip("-") == "":
                raise TargetError(
                    f"in target {text!r}: expected -option=value, got {word!r}; "
                    + _options_summary(kind)
                )
            name, eq, value = word.lstrip("-").partition("=")
            key = _option_name(kind, name)
            if not eq:
                if kind.options[key].type is not bool:
                    raise TargetError(
                        f"in target {text!r}: option -{key} needs a value (-{key}=...)")
                value = "true"
            options[key] = value
        return cls(kind, options, tag=tag)

    @classmethod
    def coerce(cls, target: Target | str) -> Target:
        """Accept a Target or a target string."""
        return target if isinstance(target, Target) else cls.parse(target)

    def with_options(self, **options: Any) -> Target:
        """A copy with some options changed (``num_threads=4`` works for ``-num-threads``)."""
        return Target(self.kind, {**self._explicit, **options})

    # -- views ------------------------------------------------------------------------------
    @property
    def explicit(self) -> dict[str, Any]:
        """The options the target string gave."""
        return dict(self._explicit)

    @property
    def options(self) -> dict[str, Any]:
        """All options: explicit values, else host-detected values, else defaults."""
        resolved = self.kind.defaults()
        if self.kind.detect_host and "mtriple" not in self._explicit:
            resolved.update(_detect_host(self.kind, tuple(self._explicit.items())))
        resolved.update(self._explicit)
        return resolved

    @property
    def device_type(self) -> str:
        return self.kind.device_type

    @property
    def keys(self) -> tuple[str, ...]:
        return self.kind.keys

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.name, "tag": self.tag, "target": str(self),
                "explicit": self.explicit, "options": self.options}

    def __str__(self) -> str:
        parts = [self.kind.name]
        for key, value in self._explicit.items():
            parts.append(shlex.quote(f"-{key}={self.kind.options[key].format(value)}"))
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Target.parse(other)
            except TargetError:
                return False
        if not isinstance(other, Target):
            return NotImplemented
        return self.kind.name == other.kind.name and self._explicit == other._explicit

    def __hash__(self) -> int:
        return hash((self.kind.name, tuple(sorted(self._explicit.items()))))


@functools.lru_cache(maxsize=64)
def _detect_host_cached(kind: TargetKind, explicit: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    detect = kind.load_detect_host()
    found = dict(detect(dict(explicit))) if detect else {}
    return {k: kind.options[k].convert(v, k) for k, v in found.items()
            if k in kind.options and v is not None}


def _detect_host(kind: TargetKind, explicit: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    try:
        return _detect_host_cached(kind, explicit)
    except Exception as exc:  # a broken probe must not make the target unusable
        warnings.warn(f"host detection for target {kind.name!r} failed ({type(exc).__name__}: "
                      f"{exc}); using the option defaults", RuntimeWarning, stacklevel=3)
        return {}


def _validate(kind: TargetKind, explicit: dict[str, Any]) -> None:
    """The kind's own check of the options together (see `TargetKind.validate`)."""
    if not kind.validate or not explicit:
        return
    try:
        check = kind.load_validate()
        if check is not None:
            check(dict(explicit))
    except TargetError:
        raise
    except Exception as exc:  # a broken validator must not surface as an internal error
        raise TargetError(f"checking the options of target {kind.name!r} failed "
                          f"({type(exc).__name__}: {exc}); options: {explicit}") from exc


def _option_name(kind: TargetKind, name: str) -> str:
    for candidate in (name, name.replace("_", "-")):
        if candidate in kind.options:
            return candidate
    hint = difflib.get_close_matches(name, list(kind.options), n=1)
    did_you_mean = f" Did you mean -{hint[0]}?" if hint else ""
    raise TargetError(f"unknown option -{name} for target {kind.name!r}.{did_you_mean} "
                      + _options_summary(kind))


def _options_summary(kind: TargetKind) -> str:
    if not kind.options:
        return f"Target {kind.name!r} takes no options."
    opts = ", ".join(f"-{k} ({o.describe()})" for k, o in kind.options.items())
    return f"Options of {kind.name!r}: {opts}."


def _lookup_kind(name: str) -> TargetKind:
    from tensorforge.plugins import get_registry
    from tensorforge.plugins.known import TAG_VENDORS, TARGET_DISTRIBUTIONS, install_hint

    registry = get_registry()
    if name in registry.targets:
        return registry.targets[name]
    kind_name = TAG_VENDORS.get(name.split("/")[0]) if "/" in name else name
    what = f"target tag {name!r}" if "/" in name else f"target {name!r}"
    if kind_name in TARGET_DISTRIBUTIONS and kind_name not in registry.targets:
        dist = TARGET_DISTRIBUTIONS[kind_name][0]
        msg = f"unknown {what}: target kind {kind_name!r} comes from {dist}, "
        if _is_installed(dist):
            msg += f"which is installed but its plugin is not loaded ({_why_not_loaded(dist)})."
        else:
            msg += f"which is not installed; {install_hint(TARGET_DISTRIBUTIONS[kind_name])}."
    else:
        candidates = list(registry.targets) + list(registry.target_tags)
        hint = difflib.get_close_matches(name, candidates, n=1)
        msg = f"unknown {what}." + (f" Did you mean {hint[0]!r}?" if hint else "")
    raise TargetError(f"{msg} {_installed_summary()}")


def _is_installed(dist: str) -> bool:
    try:
        distribution(dist)
    except PackageNotFoundError:
        return False
    return True


def _why_not_loaded(dist: str) -> str:
    from tensorforge.plugins import get_registry
    from tensorforge.plugins.loader import _norm

    registry = get_registry()
    for info in registry.plugins:
        if info.distribution and _norm(info.distribution) == _norm(dist) and info.error:
            return f"{info.status}: {info.error}"
    if not registry.entry_points_loaded:
        return ("installed plugins are not loaded in this process; under pytest register them "
                "with the `plugins` fixture or use `installed_plugins`")
    return "see `tforge plugins`"


def _installed_summary() -> str:
    from tensorforge.plugins import get_registry

    registry = get_registry()
    kinds = ", ".join(sorted(registry.targets)) or "none"
    tags = ", ".join(sorted(registry.target_tags)) or "none"
    return f"Installed target kinds: {kinds}. Tags: {tags}."
