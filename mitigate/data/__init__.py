"""Benchmarks: the item schema, the generic JSONL format, and loaders for the shared datasets."""

from mitigate.data.jsonl import load_jsonl, save_jsonl
from mitigate.data.registry import benchmark_names, load
from mitigate.data.schema import Benchmark, Item

__all__ = ["Benchmark", "Item", "benchmark_names", "load", "load_jsonl", "save_jsonl"]
