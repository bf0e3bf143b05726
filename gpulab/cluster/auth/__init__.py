"""Authentication and authorization of the embedded API server, as a kind cluster's kube-apiserver does them.

``authenticator.py`` (who: the kubeconfig's token, ServiceAccount tokens, anonymous), ``tokens.py``
(ServiceAccount JWTs), ``impersonation.py`` (``Impersonate-*``), ``requestinfo.py`` (what a request asks,
and the 403 when it may not), ``rules.py`` and ``rbac.py`` (the RBAC authorizer), ``filters.py`` (the three
filters in upstream's order, called by the HTTP server once per request), ``escalation.py`` (RBAC's
escalation prevention, called by the RBAC kinds' strategies), ``reviews.py`` (the review APIs and
TokenRequest), ``bootstrap.py`` (the bootstrap roles and bindings, ClusterRole aggregation).
In-process components call :class:`~gpulab.cluster.api.Api` directly and are not checked, as upstream's
loopback client in ``system:masters`` is not.
"""
