"""What a node or the API said, made safe to show: secrets masked (redact, secret_shapes) and control
characters neutralised (neutralise). Every output of the suite goes through it: the terminal, every report,
every error message."""
