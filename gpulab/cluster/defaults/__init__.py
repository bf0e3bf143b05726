"""Defaulting and the mutating admission plugins of kube-apiserver, for the built-in kinds.

One module per area: ports of pkg/apis/*/v1/defaults.go applied in the order
zz_generated.defaults.go calls them (``core``, ``pods``, ``workloads``,
``quantities``) and of the admission plugins that change a new object
(``admission``). Which of them a kind runs, and when, is its strategy's
decision (:mod:`gpulab.cluster.kinds`).
"""
