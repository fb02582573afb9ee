"""CLI sub-commands, one module each; every module exposes `register(subparsers)`."""
