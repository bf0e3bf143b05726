"""CustomResourceDefinition validation, defaulting and status, pinned to apiextensions-apiserver's texts."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gpulab.cluster.errors import invalid_object
from gpulab.cluster.validation.crd import crd_defaults, crd_established_status, validate_crd

PODGROUP_CRD = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "gpulab/cluster/crds/scheduling.x-k8s.io_podgroups.yaml").read_text())


@pytest.fixture
def crd() -> dict:
    return copy.deepcopy(PODGROUP_CRD)


def schema_of(crd: dict, version: int = 0) -> dict:
    return crd["spec"]["versions"][version]["schema"]["openAPIV3Schema"]


def messages(crd: dict, old: dict | None = None) -> list[str]:
    return [str(e) for e in validate_crd(crd, old)]


def test_upstream_podgroup_crd_is_valid(crd):
    assert messages(crd) == []


def test_name_must_be_plural_dot_group(crd):
    crd["metadata"]["name"] = "podgroup.scheduling.x-k8s.io"
    errs = validate_crd(crd)
    assert invalid_object("CustomResourceDefinition", "apiextensions.k8s.io", "podgroup.scheduling.x-k8s.io",
                          errs).message == (
        'CustomResourceDefinition.apiextensions.k8s.io "podgroup.scheduling.x-k8s.io" is invalid: metadata.name: '
        'Invalid value: "podgroup.scheduling.x-k8s.io": must be spec.names.plural+"."+spec.group')


def test_group_scope_and_names(crd):
    crd["metadata"]["name"] = "podgroups.scheduling"
    crd["spec"]["group"] = "scheduling"
    crd["spec"]["scope"] = "Global"
    crd["spec"]["names"]["listKind"] = "PodGroup"
    crd["spec"]["names"]["shortNames"] = ["PG"]
    assert messages(crd) == [
        'spec.group: Invalid value: "scheduling": should be a domain with at least one dot',
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        'spec.names.shortNames[0]: Invalid value: "PG": a DNS-1035 label must consist of lower case alphanumeric '
        "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        'spec.names.listKind: Invalid value: "PodGroup": kind and listKind may not be the same',
    ]


def test_required_names_and_scope(crd):
    crd["spec"]["names"] = {"plural": "podgroups"}
    del crd["spec"]["scope"]
    assert messages(crd) == [
        "spec.scope: Required value",
        "spec.names.singular: Required value",
        "spec.names.kind: Required value",
        "spec.names.listKind: Required value",
    ]


def test_exactly_one_storage_version(crd):
    crd["spec"]["versions"][0]["storage"] = False
    assert messages(crd) == [
        'spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{'
        'apiextensions.CustomResourceDefinitionVersion{Name:"v1alpha1", Served:true, Storage:false, Deprecated:false, '
        'DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), '
        'Subresources:(*apiextensions.CustomResourceSubresources)(nil), '
        'AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), '
        'SelectableFields:[]apiextensions.SelectableField(nil)}}: must have exactly one version marked as storage '
        'version',
        'status.storedVersions: Invalid value: []string(nil): must have at least one stored version',
    ]


def test_version_names_unique_and_dns_labels(crd):
    second = copy.deepcopy(crd["spec"]["versions"][0])
    second["storage"] = False
    crd["spec"]["versions"].append(second)
    crd["spec"]["versions"][0]["name"] = "V1"
    crd["spec"]["versions"][1]["name"] = "V1"
    errs = messages(crd)
    label = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
             "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
             "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
    assert errs[0] == f'spec.versions[0].name: Invalid value: "V1": {label}'
    assert errs[1] == f'spec.versions[1].name: Invalid value: "V1": {label}'
    assert errs[2].startswith("spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{")
    assert errs[2].endswith("}: must contain unique version names")
    assert errs[3] == f'spec.version: Invalid value: "V1": {label}'  # the internal spec.version mirrors versions[0]


def test_identical_schemas_are_reported_under_spec_validation(crd):
    del schema_of(crd)["properties"]["spec"]["properties"]["minMember"]["type"]
    assert messages(crd) == ["spec.validation.openAPIV3Schema.properties[spec].properties[minMember].type: "
                             "Required value: must not be empty for specified object fields"]


def test_differing_schemas_are_reported_per_version(crd):
    second = copy.deepcopy(crd["spec"]["versions"][0])
    second.update(name="v1alpha2", storage=False)
    crd["spec"]["versions"].append(second)
    del schema_of(crd, 1)["type"]
    assert messages(crd) == ["spec.versions[1].schema.openAPIV3Schema.type: Required value: "
                             "must not be empty at the root"]


def test_structural_errors_are_sorted(crd):
    spec = schema_of(crd)["properties"]["spec"]
    spec["properties"]["list"] = {"type": "array"}
    spec["properties"]["anything"] = {}
    assert messages(crd) == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[anything].type: Required value: "
        "must not be empty for specified object fields",
        "spec.validation.openAPIV3Schema.properties[spec].properties[list].items: Required value: must be specified",
    ]


def test_metadata_may_only_restrict_name(crd):
    schema_of(crd)["properties"]["metadata"] = {"type": "object", "properties": {"name": {"type": "string",
                                                                                          "maxLength": 20}}}
    assert messages(crd) == []
    schema_of(crd)["properties"]["metadata"]["properties"]["labels"] = {"type": "object"}
    assert messages(crd) == ["spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify "
                             "anything other than name and generateName, but metadata is implicitly specified"]


def test_preserve_unknown_fields_must_be_true_and_int_or_string_excludes_it(crd):
    props = schema_of(crd)["properties"]["spec"]["properties"]
    props["a"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": False}
    assert messages(crd) == ["spec.validation.openAPIV3Schema.properties[spec].properties[a]."
                             "x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"]
    props["a"] = {"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True}
    assert messages(crd) == ["spec.validation.openAPIV3Schema.properties[spec].properties[a]."
                             "x-kubernetes-preserve-unknown-fields: Invalid value: true: "
                             "must be false if x-kubernetes-int-or-string is true"]


def test_list_type_map_rules(crd):
    props = schema_of(crd)["properties"]["spec"]["properties"]
    props["ports"] = {"type": "array", "x-kubernetes-list-type": "map",
                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    assert messages(crd) == ["spec.validation.openAPIV3Schema.properties[spec].properties[ports]."
                             "x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type "
                             "is map"]
    props["ports"]["x-kubernetes-list-map-keys"] = ["name"]
    assert messages(crd) == ["spec.validation.openAPIV3Schema.properties[spec].properties[ports].items.properties"
                             "[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it "
                             "must have a default or be a required property"]
    props["ports"]["items"]["required"] = ["name"]
    assert messages(crd) == []
    props["ports"]["x-kubernetes-list-type"] = "sorted"
    assert messages(crd) == [
        'spec.validation.openAPIV3Schema.properties[spec].properties[ports].x-kubernetes-list-type: '
        'Unsupported value: "sorted": supported values: "atomic", "set", "map"',
        'spec.validation.openAPIV3Schema.properties[spec].properties[ports].x-kubernetes-list-type: '
        'Invalid value: "sorted": must be map if x-kubernetes-list-map-keys is non-empty',
    ]


def test_unsupported_openapi_keywords(crd):
    props = schema_of(crd)["properties"]["spec"]["properties"]
    props["tags"] = {"type": "array", "uniqueItems": True, "items": {"type": "string"}}
    props["kind2"] = {"type": "null"}
    assert messages(crd) == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[kind2].type: Unsupported value: \"null\": "
        'supported values: "array", "boolean", "integer", "number", "object", "string"',
        "spec.validation.openAPIV3Schema.properties[spec].properties[kind2].type: Forbidden: type cannot be set to "
        "null, use nullable as an alternative",
        "spec.validation.openAPIV3Schema.properties[spec].properties[tags].uniqueItems: Forbidden: uniqueItems "
        "cannot be set to true since the runtime complexity becomes quadratic",
    ]


def test_defaults_must_validate_and_be_pruned(crd):
    props = schema_of(crd)["properties"]["spec"]["properties"]
    props["minMember"]["default"] = "one"
    assert messages(crd) == [
        'spec.validation.openAPIV3Schema.properties[spec].properties[minMember].default: Invalid value: "string": '
        ' in body must be of type integer: "string"']
    props["minMember"]["default"] = 1
    props["policy"] = {"type": "object", "properties": {"mode": {"type": "string"}}, "default": {"mode": "a", "x": 1}}
    assert messages(crd) == [
        'spec.validation.openAPIV3Schema.properties[spec].properties[policy].default: Invalid value: '
        'map[string]interface {}{"mode":"a", "x":1}: must not have unknown fields']


def test_defaults_are_forbidden_in_top_level_metadata(crd):
    schema_of(crd)["properties"]["metadata"]["default"] = {"name": "x"}
    assert "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level " \
           "metadata" in messages(crd)


def test_status_subresource_restricts_the_root_type(crd):
    schema_of(crd)["type"] = "array"
    schema_of(crd)["items"] = {"type": "string"}
    assert messages(crd)[0] == ('spec.validation.openAPIV3Schema.type: Invalid value: "array": only "object" is '
                                'allowed as the type at the root of the schema if the status subresource is enabled')


def test_printer_columns(crd):
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    columns[0]["type"] = "str"
    columns[1]["format"] = "uint"
    del columns[2]["jsonPath"]
    columns[3]["jsonPath"] = "status.succeeded"
    assert messages(crd) == [
        'spec.additionalPrinterColumns[0].type: Invalid value: "str": must be one of boolean,date,integer,number,string',
        'spec.additionalPrinterColumns[1].format: Invalid value: "uint": must be one of '
        'byte,date,date-time,double,float,int32,int64,password',
        "spec.additionalPrinterColumns[2].JSONPath: Required value",
        'spec.additionalPrinterColumns[3].JSONPath: Invalid value: "status.succeeded": must be a simple json path '
        'starting with .',
    ]


def test_scale_subresource_paths(crd):
    crd["spec"]["versions"][0]["subresources"]["scale"] = {"specReplicasPath": ".status.replicas"}
    assert messages(crd) == [
        'spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under '
        '.spec',
        "spec.subresources.scale.statusReplicasPath: Required value",
    ]


def test_conversion_webhook_needs_a_client_config(crd):
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"]}}
    assert messages(crd) == [
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
        'spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one of '
        'v1, v1beta1',
    ]


def test_protected_groups_need_api_approval(crd):
    crd["metadata"] = {"name": "podgroups.scheduling.k8s.io"}
    crd["spec"]["group"] = "scheduling.k8s.io"
    assert messages(crd) == [
        'metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval '
        'annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111']
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing only"}
    assert messages(crd) == []


def test_preserve_unknown_fields_cannot_be_turned_on(crd):
    crd["spec"]["preserveUnknownFields"] = True
    assert messages(crd) == ["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
                             "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"]


def test_update_keeps_group_and_plural_and_established_kind(crd):
    old = copy.deepcopy(crd)
    crd_defaults(old)
    old["status"] = crd_established_status(old, "2026-01-01T00:00:00Z")
    new = copy.deepcopy(old)
    new["spec"]["names"]["kind"] = "Gang"
    new["spec"]["names"]["listKind"] = "GangList"
    new["spec"]["group"] = "gangs.x-k8s.io"
    assert messages(new, old) == [
        'spec.names.kind: Invalid value: "Gang": field is immutable',
        'spec.group: Invalid value: "gangs.x-k8s.io": field is immutable',
    ]


def test_defaults(crd):
    del crd["spec"]["names"]["singular"]
    del crd["spec"]["names"]["listKind"]
    crd["status"] = {}
    crd_defaults(crd)
    assert crd["spec"]["names"]["singular"] == "podgroup"
    assert crd["spec"]["names"]["listKind"] == "PodGroupList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"] == {"storedVersions": ["v1alpha1"]}


def test_established_status(crd):
    assert crd_established_status(crd, "2026-01-01T00:00:00Z") == {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": {"plural": "podgroups", "singular": "podgroup", "shortNames": ["pg", "pgs"],
                          "kind": "PodGroup", "listKind": "PodGroupList"},
        "storedVersions": ["v1alpha1"],
    }


def test_established_status_of_a_protected_group(crd):
    crd["spec"]["group"] = "scheduling.k8s.io"
    conditions = crd_established_status(crd, "t")["conditions"]
    assert [c["type"] for c in conditions] == ["NamesAccepted", "KubernetesAPIApprovalPolicyConformant",
                                                "Established"]
    assert conditions[1] == {
        "type": "KubernetesAPIApprovalPolicyConformant", "status": "True", "lastTransitionTime": "t",
        "reason": "ApprovedAnnotation",
        "message": "approved in https://github.com/kubernetes-sigs/scheduler-plugins/pull/50"}


def test_cel_rules_are_checked_for_shape_then_compiled(crd):
    spec = schema_of(crd)["properties"]["spec"]
    spec["x-kubernetes-validations"] = [{"rule": " "}, {"rule": "self.minMember > 0", "message": "a\nb"},
                                        {"rule": "self.minMember > 0", "reason": "FieldValueWrong"}]
    assert messages(crd) == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Required value: "
        "rule is not specified",
        'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].message: Invalid value: "a\\nb": '
        "message must not contain line breaks",
        'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].reason: Unsupported value: '
        '"FieldValueWrong": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", '
        '"FieldValueRequired"',
    ]
    spec["x-kubernetes-validations"] = [{"rule": "self.minMember >", "message": "broken"}]
    assert [m.splitlines()[0] for m in messages(crd)] == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self.minMember >", Message:"broken", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting {'[', '{', "
        "'(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"]


def test_generic_object_meta_rules_apply_to_crds(crd):
    crd["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "x" * (256 * 1024)
    assert messages(crd) == ["metadata.annotations: Too long: may not be more than 262144 bytes"]
