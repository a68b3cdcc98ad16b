import pytest

from kernels.ingest.literals import LiteralRejected, parse_python_literal


def test_python_repr_with_single_quotes_true_none():
    text = "{'metrics': {'SM Busy': {'unit': '%', 'avg_value': 1.5, 'n': 5}}, 'ok': True, 'x': None, 't': (1, -2)}"
    assert parse_python_literal(text) == {
        "metrics": {"SM Busy": {"unit": "%", "avg_value": 1.5, "n": 5}}, "ok": True, "x": None, "t": [1, -2],
    }


def test_nan_and_inf_become_null_so_jsonb_accepts_them():
    assert parse_python_literal("{'variance': nan, 'max': inf, 'min': -inf, 'big': 1e999}") == {
        "variance": None, "max": None, "min": None, "big": None,
    }


def test_non_string_keys_become_strings():
    assert parse_python_literal("{1: 'a', 2.5: 'b'}") == {"1": "a", "2.5": "b"}


@pytest.mark.parametrize(
    "text, words",
    [
        ("__import__('os').system('touch /tmp/pwned')", "call to __import__('os').system"),
        ("{'a': open('/etc/passwd').read()}", "call to open('/etc/passwd').read"),
        ("{'a': os.environ}", "attribute access"),
        ("{'a': some_name}", "the name 'some_name'"),
        ("[x for x in range(3)]", "ListComp"),
        ("{**other}", "dict unpacking"),
        ("{'a': 1 + 2}", "BinOp"),
        ("{'a': ", "not a Python literal"),
        ("lambda: 1", "Lambda"),
    ],
)
def test_anything_but_a_plain_literal_is_refused_with_what_it_was(text, words):
    with pytest.raises(LiteralRejected) as caught:
        parse_python_literal(text)
    assert words in str(caught.value)


def test_deep_nesting_is_refused_not_a_crash():
    with pytest.raises(LiteralRejected, match="nested deeper|not a Python literal"):
        parse_python_literal("[" * 500 + "]" * 500)
