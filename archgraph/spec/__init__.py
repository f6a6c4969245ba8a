"""Specs: safe YAML reading with line numbers (`yamlload`), where specs come from (`sources`),
and the one interpreter that builds a model from a spec (`build`, with `graphs`, `blocks`,
`settings`, `values`, `ties`)."""
