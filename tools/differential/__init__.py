"""The differential harness: the embedded cluster judged by the upstream engine, case by case (issue 22).

``python -m tools.differential`` starts a fresh cluster of each engine, runs the corpus (``cases/*.yaml``) on both
and reports every difference; docs/differential.md explains the corpus and publishes the figures.
"""
