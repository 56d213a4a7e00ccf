"""The shared bounds on one file's parse: size, depth and node count give one-line findings."""

import ast

import pytest

from bot.core import limits


def test_python_source_over_the_size_limit_is_rejected_with_its_size() -> None:
    with pytest.raises(limits.InputRejected) as caught:
        limits.parse_python("x = 1\n" * 100, "vllm/registry.py", limit=100)
    assert str(caught.value) == (
        "`vllm/registry.py` is 0.0 MB, over the 0.0 MB limit for Python source; not read"
    )


def test_deeply_nested_source_is_a_finding_not_a_recursion_error() -> None:
    source = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    with pytest.raises(limits.InputRejected) as caught:
        limits.parse_python(source, "deep.py")
    assert caught.value.path == "deep.py"


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(limits.InputRejected, match=r"`bad.py` does not parse \(line 2\)"):
        limits.parse_python("x = 1\ndef (:\n", "bad.py")


def test_null_bytes_are_a_finding() -> None:
    with pytest.raises(limits.InputRejected, match="does not parse"):
        limits.parse_python("x = 1\0\n", "nul.py")


def test_walk_visits_every_node_iteratively_and_stops_at_its_bound() -> None:
    tree = ast.parse("def f():\n    return [a + b for a in c]\n")
    assert {type(n) for n in limits.walk(tree, "f.py")} == {type(n) for n in ast.walk(tree)}
    assert len(list(limits.walk(tree, "f.py"))) == len(list(ast.walk(tree)))
    with pytest.raises(limits.InputRejected, match="over 3 syntax nodes"):
        list(limits.walk(tree, "f.py", limit=3))


def test_check_size_accepts_at_the_limit() -> None:
    limits.check_size("r.txt", b"x" * 10, 10, "a requirement file")
    with pytest.raises(limits.InputRejected, match="limit for a requirement file"):
        limits.check_size("r.txt", b"x" * 11, 10, "a requirement file")


def test_python_is_bounded_in_tokens_before_it_is_parsed():
    from bot.core.limits import MAX_PYTHON_TOKENS, parse_python

    dense = "x = [" + "0," * (MAX_PYTHON_TOKENS // 2 + 10) + "]\n"
    with pytest.raises(limits.InputRejected) as rejected:
        parse_python(dense, "vllm/big.py")
    assert str(rejected.value) == (
        "`vllm/big.py` has over 500,000 tokens, the limit for Python source; not read"
    )
    assert parse_python("x = [" + "0," * 1000 + "]\n", "vllm/small.py").body
