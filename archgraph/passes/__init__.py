"""Passes: plain functions over a model's graphs that return data."""
