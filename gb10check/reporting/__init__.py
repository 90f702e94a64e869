"""What a run leaves: the summary, report.html and its pictures, the history, Prometheus, and the
masking and neutralising every output goes through."""
