"""PyTorch references of the eight research architectures of issue 15, one module each (see
tools/research_reference.py, which measures them and checks tests/data/research/*.yaml against them)."""
