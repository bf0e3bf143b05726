"""The NVIDIA GPU stack emulation: hardware catalog, GFD, mig-parted, device plugin, nvidia-smi, operator chart.

The modules at this level are pure (data in, data out, no I/O beyond reading the
package's own ``data/`` files); the reconcilers that drive a cluster build on them.
"""
