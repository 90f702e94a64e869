"""gb10check: acceptance and diagnostics for GB10 clusters serving vLLM over RoCE."""

__version__ = "0.1.0"
