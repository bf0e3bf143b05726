"""``gpulab probe``: measure what time-slicing or MPS does to a latency-sensitive request on a real NVIDIA GPU.

The course's latency model (``gpulab.gpustack.latency``) is calibrated on one
H200 measurement (``gpulab/gpustack/data/h200-timeslicing.json``); this package
is the instrument that made that kind of measurement, packaged so anyone with a
GPU can repeat it on theirs: a server process issues requests open loop (two
bf16 matmuls and a device synchronize each, latency from submit to synchronize)
while 0..k neighbour processes keep the same GPU busy with bigger matmuls, the
way time-sliced pods share a GPU. Where an MPS control daemon already runs
(``mps.py`` detects it), every process is one of its clients, as MPS pods are,
and the run is reported as MPS, a separate mode (``--sharing``). It prints
p50/p99/p99.9 per k, a verdict against a latency budget, and writes JSON rows
shaped like the data file's.

The package imports nothing from the rest of gpulab and PyTorch only when it
measures, so it runs as ``gpulab probe`` and also as ``python -m probe`` from a
ConfigMap mounted into a pod (``cluster-setup/real/probe-pod.yaml``). No
benchmarking library does this: the point is the open-loop request stream
against competing CUDA contexts, which generic GPU benchmarks do not measure.
"""
