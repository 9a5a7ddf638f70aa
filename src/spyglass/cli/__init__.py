"""The `spyglass` command line: one module per subcommand."""
