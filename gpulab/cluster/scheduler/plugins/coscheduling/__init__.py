"""Gang scheduling as kubernetes-sigs/scheduler-plugins does it: the Coscheduling plugin and PodGroup status.

scheduler-plugins ships as a second scheduler (its Helm chart
``manifests/install/charts/as-a-second-scheduler``: profile
``scheduler-plugins-scheduler``) plus a controller that keeps PodGroup status;
gpulab runs both in process once the ``podgroups.scheduling.x-k8s.io`` CRD is
served.
"""
