"""gpulab.cluster.gofmt against what Go prints.

There is no Go toolchain here, so every expected text is a row of Go's own test tables (golang/go, src/...):
- strconv/quote_test.go ``quotetests`` (the ``out`` column: ``strconv.Quote``);
- strconv/ftoa_test.go ``ftoatests`` (the rows with format 'g' and precision -1: ``FormatFloat(f, 'g', -1, 64)``);
- fmt/fmt_test.go ``fmtTests`` (the rows for ``%q`` of strings, ``%v``/``%#v`` of floats, nil, slices and maps,
  ``%f`` of infinities, which share %v's sign rules);
- time/time_test.go ``durationTests`` (``Duration.String``, each also negated as ``TestDurationString`` does).
Rows that need something a Python value cannot be are left out: invalid UTF-8 in a string (``"abc\\xffdef"``), typed
Go values (``[5]int``, structs, renamed types), widths and flags the cluster never prints with.
"""
from __future__ import annotations

import math

import pytest

from gpulab.cluster.gofmt import go_duration, go_duration_ns, go_float, go_quote, go_sharp_v, go_v

NS, US, MS, S, MIN, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000


# strconv/quote_test.go quotetests (in, out) and fmt/fmt_test.go's %q rows of strings.
@pytest.mark.parametrize("text,quoted", [
    ("\a\b\f\r\n\t\v", '"\\a\\b\\f\\r\\n\\t\\v"'),
    ("\\", '"\\\\"'),
    ("\u263a", '"☺"'),
    ("\U0010ffff", '"\\U0010ffff"'),
    ("\x04", '"\\x04"'),
    ("!\u00a0!\u2000!\u3000!", '"!\\u00a0!\\u2000!\\u3000!"'),
    ("", '""'),
    ('"', '"\\""'),
    ("`", '"`"'),
    ("\\n", '"\\\\n"'),
    ("日本語", '"日本語"'),
    ("\a\b\f\n\r\t\v\"\\", '"\\a\\b\\f\\n\\r\\t\\v\\"\\\\"'),
])
def test_quote_is_strconv_quote(text, quoted):
    assert go_quote(text) == quoted


# strconv/ftoa_test.go ftoatests, format 'g', precision -1.
@pytest.mark.parametrize("value,text", [
    (1, "1"), (20, "20"), (1234567.8, "1.2345678e+06"), (200000, "200000"), (2000000, "2e+06"), (0, "0"), (-1, "-1"),
    (12, "12"), (123456700, "1.234567e+08"), (1e23, "1e+23"), (99999999999999974834176, "9.999999999999997e+22"),
    (100000000000000008388608, "1.0000000000000001e+23"), (5e-304 / 1e20, "5e-324"), (-5e-304 / 1e20, "-5e-324"),
    (32, "32"), (math.nan, "NaN"), (-math.nan, "NaN"), (math.inf, "+Inf"), (-math.inf, "-Inf"),
    (2.2250738585072012e-308, "2.2250738585072014e-308"), (2.2250738585072011e-308, "2.225073858507201e-308"),
    (383260575764816448, "3.8326057576481645e+17"), (-5.8339553793802237e+23, "-5.8339553793802237e+23"),
])
def test_float_is_format_float_g_shortest(value, text):
    assert go_float(float(value)) == text


# fmt/fmt_test.go fmtTests: %v and %#v of float64 (whole numbers without decimals, Issue 27634), and the sign of an
# infinity (``{"%f", posInf, "+Inf"}``), which %v prints through the same fmtFloat.
@pytest.mark.parametrize("value,text", [
    (1.2345678, "1.2345678"), (1.0, "1"), (1000000.0, "1e+06"), (33.0, "33"), (math.inf, "+Inf"),
    (1234.5678e3, "1.2345678e+06"), (1234.5678e-8, "1.2345678e-05"), (-7.0, "-7"), (-1e-9, "-1e-09"),
    (1.23456789e3, "1234.56789"), (1.23456789e-3, "0.00123456789"), (1.23456789e20, "1.23456789e+20"),
])
def test_v_of_a_float64(value, text):
    assert go_v(value) == text
    assert go_sharp_v(value) == text


def test_negative_zero_keeps_its_sign():
    """FormatFloat keeps the sign bit (ftoa.go: ``neg := bits>>(flt.expbits+flt.mantbits) != 0``)."""
    assert go_float(-0.0) == "-0"
    assert go_float(0.0) == "0"


# fmt/fmt_test.go fmtTests: ``{"%v", islice, "[1 hello 2.5 <nil>]"}``, ``{"%#v", iarray, ...}`` (a slice prints the
# same elements after ``[]interface {}``), ``{"%#v", map[string]int{"a": 1}, `map[string]int{"a":1}`}``,
# ``{"%v", nil, "<nil>"}`` and ``{"%#v", nil, "<nil>"}``.
def test_v_and_sharp_v_of_decoded_json():
    islice = [1, "hello", 2.5, None]
    assert go_v(islice) == "[1 hello 2.5 <nil>]"
    assert go_sharp_v(islice) == '[]interface {}{1, "hello", 2.5, interface {}(nil)}'
    assert go_sharp_v({"a": 1}) == 'map[string]interface {}{"a":1}'
    assert go_v(None) == go_sharp_v(None) == "<nil>"


# time/time_test.go durationTests.
@pytest.mark.parametrize("ns,text", [
    (0, "0s"), (1 * NS, "1ns"), (1100 * NS, "1.1µs"), (2200 * US, "2.2ms"), (3300 * MS, "3.3s"),
    (4 * MIN + 5 * S, "4m5s"), (4 * MIN + 5001 * MS, "4m5.001s"), (5 * H + 6 * MIN + 7001 * MS, "5h6m7.001s"),
    (8 * MIN + 1 * NS, "8m0.000000001s"), ((1 << 63) - 1, "2562047h47m16.854775807s"),
    (-1 << 63, "-2562047h47m16.854775808s"),
])
def test_duration_string(ns, text):
    assert go_duration_ns(ns) == text
    if ns > 0:
        assert go_duration_ns(-ns) == "-" + text


def test_duration_from_seconds():
    """Callers hold seconds as floats; they round to the nanosecond first (time.Duration(0.5 * 1e9) is 500ms)."""
    assert go_duration(0.5) == "500ms"
    assert go_duration(3.3) == "3.3s"
    assert go_duration(1.393) == "1.393s"
    assert go_duration(0.0000011) == "1.1µs"
