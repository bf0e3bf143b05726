"""Codec benchmark: the per-request costs of decoding kubectl's protobuf bodies and building the OpenAPI document.

Both sit on every `kubectl apply` and `kubectl explain` path, so they are measured here rather than asserted in
timed tests. Run with `make bench` (or `python -m bench codecs`); writes bench/results/codecs.json.

* ``protobuf_decode_deployment_us``: best of 5 x 50 decodes of the Deployment body kubectl v1.37 sent (the fixture
  of tests/unit/test_protobuf.py). Target: well under 1 ms.
* ``openapi_v2_cold_build_s``: the OpenAPI v2 document with two CRDs, from cold caches (the first
  `kubectl apply --validate` or `explain` after start). Target: under 0.5 s.
"""
from __future__ import annotations

import copy
import platform
import sys
import time
import timeit
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpulab.cluster import openapi  # noqa: E402
from gpulab.cluster.kinds import builtin_registry  # noqa: E402
from gpulab.cluster.server import protobuf  # noqa: E402
from tests.unit.test_openapi import CLUSTER_POLICY, PRESERVE_ALL  # noqa: E402
from tests.unit.test_protobuf import KUBECTL_BODIES  # noqa: E402


def _decode_us() -> float:
    body = bytes.fromhex(KUBECTL_BODIES["deployment"][1])
    protobuf.decode(body, ("apps/v1", "Deployment"))
    best = min(timeit.repeat(lambda: protobuf.decode(body, ("apps/v1", "Deployment")), number=50, repeat=5))
    return round(best / 50 * 1e6, 1)


def _openapi_cold_s() -> float:
    registry = builtin_registry()
    registry.add_crd(copy.deepcopy(CLUSTER_POLICY))
    registry.add_crd(copy.deepcopy(PRESERVE_ALL))
    for cached in (openapi._builtin_definition, openapi._builtin_refs, openapi._builtin_v2_part):
        cached.cache_clear()
    start = time.perf_counter()
    orjson.dumps(openapi.openapi_v2(registry))
    return round(time.perf_counter() - start, 3)


def main() -> dict:
    return {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "python": platform.python_version(),
            "protobuf_decode_deployment_us": _decode_us(), "openapi_v2_cold_build_s": _openapi_cold_s()}


if __name__ == "__main__":
    print(main())
