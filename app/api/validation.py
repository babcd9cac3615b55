"""Field-error helpers in the style of apimachinery's ``field`` package, plus the name checks config needs.

kube-scheduler reports bad configuration as ``field.Error`` values whose text is
``<path>: <Type>: <value>: <detail>``. These helpers build :class:`FieldError` with the same wording so
berth's messages can be compared with kube-scheduler's line by line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from app.api.errors import FieldError

__all__ = [
    "ConfigErrors",
    "child",
    "duplicate",
    "forbidden",
    "format_duration",
    "go_value",
    "index",
    "invalid",
    "is_extended_resource_name",
    "label_key_errors",
    "label_value_errors",
    "not_supported",
    "parse_duration",
    "raise_errors",
    "required",
    "validate_label_name",
]


class ConfigErrors(FieldError):
    """Several field errors found in one pass, like kube-scheduler's aggregated validation error.

    ``path``/``message`` are those of the first error, so callers that only look at one error still get
    the most relevant one; ``errors`` holds all of them, and ``str()`` lists them all as Go does
    (``[a, b]``).
    """

    def __init__(self, errors: Sequence[FieldError]) -> None:
        first = errors[0]
        super().__init__(first.path, first.message)
        self.errors: list[FieldError] = list(errors)
        # ValueError's text is args[0]; show every error, as utilerrors.Aggregate does.
        self.args = ("[" + ", ".join(str(e) for e in self.errors) + "]",)


def raise_errors(errors: Sequence[FieldError]) -> None:
    """Raise nothing for an empty list, the error itself for one, :class:`ConfigErrors` for several."""
    if not errors:
        return
    if len(errors) == 1:
        raise errors[0]
    raise ConfigErrors(errors)


def index(path: str, i: int) -> str:
    """``path[i]``."""
    return f"{path}[{i}]"


def child(path: str, name: str) -> str:
    """``path.name`` (or just ``name`` at the root)."""
    return f"{path}.{name}" if path else name


def go_value(value: object) -> str:
    """Render a bad value as ``field.Error.ErrorBody`` does: strings quoted, numbers/bools bare, else JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _body(kind: str, detail: str) -> str:
    return f"{kind}: {detail}" if detail else kind


def invalid(path: str, value: object, detail: str) -> FieldError:
    """``field.Invalid``: ``Invalid value: <v>: <detail>``."""
    return FieldError(path, _body(f"Invalid value: {go_value(value)}", detail))


def required(path: str, detail: str = "") -> FieldError:
    """``field.Required``: ``Required value[: detail]``."""
    return FieldError(path, _body("Required value", detail))


def forbidden(path: str, detail: str) -> FieldError:
    """``field.Forbidden``: ``Forbidden: <detail>``."""
    return FieldError(path, _body("Forbidden", detail))


def duplicate(path: str, value: object) -> FieldError:
    """``field.Duplicate``: ``Duplicate value: <v>``."""
    return FieldError(path, f"Duplicate value: {go_value(value)}")


def not_supported(path: str, value: object, supported: Iterable[str]) -> FieldError:
    """``field.NotSupported``: ``Unsupported value: <v>: supported values: "a", "b"``."""
    values = ", ".join(json.dumps(s) for s in supported)
    return FieldError(path, _body(f"Unsupported value: {go_value(value)}", f"supported values: {values}"))


# --- names (k8s.io/apimachinery/pkg/api/validate/content) -------------------------------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE = re.compile(f"^{_LABEL_KEY_FMT}$")
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)


def _regex_error(msg: str, regex: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{regex}')"
    # Same concatenation as Go's RegexError, including its double space before "or".
    out = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            out += " or "
        out += f"'{example}', "
    return out + f"regex used for validation is '{regex}')"


def _dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 bytes")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def label_key_errors(value: str) -> list[str]:
    """``content.IsLabelKey`` (a.k.a. IsQualifiedName): the reasons ``value`` is not a label key."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in _dns1123_subdomain_errors(prefix))
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY_RE.match(name):
        errs.append(
            "name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """``content.IsLabelValue``: the reasons ``value`` is not a label value."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def validate_label_name(value: str, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelName``: one Invalid error per reason."""
    return [invalid(path, value, msg) for msg in label_key_errors(value)]


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a prefixed name outside ``kubernetes.io/`` and not ``requests.*``."""
    is_native = "/" not in name or "kubernetes.io/" in name
    if is_native or name.startswith("requests."):
        return False
    return not label_key_errors("requests." + name)


# --- Go durations (time.ParseDuration / Duration.String) -------------------------------------------------

_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9}
_UNIT_NS["h"] = 3600 * 10**9
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Parse a Go duration string (``"15s"``, ``"1m30s"``, ``"100ms"``, ``"0"``) into seconds.

    Raises ``ValueError`` with Go's wording when the text is not a duration.
    """
    orig = text
    sign = 1
    if text[:1] in "+-" and text:
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise ValueError(f"time: invalid duration {json.dumps(orig)}")
    total_ns = 0.0
    pos = 0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            num = re.match(r"(\d+\.?\d*|\.\d+)([^\d.]*)", text[pos:])
            if num and num.group(2):
                raise ValueError(
                    f"time: unknown unit {json.dumps(num.group(2))} in duration {json.dumps(orig)}"
                )
            if num:
                raise ValueError(f"time: missing unit in duration {json.dumps(orig)}")
            raise ValueError(f"time: invalid duration {json.dumps(orig)}")
        total_ns += float(m.group(1)) * _UNIT_NS[m.group(2)]
        pos = m.end()
    return sign * round(total_ns) / 1e9


def _frac(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if not rest:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{rest:0{digits}d}".rstrip("0")


def format_duration(seconds: float) -> str:
    """Format seconds as Go's ``time.Duration.String`` does: ``15s``, ``1m30s``, ``1h0m0s``, ``100ms``."""
    ns = round(seconds * 1e9)
    neg, u = ns < 0, abs(ns)
    if u == 0:
        return "0s"
    if u < 1_000:
        out = f"{u}ns"
    elif u < 1_000_000:
        out = _frac(u, 1_000) + "µs"
    elif u < 10**9:
        out = _frac(u, 1_000_000) + "ms"
    else:
        hours, rest = divmod(u, 3600 * 10**9)
        minutes, rest = divmod(rest, 60 * 10**9)
        out = _frac(rest, 10**9) + "s"
        if hours or minutes:
            out = f"{minutes}m" + out
        if hours:
            out = f"{hours}h" + out
    return "-" + out if neg else out
