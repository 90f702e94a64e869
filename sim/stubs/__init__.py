"""The stub tools of a simulated node, one module a tool (sim/stub.py runs them: its TOOLS say which)."""
