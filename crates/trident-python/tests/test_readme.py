"""The Python examples of the project's README run as they are written."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def examples():
    if not README.exists():  # an installed copy of the tests, without the checkout
        return []
    text = README.read_text()
    section = text.split("## Python", 1)[1].split("\n## ", 1)[0] if "## Python" in text else ""
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("n", range(len(examples())) or [pytest.param(0, marks=pytest.mark.skip("no README"))])
def test_readme_example(n):
    exec(compile(examples()[n], f"README.md python example {n + 1}", "exec"), {})
