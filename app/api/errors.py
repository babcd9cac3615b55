"""The one error type for bad input: a field path and what is wrong with it."""

from __future__ import annotations


class FieldError(ValueError):
    """Bad input at a field path, e.g. ``spec.containers[0].resources.requests.cpu: ...``.

    Raised by object parsing and configuration loading alike, so every face can print
    ``<where>: <path>: <message>`` without knowing which layer failed.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    def under(self, prefix: str) -> FieldError:
        """Return the same error with ``prefix`` prepended to its path."""
        if not prefix:
            return self
        if not self.path:
            return FieldError(prefix, self.message)
        joiner = "" if self.path.startswith("[") else "."
        return FieldError(f"{prefix}{joiner}{self.path}", self.message)
