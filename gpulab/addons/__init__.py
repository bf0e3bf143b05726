"""Cluster add-ons the course installs through the official client: charts other than the GPU Operator."""
