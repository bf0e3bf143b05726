"""resource.Quantity parsing and canonical printing (k8s.io/apimachinery/pkg/api/resource/quantity.go)."""
from fractions import Fraction

import pytest

from gpulab.cluster import quantity

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize("text, canonical", [
    # cases from quantity_test.go's canonicalization table and what `kubectl get -o yaml` shows
    ("1000m", "1"),
    ("0.5", "500m"),
    ("1024Mi", "1Gi"),
    ("1.5Gi", "1536Mi"),
    ("0.5Gi", "512Mi"),
    ("1000", "1k"),
    ("1e3", "1e3"),
    ("1.5e3", "1500"),
    ("12e6", "12e6"),
    ("0.1m", "100u"),
    ("0.0000000001", "1n"),
    ("0.5Ki", "512"),
    ("1536", "1536"),
    ("100Ki", "100Ki"),
    ("-1", "-1"),
    (".5", "500m"),
    ("1.", "1"),
    ("0", "0"),
    ("8", "8"),
    (1, "1"),
    (0.5, "500m"),
    ("1E", "1E"),
])
def test_canonical_form(text, canonical):
    assert quantity.canonical(text) == canonical


@pytest.mark.parametrize("text, message", [
    ("", FORMAT_WRONG),
    ("abc", FORMAT_WRONG),
    ("1Gb", FORMAT_WRONG),
    ("1.5.5", FORMAT_WRONG),
    ("1 Gi", FORMAT_WRONG),
    ("1GG", "unable to parse quantity's suffix"),
    ("1e", "unable to parse quantity's suffix"),
])
def test_parse_errors_carry_upstream_text(text, message):
    with pytest.raises(quantity.QuantityError) as err:
        quantity.parse_quantity(text)
    assert str(err.value) == message


def test_values_are_exact_fractions_rounded_up_to_nano():
    assert quantity.parse_quantity("1.5Gi") == 1536 * 2 ** 20
    assert quantity.parse_quantity("250m") == Fraction(1, 4)
    assert quantity.parse_quantity("0.0000000001") == Fraction(1, 10 ** 9)
    assert quantity.parse_quantity("-0.0000000001") == Fraction(-1, 10 ** 9)


def test_binary_si_is_capped_at_max_int64():
    assert quantity.parse_quantity("16Ei") == 2 ** 63 - 1


@pytest.mark.parametrize("text, milli, whole", [("500m", 500, 1), ("1.0001", 1001, 2), ("2", 2000, 2),
                                                ("1Ki", 1024000, 1024), ("0.1m", 1, 1)])
def test_milli_value_and_value_round_up(text, milli, whole):
    assert quantity.milli_value(text) == milli
    assert quantity.value(text) == whole


def test_format_reuses_a_quantitys_format():
    assert quantity.format_quantity(Fraction(3 * 2 ** 30), like="1Gi") == "3Gi"
    assert quantity.format_quantity(Fraction(3 * 2 ** 30)) == "3221225472"
    assert quantity.format_quantity(Fraction(1500), like="DecimalExponent") == "1500"
    assert quantity.format_quantity(Fraction(3, 2), like="BinarySI") == "1500m"
