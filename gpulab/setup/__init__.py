"""Getting past the embedded cluster: ``gpulab kind up|down`` and ``gpulab doctor``.

``kindconfig`` checks kind configuration files the way kind decodes them,
``kind`` drives the kind CLI and puts the simulated GPU hardware on its nodes,
``doctor`` reports what a cluster's GPU stack has and lacks, on any cluster.
"""
