"""Asking the service: the bounded HTTP client, what the checks ask, waiting for it to come up."""
