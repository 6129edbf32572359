"""Human values -> canonical P4Runtime bytes, and the errors for values that do not fit."""

from __future__ import annotations

import pytest

from controller import encoding
from controller.errors import ValueError_


@pytest.mark.parametrize(("value", "width", "expected"), [
    (0, 16, b"\x00"), (1, 16, b"\x01"), (0x1234, 16, b"\x12\x34"), ("0x80", 8, b"\x80"),
    ("10.0.0.1", 32, b"\x0a\x00\x00\x01"), ("00:00:00:00:00:01", 48, b"\x01"),
    ("02:00:00:00:01:00", 48, b"\x02\x00\x00\x00\x01\x00"), (True, 1, b"\x01"), ("511", 9, b"\x01\xff"),
])
def test_canonical_encoding(value, width, expected):
    assert encoding.encode_value(value, width, "f") == expected


@pytest.mark.parametrize(("value", "width", "fragment"), [
    (512, 9, "does not fit in 9 bits (max 511)"), (-1, 8, "negative"), ("zz", 8, "cannot parse"),
    ("1.2.3.4", 16, "does not fit in 16 bits"), (1.5, 8, "cannot use float"),
])
def test_bad_values_name_the_field(value, width, fragment):
    with pytest.raises(ValueError_) as err:
        encoding.encode_value(value, width, "table T field f")
    assert str(err.value).startswith("table T field f: ")
    assert fragment in str(err.value)


def test_lpm_forms_and_host_bits():
    fm = encoding.field_match("lpm", 1, "10.1.0.0/16", 32, "w")
    assert (fm.lpm.value, fm.lpm.prefix_len) == (b"\x0a\x01\x00\x00", 16)
    assert encoding.field_match("lpm", 1, ("10.0.0.0", 8), 32, "w").lpm.prefix_len == 8
    assert encoding.field_match("lpm", 1, "0.0.0.0/0", 32, "w") is None  # /0 is the wildcard
    with pytest.raises(ValueError_, match="bits set past the /8 prefix"):
        encoding.field_match("lpm", 1, "10.0.0.1/8", 32, "w")
    with pytest.raises(ValueError_, match="outside 0..32"):
        encoding.field_match("lpm", 1, "10.0.0.0/33", 32, "w")


def test_ternary_range_optional():
    fm = encoding.field_match("ternary", 5, "0x80 &&& 0x80", 8, "w")
    assert (fm.ternary.value, fm.ternary.mask) == (b"\x80", b"\x80")
    assert encoding.field_match("ternary", 5, 3, 4, "w").ternary.mask == b"\x0f"
    assert encoding.field_match("ternary", 5, (0, 0), 4, "w") is None
    with pytest.raises(ValueError_, match="bits outside mask"):
        encoding.field_match("ternary", 5, (0x3, 0x2), 4, "w")
    fm = encoding.field_match("range", 1, "10..20", 16, "w")
    assert (fm.range.low, fm.range.high) == (b"\x0a", b"\x14")
    assert encoding.field_match("range", 1, "0..255", 8, "w") is None
    with pytest.raises(ValueError_, match="empty range"):
        encoding.field_match("range", 1, (5, 4), 8, "w")
    assert encoding.field_match("optional", 1, None, 8, "w") is None
    assert encoding.field_match("optional", 1, 7, 8, "w").optional.value == b"\x07"
    with pytest.raises(ValueError_, match="cannot be a wildcard"):
        encoding.field_match("exact", 1, None, 8, "w")


def test_format_round_trip():
    assert encoding.format_value(0x0A000001, 32, "ipv4_dst") == "10.0.0.1"
    assert encoding.format_value(1, 48, "dmac") == "00:00:00:00:00:01"
    fm = encoding.field_match("lpm", 1, "10.1.0.0/16", 32, "w")
    assert encoding.format_match("lpm", fm, 32, "ipv4_dst") == "10.1.0.0/16"
    assert encoding.format_match("ternary", None, 8) == "*"
