"""The project's CPU-list corpus: every value the parser's tests accept or reject (with the
position and the problem it must name), shared by the parser's tests and the admission policy's
(``tests/unit/deploy/test_admission_policy.py``), so the API server and the plugin are held to
the same texts."""

from __future__ import annotations

import pytest

FIVE_THOUSAND_DIGITS = "1" + "0" * 4999

ACCEPTED = [
    pytest.param("0", {0}, id="single id zero"),
    pytest.param("7", {7}, id="single id"),
    pytest.param("0-3", {0, 1, 2, 3}, id="range"),
    pytest.param("5-5", {5}, id="one-element range"),
    pytest.param("0,2-3,8", {0, 2, 3, 8}, id="ids and ranges"),
    pytest.param("3,0-2", {0, 1, 2, 3}, id="out of order"),
    pytest.param("1,1,1", {1}, id="duplicate ids merge"),
    pytest.param("0-4,2-6", set(range(7)), id="overlapping ranges merge"),
    pytest.param("0-7,2-3", set(range(8)), id="contained range merges"),
    pytest.param("0-3,4-7", set(range(8)), id="adjacent ranges merge"),
    pytest.param("0-3\n", {0, 1, 2, 3}, id="trailing newline as in sysfs"),
    pytest.param("  0-3\n", {0, 1, 2, 3}, id="surrounding spaces and newline"),
    pytest.param("\t1,3 \r\n", {1, 3}, id="tabs and CRLF around the text"),
    pytest.param("007", {7}, id="leading zeros"),
    pytest.param("00-03", {0, 1, 2, 3}, id="leading zeros in a range"),
    pytest.param("0000", {0}, id="all zeros"),
    pytest.param("00008191", {8191}, id="leading zeros before the max id"),
    pytest.param("8191", {8191}, id="max id"),
    pytest.param("8190-8191", {8190, 8191}, id="range ending at the max id"),
    pytest.param("0-8191", set(range(8192)), id="the whole id space"),
]
"""Valid lists and the ids they hold."""

REJECTED = [
    pytest.param("", 0, "empty list", id="empty input"),
    pytest.param("   ", 0, "empty list", id="whitespace only"),
    pytest.param("\n", 0, "empty list", id="newline only"),
    pytest.param(",", 0, "empty element", id="lone comma"),
    pytest.param("0,,2", 2, "empty element", id="empty element in the middle"),
    pytest.param("1,", 2, "empty element", id="trailing comma"),
    pytest.param(",1", 0, "empty element", id="leading comma"),
    pytest.param(" 1,\n", 3, "empty element", id="trailing comma before whitespace"),
    pytest.param("3-1", 0, "reversed range 3-1", id="reversed range"),
    pytest.param("0,7-2", 2, "reversed range 7-2", id="reversed range after an element"),
    pytest.param("-1", 0, "negative id or missing range start", id="negative id"),
    pytest.param("0,-1", 2, "negative id or missing range start", id="negative id later"),
    pytest.param("a", 0, "unexpected character 'a' (expected a digit)", id="letter"),
    pytest.param("0-x", 2, "unexpected character 'x' (expected a digit)",
                 id="letter as range end"),
    pytest.param("1a", 1, "unexpected character 'a' (expected ',' after an element)",
                 id="letter after an id"),
    pytest.param("0x3", 1, "unexpected character 'x'", id="hex prefix"),
    pytest.param("+1", 0, "unexpected character '+'", id="plus sign"),
    pytest.param("\u0663", 0, "unexpected character", id="non-ascii digit"),
    pytest.param("0, 2", 2, "whitespace inside the list", id="space after comma"),
    pytest.param("0 ,2", 1, "whitespace inside the list", id="space before comma"),
    pytest.param("0 -2", 1, "whitespace inside the list", id="space before dash"),
    pytest.param("0- 2", 2, "whitespace inside the list", id="space after dash"),
    pytest.param("0\n1", 1, "whitespace inside the list", id="newline between ids"),
    pytest.param("8192", 0, "id 8192 is larger than the maximum 8191", id="id one past max"),
    pytest.param("0-8192", 2, "id 8192 is larger than the maximum 8191",
                 id="range end one past max"),
    pytest.param("99999999999999999999", 0, "is larger than the maximum 8191",
                 id="twenty-digit id"),
    pytest.param(FIVE_THOUSAND_DIGITS, 0, "is larger than the maximum 8191",
                 id="five-thousand-digit id"),
    pytest.param("1-", 2, "empty range end", id="missing range end"),
    pytest.param("1-,2", 2, "empty range end", id="missing range end before comma"),
    pytest.param("1--2", 2, "unexpected character '-' (expected a digit)",
                 id="double dash"),
    pytest.param("0-1-2", 3, "unexpected character '-' (expected ',' after an element)",
                 id="double range"),
    pytest.param("0-7:2/4", 3, "unexpected character ':'", id="stride syntax"),
]
"""Invalid lists, the position of the first error and (part of) its problem."""

ANNOTATION_VALUES = ["", "a", "1-", "3-1", "1, 2", "0,,1", "-1", "99999", "0;1", "0",
                     "0,2-3,8", "3-3", "4-7,0-1", " 1-2\n"]
"""Pin annotation values from the classification tests and the issue that asked for the
admission policy (valid and invalid)."""
