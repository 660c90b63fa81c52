"""Rooms a reader can walk through: no module of src/winagg over 700 lines, no function or class over 300."""

import ast
import pathlib

import winagg

SOURCE = pathlib.Path(winagg.__file__).parent
MODULE_LINES, DEFINITION_LINES = 700, 300


def test_no_module_or_definition_outgrows_its_limit():
    too_big = []
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > MODULE_LINES:
            too_big.append(f"{path.relative_to(SOURCE)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > DEFINITION_LINES:
                    too_big.append(f"{path.relative_to(SOURCE)}: {node.name} {lines} lines")
    assert not too_big, "\n".join(too_big)
