"""The ``mitigate`` command line: one module per command.

:mod:`~mitigate.cli.app` holds the command group and its one-line error handling
(:mod:`~mitigate.cli.errors`: the ``error:`` line and the exit codes), :mod:`~mitigate.cli.options`
the typed, frozen options of each command with their declared constraints,
:mod:`~mitigate.cli.build` the one ``build_judge`` and the one item order of judge, compare and
search, :mod:`~mitigate.cli.files` the checked files and folders, :mod:`~mitigate.cli.config` the
config files every command reads (``-f``) and writes (``--save-config``), :mod:`~mitigate.cli.catalog`
``mitigate list`` and :mod:`~mitigate.cli.plugins` ``mitigate check-plugin``. Every command takes
``--plugin MODULE``. Options are checked before
data is loaded, data and prompts before the first LM call. ``--debug`` (or
``MITIGATE_DEBUG=1``) shows the traceback of an error instead of its line.

Importing this package registers every command and loads nothing a command uses: a command
module imports at its top only typer, the group and its options, and the rest (data, judges,
the runner, strategies, search, harness; pydantic and the registry too) inside the command,
so ``mitigate --help`` starts in a fraction of the time a run needs (tests/test_cli_imports.py
pins what ``--help`` and ``judge`` load). Help texts that list registered names
(:func:`~mitigate.cli.options.registered_names`) are filled when that help is printed.
"""

# isort: off
# importing registers each command; --help lists them in this order: the work first, then discovery
from mitigate.cli import compare, data, diff, estimate, judge, probe, prompts, report, search  # noqa: F401
from mitigate.cli import catalog, plugins  # noqa: F401
# isort: on
from mitigate.cli.app import app, main
from mitigate.cli.errors import EXIT_FAILED, EXIT_REFUSED

__all__ = ["EXIT_FAILED", "EXIT_REFUSED", "app", "main"]
