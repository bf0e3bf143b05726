"""String formats of the Kubernetes API: DNS names, qualified names, label values, ports, env names.

Ports of k8s.io/apimachinery/pkg/util/validation/validation.go and
k8s.io/apimachinery/pkg/api/validate/content (dns.go, kube.go, errors.go),
plus the name functions of k8s.io/apimachinery/pkg/api/validation/generic.go
and path/name.go. Each ``is_*`` function returns the list of upstream
messages, empty when the value is valid; regexes and wording are copied so
that ``kubectl`` shows the same text.
"""
from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_ERR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                     "and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                         "'-' or '.', and must start and end with an alphanumeric character")
DNS1123_LABEL_UNDERSCORE_FMT = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_UNDERSCORE_FMT = DNS1123_LABEL_UNDERSCORE_FMT + "(\\." + DNS1123_LABEL_UNDERSCORE_FMT + ")*"
DNS1123_SUBDOMAIN_UNDERSCORE_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                    "characters, '_', '-' or '.', and must start and end with an alphanumeric "
                                    "character")
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_ERR = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                     "start with an alphabetic character, and end with an alphanumeric character")
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_KEY_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character")
LABEL_VALUE_FMT = "(" + LABEL_KEY_FMT + ")?"
LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character")
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
CONFIG_MAP_KEY_ERR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
PERCENT_FMT = "[0-9]+%"
PERCENT_ERR = "a valid percent string must be a numeric string followed by an ending '%'"
HTTP_HEADER_FMT = "[-A-Za-z0-9]+"
HTTP_HEADER_ERR = "a valid HTTP header must consist of alphanumeric characters or '-'"
RELAXED_ENV_NAME_ERR = ("a valid environment variable name must consist only of printable ASCII characters other "
                        "than '='")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
LABEL_VALUE_MAX = 63


def _full(fmt: str) -> re.Pattern:
    return re.compile("^" + fmt + "$")


_DNS1123_LABEL = _full(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = _full(DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_UNDERSCORE = _full(DNS1123_SUBDOMAIN_UNDERSCORE_FMT)
_DNS1035_LABEL = _full(DNS1035_LABEL_FMT)
_LABEL_KEY = _full(LABEL_KEY_FMT)
_LABEL_VALUE = _full(LABEL_VALUE_FMT)
_CONFIG_MAP_KEY = _full(CONFIG_MAP_KEY_FMT)
_PERCENT = _full(PERCENT_FMT)
_HTTP_HEADER = _full(HTTP_HEADER_FMT)
_PORT_NAME_CHARSET = re.compile("^[-a-z0-9]+$")


def _matches(pattern: re.Pattern, value: str) -> bool:
    # Go's regexp has no $-before-final-newline quirk; fullmatch-with-anchors mirrors it.
    return pattern.fullmatch(value) is not None


def max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {quoted}regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _size(value: str) -> int:
    return len(value.encode())


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _matches(_DNS1123_LABEL, value):
        if _matches(_DNS1123_SUBDOMAIN, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _matches(_DNS1123_SUBDOMAIN, value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_subdomain_with_underscore(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _matches(_DNS1123_SUBDOMAIN_UNDERSCORE, value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_UNDERSCORE_ERR, DNS1123_SUBDOMAIN_UNDERSCORE_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _matches(_DNS1035_LABEL, value):
        errs.append(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """content.IsLabelKey: an optional DNS-subdomain prefix, '/', and a 63-byte name."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a valid label key " + regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part " + empty_error())
    elif _size(name) > DNS1123_LABEL_MAX:
        errs.append("name part " + max_len_error(DNS1123_LABEL_MAX))
    if not _matches(_LABEL_KEY, name):
        errs.append("name part " + regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if _size(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _matches(_LABEL_VALUE, value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_port_name(port: str) -> list[str]:
    errs = []
    if _size(port) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARSET.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_relaxed_env_var_name(value: str) -> list[str]:
    """IsRelaxedEnvVarName: RelaxedEnvironmentVariableValidation is GA (locked on) in v1.37."""
    errs = []
    if not value:
        errs.append("environment variable name " + empty_error())
    if any(ord(c) > 127 or not c.isprintable() or c == "=" for c in value):
        errs.append(RELAXED_ENV_NAME_ERR)
    return errs


def _ch_dir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _matches(_CONFIG_MAP_KEY, value):
        errs.append(regex_error(CONFIG_MAP_KEY_ERR, CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _ch_dir_prefix(value)


def is_valid_percent(value: str) -> list[str]:
    return [] if _matches(_PERCENT, value) else [regex_error(PERCENT_ERR, PERCENT_FMT, "1%", "93%")]


def is_http_header_name(value: str) -> list[str]:
    return [] if _matches(_HTTP_HEADER, value) else [regex_error(HTTP_HEADER_ERR, HTTP_HEADER_FMT, "X-Header-Name")]


def is_valid_user_or_group_id(value: int) -> list[str]:
    return [] if 0 <= value <= 0xFFFFFFFF else [inclusive_range_error(0, 0xFFFFFFFF)]


# --- name functions (ValidateNameFunc): prefix=True checks a generateName -----------------------
def _mask_trailing_dash(name: str) -> str:
    # maskTrailingDash, including its habit of dropping the character before the dash.
    return name[:-2] + "a" if name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def path_segment_name(name: str, prefix: bool = False) -> list[str]:
    """path.ValidatePathSegmentName: the rule every stored name must meet."""
    if not prefix:
        for illegal in (".", ".."):
            if name == illegal:
                return [f"may not be '{illegal}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
