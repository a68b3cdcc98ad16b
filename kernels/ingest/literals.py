"""Parse the archive's Python-repr profile strings without ever evaluating code.

The archive stores profiles as `repr()` of dicts (single quotes, True/None, sometimes
nan/inf). `ast.literal_eval` would reject nan and gives vague errors, so we walk the
syntax tree ourselves and accept only plain literals; anything else (a call, an
attribute, a name other than nan/inf, a comprehension) is refused with what it was.
The result is made JSON-safe (nan/inf become None, tuples lists, keys strings) so it
stores in PostgreSQL's jsonb.
"""
import ast
import math

MAX_LITERAL_CHARS = 5_000_000
MAX_DEPTH = 64
_FLOAT_NAMES = {"nan", "inf"}


class LiteralRejected(ValueError):
    pass


def parse_python_literal(text: str):
    """Return the JSON-safe value of a Python literal string, or raise LiteralRejected."""
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralRejected(f"literal is {len(text)} characters, over the {MAX_LITERAL_CHARS} limit")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise LiteralRejected(f"not a Python literal: {exc.__class__.__name__}: {exc}") from None
    return _value(tree.body, depth=0)


def _value(node, depth):
    # Dispatch on the node's exact type (ast.parse makes no subclasses); the checks and their
    # order are the walk's: this runs for every node of ~90,000 profiles in a 30,000-row import.
    if depth > MAX_DEPTH:
        raise LiteralRejected(f"nested deeper than {MAX_DEPTH} levels")
    kind = type(node)
    if kind is _CONSTANT:
        value = node.value
        value_type = type(value)
        if value_type is str:
            return _storable_text(value)
        if value_type is float:
            return value if math.isfinite(value) else None
        if value_type is int or value_type is bool or value is None:
            return value
        if isinstance(value, (int, float, bool)):
            return _json_number(value)
        raise LiteralRejected(f"unsupported constant of type {value_type.__name__}")
    if kind is _DICT:
        keys = node.keys
        if None in keys:
            raise LiteralRejected("dict unpacking (**) is not a plain literal")
        depth += 1
        out = {}
        for key_node, value_node in zip(keys, node.values):
            key = _value(key_node, depth)
            out[key if type(key) is str else str(key)] = _value(value_node, depth)
        return out
    if kind in _SEQUENCES:
        depth += 1
        return [_value(item, depth) for item in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        if isinstance(node.operand, ast.Name) and node.operand.id in _FLOAT_NAMES:
            return None  # -inf
        operand = _value(node.operand, depth + 1)
        if isinstance(operand, bool) or not isinstance(operand, (int, float)):
            raise LiteralRejected("unary sign on something that is not a number")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Name) and node.id in _FLOAT_NAMES:
        return None  # nan/inf: not representable in JSON; the raw text keeps them
    raise LiteralRejected(f"not a plain literal: {_describe(node)} at line {getattr(node, 'lineno', '?')}")


_CONSTANT, _DICT, _SEQUENCES = ast.Constant, ast.Dict, (ast.List, ast.Tuple, ast.Set)


def _storable_text(value: str) -> str:
    # jsonb refuses NUL, and a lone surrogate is not Unicode: neither can be stored.
    if value.isascii() and "\x00" not in value:
        return value  # ASCII has no surrogate (most profile text)
    if "\x00" in value:
        raise LiteralRejected("a string contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise LiteralRejected("a string contains a lone surrogate (\\ud800-\\udfff)") from None
    return value


def _json_number(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _key(value):
    return value if isinstance(value, str) else str(value)


def _describe(node) -> str:
    if isinstance(node, ast.Call):
        try:
            return f"a call to {ast.unparse(node.func)}()"
        except Exception:  # unparse of odd trees; the kind is enough
            return "a function call"
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    if isinstance(node, ast.Attribute):
        return f"an attribute access ({ast.unparse(node)})"
    return f"an expression of type {type(node).__name__}"
