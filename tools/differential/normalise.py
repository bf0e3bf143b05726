"""What may legitimately differ between two clusters answering the same request, and nothing else.

Two clusters started a few seconds apart give the same object different UIDs, resourceVersions, creation times,
generated name suffixes, cluster IPs, node ports and server ports; tables print ages and pad their columns to the
widest cell, so a column of ``9s`` and one of ``13s`` pad differently. Every rule here replaces such a value with a
placeholder on both sides. Anything a rule does not cover is compared as it is: a difference there is a finding.

The one rule that is not about two clusters is the patch release: the embedded cluster reports the release of the
kubectl the project ships (v1.37.1), the upstream engine the release it was built from (v1.37.2), which
docs/fidelity.md records; comparing every ``kubectl get nodes`` on it would hide every other difference there.
"""
from __future__ import annotations

import re

# Names: ``<generateName><5 chars>`` (names.SimpleNameGenerator) and ``<name>-<hash>`` (a pod-template-hash or
# controller-revision-hash, rand.SafeEncodeString of a 32-bit hash: 6 to 10 characters of the same alphabet).
# The alphabet has no vowels, so ordinary words rarely match; a suffix must hold a digit or be exactly 5 long.
SAFE = "bcdfghjklmnpqrstvwxz2456789"
_HASH = re.compile(rf"(?<=-)(?=[{SAFE}]*\d)[{SAFE}]{{6,10}}\b")
_HASH_LABEL = re.compile(r'((?:pod-template-hash|controller-revision-hash)"?[=:]\s*"?)[a-z0-9]{6,10}')
_SUFFIX = re.compile(rf"(?<=[a-z0-9]-)[{SAFE}]{{5}}\b")
_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_RV = re.compile(r'("?resourceVersion"?\s*[:=]\s*|Resource Version:\s+)"?\d+"?')
_NODE_PORT = re.compile(r'("?nodePort"?\s*[:=]\s*|NodePort:\s+\S+\s+)\d+')
_CONTINUE = re.compile(r'("?continue"?\s*[:=]\s*)"?[A-Za-z0-9_=+/-]{8,}"?')
_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
_GO_DATE = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [+-]\d{4} \w+")   # time.Time's String()
_GO_TIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                      r"\d{4} \d\d:\d\d:\d\d [+-]\d{4}")
_AGE = re.compile(r"(?<![\w.:/=-])(?:\d+[smhdy]){1,2}(?![\w/])|<invalid>|<unknown>(?=\s)")
_QUOTED_AGE = re.compile(r'"(?:\d+[smhdy]){2}"|"\d+[sdhy]"')    # a Table cell's age in a JSON body
_STRUCTURED = re.compile(r"\s*(?:[{\[]|apiVersion:|kind:|- )")
_EVENT_COUNT = re.compile(r" \(x\d+ over <age>\)")     # how often an event repeated is a matter of timing
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?\b")
_PORT = re.compile(r"(?<=<ip>:)\d{2,5}\b|(?<=localhost:)\d{2,5}\b|\b3[0-2]\d{3}(?=/TCP|/UDP)")
_RELEASE = re.compile(r"\bv1\.37\.[12]\b")
_GIT = re.compile(r'("?(?:gitCommit|buildDate|gitTreeState)"?\s*:\s*)"[^"]*"')
_CERT_ID = re.compile(r"X509SHA256=[0-9a-f]{64}")
_PADDING = re.compile(r"(?<=\S) {2,}(?=\S)")
_TRAILING = re.compile(r"[ \t]+$", re.M)


def normalise(text: str) -> str:
    """``text`` with every value that legitimately differs between two clusters replaced by a placeholder."""
    text = _UID.sub("<uid>", text)
    text = _TIME.sub("<time>", text)
    text = _GO_TIME.sub("<time>", text)
    text = _GO_DATE.sub("<time>", text)
    text = _RV.sub(r"\1<rv>", text)
    text = _NODE_PORT.sub(r"\1<port>", text)
    text = _CONTINUE.sub(r"\1<continue>", text)
    text = _GIT.sub(r'\1"<build>"', text)
    text = _CERT_ID.sub("X509SHA256=<fingerprint>", text)
    text = _RELEASE.sub("v1.37.x", text)
    text = _IPV4.sub("<ip>", text)
    text = _PORT.sub("<port>", text)
    text = _HASH.sub("<hash>", text)
    text = _HASH_LABEL.sub(r"\1<hash>", text)
    text = _SUFFIX.sub("<sfx>", text)
    text = _QUOTED_AGE.sub('"<age>"', text)
    if not _STRUCTURED.match(text):     # ages are printed by tables and describe; in YAML ``100m`` is a quantity
        text = _AGE.sub("<age>", text)
        text = _EVENT_COUNT.sub("", text)
    text = _PADDING.sub("   ", text)
    return _TRAILING.sub("", text)


def sort_lines(text: str, *, keep_header: bool = True) -> str:
    """The lines of ``text`` sorted (a table's header stays first): for lists whose order upstream leaves open."""
    lines = text.splitlines()
    head, body = (lines[:1], lines[1:]) if keep_header and lines else ([], lines)
    return "\n".join(head + sorted(body))
