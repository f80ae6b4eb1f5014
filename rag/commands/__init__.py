"""CLI subcommands; each module has register(subparsers) and sets a `func` per command."""
