"""Evaluation harness: the paper's experiments at CPU scale, with baselines and a report.

``python -m evaluation --config configs/evaluation/eval.yaml [--quick]`` runs an experiment
(:class:`evaluation.config.EvalConfig`), caching every generation, attack and detection
under its ``out_dir`` so interrupted runs resume, and writes ``results.json``, ``report.md`` and
PNG plots there.
"""
