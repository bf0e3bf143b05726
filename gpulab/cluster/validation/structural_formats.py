"""The string formats a CRD schema may declare, checked as kube-openapi's strfmt.Default registry does.

Which formats count is apiextensions-apiserver's list
(pkg/apiserver/validation/formats.go, supportedVersionedFormats): any other
format on a string, and any format other than int32/int64 on an integer or
float/double on a number, is dropped before validation
(StripUnsupportedFormatsPostProcess). The checks themselves follow
k8s.io/kube-openapi/pkg/validation/strfmt (default.go, time.go, date.go,
duration.go, kube_style_names.go). Formats here are matched with the dashes
removed, as strfmt normalizes names. Patterns end in ``\\Z``: Go's ``$`` does not
accept the trailing newline Python's does.
"""
from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from datetime import date, datetime

_SUPPORTED_STRING_FORMATS = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4", "uuid5",
    "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password", "date", "duration",
    "datetime", "quantity", "k8sshortname", "k8slongname",
})

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID4 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_UUID5 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
# strfmt.ParseDateTime accepts RFC3339 with or without fraction/zone and a few ISO 8601 variants.
_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?\Z")
_DURATION_GO = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
                          r"((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))*\Z")
_DURATION_SCALA = re.compile(r"^(\d+)\s*(ns|nanos?|nanoseconds?|us|micros?|microseconds?|ms|millis?|milliseconds?|"
                             r"s|sec|secs?|seconds?|m|min|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)\Z")
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\Z|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}\Z")
_K8S_SHORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_K8S_LONG_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_HOSTNAME = re.compile(r"^([a-zA-Z0-9]((-?[a-zA-Z0-9]{0,62})?)|([a-zA-Z0-9](([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.)){1,}"
                       r"([a-zA-Z]){2,63})\Z")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(\d+(\.\d*)?|\.\d+)))?\Z")
_BSON = re.compile(r"^[0-9a-fA-F]{24}\Z")


def effective_format(schema_type: str, fmt: str) -> str:
    """StripUnsupportedFormatsPostProcess: the format kube-openapi will see ("" when stripped)."""
    if not fmt:
        return ""
    if schema_type in ("", "string"):
        return fmt if fmt.replace("-", "") in _SUPPORTED_STRING_FORMATS else ""
    if schema_type == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if schema_type == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


def is_string_format(fmt: str) -> bool:
    """strfmt.Default.ContainsName: the format validator applies to strings only for these."""
    return fmt.replace("-", "") in _SUPPORTED_STRING_FORMATS


def valid(fmt: str, value: str) -> bool:
    check = _CHECKS.get(fmt.replace("-", ""))
    return True if check is None else check(value)


def _date_time(value: str) -> bool:
    m = _DATE_TIME.match(value)
    if not m:
        return False
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _date(value: str) -> bool:
    if not re.match(r"^\d{4}-\d{2}-\d{2}\Z", value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _ipv4(value: str) -> bool:
    parts = value.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) <= 255 for p in parts)


def _ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _hostname(value: str) -> bool:
    return bool(_HOSTNAME.match(value)) and len(value) <= 255 and all(len(p) <= 63 for p in value.split("."))


def _uri(value: str) -> bool:
    # govalidator.IsRequestURI: url.ParseRequestURI succeeds for absolute URIs and absolute paths
    return bool(re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*:|/)\S*\Z", value))


def _email(value: str) -> bool:
    return bool(re.match(r"^[^@\s<>]+@[^@\s<>]+\Z", value))


_CHECKS = {
    "datetime": _date_time,
    "date": _date,
    "duration": lambda v: bool(_DURATION_GO.match(v) or _DURATION_SCALA.match(v)),
    "byte": _byte,
    "password": lambda v: True,
    "uuid": lambda v: bool(_UUID.match(v)),
    "uuid3": lambda v: bool(_UUID3.match(v)),
    "uuid4": lambda v: bool(_UUID4.match(v)),
    "uuid5": lambda v: bool(_UUID5.match(v)),
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "hostname": _hostname,
    "hexcolor": lambda v: bool(_HEX_COLOR.match(v)),
    "uri": _uri,
    "email": _email,
    "quantity": lambda v: bool(_QUANTITY.match(v)),
    "bsonobjectid": lambda v: bool(_BSON.match(v)),
    "k8sshortname": lambda v: len(v) <= 63 and bool(_K8S_SHORT_NAME.match(v)),
    "k8slongname": lambda v: len(v) <= 253 and bool(_K8S_LONG_NAME.match(v)),
}
