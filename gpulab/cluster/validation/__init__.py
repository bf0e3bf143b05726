"""Validation of every write, as kube-apiserver's pkg/apis/<group>/validation does it.

One module per area (``pods``, ``containers``, ``core``, ``apps``, ``batch``,
``leases``, ``disruption_budgets``, ``priority_classes``, ``meta`` for
ObjectMeta, ``crd`` and ``custom`` for CustomResourceDefinitions and their
resources, ``strict`` for unknown and duplicate fields). Each check returns a
list of :class:`gpulab.cluster.errors.FieldError`; which checks a kind runs on
create, update and status update is its strategy's decision
(:mod:`gpulab.cluster.kinds`), and ``errors.invalid_object`` turns the list
into the 422 Status.
"""
