"""The deck machinery: the demo declaration and its panel, notebooks, presenting, exporting,
the UI benchmark. Imports only the engine (and introspection where a figure needs it)."""
