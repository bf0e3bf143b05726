"""A CRD's CEL rule is held to its estimated cost when the CRD is written, as kube-apiserver holds it
(apiextensions-apiserver validation.go getCostErrorMessage, cel-go checker/cost.go): a rule that could run away
on an unbounded list is refused up front, instead of failing every object later (issue 23, item 5)."""
from __future__ import annotations

import json

ADVICE = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
          "strings are declared)")
# one version: its schema is hoisted to spec.validation, as the v1 to internal conversion does
RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def _crd(name: str, spec_schema: dict) -> str:
    return json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}s.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": f"{name}s", "singular": name, "kind": name.capitalize()},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": spec_schema}}}}]}})


def _nested(items: dict) -> dict:
    return {"type": "object", "properties": {"items": items}, "x-kubernetes-validations": [
        {"rule": "self.items.all(x, self.items.all(y, x == y || x != y))"}]}


def test_nested_macros_over_an_unbounded_list_are_refused_in_upstreams_words(kubectl):
    proc = kubectl("apply", "-f", "-", input=_crd("costbomb", _nested({"type": "array", "items": {"type": "string"}})),
                   check=False)
    assert proc.returncode == 1
    assert proc.stderr == (
        'The CustomResourceDefinition "costbombs.example.com" is invalid: \n'
        f"* {RULES}[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {ADVICE}\n"
        f"* {RULES}[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire "
        "OpenAPIv3 schema\n"
        "* spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total "
        f"for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {ADVICE}\n")
    assert kubectl("get", "crd", "costbombs.example.com", check=False).returncode == 1


def test_the_factor_is_printed_as_go_prints_it(kubectl):
    names = {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"},
                                                        "maxItems": 100}},
             "x-kubernetes-validations": [{"rule": 'self.names.all(x, x.contains("a"))'}]}
    proc = kubectl("apply", "-f", "-", input=_crd("contain", names), check=False)
    # 100 items x (a 3 MiB string scanned at 0.1 a character + the loop's own 4) + 3 = 31,457,703
    assert f"{RULES}[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 3.1x {ADVICE}" \
        in proc.stderr
    assert "cost total" not in proc.stderr  # under the CRD's 100,000,000


def test_a_message_built_with_string_of_a_number_is_unbounded(kubectl):
    quota = {"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
             "x-kubernetes-validations": [{"rule": "self.min <= self.max",
                                           "messageExpression": "'min ' + string(self.min) + ' exceeds max'"}]}
    proc = kubectl("apply", "-f", "-", input=_crd("quota", quota), check=False)
    assert f"{RULES}[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor " \
           f"of more than 100x {ADVICE}\n" in proc.stderr


def test_bounding_the_list_lets_the_rule_in_and_it_then_judges_objects(kubectl):
    bounded = _nested({"type": "array", "maxItems": 50, "items": {"type": "string", "maxLength": 63}})
    bounded["x-kubernetes-validations"] = [{"rule": "self.items.all(x, self.items.exists_one(y, y == x))",
                                            "message": "items must be unique"}]
    kubectl("apply", "-f", "-", input=_crd("bounded", bounded))
    kubectl("wait", "--for=condition=Established", "crd/boundeds.example.com", "--timeout=30s")
    body = {"apiVersion": "example.com/v1", "kind": "Bounded", "metadata": {"name": "b"},
            "spec": {"items": ["a", "b", "a"]}}
    proc = kubectl("apply", "-f", "-", input=json.dumps(body), check=False)
    assert 'The Bounded "b" is invalid: spec: Invalid value: "object": items must be unique' in proc.stderr
    body["spec"]["items"] = ["a", "b"]
    kubectl("apply", "-f", "-", input=json.dumps(body))
