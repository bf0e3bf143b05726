"""``python -m gpulab.probe`` (or ``python -m probe`` from the probe pod's ConfigMap)."""
import sys

from .cli import main

sys.exit(main())
