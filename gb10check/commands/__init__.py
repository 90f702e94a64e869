"""The `gb10check` command and its subcommands (init, plan, explain, known-issues, completion, the check list)."""
