"""``python -m mitigate`` runs the command line."""

from mitigate.cli import main

main()
