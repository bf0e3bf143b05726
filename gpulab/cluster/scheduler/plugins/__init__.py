"""The scheduler plugins, one module per upstream plugin (pkg/scheduler/framework/plugins/<name>).

Each module exposes the extension points it implements as plain functions of
the pod (``PodInfo``) and of the cache's nodes, taint classes or buckets, and
``requeue(pod, event)``, its queueing hint: whether a cluster event may make a
pod it rejected schedulable (``EventsToRegister`` and ``QueueingHintFn``).
"""
