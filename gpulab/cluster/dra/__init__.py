"""Dynamic Resource Allocation (resource.k8s.io/v1) logic shared by the API server, the scheduler, the
ResourceClaim controller and the node agent: device selectors in CEL (:mod:`.selectors`), the structured
parameters allocator (:mod:`.allocator`) and the pod-to-claim helpers (:mod:`.claims`).

It knows nothing of any vendor's devices: drivers publish ResourceSlices, users ask with ResourceClaims,
both through the API.
"""
