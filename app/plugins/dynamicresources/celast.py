"""A CEL parser for device selectors: source text to a small syntax tree with positions.

The Rust interpreter berth evaluates selectors with exposes no syntax tree, yet cel-go's type
checker and cost tracker work on one. This parser builds it for expressions the interpreter has
already parsed (its syntax errors stay the reported ones), following CEL's grammar
(``cel-spec/doc/langdef.md``) and placing every node where cel-go's parser does, so that error
positions (``<input>:line:column``) match: an operator at its token, a field selection at its
dot, a call at its opening parenthesis, an index at its bracket. Macros (``has``, ``all``,
``exists``, ``exists_one``, ``map``, ``filter``, ``cel.bind``) become :class:`Comprehension`,
:class:`Has` and :class:`Bind` nodes instead of cel-go's expanded folds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


class CelSyntaxError(Exception):
    """The text is not CEL this parser understands."""


@dataclass(slots=True)
class Node:
    """A syntax tree node; ``offset`` is its position in the source (cel-go's location)."""

    offset: int


@dataclass(slots=True)
class Literal(Node):
    """A constant: ``kind`` is its CEL type name (int, uint, double, string, bytes, bool, null_type)."""

    kind: str
    value: Any


@dataclass(slots=True)
class Ident(Node):
    """A name: a variable, a comprehension variable or a type name."""

    name: str


@dataclass(slots=True)
class Select(Node):
    """``operand.name``."""

    operand: Node
    name: str


@dataclass(slots=True)
class Has(Node):
    """``has(operand.name)``."""

    operand: Node
    name: str


@dataclass(slots=True)
class Call(Node):
    """A function or operator call; ``target`` is the receiver of a member call.

    Operators use cel-go's names: ``_+_``, ``!_``, ``_[_]``, ``_?_:_``, ``@in``, ...
    """

    function: str
    args: list[Node]
    target: Node | None = None


@dataclass(slots=True)
class ListLiteral(Node):
    """``[e, ...]``."""

    elements: list[Node]


@dataclass(slots=True)
class MapLiteral(Node):
    """``{k: v, ...}``."""

    entries: list[tuple[Node, Node]]


@dataclass(slots=True)
class Comprehension(Node):
    """``range.macro(var, body)`` (``map`` may have a filter: ``range.map(var, filter, body)``)."""

    macro: str
    range: Node
    variable: str
    body: Node
    filter: Node | None = None
    call_offset: int = 0


@dataclass(slots=True)
class Bind(Node):
    """``cel.bind(variable, value, body)``."""

    variable: str
    value: Node
    body: Node


@dataclass(slots=True)
class _Token:
    kind: str  # "int", "uint", "double", "string", "bytes", "ident", "op", "eof"
    text: str
    offset: int
    value: Any = None


_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",", "[", "]", "(", ")", "{", "}")  # fmt: skip
_NUMBER_RE = re.compile(
    r"0[xX][0-9a-fA-F]+[uU]?|[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+[uU]?"
)
_IDENT_RE = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip
_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"})  # fmt: skip
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


def _unescape(body: str, raw: bool, is_bytes: bool) -> str | bytes:
    if raw:
        return body.encode() if is_bytes else body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt in "xX":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        elif nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U":
            out.append(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        elif nxt in "0123":
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            raise CelSyntaxError(f"invalid escape at {i}")
    text = "".join(out)
    return text.encode("latin-1") if is_bytes and all(ord(c) < 256 for c in text) else text


def _tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(source)
    while i < n:
        ch = source[i]
        if ch in " \t\n\r\f":
            i += 1
            continue
        if source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        prefix = re.match(r"[rRbB]{1,2}(?=['\"])", source[i:])
        if ch in "'\"" or prefix:
            start = i
            flags = prefix.group(0).lower() if prefix else ""
            i += len(flags)
            quote = source[i : i + 3] if source[i : i + 3] in ("'''", '"""') else source[i]
            i += len(quote)
            body_start = i
            while True:
                if i >= n:
                    raise CelSyntaxError("unterminated string")
                if source.startswith(quote, i):
                    break
                if source[i] == "\\" and "r" not in flags:
                    i += 2
                    continue
                if source[i] == "\n" and len(quote) == 1:
                    raise CelSyntaxError("newline in string")
                i += 1
            body = source[body_start:i]
            i += len(quote)
            is_bytes = "b" in flags
            value = _unescape(body, "r" in flags, is_bytes)
            tokens.append(_Token("bytes" if is_bytes else "string", source[start:i], start, value))
            continue
        if ch.isdigit() or (ch == "." and i + 1 < n and source[i + 1].isdigit()):
            m = _NUMBER_RE.match(source, i)
            assert m is not None
            text = m.group(0)
            if text[-1] in "uU":
                tokens.append(_Token("uint", text, i, int(text[:-1], 0)))
            elif text.lower().startswith("0x"):
                tokens.append(_Token("int", text, i, int(text, 16)))
            elif any(c in text for c in ".eE"):
                tokens.append(_Token("double", text, i, float(text)))
            else:
                tokens.append(_Token("int", text, i, int(text)))
            i = m.end()
            continue
        m = _IDENT_RE.match(source, i)
        if m is not None:
            tokens.append(_Token("ident", m.group(0), i))
            i = m.end()
            continue
        for op in _OPERATORS:
            if source.startswith(op, i):
                tokens.append(_Token("op", op, i))
                i += len(op)
                break
        else:
            raise CelSyntaxError(f"unexpected character {ch!r}")
    tokens.append(_Token("eof", "", n))
    return tokens


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = _tokenize(source)
        self.pos = 0

    def peek(self, text: str | None = None) -> bool:
        tok = self.tokens[self.pos]
        return tok.kind == "op" and tok.text == text if text is not None else False

    def take(self) -> _Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def expect(self, text: str) -> _Token:
        tok = self.take()
        if tok.kind != "op" or tok.text != text:
            raise CelSyntaxError(f"expected {text!r} at {tok.offset}")
        return tok

    def parse(self) -> Node:
        node = self.expr()
        if self.tokens[self.pos].kind != "eof":
            raise CelSyntaxError("trailing input")
        return node

    def expr(self) -> Node:
        cond = self.binary(0)
        if self.peek("?"):
            op = self.take()
            then = self.binary(0)
            self.expect(":")
            otherwise = self.expr()
            return Call(op.offset, "_?_:_", [cond, then, otherwise])
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",),
        ("&&",),
        ("==", "!=", "<", "<=", ">", ">=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        ops = self._LEVELS[level]
        while True:
            tok = self.tokens[self.pos]
            if not (tok.text in ops and tok.kind in ("op", "ident")):
                return left
            self.pos += 1
            right = self.binary(level + 1)
            name = "@in" if tok.text == "in" else f"_{tok.text}_"
            # cel-go balances chains of && and ||, which only moves no position: keep it left-deep.
            left = Call(tok.offset, name, [left, right])

    def unary(self) -> Node:
        tok = self.tokens[self.pos]
        if tok.kind == "op" and tok.text in ("!", "-"):
            ops: list[_Token] = []
            while self.tokens[self.pos].kind == "op" and self.tokens[self.pos].text == tok.text:
                ops.append(self.take())
            if tok.text == "-" and self.tokens[self.pos].kind in ("int", "double") and len(ops) % 2:
                # A negative literal is one constant in cel-go (so -9223372036854775808 is valid).
                lit = self.take()
                node: Node = Literal(ops[-1].offset, lit.kind, -lit.value)
                node = self.member_suffix(node)
                ops = ops[:-1]
            else:
                node = self.member()
            # `!!x` and `--x` cancel pairwise in cel-go's parser.
            if len(ops) % 2:
                node = Call(ops[0].offset, "!_" if tok.text == "!" else "-_", [node])
            return node
        return self.member()

    def member(self) -> Node:
        return self.member_suffix(self.primary())

    def member_suffix(self, node: Node) -> Node:
        while True:
            if self.peek("."):
                dot = self.take()
                name_tok = self.take()
                if name_tok.kind != "ident":
                    raise CelSyntaxError(f"expected a field name at {name_tok.offset}")
                if self.peek("("):
                    open_tok = self.take()
                    args = self.arguments()
                    node = self.member_call(node, name_tok.text, args, open_tok.offset)
                else:
                    node = Select(dot.offset, node, name_tok.text)
            elif self.peek("["):
                open_tok = self.take()
                index = self.expr()
                self.expect("]")
                node = Call(open_tok.offset, "_[_]", [node, index])
            else:
                return node

    def member_call(self, target: Node, name: str, args: list[Node], offset: int) -> Node:
        if name in _MACROS and len(args) in (2, 3) and isinstance(args[0], Ident):
            if len(args) == 3 and name != "map":
                raise CelSyntaxError(f"{name} takes two arguments")
            body = args[-1]
            filt = args[1] if len(args) == 3 else None
            # cel-go reports comprehension errors at the receiver's position (its fold's id).
            return Comprehension(target.offset, name, target, args[0].name, body, filt, offset)
        if name == "bind" and isinstance(target, Ident) and target.name == "cel" and len(args) == 3:
            if not isinstance(args[0], Ident):
                raise CelSyntaxError("cel.bind needs a variable name")
            return Bind(offset, args[0].name, args[1], args[2])
        return Call(offset, name, args, target)

    def arguments(self) -> list[Node]:
        args: list[Node] = []
        if self.peek(")"):
            self.take()
            return args
        while True:
            args.append(self.expr())
            if self.peek(","):
                self.take()
                if self.peek(")"):
                    self.take()
                    return args
                continue
            self.expect(")")
            return args

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind in ("int", "uint", "double", "string", "bytes"):
            return Literal(tok.offset, tok.kind, tok.value)
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return Literal(tok.offset, "bool", tok.text == "true")
            if tok.text == "null":
                return Literal(tok.offset, "null_type", None)
            if tok.text in _RESERVED or tok.text == "in":
                raise CelSyntaxError(f"reserved identifier {tok.text}")
            if self.peek("("):
                open_tok = self.take()
                args = self.arguments()
                if tok.text == "has" and len(args) == 1 and isinstance(args[0], Select):
                    return Has(open_tok.offset, args[0].operand, args[0].name)
                return Call(open_tok.offset, tok.text, args)
            return Ident(tok.offset, tok.text)
        if tok.kind == "op":
            if tok.text == "(":
                inner = self.expr()
                self.expect(")")
                return inner
            if tok.text == "[":
                elements: list[Node] = []
                while not self.peek("]"):
                    elements.append(self.expr())
                    if not self.peek(","):
                        break
                    self.take()
                self.expect("]")
                return ListLiteral(tok.offset, elements)
            if tok.text == "{":
                entries: list[tuple[Node, Node]] = []
                while not self.peek("}"):
                    key = self.expr()
                    self.expect(":")
                    entries.append((key, self.expr()))
                    if not self.peek(","):
                        break
                    self.take()
                self.expect("}")
                return MapLiteral(tok.offset, entries)
            if tok.text == ".":
                name_tok = self.take()
                if name_tok.kind != "ident":
                    raise CelSyntaxError("expected an identifier after a leading dot")
                return Ident(name_tok.offset, name_tok.text)
        raise CelSyntaxError(f"unexpected {tok.text!r} at {tok.offset}")


def parse(source: str) -> Node:
    """The syntax tree of ``source``; CelSyntaxError if it is not CEL this parser understands."""
    try:
        return _Parser(source).parse()
    except (ValueError, IndexError, OverflowError) as err:
        raise CelSyntaxError(str(err)) from None


@dataclass(slots=True)
class SourceLines:
    """Maps offsets to cel-go's ``line:column`` and snippets (``common.Source``)."""

    source: str
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = [0] + [i + 1 for i, ch in enumerate(self.source) if ch == "\n"]

    def display(self, offset: int, message: str) -> str:
        """``ERROR: <input>:L:C: message`` with the line and a caret, as ``Error.ToDisplayString``."""
        line = max(i for i, start in enumerate(self.starts) if start <= offset)
        column = offset - self.starts[line]
        end = self.source.find("\n", self.starts[line])
        snippet = self.source[self.starts[line] : end if end >= 0 else len(self.source)]
        text = f"ERROR: <input>:{line + 1}:{column + 1}: {message}"
        if len(snippet) <= 16384:
            snippet = snippet.replace("\t", " ")
            dots = "".join("\uff0e" if len(c.encode()) > 1 else "." for c in snippet[:column])
            caret = "\uff3e" if column < len(snippet) and len(snippet[column].encode()) > 1 else "^"
            text += f"\n | {snippet}\n | {dots}{caret}"
        return text
