"""Subcommands of `archgraph` beyond params/shapes/zoo/ops; see archgraph/cli.py for the protocol."""
