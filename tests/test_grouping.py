"""tests/conftest.py's check that ``--dist loadgroup`` kept the groups: a test marked with
``xdist_group`` whose id lacks pytest-xdist's ``@name`` suffix is named (pytest 9.2 dropped the
suffix silently: pytest-xdist issue #1386); the suite's own run then refuses to start. And its
check that collecting imported no SDK or agent framework."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import COLLECTION_FREE, collected_sdks, ungrouped


@dataclass
class Item:
    nodeid: str
    marks: list[Any] = field(default_factory=list)

    def iter_markers(self, name: str) -> list[Any]:
        return [mark for mark in self.marks if mark.name == name]


def test_a_grouped_test_without_its_suffix_is_named() -> None:
    group = pytest.mark.xdist_group("one-at-a-time").mark
    other = pytest.mark.timeout(5).mark
    items = [Item("t.py::kept@one-at-a-time", [group]), Item("t.py::lost", [group]),
             Item("t.py::plain", [other]), Item("t.py::plain@x")]
    assert ungrouped(items) == ["t.py::lost"]  # type: ignore[arg-type]


def test_two_groups_are_one_suffix_sorted_and_a_keyword_name_counts() -> None:
    marks = [pytest.mark.xdist_group(name="b").mark, pytest.mark.xdist_group("a").mark]
    assert ungrouped([Item("t.py::x@a_b", marks)]) == []  # type: ignore[list-item]
    assert ungrouped([Item("t.py::x@b_a", marks)]) == ["t.py::x@b_a"]  # type: ignore[list-item]


def test_an_sdk_imported_at_collection_is_named() -> None:
    """The other check of the suite's collection: the SDKs and frameworks no test module
    imports at its top (every worker would pay for them), named when one is imported."""
    plain = {"os": sys.modules["os"], "google": types.ModuleType("google")}
    assert collected_sdks(plain) == []
    assert collected_sdks({**plain, "litellm": types.ModuleType("litellm"),
                           "google.adk": types.ModuleType("google.adk")}) == [
        "litellm", "google.adk"]
    assert set(COLLECTION_FREE) >= {"anthropic", "openai", "litellm"}
